"""Figures of a 100-experiment grid stay readable: every figure is written, grows with what it shows
within sane bounds, puts each metric in its own facet with its own reference line and unit, gives
every model a distinct look, and marks the sampled test's p floor."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from bias.core.reports import load_report, write_report
from bias.core.reports.figures import model_styles

from fixtures.big_grid import big_grid


@pytest.fixture(scope="module")
def grid_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grid")
    big_grid(folder)
    return folder


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def svg_text(path) -> str:
    root = ET.parse(path).getroot()
    return " ".join(t for t in root.itertext())


def test_every_figure_of_a_large_grid(grid_folder):
    report = load_report(grid_folder)
    assert len(report.results) == 100
    written = write_report(report, grid_folder, ("png", "svg"))
    names = sorted(p.name for p in written)
    assert names == sorted(f"{n}.{e}" for n in ("forest", "heatmap", "words", "languages", "p-vs-effect") for e in ("png", "svg"))
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


def test_facets_carry_their_own_reference_and_unit(grid_folder, monkeypatch):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from bias.core.reports.figures import forest, p_vs_effect

    captured = {}
    real_close = plt.close

    def keep(fig=None):
        captured.setdefault("figs", []).append(fig)

    monkeypatch.setattr(plt, "close", keep)
    report = load_report(grid_folder)
    forest(report, grid_folder, ("png",))
    p_vs_effect(report, grid_folder, ("png",))
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
