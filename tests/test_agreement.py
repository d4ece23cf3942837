"""`bias report --agreement`: correlations of every pair of methods across (model, test) cells, all
scores and significant ones only, checked against scipy on hand-built results; oriented scores; the
tables, the figure, the HTML section and the command line."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bias.core.model import Result
from bias.core.reports import build, write_report
from bias.core.reports.agreement import agreement
from bias.core.reports.values import kind_of
from bias.core.runs.results import ResultStore
from bias.core.statistics.correlation import pearson, spearman
from fixtures.values import value_of

Z = stats.norm.ppf(0.975)


def test_correlations_and_intervals_match_scipy() -> None:
    rng = np.random.default_rng(5)
    for n in (4, 7, 30):
        x = rng.normal(size=n)
        y = 0.6 * x + rng.normal(size=n)
        y[: n // 3] = y[0]  # ties, which Spearman ranks by their mean rank
        want = stats.pearsonr(x, y)
        got = pearson(x, y)
        assert got.n == n and got.value == pytest.approx(want.statistic, abs=1e-12)
        low, high = want.confidence_interval(0.95)  # Fisher's z, as scipy computes it
        assert got.interval == pytest.approx((low, high), abs=1e-10)
        rho = stats.spearmanr(x, y).statistic
        got = spearman(x, y)
        assert got.value == pytest.approx(rho, abs=1e-12)
        se = math.sqrt(1.06 / (n - 3))  # Fieller, Hartley & Pearson (1957)
        assert got.interval == pytest.approx((math.tanh(math.atanh(rho) - Z * se), math.tanh(math.atanh(rho) + Z * se)), abs=1e-10)
    # Three pairs: a correlation, no interval; two pairs or a constant series: no correlation at all.
    three = pearson([1, 2, 3], [1, 3, 2])
    assert three.value == pytest.approx(stats.pearsonr([1, 2, 3], [1, 3, 2]).statistic) and three.interval is None
    assert pearson([1, 2], [2, 1]).value is None and spearman([1, 2], [2, 1]).value is None
    assert pearson([1, 2, 3, 4], [5, 5, 5, 5]).value is None and spearman([1, 2, 3, 4], [5, 5, 5, 5]).value is None


def test_a_perfect_correlation_has_no_interval() -> None:
    """At |r| = 1 Fisher's z is infinite: no interval (scipy gives the degenerate [1, 1]), printed as none."""
    from bias.core.reports.agreement import with_interval

    for x, y, value in (([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], 1.0), ([1, 2, 3, 4, 5], [9, 7, 5, 3, 1], -1.0)):
        assert stats.pearsonr(x, y).statistic == pytest.approx(value)
        for found in (pearson(x, y), spearman(x, y)):
            assert found.value == pytest.approx(value) and found.interval is None and found.low is None
            assert with_interval(found) == f"{value:+.2f}"
    almost = pearson([1, 2, 3, 4, 5], [2, 4, 6, 8, 11])
    assert almost.value < 1 and almost.interval == pytest.approx(stats.pearsonr([1, 2, 3, 4, 5], [2, 4, 6, 8, 11]).confidence_interval(0.95), abs=1e-10)


def test_metrics_declare_which_way_is_more_bias() -> None:
    assert kind_of(Result(key="", model="", wordset="", metric="weat", meta=value_of("weat"))).bias_sign == 1
    assert kind_of(Result(key="", model="", wordset="", metric="crows", meta=value_of("crows"))).bias_sign == 1  # 50 = no bias
    for lower in ("jss", "jss-mixture", "ect"):  # 100 (1) is no bias: lower is more
        assert kind_of(Result(key="", model="", wordset="", metric=lower, meta=value_of(lower))).bias_sign == -1
    for none in ("mac", "analogy", "probe"):  # no reference: the number says nothing of how biased
        assert kind_of(Result(key="", model="", wordset="", metric=none, meta=value_of(none))).bias_sign is None
    from bias.core.interfaces import Metric

    assert Metric.value.more_biased == ""  # derived from the reference unless declared


MODELS = ("hf:bert-a", "hf:bert-b", "word2vec:c.bin")
TESTS = ("en/weat1", "en/weat2", "en/weat3", "en/weat6", "en/weat7")
# (metric, params): WEAT, SEAT at its two levels, a JSS (lower is more bias) and MAC (no direction).
METHODS = (("weat", {}), ("seat", {"level": "sentence"}), ("seat", {"level": "word"}), ("jss", {}), ("mac", {}))


def hand_results(seed: int = 3) -> list[Result]:
    rng = np.random.default_rng(seed)
    out = []
    bias = {(m, t): rng.normal() for m in MODELS for t in TESTS}
    for metric, params in METHODS:
        for m in MODELS:
            for t in TESTS:
                if metric == "jss" and t == "en/weat7":
                    continue  # JSS did not measure this test: the cells of its pairs are fewer
                truth = bias[(m, t)]
                if metric == "jss":
                    value, p = 100 - 10 * (truth + 3) - 2 * rng.random(), float(rng.uniform(0, 0.002))
                elif metric == "mac":
                    value, p = 1 + 0.1 * rng.normal(), None
                else:
                    value, p = truth + 0.5 * rng.normal(), float(10 ** -rng.uniform(0.5, 6))
                key = f"{metric}-{params.get('level', '')}-{m}-{t}"
                out.append(Result(key=key, model=m, wordset=t, metric=metric, effect_size=float(value), p_value=p,
                                  params={"ddof": 1, **params}, seed=0, meta=value_of(metric)))
    return out


def holm_by_hand(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def expected(results: list[Result]) -> dict[tuple[str, str], dict[str, tuple[int, float, float]]]:
    """Oriented scores and Holm significance computed here, correlated by scipy."""
    with_p = [r for r in results if r.p_value is not None]
    significant = {r.key: h < 0.05 for r, h in zip(with_p, holm_by_hand([r.p_value for r in with_p]))}
    label = {("weat", ""): "WEAT", ("seat", "sentence"): "s-SEAT", ("seat", "word"): "w-SEAT", ("jss", ""): "JSS"}
    scores: dict[str, dict[tuple[str, str], tuple[float, bool]]] = {}
    for r in results:
        if r.metric == "mac":
            continue
        oriented = -(r.effect_size - 100) if r.metric == "jss" else r.effect_size
        scores.setdefault(label[(r.metric, r.params.get("level", ""))], {})[(r.model, r.wordset)] = (oriented, significant[r.key])
    out = {}
    names = list(scores)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = [c for c in scores[a] if c in scores[b]]
            out[(a, b)] = {}
            for subset, cells in (("all", shared), ("significant", [c for c in shared if scores[a][c][1] and scores[b][c][1]])):
                x = [scores[a][c][0] for c in cells]
                y = [scores[b][c][0] for c in cells]
                r = stats.pearsonr(x, y).statistic if len(cells) >= 3 else float("nan")
                rho = stats.spearmanr(x, y).statistic if len(cells) >= 3 else float("nan")
                out[(a, b)][subset] = (len(cells), r, rho)
    return out


def test_agreement_of_a_run_matches_scipy() -> None:
    results = hand_results()
    found = agreement(build(results))
    assert found.methods == ["WEAT", "s-SEAT", "w-SEAT", "JSS"]
    assert "mac" in found.left_out
    want = expected(results)
    assert [(p.first, p.second) for p in found.pairs] == list(want)
    some_significant_pairs = 0
    for p in found.pairs:
        for subset in ("all", "significant"):
            n, r, rho = want[(p.first, p.second)][subset]
            assert p.pearson[subset].n == n, (p.first, p.second, subset)
            if n >= 3:
                assert p.pearson[subset].value == pytest.approx(r, abs=1e-12)
                assert p.spearman[subset].value == pytest.approx(rho, abs=1e-12)
                some_significant_pairs += subset == "significant"
            else:
                assert p.pearson[subset].value is None
    assert some_significant_pairs >= 2  # the fixture exercises the significant-only subset
    jss_pairs = [p for p in found.pairs if "JSS" in (p.first, p.second)]
    assert {p.pearson["all"].n for p in jss_pairs} == {len(MODELS) * (len(TESTS) - 1)}
    # JSS falls as the bias grows, so it correlates positively with the others only once oriented.
    assert all(p.pearson["all"].value > 0 for p in jss_pairs)


def test_scores_are_oriented_seeds_averaged_and_results_without_a_value_left_out() -> None:
    """Each cell's oriented score is sign * (value - reference), the mean over a method's seeds (a
    seed is no method of its own); refused results and values that are not finite do not enter."""
    import attrs

    results = hand_results()
    extra = [attrs.evolve(r, key=r.key + "-seed1", seed=1, params={**r.params, "seed": 1}, effect_size=r.effect_size + 0.5)
             for r in results if r.metric == "weat"]
    refused = [attrs.evolve(results[0], key="refused", wordset="en/weat-new", status="refused", effect_size=None, p_value=None),
               attrs.evolve(results[0], key="nan", wordset="en/weat-nan", effect_size=float("nan")),
               attrs.evolve(results[0], key="refused-with-a-number", wordset="en/weat-refused", status="refused")]
    found = agreement(build(results + extra + refused))
    assert found.methods == ["WEAT", "s-SEAT", "w-SEAT", "JSS"]
    for r in results:
        if r.metric == "weat":
            assert found.scores["WEAT"][(r.model, r.wordset)].oriented == pytest.approx(r.effect_size + 0.25, abs=1e-12)
        if r.metric == "jss":
            score = found.scores["JSS"][(r.model, r.wordset)]
            assert score.oriented == pytest.approx(100 - r.effect_size, abs=1e-12) and score.value == r.effect_size
    assert not any(cell[1] in ("en/weat-new", "en/weat-nan", "en/weat-refused") for cell in found.scores["WEAT"])


def test_the_notes_name_each_shift_and_flip_and_one_method_is_refused() -> None:
    from bias.core.errors import BiasError
    from bias.core.reports.agreement import notes

    found = agreement(build(hand_results()))
    assert notes(found)[1] == (
        "Scores are oriented so that larger is more bias: the value minus the no-bias reference (JSS 100), "
        "sign flipped for JSS (lower is more bias)."
    )
    assert notes(found)[-1] == "Not compared: mac, its MAC says nothing about how biased a model is (no direction declared)."
    from bias.core.reports.agreement import to_latex

    rows = [line for line in to_latex(found).splitlines() if line.endswith("\\\\") and "&" in line][1:]
    assert rows[0].startswith("WEAT \\textbar{} s-SEAT & all & ") and rows[1].startswith(" & significant & ")
    two = agreement(build([r for r in hand_results() if r.metric in ("weat", "jss")]))
    assert two.methods == ["WEAT", "JSS"] and [(p.first, p.second) for p in two.pairs] == [("WEAT", "JSS")]
    with pytest.raises(BiasError, match="this run has only WEAT"):
        agreement(build([r for r in hand_results() if r.metric in ("weat", "mac")]))


def test_tables_figure_and_html(tmp_path: Path) -> None:
    results = hand_results()
    report = build(results, title="Agreement <grid>")
    found = agreement(report)
    written = write_report(report, tmp_path, ("md", "csv", "tex", "png", "html"), agreement=found)
    names = {p.name for p in written}
    assert {"agreement.md", "agreement.csv", "agreement.tex", "agreement.png", "report.html"} <= names
    md = (tmp_path / "agreement.md").read_text()
    assert "| WEAT \\| s-SEAT | all |" in md and "Holm-adjusted p < 0.05" in md and "JSS (lower is more bias)" in md
    assert "&lt;grid>" in md and "![Scores of each pair of methods](agreement.png)" in md
    rows = list(csv.DictReader(io.StringIO((tmp_path / "agreement.csv").read_text())))
    assert len(rows) == 2 * len(found.pairs)
    first = rows[0]
    x = [found.scores["WEAT"][c].oriented for c in found.cells("WEAT", "s-SEAT", "all")]
    y = [found.scores["s-SEAT"][c].oriented for c in found.cells("WEAT", "s-SEAT", "all")]
    assert (first["method_1"], first["method_2"], first["scores"]) == ("WEAT", "s-SEAT", "all")
    assert float(first["pearson_r"]) == pytest.approx(stats.pearsonr(x, y).statistic)
    assert float(first["pearson_low"]) == pytest.approx(stats.pearsonr(x, y).confidence_interval(0.95).low)
    tex = (tmp_path / "agreement.tex").read_text()
    assert "\\toprule" in tex and "WEAT \\textbar{} s-SEAT" in tex and "\\%" in tex
    if shutil.which("pdflatex") or os.environ.get("CI") == "true":
        document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + tex + "\\end{document}\n"
        (tmp_path / "a.tex").write_text(document, encoding="utf-8")
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "a.tex"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]
    png = (tmp_path / "agreement.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    html = (tmp_path / "report.html").read_text()
    assert 'id="agreement"' in html and "Spearman rho [95% CI]" in html and 'alt="agreement"' in html


def _cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": str(columns), "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env, timeout=300)


def test_command_line(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    for r in hand_results():
        store.append(r)
    proc = _cli("report", str(tmp_path), "--agreement", "--format", "md,png")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "Agreement between methods" in out and "significant" in out and "Not compared: mac" in out
    want = expected(hand_results())[("WEAT", "s-SEAT")]["all"]
    assert f"{want[1]:+.2f}" in out
    assert (tmp_path / "agreement.png").is_file() and (tmp_path / "agreement.md").is_file()
    assert not (tmp_path / "agreement.tex").exists()  # the formats asked for only


@pytest.mark.slow
def test_readme_grid_example_prints_the_readme_table(tmp_path: Path) -> None:
    """`examples/agreement.toml` (three layers of the shipped MiniLM, six tests, three methods): the
    README's table is what `bias report --agreement` prints at 80 columns, and its WEAT | w-SEAT row
    is scipy's Pearson and Spearman over the run's 18 (model, test) cells."""
    root = Path(__file__).resolve().parents[1]
    env_cache = {"BIAS_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "bias.cli.app", "run", str(root / "examples" / "agreement.toml"), "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **env_cache}, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = [Result.from_dict(json.loads(line)) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    cell = {(r.model, r.wordset, r.metric, r.params.get("level")): r.effect_size for r in rows}
    models = sorted({r.model for r in rows})
    tests = sorted({r.wordset for r in rows})
    assert len(models) == 3 and len(tests) == 6
    weat = [cell[(m, t, "weat", None)] for m in models for t in tests]
    word = [cell[(m, t, "seat", "word")] for m in models for t in tests]
    r, rho = stats.pearsonr(weat, word).statistic, stats.spearmanr(weat, word).statistic
    readme = (root / "README.md").read_text(encoding="utf-8")
    start = readme.index("```text", readme.index("`examples/agreement.toml` runs"))
    shown = [line.rstrip() for line in readme[start + len("```text\n") : readme.index("```", start + 3)].rstrip().splitlines()]
    assert any(line.startswith(" WEAT | w-SEAT   all           18   " + f"{r:+.2f} [") and f"{rho:+.2f} [" in line for line in shown)
    proc = _cli("report", str(tmp_path / "run"), "--agreement", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    printed = [line.rstrip() for line in proc.stdout.splitlines()]
    assert shown == printed[: len(shown)]
