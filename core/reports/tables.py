"""The report table: one row per experiment, built from results alone, and its text renderings.

The same `Report` feeds every output (terminal, CSV, Markdown, LaTeX, figures), so they cannot
disagree: raw p beside Holm and Benjamini-Hochberg adjusted p over the chosen family, the effect
size with its bootstrap interval, the convention that produced each number, and notes that define
every mark.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import attrs

from bias.core.model import OK, Result
from bias.core.multiple_testing import FAMILIES, Adjusted, adjust

ALPHA_MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def format_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def significance(p: float | None) -> str:
    if p is None:
        return ""
    for alpha, mark in ALPHA_MARKS:
        if p < alpha:
            return mark
    return ""


def format_effect(d: float | None) -> str:
    return "-" if d is None else f"{d:+.3f}"


def sizes_text(result: Result) -> str:
    return "/".join(str(result.sizes.get(k, "-")) for k in ("X", "Y", "A", "B")) if result.sizes else "-"


def lost_text(result: Result) -> str:
    return str(sum(len(v) for v in result.lost.values()))


def method_text(result: Result) -> str:
    c = result.convention
    if not c or "method" not in c:
        return "-"
    seed = f", seed={c.get('seed')}" if c.get("method") == "sampled" else ""
    return f"{c.get('method')} ({c.get('permutations')}), ddof={c.get('ddof')}, {c.get('alternative')}{seed}"


def ci_of(result: Result) -> tuple[float, float] | None:
    low, high = result.figures.get("ci_low"), result.figures.get("ci_high")
    if low is None or high is None:
        return None
    return float(low), float(high)


def ci_text(result: Result) -> str:
    ci = ci_of(result)
    return "-" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def settings_of(results: Sequence[Result]) -> dict[str, str]:
    """By key: the parameters that differ between results of the same metric (and the seed, where
    seeds differ), so rows of a grid can be told apart; empty when nothing varies."""
    out: dict[str, str] = {}
    by_metric: dict[str, list[Result]] = {}
    for r in results:
        by_metric.setdefault(r.metric, []).append(r)
    for members in by_metric.values():
        # Only values that are there count: a failed result may carry no parameters at all.
        names = sorted({k for r in members for k in r.params})
        varying = [k for k in names if len({repr(r.params[k]) for r in members if k in r.params}) > 1]
        seeds = len({r.seed for r in members if r.seed is not None}) > 1
        for r in members:
            parts = [f"{k}={r.params[k]}" for k in varying if k in r.params]
            if seeds:
                parts.append(f"seed={r.seed}")
            out[r.key] = ", ".join(parts)
    return out


@attrs.frozen
class Column:
    key: str
    label: str


@attrs.frozen
class Report:
    """Everything a report shows, computed once from results (and the run's manifest, if any)."""

    title: str
    family: str
    results: list[Result]
    adjusted: dict[str, Adjusted]
    settings: dict[str, str]
    skipped: list[dict[str, Any]] = attrs.Factory(list)
    damaged: list[str] = attrs.Factory(list)

    @property
    def has_settings(self) -> bool:
        return any(self.settings.values())

    @property
    def ci_label(self) -> str:
        levels = {r.figures.get("ci_level") for r in self.results if ci_of(r)}
        return f"{float(levels.pop()):.0%} CI" if len(levels) == 1 else "CI"

    def columns(self) -> list[Column]:
        cols = [Column("model", "Model"), Column("wordset", "Test"), Column("metric", "Metric")]
        if self.has_settings:
            cols.append(Column("settings", "Settings"))
        cols += [
            Column("effect_size", "Effect size"),
            Column("ci", self.ci_label),
            Column("p_value", "p"),
            Column("p_holm", "p (Holm)"),
            Column("p_bh", "p (BH)"),
            Column("convention", "Convention"),
            Column("sizes", "X/Y/A/B"),
            Column("lost", "Lost"),
            Column("status", "Status"),
        ]
        return cols

    def rows(self) -> list[dict[str, str]]:
        out = []
        for r in self.results:
            adj = self.adjusted.get(r.key)
            out.append(
                {
                    "model": r.model,
                    "wordset": r.wordset,
                    "metric": r.metric,
                    "settings": self.settings.get(r.key, ""),
                    "effect_size": format_effect(r.effect_size),
                    "ci": ci_text(r),
                    "p_value": format_p(r.p_value),
                    "p_holm": format_p(adj.holm) + significance(adj.holm) if adj else "-",
                    "p_bh": format_p(adj.bh) if adj else "-",
                    "convention": method_text(r),
                    "sizes": sizes_text(r),
                    "lost": lost_text(r),
                    "status": r.status if r.status == OK else f"{r.status}: {r.reason}",
                }
            )
        return out

    def records(self) -> list[dict[str, Any]]:
        """Unformatted values, one dict per result, for CSV and programs."""
        out = []
        for r in self.results:
            adj = self.adjusted.get(r.key)
            c, f = r.convention, r.figures
            out.append(
                {
                    "model": r.model,
                    "wordset": r.wordset,
                    "metric": r.metric,
                    "settings": self.settings.get(r.key, ""),
                    "status": r.status,
                    "effect_size": r.effect_size,
                    "ci_low": f.get("ci_low"),
                    "ci_high": f.get("ci_high"),
                    "ci_level": f.get("ci_level"),
                    "ci_method": f.get("ci_method"),
                    "ci_resamples": f.get("ci_resamples"),
                    "p_value": r.p_value,
                    "p_holm": adj.holm if adj else None,
                    "p_bh": adj.bh if adj else None,
                    "family": adj.family if adj else None,
                    "family_size": adj.size if adj else None,
                    "p_method": c.get("method"),
                    "permutations": c.get("permutations"),
                    "ddof": c.get("ddof"),
                    "alternative": c.get("alternative"),
                    "seed": r.seed,
                    "n_X": r.sizes.get("X"),
                    "n_Y": r.sizes.get("Y"),
                    "n_A": r.sizes.get("A"),
                    "n_B": r.sizes.get("B"),
                    "lost": sum(len(v) for v in r.lost.values()),
                    "reason": r.reason,
                    "key": r.key,
                }
            )
        return out

    def notes(self) -> list[str]:
        families = sorted({a.family for a in self.adjusted.values()})
        sizes = {a.family: a.size for a in self.adjusted.values()}
        fam = ", ".join(f"{f} ({sizes[f]} tests)" for f in families) or "none (no p-values)"
        notes = [
            "Effect size: as defined by each metric; WEAT/SEAT: Cohen's d of the association "
            "(positive: X closer to A and Y closer to B).",
            f"{self.ci_label}: bootstrap interval of the effect size, stimuli resampled within each set "
            "(method and resamples in results.jsonl).",
            "p: raw p-value as the metric defines it (WEAT/SEAT: permutation test, one-sided unless stated).",
            f"p (Holm): Holm-Bonferroni adjusted, family-wise error; p (BH): Benjamini-Hochberg adjusted, "
            f"false discovery rate. Family: {self.family}: {fam}.",
            "Significance marks on p (Holm): * p < 0.05, ** p < 0.01, *** p < 0.001.",
        ]
        return notes

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "refused": 0, "failed": 0}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out


def build(
    results: Sequence[Result],
    *,
    family: str = "run",
    title: str = "Bias report",
    skipped: Sequence[dict[str, Any]] = (),
    damaged: Sequence[Any] = (),
) -> Report:
    """The report of `results` (one per key, e.g. `ResultsFile.latest()`)."""
    if family not in FAMILIES:
        from bias.core.errors import BiasError

        raise BiasError(f"Unknown multiple-testing family '{family}'.", f"Use one of {', '.join(FAMILIES)}.")
    results = list(results)
    return Report(
        title=title,
        family=family,
        results=results,
        adjusted=adjust(results, family),
        settings=settings_of(results),
        skipped=list(skipped),
        damaged=[str(d) for d in damaged],
    )


def to_csv(report: Report) -> str:
    records = report.records()
    fields = list(records[0]) if records else list(_CSV_FIELDS)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({k: ("" if v is None else v) for k, v in rec.items()})
    return buffer.getvalue()


_CSV_FIELDS = (
    "model", "wordset", "metric", "settings", "status", "effect_size", "ci_low", "ci_high", "ci_level", "ci_method",
    "ci_resamples", "p_value", "p_holm", "p_bh", "family", "family_size", "p_method", "permutations", "ddof",
    "alternative", "seed", "n_X", "n_Y", "n_A", "n_B", "lost", "reason", "key",
)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report) -> str:
    counts = report.counts()
    lines = [f"# {report.title}", ""]
    lines.append(
        f"{len(report.results)} experiment(s): {counts['ok']} ok, {counts['refused']} refused, {counts['failed']} failed."
    )
    lines.append("")
    cols = report.columns()
    lines.append("| " + " | ".join(c.label for c in cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for row in report.rows():
        lines.append("| " + " | ".join(_md_cell(row[c.key]) for c in cols) + " |")
    lines += ["", "Notes:", ""]
    lines += [f"- {n}" for n in report.notes()]
    if report.skipped:
        lines += ["", "## Skipped combinations", ""]
        for s in report.skipped:
            lines.append(f"- {s.get('metric')} on {s.get('wordset')} with {s.get('model')}: {s.get('reason')}")
    if report.damaged:
        lines += ["", "## Damaged lines of results.jsonl (skipped)", ""]
        lines += [f"- {d}" for d in report.damaged]
    lost = [r for r in report.results if r.lost]
    if lost:
        lines += ["", "## Lost words", ""]
        for r in lost:
            for key, words in r.lost.items():
                lines.append(f"- {r.model} / {r.wordset} / set {key}: {', '.join(words)}")
    warned = [r for r in report.results if r.warnings]
    if warned:
        lines += ["", "## Warnings", ""]
        for r in warned:
            for w in r.warnings:
                lines.append(f"- {r.wordset}: {w}")
    return "\n".join(lines) + "\n"
