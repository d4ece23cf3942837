"""`bias compare`: pairing of two runs' results, the change column, significance marks, the files written."""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import pytest
from bias.core.reports.compare import compare, csv_text, markdown
from bias.core.errors import BiasError
from bias.core.model import REFUSED, Result
from bias.core.runs.results import ResultStore

from fixtures.in_process import completed

def result(model: str, wordset: str, metric: str = "weat", effect: float | None = 1.0, p: float | None = 0.001, seed: int = 0, **params) -> Result:
    return Result(
        key=f"{model}-{wordset}-{metric}-{seed}-{sorted(params.items())}", model=model, wordset=wordset, metric=metric,
        effect_size=effect, p_value=p, params={"ddof": 1, **params}, seed=seed,
    )


def write_run(folder: Path, results: list[Result]) -> Path:
    store = ResultStore(folder)
    for r in results:
        store.append(r)
    return folder


BEFORE = [
    result("w2v:orig", "en/weat6", effect=1.5, p=0.0004),
    result("w2v:orig", "en/weat7", effect=1.2, p=0.004),
    result("w2v:orig", "en/weat8", effect=0.9, p=0.03),
    result("w2v:orig", "en/debias-gender", metric="clustering", effect=0.99, p=None),
    result("w2v:orig", "en/weat9", effect=0.5, p=0.2),
]
AFTER = [
    result("w2v:debiased", "en/weat8", effect=0.2, p=0.4),
    result("w2v:debiased", "en/weat6", effect=-0.1, p=0.6),
    result("w2v:debiased", "en/weat7", effect=1.0, p=0.01),
    result("w2v:debiased", "en/debias-gender", metric="clustering", effect=0.97, p=None),
    result("w2v:debiased", "en/weat10", effect=0.3, p=0.3),
]


def test_results_are_paired_by_test_and_the_change_is_after_minus_before() -> None:
    table = compare(BEFORE, AFTER)
    rows = {(r.wordset, r.metric): r for r in table.rows}
    assert rows[("en/weat6", "weat")].change == pytest.approx(-1.6)
    assert rows[("en/weat6", "weat")].magnitude_change == pytest.approx(0.1 - 1.5)
    assert rows[("en/weat8", "weat")].after.effect_size == 0.2  # paired by name, not by position
    assert rows[("en/debias-gender", "clustering")].change == pytest.approx(-0.02)
    assert rows[("en/weat9", "weat")].after is None and rows[("en/weat10", "weat")].before is None
    assert table.before_model == "w2v:orig" and table.after_model == "w2v:debiased"
    assert any("one run only" in n for n in table.notes)
    # tests in natural order: weat9 before weat10
    assert [r.wordset for r in table.rows] == ["en/debias-gender", "en/weat6", "en/weat7", "en/weat8", "en/weat9", "en/weat10"]


def test_significance_marks_and_their_definition() -> None:
    text = markdown(compare(BEFORE, AFTER))
    # marks on Holm within each run: before 0.0004, 0.004, 0.03, 0.2 -> 0.0016, 0.012, 0.06, 0.2;
    # after 0.01, 0.3, 0.4, 0.6 -> 0.04, 0.9, 0.9, 0.9 (the same p `bias run` marks)
    assert "| en/weat6 | weat | +1.500** | -0.100 | -1.600 |" in text
    assert "| en/weat7 | weat | +1.200* | +1.000* | -0.200 |" in text
    assert "| en/weat8 | weat | +0.900 | +0.200 | -0.700 |" in text
    assert "| en/weat9 | weat | +0.500 | - | - |" in text
    assert "* p < 0.05, ** p < 0.01, *** p < 0.001" in text and "Holm-adjusted" in text


def test_csv_keeps_full_precision() -> None:
    before = [result("a", "t", effect=1 / 3, p=0.0123456789)]
    after = [result("b", "t", effect=1 / 7, p=0.5)]
    rows = list(csv.DictReader(io.StringIO(csv_text(compare(before, after)))))
    assert float(rows[0]["before_effect"]) == 1 / 3 and float(rows[0]["change"]) == 1 / 7 - 1 / 3
    assert rows[0]["before_significance"] == "*" and rows[0]["after_significance"] == ""


def test_csv_gives_holm_adjusted_p_within_each_run() -> None:
    rows = {r["wordset"]: r for r in csv.DictReader(io.StringIO(csv_text(compare(BEFORE, AFTER))))}
    # before run, four p-values 0.0004, 0.004, 0.03, 0.2 sorted: Holm multiplies by 4, 3, 2, 1 (then running max)
    assert float(rows["en/weat6"]["before_p_holm"]) == pytest.approx(4 * 0.0004)
    assert float(rows["en/weat7"]["before_p_holm"]) == pytest.approx(3 * 0.004)
    assert float(rows["en/weat8"]["before_p_holm"]) == pytest.approx(2 * 0.03)
    assert float(rows["en/weat9"]["before_p_holm"]) == pytest.approx(0.2)
    assert rows["en/debias-gender"]["before_p_holm"] == ""  # no p-value, in no family


def test_different_parameters_are_different_tests() -> None:
    before = [result("a", "t", effect=1.0, ddof=1), result("a", "t", effect=0.9, ddof=0)]
    after = [result("b", "t", effect=0.5, ddof=0), result("b", "t", effect=0.4, ddof=1)]
    table = compare(before, after)
    by_ddof = {r.params["ddof"]: r for r in table.rows}
    assert by_ddof[1].change == pytest.approx(-0.6) and by_ddof[0].change == pytest.approx(-0.4)
    assert "weat (ddof=0)" in markdown(table)


def test_several_seeds_pair_by_seed() -> None:
    before = [result("a", "t", effect=1.0, seed=0), result("a", "t", effect=2.0, seed=1)]
    after = [result("b", "t", effect=0.5, seed=1), result("b", "t", effect=0.1, seed=0)]
    changes = sorted(r.change for r in compare(before, after).rows)
    assert changes == pytest.approx([-1.5, -0.9])


def test_refused_results_show_their_status() -> None:
    refused = Result(key="k", model="b", wordset="t", metric="weat", status=REFUSED, reason="lost words", params={"ddof": 1})
    table = compare([result("a", "t")], [refused])
    assert table.rows[0].change is None
    assert "| t | weat | +1.000** | refused | - |" in markdown(table)


def test_a_run_of_several_models_needs_a_choice() -> None:
    mixed = BEFORE + [result("w2v:other", "en/weat6")]
    with pytest.raises(BiasError, match="--before-model"):
        compare(mixed, AFTER)
    assert compare(mixed, AFTER, before_model="w2v:other").before_model == "w2v:other"
    with pytest.raises(BiasError, match="no results of model"):
        compare(mixed, AFTER, before_model="nope")


# --- command line ----------------------------------------------------------------------------------


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


def test_cli_prints_the_table_and_writes_markdown_and_csv(tmp_path: Path) -> None:
    before = write_run(tmp_path / "before", BEFORE)
    after = write_run(tmp_path / "after", AFTER)
    done = bias("compare", str(before), str(after / "results.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "en/weat6" in done.stdout and "+1.500**" in done.stdout and "p < 0.001" in done.stdout
    assert (after / "compare.md").read_text(encoding="utf-8") == markdown(compare(BEFORE, AFTER))
    assert (after / "compare.csv").exists()
    elsewhere = tmp_path / "report"
    assert bias("compare", str(before), str(after), "--out", str(elsewhere)).returncode == 0
    assert (elsewhere / "compare.md").exists()


def test_cli_bad_input_exits_2_without_traceback(tmp_path: Path) -> None:
    after = write_run(tmp_path / "after", AFTER)
    done = bias("compare", str(tmp_path / "missing"), str(after))
    assert done.returncode == 2 and "No results file" in done.stderr and "Traceback" not in done.stderr
    mixed = write_run(tmp_path / "mixed", BEFORE + [result("w2v:other", "en/weat6")])
    done = bias("compare", str(mixed), str(after))
    assert done.returncode == 2 and "--before-model" in done.stderr


def test_the_two_sides_are_told_apart_when_one_is_the_debiased_original():
    from bias.core.reports.compare import side_name

    assert side_name("hf:pkg:m/model") == "hf:pkg:m/model"
    assert side_name("hf:pkg:m/model[debias=sent,debias_lists=en/debias-gender]") == "hf:pkg:m/model, debiased by sent (lists en/debias-gender)"
    assert side_name("static:x[debias=leace,debias_language=en]") == "static:x, debiased by leace (lists en)"
    assert side_name("hf:bert[layer=-1]") == "hf:bert, layer=-1"


def test_a_test_each_run_ran_with_other_settings_is_said_so() -> None:
    """Log-likelihood against written answers of one hiring audit: two one-sided rows, and a note
    naming the settings that differ (not only "ran in one run only")."""
    def hiring(model: str, params: dict) -> Result:
        return Result(key=model, model=model, wordset="it/hiring", metric="discrimination", effect_size=0.01,
                      params=params)

    table = compare(
        [hiring("hf:gpt2", {"mode": "auto", "samples": None})],
        [hiring("chat:m", {"mode": "generate", "samples": 5})],
    )
    assert "2 test(s) ran in one run only (shown with '-' on the other side)" in table.notes
    assert (
        "it/hiring / discrimination ran in both runs, with other settings: mode 'auto' before, "
        "'generate' after, samples None before, 5 after"
    ) in table.notes
