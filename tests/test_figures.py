"""Figures of a 100-experiment grid stay readable: every figure is written, grows with what it shows
within sane bounds, puts each metric in its own facet with its own reference line and unit, gives
every model a distinct look, and marks the sampled test's p floor."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from bias.core.reports import load_report
from bias.core.reports.plotting import model_styles

from fixtures.big_grid import big_grid


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def svg_text(path) -> str:
    root = ET.parse(path).getroot()
    return " ".join(t for t in root.itertext())



def _drawn(monkeypatch, draw, *args):
    """What `draw(*args)` returns and the figures it closed, kept open to be read (the caller
    closes them): pyplot's close is held back for the call."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    captured = []
    with monkeypatch.context() as patched:
        patched.setattr(plt, "close", lambda fig=None: captured.append(fig))
        returned = draw(*args)
    return returned, captured

def test_every_figure_of_a_large_grid(big_grid_figures):
    """`write_report(report, folder, ("png",))` on the grid, and its forest plot as SVG (conftest's
    `big_grid_figures` draws them once for this test and the HTML report's; the files written are
    in written.txt)."""
    grid_folder = big_grid_figures
    report = load_report(grid_folder)
    assert len(report.results) == 100
    written = [grid_folder / name for name in (grid_folder / "written.txt").read_text(encoding="utf-8").splitlines()]
    assert all(path.is_file() for path in written)
    names = sorted(p.name for p in written)
    # 96 results with per-word scores, 12 panels a file: words.png and words-2 ... words-8
    pages = [f"words-{n}" for n in range(2, 9)]
    assert names == sorted([*(f"{n}.png" for n in ("forest", "heatmap", "words", *pages, "languages", "p-vs-effect")), "forest.svg"])
    for path in written:
        if path.suffix == ".png":
            width, height = png_size(path)
            assert 400 < width < 2000 and 300 < height < 4000, (path.name, width, height)
    # SVG text is kept as text (svg.fonttype none is not required): check labels through the element ids
    forest = (grid_folder / "forest.svg").read_text()
    assert forest.count("<g id=\"axes_") == 3  # one facet per metric: WEAT, SEAT, CROWS


def test_distinct_styles_for_many_models():
    styles = model_styles([f"m{i}" for i in range(40)])
    assert len(set(styles.values())) == 40


def test_facets_carry_their_own_reference_and_unit(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.reports.figures import forest, p_vs_effect

    captured = {}
    real_close = plt.close

    def keep(fig=None):
        captured.setdefault("figs", []).append(fig)

    monkeypatch.setattr(plt, "close", keep)
    big_grid(tmp_path)  # results only: this test draws the two figures it reads
    report = load_report(tmp_path)
    forest(report, tmp_path, ("png",))
    p_vs_effect(report, tmp_path, ("png",))
    monkeypatch.setattr(plt, "close", real_close)
    forest_fig, pv_fig = captured["figs"]
    axes = forest_fig.axes
    refs = {}
    for ax in axes:
        verticals = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"]
        refs[ax.get_title(loc="left")] = (verticals, ax.get_xlabel())
    assert refs["WEAT"][0] == [0.0] and refs["CROWS"][0] == [50.0]
    assert "%" in refs["CROWS"][1] and "50% = no bias" in refs["CROWS"][1] and "effect size d" in refs["WEAT"][1]
    # every test row of the SEAT facet is labelled, settings as a second line
    seat = next(ax for ax in axes if ax.get_title(loc="left") == "SEAT")
    labels = [t.get_text() for t in seat.get_yticklabels()]
    assert len(labels) == len(set(labels)) and all("\n" in label for label in labels)
    # the p floor of the sampled test is drawn and named
    legend = [t.get_text() for t in pv_fig.axes[0].get_legend().get_texts()]
    assert any("p floor" in t and "1.0e-05" in t for t in legend)
    real_close(forest_fig)
    real_close(pv_fig)


def test_a_figure_that_cannot_show_every_panel_says_so_and_goes_on_in_further_files(tmp_path, monkeypatch):
    """30 results with per-word scores, 12 panels a file: words.png shows 1-12 and names the files
    with the rest; words-2.png and words-3.png hold 13-30, in natural test order."""
    from bias.core.model import Result
    from bias.core.reports import build
    from bias.core.reports.word_figure import words
    from bias.core.runs.results import ResultStore
    from fixtures.values import value_of

    store = ResultStore(tmp_path)
    made = []
    for n in range(30, 0, -1):  # written in reverse: the figures list weat1 first, weat2 before weat10
        scores = [{"set": s, "item": f"{s}{i}", "s": (i - 2) / 10} for s in "XY" for i in range(4)]
        r = Result(key=f"k{n}", model="word2vec:w.bin", wordset=f"en/weat{n}", metric="weat", effect_size=0.5, p_value=0.01,
                   figures={"scores": scores}, meta=value_of("weat"))
        store.append(r)
        made.append(r)
    import matplotlib

    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")  # text as <text>, to read it back
    report = load_report(tmp_path)
    written = words(report, tmp_path, ("svg",))
    assert [p.name for p in written] == ["words.svg", "words-2.svg", "words-3.svg"]
    first, second, third = (svg_text(p) for p in written)
    assert "Panels 1-12 of 30: the other 18 are in words-2.png to words-3.png" in first
    assert "Panels 13-24 of 30 (words.png holds the first" in second and "Panels 25-30 of 30" in third
    titles = [t for t in first.split() if t.startswith("en/weat")]
    assert titles[:3] == ["en/weat1", "en/weat2", "en/weat3"] and "en/weat10" in titles and "en/weat13" not in titles
    assert "en/weat30" in third and build(made).results[0].wordset == "en/weat1"
    # reported again with fewer results: the pages it no longer draws go
    fewer = build([r for r in report.results if r.wordset in {f"en/weat{n}" for n in range(1, 15)}])
    assert [p.name for p in words(fewer, tmp_path, ("svg",))] == ["words.svg", "words-2.svg"]
    assert not (tmp_path / "words-3.svg").exists() and (tmp_path / "words-2.svg").exists()


def test_heatmap_cells_keep_small_values_apart():
    from bias.core.reports.figures import _cell_digits
    from bias.core.reports.values import ValueKind

    mac = ValueKind("MAC", "mean average cosine distance", reference=None, signed=False)
    written = {mac.format(v, _cell_digits(mac, [0.0053, 0.011, 0.0127])) for v in (0.0053, 0.011, 0.0127)}
    assert written == {"0.005", "0.011", "0.013"}
    d = ValueKind("d", "effect size d")
    assert _cell_digits(d, [1.97, -0.46]) == 2 and _cell_digits(d, [0.0006, -0.0002]) == 4
    assert _cell_digits(ValueKind("% stereo", "score", unit="%"), [52.1]) == 0


@pytest.mark.parametrize("with_p", [False, True])
def test_the_forest_legend_names_hollow_points_only_when_a_result_has_a_p_value(tmp_path, monkeypatch, with_p: bool):
    """A point is hollow only for a p-value that is not significant, so a forest of results without
    p-values (CrowS-Pairs, StereoSet) has no hollow point and its legend does not explain one."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.model import Result
    from bias.core.reports.figures import forest
    from bias.core.runs.results import ResultStore
    from fixtures.values import value_of

    store = ResultStore(tmp_path)
    for n, model in enumerate(("hf:a", "hf:b")):
        store.append(Result(key=f"c{n}", model=model, wordset="en/crows-sample", metric="crows", effect_size=52.0 + n,
                            sizes={"pairs": 40}, meta=value_of("crows")))
    if with_p:
        store.append(Result(key="w", model="hf:a", wordset="en/weat1", metric="weat", effect_size=0.4, p_value=0.3,
                            meta=value_of("weat")))
    _, (fig,) = _drawn(monkeypatch, forest, load_report(tmp_path), tmp_path, ("png",))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)
    assert ("hollow: not significant (Holm)" in legend) is with_p
    assert {"a", "b"} <= set(legend)  # the models, by their short names


def test_an_axis_without_a_label_keeps_its_place_and_the_file_its_bytes(tmp_path):
    """`save` fixes the place of a label an axis does not have (matplotlib measured every tick label
    at each draw to move it); the files are the bytes matplotlib writes of the same figure itself."""
    import io

    from bias.core.reports.plotting import pyplot, save

    plt = pyplot()

    def figure():
        fig, (left, right) = plt.subplots(1, 2, figsize=(5, 3))
        words = [f"word{i}" for i in range(30)]
        left.barh(range(30), [((i * 7) % 11) - 5 for i in range(30)])
        left.set_yticks(range(30))
        left.set_yticklabels(words, fontsize=5)
        left.set_xlabel("s(w)")
        right.plot([0, 1], [1, 0])
        right.set_ylabel("a label kept where matplotlib puts it")
        return fig

    fig = figure()
    save(fig, tmp_path, "ours", ("png", "svg"))
    (left, right) = fig.axes
    assert left.yaxis.label.get_text() == "" and left.yaxis.label.get_position() == (0.0, 0.0)
    assert right.yaxis.label.get_position() != (0.0, 0.0)  # a real label is placed by matplotlib
    plt.close(fig)
    for fmt in ("svg", "png"):
        fig = figure()
        buffer = io.BytesIO()
        metadata = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}
        fig.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight", metadata=metadata)
        plt.close(fig)
        assert (tmp_path / f"ours.{fmt}").read_bytes() == buffer.getvalue(), fmt


def test_the_heatmap_scale_reaches_the_farthest_interval_bound(tmp_path, monkeypatch):
    """A null effect alone on a heat map (+0.007, interval -0.013 to +0.027) was the darkest red: its
    scale was its own value. The scale reaches the farthest value or interval bound from the
    reference, so such a cell is pale."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.model import Result
    from bias.core.reports.figures import heatmap
    from bias.core.runs.results import ResultStore
    from fixtures.values import value_of

    store = ResultStore(tmp_path)
    store.append(Result(key="n", model="hf:a", wordset="it/hiring", metric="weat", effect_size=0.007, p_value=0.49,
                        figures={"ci_low": -0.013, "ci_high": 0.027}, meta=value_of("weat")))
    store.close()
    _, (fig,) = _drawn(monkeypatch, heatmap, load_report(tmp_path), tmp_path, ("png",))
    (image,) = fig.axes[0].get_images()
    low, high = image.get_clim()
    plt.close(fig)
    assert (low, high) == pytest.approx((-0.027, 0.027))  # weat's reference is 0: 0.027 the farthest


def test_one_wide_interval_does_not_wash_out_the_heatmap():
    """The scale reaches the farthest value and the median cell's farthest bound: two clear effects
    keep their colour beside one null with a huge interval."""
    from bias.core.model import Result
    from bias.core.reports.figures import _spread

    def cell(d, low, high):
        return Result(key=str(d), model="m", wordset="en/weat1", metric="weat", effect_size=d,
                      figures={"ci_low": low, "ci_high": high})

    cells = [cell(0.8, 0.6, 1.0), cell(0.7, 0.5, 0.9), cell(0.0, -6.0, 6.1)]
    assert _spread(cells, 0.0) == pytest.approx(1.0)  # the bounds' median, above the largest value
    assert _spread([cell(0.007, -0.013, 0.027)], 0.0) == pytest.approx(0.027)
    assert _spread([cell(1.5, float("nan"), 2.0), cell(-0.4, -0.9, 0.1)], 0.0) == pytest.approx(1.5)


def test_the_selection_figure_shows_each_groups_rate_and_flags(tmp_path, monkeypatch):
    """A hiring audit's figure: one bar per group at its selection rate, red where the metric
    flagged the impact ratio; drawn for a metric that declares it, never for another; a report
    without such a result removes an earlier one's file."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.model import Result
    from bias.core.reports import build
    from bias.core.reports.selection_figure import selection
    from fixtures.values import value_of

    groups = {"nl": {"rate": 0.5, "ratio": 1.0, "flagged": False},
              "ma": {"rate": 0.3, "ratio": 0.6, "flagged": True},
              "tr": {"rate": 0.45, "ratio": 0.9, "flagged": False}}
    hiring = Result(key="h", model="hf:m", wordset="nl/hiring", metric="retrieval", effect_size=0.6,
                    figures={"selection": {"group": groups}}, meta=value_of("retrieval"))
    weat = Result(key="w", model="hf:m", wordset="en/weat6", metric="weat", effect_size=0.4,
                  figures={"selection": {"group": groups}}, meta=value_of("weat"))  # not declared: no panel
    written, (fig,) = _drawn(monkeypatch, selection, build([hiring, weat]), tmp_path, ("png",))
    (ax,) = fig.axes
    bars = ax.patches
    plt.close(fig)
    assert [p.name for p in written] == ["selection.png"]
    assert [b.get_width() for b in bars] == [0.5, 0.3, 0.45]
    red = matplotlib.colors.to_rgba("#c0392b")
    assert [b.get_facecolor() == red for b in bars] == [False, True, False]
    assert selection(build([weat]), tmp_path, ("png",)) == [] and not (tmp_path / "selection.png").exists()


def test_the_selection_figure_from_a_hostile_results_file(tmp_path, monkeypatch):
    """Many groups: 40 bars, the flagged one past the 40th among them, and the panel says how many
    are not shown; a name is cut and made visible; a rate outside 0..1 gets no panel."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.model import Result
    from bias.core.reports import build
    from bias.core.reports.selection_figure import selection
    from fixtures.values import value_of

    groups = {f"g{i}": {"rate": 0.5, "ratio": 1.0, "flagged": False} for i in range(100)}
    groups["late\u202e" + "x" * 500] = {"rate": 0.1, "ratio": 0.2, "flagged": True}
    many = Result(key="m", model="hf:m", wordset="nl/hiring", metric="retrieval", effect_size=0.6,
                  figures={"selection": {"group": groups}}, meta=value_of("retrieval"))
    _, (fig,) = _drawn(monkeypatch, selection, build([many]), tmp_path, ("png",))
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    title = ax.get_title(loc="left")
    plt.close(fig)
    assert len(labels) == 40 and labels[0].startswith("late<U+202E>xxx") and len(labels[0]) < 80
    assert "61 more groups not shown" in title
    odd = Result(key="o", model="hf:m", wordset="nl/hiring", metric="retrieval", effect_size=0.6,
                 figures={"selection": {"group": {"a": {"rate": 1.5}, "b": {"rate": 0.2}}}}, meta=value_of("retrieval"))
    assert _drawn(monkeypatch, selection, build([odd]), tmp_path, ("png",)) == ([], [])
