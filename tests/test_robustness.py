"""`bias report --robustness`: specification curves of one test across design choices.

The table's numbers are checked against a hand computation on results with known values and
p-values (Holm written out from its textbook definition here); the command end to end on a run of
the planted word2vec model; the figure file; the error when nothing varies; and the word-set fields
that mark variants of one test.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.model import Result
from bias.core.reports import build
from bias.core.reports.robustness import curves, robust_curves
from bias.core.reports.robustness_report import to_csv, to_markdown, write_robustness

from fixtures.values import value_of
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS
from test_cli import wordset_toml


def result(key, wordset, metric, effect, p, *, model="word2vec:m.bin", params=None, meta=None, status="ok"):
    return Result(
        key=key, model=model, wordset=wordset, metric=metric, status=status, effect_size=effect, p_value=p,
        params=params or {}, seed=0, meta={"language": "en", **value_of(metric), **(meta or {})},
    )


def holm_by_hand(p):
    """Holm (1979): sort ascending, multiply the i-th smallest (0-based) by m - i, keep the running maximum, cap at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


NAMES = {"concept": "career", "descriptor": "names"}
TERMS = {"concept": "career", "descriptor": "terms"}
# (wordset, metric, params, model options, effect, p): six specifications of one concept.
SPECS = [
    ("en/a", "weat", {}, "[layer=-1]", 0.8, 0.001),
    ("en/a", "seat", {"level": "sentence"}, "[layer=-1]", -0.3, 0.2),
    ("en/a", "seat", {"level": "word"}, "[layer=3]", 1.2, 0.0001),
    ("en/b", "weat", {}, "[layer=3]", 0.5, 0.01),
    ("en/b", "seat", {"level": "sentence"}, "[layer=-1]", 0.1, 0.6),
    ("en/b", "seat", {"level": "word"}, "[layer=3]", 0.9, 0.004),
]


def synthetic():
    rows = []
    for i, (ws, metric, params, options, effect, p) in enumerate(SPECS):
        meta = NAMES if ws == "en/a" else TERMS
        rows.append(result(f"k{i}", ws, metric, effect, p, model=f"hf:mini{options}", params=params, meta=meta))
    rows.append(result("solo", "en/other", "weat", 0.4, 0.03, model="hf:mini[layer=-1]"))  # one specification only
    rows.append(result("refused", "en/a", "weat", None, None, model="hf:mini[layer=1]", meta=NAMES, status="refused"))
    rows.append(result("crows", "en/a", "crows", 61.0, 0.02, model="hf:mini[layer=-1]", meta=NAMES))  # a % is another scale
    rows.append(result("other-model", "en/a", "weat", 0.7, 0.5, model="hf:other[layer=-1]", meta=NAMES))
    return rows


def test_table_numbers_match_a_hand_computation():
    rows = synthetic()
    report = build(rows, family="run")
    found = {(c.concept, c.model, c.scale.label): c for c in curves(report)}
    career = found[("en/career", "mini", "d")]
    # Every result with a p-value is one hypothesis of the run's family.
    ps = [r.p_value for r in rows if r.p_value is not None]
    holm = dict(zip([r.key for r in rows if r.p_value is not None], holm_by_hand(ps)))
    assert holm["k2"] == pytest.approx(9 * 0.0001)  # the smallest of nine p-values
    effects = [s[4] for s in SPECS]
    significant = [holm[f"k{i}"] < 0.05 for i in range(6)]
    assert career.n == 6
    assert career.median == pytest.approx(float(np.median(effects))) == pytest.approx(0.65)
    assert (career.low, career.high) == (pytest.approx(-0.3), pytest.approx(1.2))
    assert career.same_sign_share == pytest.approx(5 / 6)
    assert career.significant_share == pytest.approx(sum(significant) / 6)
    assert career.significant_share == pytest.approx(3 / 6)  # 0.0001, 0.001, 0.004 survive nine tests; 0.01 (x6) does not
    # Sorted by value; the choices that vary, in display order; variants of the concept side by side.
    assert [s.effect for s in career.specifications] == sorted(effects)
    assert career.dimensions == ["test", "metric", "level", "layer"]
    top = career.specifications[-1]
    assert top.choices == {"test": "names (en/a)", "metric": "seat", "level": "word", "layer": "3"}
    assert career.specifications[0].choices == {"test": "names (en/a)", "metric": "seat", "level": "sentence", "layer": "-1"}
    weat_terms = next(s for s in career.specifications if s.result.key == "k3")
    assert weat_terms.choices == {"test": "terms (en/b)", "metric": "weat", "layer": "3"}  # WEAT has no level
    # The lone test, the % scale and the other model are curves of their own; the refused result is in none.
    assert found[("en/other", "mini", "d")].n == 1
    assert found[("en/career", "mini", "%")].n == 1
    assert found[("en/career", "other", "d")].n == 1
    assert sum(c.n for c in found.values()) == 9
    assert [c.n for c in robust_curves(report)] == [6]
    # The CSV and Markdown say the same numbers.
    record = next(csv.DictReader(io.StringIO(to_csv(robust_curves(report)))))
    assert int(record["specifications"]) == 6 and float(record["median"]) == pytest.approx(0.65)
    assert float(record["same_sign_share"]) == pytest.approx(5 / 6) and float(record["significant_share"]) == pytest.approx(0.5)
    assert float(record["min"]) == pytest.approx(-0.3) and float(record["max"]) == pytest.approx(1.2)
    md = to_markdown(report, robust_curves(report))
    assert "| en/career | mini | d | 6 | 83% | 50% | +0.65 | -0.30 to +1.20 | test, metric, level, layer |" in md


def test_sign_is_taken_against_the_metrics_no_bias_value():
    rows = [result(f"c{i}", "en/pairs", "crows", v, 0.5, params={"lowercase": lc}) for i, (v, lc) in
            enumerate([(55.0, "no"), (60.0, "yes"), (45.0, "no"), (58.0, "yes")])]
    curve = robust_curves(build(rows))[0]
    assert curve.median == pytest.approx(56.5)
    assert curve.same_sign_share == pytest.approx(3 / 4)  # 45% is below 50%, the others above
    assert curve.significant_share == 0.0


def test_no_test_with_two_specifications_is_a_user_error():
    rows = [result("a", "en/x", "weat", 0.5, 0.01), result("b", "en/y", "weat", 0.2, 0.3)]
    with pytest.raises(BiasError) as err:
        robust_curves(build(rows))
    assert "two or more specifications" in err.value.message and err.value.exit_code == 2
    with pytest.raises(BiasError):
        robust_curves(build([result("r", "en/x", "weat", None, None, status="refused")]))


def test_figure_is_a_png_with_content(tmp_path):
    report = build(synthetic())
    found, written = write_robustness(report, tmp_path, ("png", "svg", "md", "csv"))
    names = sorted(p.name for p in written)
    assert names == sorted(["robustness-en-career-mini.png", "robustness-en-career-mini.svg", "robustness.md",
                            "robustness.csv", "robustness-specifications.csv"])
    png = (tmp_path / "robustness-en-career-mini.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 600 < width < 3000 and 400 < height < 3000
    svg = (tmp_path / "robustness-en-career-mini.svg").read_text()
    for label in ("test: names (en/a)", "level: word", "layer: 3", "specification, sorted by value"):
        assert label in svg, label
    rows = list(csv.DictReader(io.StringIO((tmp_path / "robustness-specifications.csv").read_text())))
    assert [float(r["effect_size"]) for r in rows] == sorted(s[4] for s in SPECS)


# --- end to end on a run of the planted word2vec model --------------------------------------------


def bias_cli(*args: str, cwd: Path | None = None, columns: int = 80) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": str(columns), "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def wordset_file(path: Path, descriptor: str) -> Path:
    """The planted association test, marked as one descriptor variant of the concept 'flowers-pleasant'."""
    return wordset_toml(path, extra=f'concept = "flowers-pleasant"\ndescriptor = "{descriptor}"')


def test_cli_end_to_end_on_a_tiny_run(planted_files, tmp_path):
    wordset_file(tmp_path / "names.toml", "names")
    wordset_file(tmp_path / "terms.toml", "terms")
    (tmp_path / "grid.toml").write_text(
        f"""title = "tiny robustness"
out = "run"
wordsets = ["names.toml", "terms.toml"]
metrics = ["weat", {{ name = "seat", level = "sentence" }}]
models = ["word2vec:{planted_files.word2vec_bin}"]
[params]
bootstrap = 200
[grid]
ddof = [0, 1]
""",
        encoding="utf-8",
    )
    proc = bias_cli("run", str(tmp_path / "grid.toml"))
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and all(x["status"] == "ok" for x in lines)
    assert {x["meta"]["concept"] for x in lines} == {"flowers-pleasant"}
    assert {x["meta"]["descriptor"] for x in lines} == {"names", "terms"}

    proc = bias_cli("report", str(run), "--robustness")
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    assert "en/flowers-pleasant" in proc.stdout
    pngs = list(run.glob("robustness-en-flowers-pleasant-*.png"))  # named by concept and model
    assert len(pngs) == 1, sorted(p.name for p in run.iterdir())
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pngs[0].stat().st_size > 10_000
    record = next(csv.DictReader(io.StringIO((run / "robustness.csv").read_text())))
    effects = [x["effect_size"] for x in lines]
    assert int(record["specifications"]) == 8
    assert float(record["median"]) == pytest.approx(float(np.median(effects)))
    assert float(record["min"]) == pytest.approx(min(effects)) and float(record["max"]) == pytest.approx(max(effects))
    assert float(record["same_sign_share"]) == pytest.approx(np.mean(np.array(effects) > 0) if np.median(effects) > 0 else np.mean(np.array(effects) < 0))
    assert record["choices_varied"] == "test; metric; ddof"
    assert not (run / "forest.png").exists()  # --robustness writes its own outputs only


def test_cli_refuses_a_run_without_variation(planted_files, tmp_path):
    ws = wordset_file(tmp_path / "names.toml", "names")
    out = tmp_path / "run"
    proc = bias_cli("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    proc = bias_cli("report", str(out), "--robustness")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "No test in this run has two or more specifications" in proc.stderr + proc.stdout


# --- word-set fields marking variants ----------------------------------------------------------------


def test_variant_fields_are_checked(tmp_path):
    from bias.core.data.wordsets import validate_toml_file

    good = wordset_file(tmp_path / "good.toml", "names")
    assert not [p for p in validate_toml_file(good) if p.severity != "note"]
    text = good.read_text()
    (tmp_path / "bad.toml").write_text(text.replace('concept = "flowers-pleasant"', 'concept = "Flowers and pleasant words!"'))
    problems = validate_toml_file(tmp_path / "bad.toml")
    assert any(p.field == "concept" and p.severity == "error" for p in problems)
    (tmp_path / "alone.toml").write_text(text.replace('concept = "flowers-pleasant"\n', ""))
    problems = validate_toml_file(tmp_path / "alone.toml")
    assert any(p.field == "descriptor" and p.severity == "warning" and "concept" in p.message for p in problems)


def test_english_gender_career_variants_differ_only_in_their_targets():
    from bias import registry

    names, terms = registry.load_wordset("en/weat6"), registry.load_wordset("en/gender-career-terms")
    assert (names.meta.concept, names.meta.descriptor) == ("gender-career", "names")
    assert (terms.meta.concept, terms.meta.descriptor) == ("gender-career", "terms")
    assert names.A.words == terms.A.words and names.B.words == terms.B.words
    assert not set(names.X.words) & set(terms.X.words)
    assert len(terms.X.words) == len(terms.Y.words) == 8
    assert "bias-framework" in terms.meta.source and terms.meta.licence


def test_a_parameter_left_unset_takes_the_models_option_and_files_show_by_name():
    rows = [
        result("a", "en/x", "seat", 0.2, 0.5, model="hf:m[layer=3]", params={"layer": None, "templates": "/data/t/mine.toml"}),
        result("b", "en/x", "seat", 0.4, 0.5, model="hf:m[layer=3]", params={"layer": 5, "templates": "/data/t/mine.toml"}),
        result("c", "en/x", "seat", 0.6, 0.5, model="hf:m[layer=-1]", params={"layer": None, "templates": "en/seat-templates"}),
    ]
    curve = robust_curves(build(rows))[0]
    assert curve.dimensions == ["layer", "templates"]
    assert [s.choices for s in curve.specifications] == [
        {"layer": "3", "templates": "mine"}, {"layer": "5", "templates": "mine"}, {"layer": "-1", "templates": "en/seat-templates"},
    ]


def test_one_concept_on_one_model_on_two_scales_gets_two_figures(tmp_path):
    """WEAT's d and RND on one test and model are two curves (two scales): each has its own file, and
    robustness.md shows each curve's own image."""
    rows = [result("w1", "en/x", "weat", 0.5, 0.01), result("w2", "en/y", "weat", 0.2, 0.3),
            result("r1", "en/x", "rnd", 0.05, None), result("r2", "en/y", "rnd", -0.01, None)]
    for r in rows:
        r.meta["concept"] = "career"
    found, written = write_robustness(build(rows), tmp_path, ("png", "md"))
    assert sorted(c.scale.label for c in found) == ["RND", "d"]
    pngs = sorted(p.name for p in written if p.suffix == ".png")
    assert pngs == ["robustness-en-career-m-d.png", "robustness-en-career-m-rnd.png"]
    md = (tmp_path / "robustness.md").read_text()
    d_part, rnd_part = md.split("## en/career on m (d)")[1].split("## en/career on m (RND)")
    assert "(robustness-en-career-m-d.png)" in d_part and "rnd.png" not in d_part
    assert "(robustness-en-career-m-rnd.png)" in rnd_part


def test_a_holm_p_exactly_at_alpha_is_not_significant():
    """Significant means Holm p < alpha: two p-values of 0.025 are both adjusted to exactly 0.05
    (2 x 0.025 is exact in binary), which is not below 0.05; just under it, both are."""
    rows = [result("a", "en/pairs", "weat", 0.4, 0.025, params={"ddof": "1"}),
            result("b", "en/pairs", "weat", 0.6, 0.025, params={"ddof": "0"})]
    curve = robust_curves(build(rows, family="run"))[0]
    assert [s.p_adjusted for s in curve.specifications] == [0.05, 0.05]
    assert not any(s.significant(0.05) for s in curve.specifications)
    assert curve.significant_share == 0.0
    below = [result("a", "en/pairs", "weat", 0.4, 0.0249, params={"ddof": "1"}),
             result("b", "en/pairs", "weat", 0.6, 0.0249, params={"ddof": "0"})]
    assert robust_curves(build(below, family="run"))[0].significant_share == 1.0
    # The boundary moves with the level asked for.
    assert robust_curves(build(rows, family="run"), alpha=0.06)[0].significant_share == 1.0


def test_significant_share_counts_every_specification_of_the_curve():
    """A specification without a p-value is not significant, but it is one of the curve's answers:
    two significant of four is 50%, not 100% of the two that have a p."""
    rows = [result("a", "en/pairs", "weat", 0.9, 0.001, params={"n": "1"}),
            result("b", "en/pairs", "weat", 0.8, 0.002, params={"n": "2"}),
            result("c", "en/pairs", "weat", 0.7, None, params={"n": "3"}),
            result("d", "en/pairs", "weat", 0.6, None, params={"n": "4"})]
    curve = robust_curves(build(rows, family="run"))[0]
    assert curve.n == 4 and curve.with_p == 2
    assert curve.significant_share == pytest.approx(2 / 4)
    none = [result(k, "en/pairs", "weat", v, None, params={"n": k}) for k, v in (("a", 0.1), ("b", 0.2))]
    assert robust_curves(build(none, family="run"))[0].significant_share is None


def test_same_sign_on_a_percent_scale_with_values_between_zero_and_the_reference():
    """CrowS-style values all lie above 0; the side that counts is that of 50%, the no-bias value."""
    values = [40.0, 45.0, 48.0, 52.0, 70.0]
    rows = [result(f"c{i}", "en/pairs", "crows", v, 0.5, params={"i": str(i)}) for i, v in enumerate(values)]
    curve = robust_curves(build(rows))[0]
    median = float(np.median(values))
    assert median == 48.0
    assert curve.same_sign_share == pytest.approx(sum((v < 50) == (median < 50) for v in values) / len(values)) == pytest.approx(3 / 5)


def test_choices_order_known_dimensions_then_others_alphabetically_then_the_seed():
    """Known dimensions in their fixed order, other parameters alphabetically, the seed last; only a
    file parameter (templates, corpus) is shortened to its name, any other string is shown whole."""
    import attrs

    rows = []
    for i, (seed, pooling, corpus, zeta, alpha_x, encoding) in enumerate([
        (0, "mean", "/d/a.txt", "1", "p", "x/y.z"), (1, "cls", "/d/b.txt", "2", "q", "u/v.w"),
    ]):
        r = result(f"k{i}", "en/x", "seat", 0.2 + i, 0.5,
                   params={"zeta": zeta, "pooling": pooling, "alpha_x": alpha_x, "corpus": corpus, "encoding": encoding})
        rows.append(attrs.evolve(r, seed=seed))
    curve = robust_curves(build(rows))[0]
    assert curve.dimensions == ["pooling", "corpus", "alpha_x", "encoding", "zeta", "seed"]
    assert curve.specifications[0].choices == {"pooling": "mean", "corpus": "a", "alpha_x": "p", "encoding": "x/y.z", "zeta": "1", "seed": "0"}
    assert curve.specifications[1].choices["seed"] == "1"
    unseeded = [attrs.evolve(r, seed=None) for r in rows]
    assert "seed" not in robust_curves(build(unseeded))[0].dimensions


def test_only_ok_results_with_a_finite_value_enter_a_curve_and_the_model_name_is_used():
    import attrs

    rows = [result("a", "en/x", "weat", 0.2, 0.5, params={"i": "1"}, meta={"model_name": "Mini BERT"}),
            result("b", "en/x", "weat", 0.4, 0.5, params={"i": "2"}, meta={"model_name": "Mini BERT"}),
            result("c", "en/x", "weat", 0.9, 0.5, params={"i": "3"}, meta={"model_name": "Mini BERT"}, status="refused"),
            result("d", "en/x", "weat", float("nan"), 0.5, params={"i": "4"}, meta={"model_name": "Mini BERT"}),
            result("e", "en/x", "weat", None, 0.5, params={"i": "5"}, meta={"model_name": "Mini BERT"})]
    (curve,) = robust_curves(build(rows))
    assert curve.model == "Mini BERT" and [s.result.key for s in curve.specifications] == ["a", "b"]
    bare = [attrs.evolve(r, meta=None) for r in rows[:2]]
    assert robust_curves(build(bare))[0].model == "m"  # word2vec:m.bin, by its base name


def test_two_files_of_the_same_name_are_two_tests():
    rows = [result("a", "/one/t.toml", "weat", 0.2, 0.5), result("b", "/two/t.toml", "weat", 0.4, 0.5)]
    (curve,) = robust_curves(build(rows))
    assert curve.dimensions == ["test"] and curve.tests == ["/one/t.toml", "/two/t.toml"]
    same = [result("a", "/one/t.toml", "weat", 0.2, 0.5, params={"i": "1"}), result("b", "/one/t.toml", "weat", 0.4, 0.5, params={"i": "2"})]
    assert robust_curves(build(same))[0].dimensions == ["i"]


def test_specification_records_rank_from_one_with_intervals_and_holm():
    import attrs

    from bias.core.reports.robustness_report import specification_records, specifications_csv

    rows = [attrs.evolve(result("a", "en/x", "weat", 0.6, 0.001, params={"i": "1"}), figures={"ci_low": 0.1, "ci_high": 0.9}),
            result("b", "en/x", "weat", 0.2, 0.2, params={"i": "2"})]
    found = robust_curves(build(rows, family="run"))
    records = specification_records(found)
    holm = holm_by_hand([0.001, 0.2])
    assert [(r["rank"], r["key"], r["i"]) for r in records] == [(1, "b", "2"), (2, "a", "1")]
    assert (records[1]["ci_low"], records[1]["ci_high"]) == (0.1, 0.9) and records[0]["ci_low"] is None
    assert [r["p_holm"] for r in records] == pytest.approx([holm[1], holm[0]])
    assert [r["significant"] for r in records] == [False, True]
    table = list(csv.DictReader(io.StringIO(specifications_csv(found))))
    assert table[0]["ci_low"] == "" and table[1]["ci_high"] == "0.9"
    md = to_markdown(build(rows, family="run"), found).splitlines()
    first, second = (next(line for line in md if line.startswith(f"| {k} | ")) for k in (1, 2))
    assert first.startswith("| 1 | 2 | ") and not first.endswith("* |")
    assert second.startswith("| 2 | 1 | ") and second.endswith("* |")  # significant after Holm


def test_a_specification_without_a_p_value_shows_a_dash():
    rows = [result("a", "en/x", "weat", 0.6, None, params={"i": "1"}), result("b", "en/x", "weat", 0.2, 0.3, params={"i": "2"})]
    report = build(rows, family="run")
    md = to_markdown(report, robust_curves(report)).splitlines()
    assert next(line for line in md if line.startswith("| 2 | ")).endswith("| +0.60 | - |")
    assert not next(line for line in md if line.startswith("| 1 | ")).endswith("| - |")


@pytest.mark.parametrize(("values", "ordered"), [
    (["3", "12", "-1"], ["-1", "3", "12"]),  # numbers numerically
    (["10", "9", "cls"], ["9", "10", "cls"]),  # not all numbers: as text, in natural order (9 before 10)
    (["mean", "3", "cls"], ["3", "cls", "mean"]),
    (["0.25", "mean", "0.5"], ["0.5", "0.25", "mean"]),  # not all numbers: natural order even for the numbers
])
def test_the_choice_panel_orders_numbers_numerically_and_text_alphabetically(values, ordered):
    from bias.core.reports.robustness_figure import _values

    rows = [result(f"k{i}", "en/x", "seat", 0.1 * i, 0.5, params={"layer": v}) for i, v in enumerate(values)]
    (curve,) = robust_curves(build(rows))
    assert _values(curve, "layer") == ordered


def test_write_robustness_makes_nested_folders_links_its_figure_and_may_write_again(tmp_path):
    report = build(synthetic(), family="run")
    folder = tmp_path / "a" / "b"
    found, written = write_robustness(report, folder, formats=("md", "svg", "png"))
    figure = next(p for p in written if p.suffix == ".png")
    assert f"]({figure.name})" in (folder / "robustness.md").read_text(encoding="utf-8")
    again, _ = write_robustness(report, folder, formats=("md", "png"))  # the folder exists now; one image format
    assert len(again) == len(found) == 1


def test_metrics_on_one_scale_share_a_curve_named_by_both():
    """WEAT's d and a metric declaring the same scale (here Hedges' g of a third party, shown with three
    digits) are one curve, labelled by the scale, named by both, with the first member's other
    declarations; a curve of that metric alone keeps its own label."""
    import attrs

    from bias.core.values import ValueKind
    from bias.plugins.metrics.weat import Weat

    weat = ValueKind.from_declared(Weat.value.declared())  # what a report reads back
    hedges = {"label": "g", "name": "Hedges' g", "scale": "d", "digits": 3, "reference": 0.0}

    def g(key, wordset, effect, p):
        r = result(key, wordset, "weat", effect, p)
        return attrs.evolve(r, metric="hedges", meta={**r.meta, "value": hedges})

    rows = [result("w1", "en/x", "weat", 0.1, 0.01), result("w2", "en/y", "weat", 0.2, 0.3), g("g1", "en/x", 0.4, 0.02)]
    for r in rows:
        r.meta["concept"] = "career"
    (curve,) = robust_curves(build(rows))
    assert curve.n == 3 and weat.scale_name == "d" and weat.digits == 2
    assert curve.scale == attrs.evolve(weat, label="d", name="effect size d; Hedges' g")
    md = to_markdown(build(rows), [curve])
    assert "\n## en/career on m\n" in md  # one curve of the concept on the model: no scale in its title
    rows = [g("g1", "en/x", 0.4, 0.02), g("g2", "en/y", 0.3, 0.2)]
    for r in rows:
        r.meta["concept"] = "career"
    (alone,) = robust_curves(build(rows))
    assert alone.scale == ValueKind(label="g", name="Hedges' g", scale="d", digits=3, reference=0.0)
