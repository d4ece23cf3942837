"""Reports from a stored results file: golden structure of every table, corrected p-values that match
the definitions, escaped and compilable LaTeX, figures in both formats, damaged lines reported."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from fixtures.values import value_of
from bias.core.model import Result
from bias.core.statistics.multiple_testing import benjamini_hochberg, holm
from bias.core.reports import build, load_report, parse_formats, to_csv, to_markdown, write_report
from bias.core.reports.latex import escape, standalone, to_latex
from bias.core.runs.results import ResultStore

MODELS = ("word2vec:planted_v1&co.bin", "fasttext:cc.nl.300.bin")
TESTS = ("en/weat6", "en/weat7", "nl/weat_8%")


def stored_results() -> list[Result]:
    out = []
    p_values = iter([0.001, 0.02, 0.3, 0.04, 0.0004, 0.6])
    for i, model in enumerate(MODELS):
        for j, test in enumerate(TESTS):
            d = 1.2 - 0.5 * i - 0.4 * j
            out.append(
                Result(
                    key=f"k{i}{j}", model=model, wordset=test, metric="weat", effect_size=d, p_value=next(p_values),
                    figures={"ci_low": d - 0.3, "ci_high": d + 0.25, "ci_level": 0.95, "ci_method": "bca", "ci_resamples": 2000},
                    convention={"method": "exact", "permutations": 12870, "ddof": 1, "alternative": "greater"},
                    sizes={"X": 8, "Y": 8, "A": 8, "B": 8}, params={"ddof": 1}, seed=0, meta=value_of("weat"),
                )
            )
    out.append(Result(key="r", model=MODELS[0], wordset="en/weat9", metric="weat", status="refused", reason="set Y lost 5 of 8 words"))
    out.append(Result(key="f", model=MODELS[1], wordset="en/weat9", metric="weat", status="failed", reason="RuntimeError: boom"))
    return out


@pytest.fixture()
def run_folder(tmp_path):
    store = ResultStore(tmp_path)
    results = stored_results()
    for r in results[:3]:
        store.append(r)
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write('{"key": "broken", "model": \n')  # a damaged line in the middle: line 4
    for r in results[3:]:
        store.append(r)
    return tmp_path


COLUMNS = ["Model", "Test", "Metric", "Value", "95% CI", "p", "p (Holm)", "p (BH)", "Convention", "X/Y/A/B", "Lost", "Status"]


def test_report_structure_and_corrected_p(run_folder):
    report = load_report(run_folder)
    assert [c.label for c in report.columns()] == COLUMNS
    assert len(report.results) == 8 and report.damaged == ["line 4: " + report.damaged[0].split(": ", 1)[1]]
    ok = [r for r in report.results if r.status == "ok"]
    p = [r.p_value for r in ok]
    assert [report.adjusted[r.key].holm for r in ok] == pytest.approx(list(holm(p)))
    assert [report.adjusted[r.key].bh for r in ok] == pytest.approx(list(benjamini_hochberg(p)))
    rows = report.rows()
    assert rows[0]["p_holm"] == "0.0050**" and rows[0]["ci"] == "[+0.900, +1.450]" and rows[0]["effect_size"] == "d=+1.200"
    refused = rows[[r.key for r in report.results].index("r")]  # rows follow the models, then the tests
    assert refused["status"].startswith("refused: set Y") and refused["p_holm"] == "-"
    by_model = build(report.results, family="model")
    first = [r.p_value for r in ok if r.model == MODELS[0]]
    assert by_model.adjusted["k00"].holm == pytest.approx(holm(first)[0]) and by_model.adjusted["k00"].size == 3
    notes = " ".join(report.notes())
    for fragment in ("Holm-Bonferroni", "Benjamini-Hochberg", "Family: run: run (6 tests)", "* p < 0.05", "bootstrap"):
        assert fragment in notes


def test_settings_column_appears_only_when_parameters_vary():
    results = stored_results()
    assert "Settings" not in [c.label for c in build(results).columns()]
    import attrs

    varied = [attrs.evolve(r, params={"ddof": i % 2}) for i, r in enumerate(results)]
    report = build(varied)
    assert [c.label for c in report.columns()][3] == "Settings" and report.rows()[1]["settings"] == "ddof=1"


def test_csv_and_markdown(run_folder):
    report = load_report(run_folder)
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert len(rows) == 8
    assert list(rows[0])[:12] == ["model", "wordset", "metric", "settings", "status", "effect_size", "ci_low", "ci_high", "ci_level", "ci_method", "ci_resamples", "p_value"]
    assert {"p_holm", "p_bh", "family", "family_size", "key"} <= set(rows[0])
    assert float(rows[0]["p_holm"]) == pytest.approx(report.adjusted["k00"].holm) and next(r for r in rows if r["key"] == "f")["p_holm"] == ""
    md = to_markdown(report).splitlines()
    assert md[0] == "# Bias report"
    header = next(i for i, line in enumerate(md) if line.startswith("| Model"))
    assert md[header] == "| " + " | ".join(COLUMNS) + " |" and md[header + 1] == "|" + "|".join("---" for _ in COLUMNS) + "|"
    table = [line for line in md[header + 2 :] if line.startswith("| ")]
    assert len(table) == 8 and all(line.count(" | ") == len(COLUMNS) - 1 for line in table)
    text = "\n".join(md)
    assert "Notes:" in text and "## Damaged lines of results.jsonl (skipped)" in text and "- line 4:" in text
    assert "8 experiment(s): 6 ok, 1 refused, 1 failed." in text


def test_latex_is_escaped_and_structured(run_folder):
    tex = to_latex(load_report(run_folder))
    assert escape("a_b & c% $x$ #1 {y} ~^\\") == r"a\_b \& c\% \$x\$ \#1 \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}"
    unbroken = tex.replace("\\allowbreak{}", "")  # long words of the notes may break after a separator
    assert "planted\\_v1\\&co.bin" in unbroken and "weat\\_8\\%" in tex
    lines = tex.splitlines()
    assert lines.index("\\toprule") < lines.index("\\midrule") < lines.index("\\bottomrule")
    body = lines[lines.index("\\midrule") + 1 : lines.index("\\bottomrule")]
    assert len(body) == 6 and all(line.endswith("\\\\") and line.count(" & ") == 6 for line in body)
    assert "$0.0050$\\textsuperscript{**}" in body[0] and "$+1.20$" in body[0]
    assert "2 experiment(s) refused or failed" in tex and "\\textsuperscript{*}\\,$p<0.05$" in tex
    for env in ("table*" if "\\begin{table*}" in tex else "table", "tabular", "minipage"):
        assert tex.count(f"\\begin{{{env}}}") == tex.count(f"\\end{{{env}}}") == 1
    assert "\\newcommand" not in tex and "\\usepackage" not in tex.split("\n", 1)[1]
    assert "planted\\_v1\\&co &" in tex and "Models: " in tex  # short names, the legend in the notes
    stripped = tex.replace("\\{", "").replace("\\}", "")
    assert stripped.count("{") == stripped.count("}")
    if shutil.which("pdflatex"):
        folder = run_folder / "tex"
        folder.mkdir()
        (folder / "doc.tex").write_text(standalone(load_report(run_folder)))
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=folder, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-2000:]


def test_figures_in_png_and_svg_are_reproducible(run_folder):
    report = load_report(run_folder)
    written = write_report(report, run_folder, parse_formats(["png,svg"]))
    names = sorted(p.name for p in written)
    # no per-item scores here: no word plot; en/ and nl/ tests: a languages panel
    assert names == sorted(f"{n}.{ext}" for n in ("forest", "heatmap", "languages", "p-vs-effect") for ext in ("png", "svg"))
    for path in written:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        else:
            root = ET.parse(path).getroot()
            assert root.tag.endswith("svg")
    first = (run_folder / "heatmap.svg").read_bytes()
    write_report(report, run_folder, ("svg",))
    assert (run_folder / "heatmap.svg").read_bytes() == first
    heat = (run_folder / "heatmap.svg").read_text()
    assert "+1.20**" in heat or "+1.20" in heat  # cells carry the value (text may be converted to paths)


def test_format_names():
    assert parse_formats(["all"]) == ("md", "csv", "tex", "png", "svg", "html")
    assert parse_formats(["md,csv", "md"]) == ("md", "csv")
    from bias.core.errors import BiasError

    with pytest.raises(BiasError, match="pgn") as err:
        parse_formats(["pgn"])
    assert "png" in err.value.hint


def test_bias_report_command_warns_about_damaged_lines(run_folder):
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "report", str(run_folder), "--format", "md,csv,tex", "--family", "model"],
        capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "COLUMNS": "250"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "line 4" in proc.stderr and "cc.nl.300 WEAT" in proc.stdout
    assert (run_folder / "report.md").exists() and (run_folder / "results.csv").exists() and (run_folder / "results.tex").exists()
    assert "Family: model" in (run_folder / "report.md").read_text()
    bad = subprocess.run([sys.executable, "-m", "bias.cli.app", "report", str(run_folder), "--format", "pdf"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "pdf" in bad.stderr and "Traceback" not in bad.stderr


def test_tests_are_listed_in_natural_order_grouped_by_model():
    """weat2 before weat10 (as people number tests), each model's rows together, metrics of one test
    in the order they ran."""
    made = []
    for model in ("m:b", "m:a"):
        for test in ("en/weat10", "en/weat2", "en/weat1"):
            for metric in ("weat", "rnd"):
                made.append(Result(key=f"{model}{test}{metric}", model=model, wordset=test, metric=metric, effect_size=0.1))
    shown = [(r.model, r.wordset, r.metric) for r in build(made).results]
    expected = [(m, f"en/weat{n}", metric) for m in ("m:b", "m:a") for n in (1, 2, 10) for metric in ("weat", "rnd")]
    assert shown == expected


def test_no_p_value_figure_for_results_without_p_values(tmp_path):
    """Metrics that give no p-value (BBQ, RND, ...) get no p-value figure: it would be an empty frame."""
    store = ResultStore(tmp_path)
    for i, test in enumerate(("en/weat1", "en/weat2")):
        store.append(Result(key=f"k{i}", model="m", wordset=test, metric="rnd", effect_size=0.1 * (i + 1)))
    written = {p.name for p in write_report(load_report(tmp_path), tmp_path, parse_formats(["png"]))}
    assert "forest.png" in written and "p-vs-effect.png" not in written


def test_the_p_floor_note_is_said_only_for_a_p_at_its_floor_and_no_p_values_are_explained():
    floor = 1 / 10_000
    above = Result(key="a", model="m", wordset="en/weat6", metric="weat", status="ok", effect_size=0.5,
                   p_value=0.03, convention={"p_floor": floor})
    at = Result(key="b", model="m", wordset="en/weat7", metric="weat", status="ok", effect_size=0.9,
                p_value=floor, convention={"p_floor": floor})
    assert not any("smallest p a sampled test" in n for n in build([above]).notes())
    assert any(n.startswith("p <=1.0e-04: the smallest p a sampled test") for n in build([above, at]).notes())
    refused = Result(key="c", model="m", wordset="en/weat8", metric="bbq", status="refused", reason="x")
    assert "No p-values: no result." in build([refused]).notes()
