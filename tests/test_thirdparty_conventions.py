"""A third-party metric with conventions of its own (a sampled relabelling test, its own figure of
quadrants) gets a correct table, footer and report from `bias run`, the framework knowing nothing of
it: what its number is comes from its declaration, how its p was computed from its test."""

from __future__ import annotations

import json

from test_cli import wordset_toml
from test_registry import make_distribution, run_bias

from bias.core.model import OK, Result
from bias.core.reports import build
from bias.core.reports.quadrant_figure import write_quadrant_figures
from bias.core.values import ValueKind

PLUGIN = '''
from typing import ClassVar

import attrs
import numpy as np

from bias.api import AssociationMetric, Measured, SetVectors, ValueKind, association_scores, int_at_least, param, permutation_test


@attrs.define
class MeanCosineGap(AssociationMetric):
    """mean s(X) - mean s(Y), with the p of a sampled relabelling test."""

    name: ClassVar[str] = "mean-cosine-gap"
    summary: ClassVar[str] = "Mean association gap of X and Y, relabelling p."
    value: ClassVar[ValueKind] = ValueKind(
        "gap", "mean association gap", digits=3, meaning="gap > 0: the X words lean to A more than the Y words do."
    )

    permutations: int = param(99, "relabellings drawn for the p-value", validator=int_at_least(1))

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        m = sets.matrices
        sx, sy = association_scores(m["X"], m["A"], m["B"]), association_scores(m["Y"], m["A"], m["B"])
        test = permutation_test(sx, sy, permutations=self.permutations, exact_limit=1, seed=seed)
        return Measured(float(np.mean(sx) - np.mean(sy)), test=test, convention={"scores": "s(w) = mean cos A - mean cos B"})
'''


def test_a_third_party_metric_gets_its_own_table_footer_and_report(planted_files, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "bias_gap_plugin.py").write_text(PLUGIN, encoding="utf-8")
    make_distribution(
        site,
        "bias-gap-plugin",
        {"bias.metrics": {"mean-cosine-gap": "bias_gap_plugin:MeanCosineGap"}},
    )
    test = wordset_toml(tmp_path / "flowers.toml")
    out = tmp_path / "run"
    done = run_bias(
        [
            "run",
            "--model",
            f"word2vec:{planted_files.word2vec_bin}",
            "--wordset",
            str(test),
            "--metric",
            "mean-cosine-gap",
            "--metric",
            "weat",
            "--seed",
            "7",
            "--out",
            str(out),
        ],
        extra_path=site,
        COLUMNS="80",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    gap = next(
        json.loads(line)
        for line in (out / "results.jsonl").read_text().splitlines()
        if '"mean-cosine-gap"' in line
    )
    assert gap["status"] == OK and gap["seed"] == 7 and gap["convention"]["seed"] == 7
    k = round(gap["p_value"] * 100) - 1  # p = (k + 1) / (99 + 1) over 99 relabellings
    assert 0 <= k <= 99 and abs(gap["p_value"] - (k + 1) / 100) < 1e-12
    sampled = "p (mean-cosine-gap): sampled permutation test (99 permutations, seed 7), one-sided (greater)."
    exact = "p (weat): exact test over 12,870 partitions, ddof=1, one-sided (greater)."
    report = (out / "report.md").read_text(encoding="utf-8")
    printed = " ".join(done.stdout.split())  # the terminal wraps the notes at 80 columns
    for text in (report, printed):
        assert sampled in " ".join(text.split()) and exact in " ".join(text.split())
        assert (
            "mean-cosine-gap: gap = mean association gap (0 = no bias; the sign says which way)."
            in " ".join(text.split())
        )
        assert "gap > 0: the X words lean to A more than the Y words do." in " ".join(text.split())
        assert "seed None" not in text
    if k == 0:  # at the floor the p is a bound, and the footer says what the bound is
        assert "p <=1.0e-02" in report
    row = next(line for line in report.splitlines() if "mean-cosine-gap" in line and "|" in line)
    assert f"gap={gap['effect_size']:+.3f}" in row


def _quadrants(metric: str, figures: tuple[str, ...]) -> Result:
    points = [["a", 0.2, 0.1], ["b", -0.3, 0.2], ["c", 0.1, -0.4]]
    return Result(
        key=f"{metric}-k",
        model="m",
        wordset="xx/t",
        metric=metric,
        status=OK,
        effect_size=1.0,
        figures={
            "axes": ["gender", "class"],
            "groups": {"gender": ["f", "m"], "class": ["rich", "poor"]},
            "points": points,
        },
        meta={"value": ValueKind("z", figures=figures).declared()},
    )


def test_the_quadrant_figure_is_drawn_for_whoever_declares_it(tmp_path):
    report = build([_quadrants("their-fise", ("quadrants",)), _quadrants("undeclared", ())])
    written = write_quadrant_figures(report, tmp_path, ("png",))
    assert [p.name.split("-xx-")[0] for p in written] == ["their-fise"] and written[
        0
    ].stat().st_size > 1000
