"""The report table: one row per experiment, built from results alone, and its text renderings.

The same `Report` feeds every output (terminal, CSV, Markdown, LaTeX, figures), so they cannot
disagree: raw p beside Holm and Benjamini-Hochberg adjusted p over the chosen family, the effect
size with its bootstrap interval, the convention that produced each number, and notes that define
every mark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from bias.core.model import OK, Result
from bias.core.text import natural_key
from bias.core.reports.breakdown import breakdown_caption, breakdown_of
from bias.core.reports.cells import md_text, records_csv
from bias.core.statistics.multiple_testing import FAMILIES, Adjusted, adjust, spread_over_seeds

from bias.core.reports.values import (  # noqa: F401  (format_p, significance: the one definition, re-exported)
    MARKS_NOTE,
    at_floor,
    ValueKind,
    convention_text,
    format_p,
    kind_of,
    p_floor,
    result_p,
    short_models,
    short_tests,
    significance,
)


def format_effect(d: float | None, kind: ValueKind) -> str:
    """The value with the metric's sign convention (a sign only where it says which way), 3
    decimals."""
    return kind.format(d, digits=max(kind.digits, 3) if kind.unit != "%" else 1)


def value_text(result: Result, digits: int | None = None) -> str:
    """The value labelled with its own name and unit: `d=+1.44`, `52.1%`, `accuracy=0.40`."""
    kind = kind_of(result)
    if result.effect_size is None:
        return "-"
    number = kind.format(result.effect_size, digits)
    return f"{number}%" if kind.unit == "%" else f"{kind.label}={number}"


def sizes_text(result: Result) -> str:
    return (
        "/".join(str(result.sizes.get(k, "-")) for k in ("X", "Y", "A", "B"))
        if result.sizes
        else "-"
    )


def lost_text(result: Result) -> str:
    return str(sum(len(v) for v in result.lost.values()))


def ci_of(result: Result) -> tuple[float, float] | None:
    low, high = result.figures.get("ci_low"), result.figures.get("ci_high")
    if low is None or high is None:
        return None
    return float(low), float(high)


def ci_text(result: Result, digits: int = 3) -> str:
    ci = ci_of(result)
    kind = kind_of(result)
    return "-" if ci is None else f"[{kind.format(ci[0], digits)}, {kind.format(ci[1], digits)}]"


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
        varying = [
            k for k in names if len({repr(r.params[k]) for r in members if k in r.params}) > 1
        ]
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


def smoke_notes(results: Sequence[Result]) -> list[str]:
    """A smoke run (`--limit N`) said at the top of every report of it: its numbers come from the
    first N items of each list, not from the test."""
    limited = [r.meta["limit"] for r in results if isinstance(r.meta.get("limit"), int)]
    if not limited:
        return []
    if len(limited) == len(results) and len(set(limited)) == 1:
        return [
            f"Smoke run: only the first {limited[0]} items of each list of each test (--limit "
            f"{limited[0]}); not a result to report."
        ]
    shown = " or ".join(str(n) for n in sorted(set(limited)))
    return [
        f"Smoke run: {len(limited)} of {len(results)} results used only the first {shown} items "
        "of each list of their test (--limit); not results to report."
    ]


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
    damaged_lines: int = 0  # how many lines `damaged` stands for (its last entry may count many)
    # notes of the run's settings (e.g. a preset), from its manifest
    run_notes: list[str] = attrs.Factory(list)

    @property
    def has_settings(self) -> bool:
        return any(self.settings.values())

    @property
    def ci_label(self) -> str:
        levels = {r.figures.get("ci_level") for r in self.results if ci_of(r)}
        level = levels.pop() if len(levels) == 1 else None
        # a level a metric did not give (or not as a number) is not guessed
        if isinstance(level, bool) or not isinstance(level, (int, float)):
            return "CI"
        return f"{float(level):.0%} CI"

    def columns(self) -> list[Column]:
        cols = [Column("model", "Model"), Column("wordset", "Test"), Column("metric", "Metric")]
        if self.has_settings:
            cols.append(Column("settings", "Settings"))
        cols += [
            Column("effect_size", "Value"),
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
        """Formatted cells; models by their short names (the notes give the full specs)."""
        out = []
        names = short_models(self.results)
        for r in self.results:
            adj = self.adjusted.get(r.key)
            out.append(
                {
                    "model": names[r.model],
                    "wordset": r.wordset,
                    "metric": r.metric,
                    "settings": self.settings.get(r.key, ""),
                    "effect_size": value_text(r, 3 if kind_of(r).unit != "%" else 1),
                    "ci": ci_text(r),
                    "p_value": result_p(r),
                    "p_holm": format_p(adj.holm) + significance(adj.holm) if adj else "-",
                    "p_bh": format_p(adj.bh) if adj else "-",
                    "convention": convention_text(r) or "-",
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
            f = r.figures
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
                    "seeds_in_hypothesis": adj.seeds if adj else None,
                    "p_convention": convention_text(r) or None,
                    "p_floor": p_floor(r),
                    "seed": r.seed,
                    "n_X": r.sizes.get("X"),
                    "n_Y": r.sizes.get("Y"),
                    "n_A": r.sizes.get("A"),
                    "n_B": r.sizes.get("B"),
                    "lost": sum(len(v) for v in r.lost.values()),
                    "reason": r.reason,
                    "convention": json.dumps(
                        r.convention, sort_keys=True, ensure_ascii=False, default=str
                    ),
                    "key": r.key,
                }
            )
        return out

    def notes(self) -> list[str]:
        """Everything shared by the rows, said once: what each value is, the interval, the p-value
        convention(s), the p floor, the correction and the marks, the short model names."""
        families = sorted({a.family for a in self.adjusted.values()})
        sizes = {a.family: a.size for a in self.adjusted.values()}
        fam = (
            ", ".join(f"{f} ({sizes[f]} test{'' if sizes[f] == 1 else 's'})" for f in families)
            or "none (no p-values)"
        )
        ok = [r for r in self.results if r.status == OK]
        notes = smoke_notes(self.results)
        kinds: dict[str, list[str]] = {}
        meanings: list[str] = []
        for metric in dict.fromkeys(r.metric for r in ok):
            k = kind_of(next(r for r in ok if r.metric == metric))
            ref = "" if k.reference is None else f"{k.reference:g}{k.unit} = no bias"
            sign = "the sign says which way" if k.signed and k.reference == 0.0 else ""
            extra = "; ".join(x for x in (ref, sign) if x)
            text = (f"{k.label} = {k.name}" if k.name != k.label else k.label) + (
                f" ({extra})" if extra else ""
            )
            kinds.setdefault(text, []).append(metric)
            if k.meaning and k.meaning not in meanings:
                meanings.append(k.meaning)
        for text, metrics in kinds.items():
            notes.append(f"{', '.join(metrics)}: {text}.")
        notes.extend(meanings)
        booted = [
            r for r in ok if ci_of(r) and r.figures.get("ci_method") not in ("normal", "wald")
        ]
        if booted:
            methods = {
                {"bca": "BCa"}.get(
                    str(r.figures.get("ci_method", "")), str(r.figures.get("ci_method", ""))
                )
                for r in booted
            }
            resamples = {r.figures.get("ci_resamples") for r in booted}
            detail = ", ".join(m for m in methods if m)
            if len(resamples) == 1 and None not in resamples:
                detail += f", {int(resamples.pop()):,} resamples"
            # what was resampled: a metric may say (figures["ci_resampling"]); else the stimuli of
            # each set
            resampled = sorted(
                {
                    str(r.figures.get("ci_resampling") or "stimuli resampled within each set")
                    for r in booted
                }
            )
            notes.append(f"{self.ci_label}: bootstrap interval ({detail}), {'; '.join(resampled)}.")
        wald = sorted({r.metric for r in ok if ci_of(r) and r.figures.get("ci_method") == "wald"})
        if wald:  # a model's coefficient (discrimination's mixed model): statsmodels' Wald interval
            notes.append(
                f"{self.ci_label} ({', '.join(wald)}): Wald interval of the model's "
                "coefficient (estimate +- z SE)."
            )
        normal = sorted(
            {r.metric for r in ok if ci_of(r) and r.figures.get("ci_method") == "normal"}
        )
        if normal:
            notes.append(
                f"{self.ci_label} ({', '.join(normal)}): normal approximation p +- 1.96 "
                "sqrt(p(1-p)/n) over the held-out texts."
            )
        conventions: dict[str, list[str]] = {}
        for r in ok:
            text = convention_text(r)
            if text and r.metric not in conventions.setdefault(text, []):
                conventions[text].append(r.metric)
        for text, metrics in conventions.items():
            notes.append(
                f"p ({', '.join(metrics)}): {text}." if len(conventions) > 1 else f"p: {text}."
            )
        sizes_seen = {sizes_text(r) for r in ok if r.sizes and all(k in r.sizes for k in "XYAB")}
        if len(sizes_seen) == 1:
            notes.append(f"Stimuli used (X/Y/A/B): {sizes_seen.pop()} in every test.")
        elif sizes_seen:
            notes.append("Stimuli used (X/Y/A/B) differ between tests: see --wide or report.md.")
        # said where a p is at its floor (shown as a bound), not for every sampled test
        floors = sorted({f for r in ok if (f := p_floor(r)) and at_floor(r.p_value, f)})
        if floors:
            notes.append(
                f"p <={floors[0]:.1e}: the smallest p a sampled test can report, "
                "(0+1)/(m+1); the true p may be smaller."
            )
        if not self.adjusted:
            notes.append("No p-values: " + ("these metrics give none." if ok else "no result."))
        else:
            notes.append(
                "Adjusted p: Holm-Bonferroni (family-wise error) and Benjamini-Hochberg "
                "(false discovery rate). "
                f"Family: {self.family}: {fam}."
            )
            notes.append(f"Significance marks on the Holm-adjusted p: {MARKS_NOTE}.")
        if spread_over_seeds(self.results):
            notes.append(
                "A test run with several seeds is one hypothesis: it counts once in its "
                "family, with the largest "
                "p-value over its seeds (spread over seeds below)."
            )
        tests = {n: s for n, s in short_tests(self.results).items() if n != s}
        if tests:
            notes.append("Tests: " + "; ".join(f"{s} = {n}" for n, s in tests.items()) + ".")
        names = short_models(self.results)
        if any(short != label for label, short in names.items()):
            notes.append(
                "Models: " + "; ".join(f"{short} = {label}" for label, short in names.items()) + "."
            )
        return notes + list(self.run_notes)

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "refused": 0, "failed": 0}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out


def in_order(results: Sequence[Result]) -> list[Result]:
    """Results as every output lists them: by model in run order, then by test in natural order
    (weat2 before weat10), then as they ran (one test's metrics and settings stay together)."""
    models = {m: i for i, m in enumerate(dict.fromkeys(r.model for r in results))}
    return sorted(results, key=lambda r: (models[r.model], natural_key(r.wordset)))


def build(
    results: Sequence[Result],
    *,
    family: str = "run",
    title: str = "Bias report",
    skipped: Sequence[dict[str, Any]] = (),
    damaged: Sequence[Any] = (),
    notes: Sequence[str] = (),
) -> Report:
    """The report of `results` (one per key, e.g. `ResultsFile.latest()`)."""
    if family not in FAMILIES:
        from bias.core.errors import BiasError

        raise BiasError(
            f"Unknown multiple-testing family '{family}'.", f"Use one of {', '.join(FAMILIES)}."
        )
    results = in_order(results)
    return Report(
        title=title,
        family=family,
        results=results,
        adjusted=adjust(results, family),
        settings=settings_of(results),
        skipped=list(skipped),
        damaged=[str(d) for d in damaged],
        damaged_lines=sum(getattr(d, "count", 1) for d in damaged),
        run_notes=[str(n) for n in notes],
    )


def to_csv(report: Report) -> str:
    return records_csv(report.records(), _CSV_FIELDS)


_CSV_FIELDS = (
    "model",
    "wordset",
    "metric",
    "settings",
    "status",
    "effect_size",
    "ci_low",
    "ci_high",
    "ci_level",
    "ci_method",
    "ci_resamples",
    "p_value",
    "p_holm",
    "p_bh",
    "family",
    "family_size",
    "seeds_in_hypothesis",
    "p_method",
    "permutations",
    "ddof",
    "alternative",
    "seed",
    "n_X",
    "n_Y",
    "n_A",
    "n_B",
    "lost",
    "reason",
    "key",
)


def to_markdown(report: Report) -> str:
    counts = report.counts()
    lines = [f"# {md_text(report.title)}", ""]
    lines.append(
        f"{len(report.results)} experiment(s): {counts['ok']} ok, {counts['refused']} "
        f"refused, {counts['failed']} failed."
    )
    lines.append("")
    cols = report.columns()
    lines.append("| " + " | ".join(c.label for c in cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for row in report.rows():
        lines.append("| " + " | ".join(md_text(row[c.key]) for c in cols) + " |")
    lines += ["", "Notes:", ""]
    lines += [f"- {md_text(n)}" for n in report.notes()]
    spread = spread_over_seeds(report.results)
    if spread:
        lines += ["", "## Spread over seeds", ""]
        for h in spread:
            seeds = ", ".join(str(x) for x in h.seeds)
            kind = next(
                kind_of(r)
                for r in report.results
                if (r.model, r.wordset, r.metric) == (h.model, h.wordset, h.metric)
            )
            lines.append(
                f"- {md_text(h.model)} / {md_text(h.wordset)} / {md_text(h.metric)} (seeds "
                f"{seeds}): effect size "
                f"{format_effect(h.effect_min, kind)} to "
                f"{format_effect(h.effect_max, kind)}, p {format_p(h.p_min)} to "
                f"{format_p(h.p_max)}"
            )
    broken_down = [r for r in report.results if breakdown_of(r)[1]]
    if broken_down:
        lines += ["", "## Breakdown", ""]
        for r in broken_down:
            columns, rows = breakdown_of(r)
            lines += [f"{md_text(r.model)} / {md_text(r.wordset)} / {md_text(r.metric)}:", ""]
            caption = breakdown_caption(r)
            if caption:
                lines += [md_text(caption), ""]
            lines.append("| " + " | ".join(md_text(c) for c in columns) + " |")
            lines.append("|" + "|".join("---" for _ in columns) + "|")
            lines += ["| " + " | ".join(md_text(cell) for cell in row) + " |" for row in rows]
            lines.append("")
    if report.skipped:
        lines += ["", "## Skipped combinations", ""]
        for s in report.skipped:
            lines.append(
                md_text(
                    f"- {s.get('metric')} on {s.get('wordset')} with {s.get('model')}: "
                    f"{s.get('reason')}"
                )
            )
    if report.damaged:
        lines += ["", "## Damaged lines of results.jsonl (skipped)", ""]
        lines += [f"- {md_text(d)}" for d in report.damaged]
    lost = [r for r in report.results if r.lost]
    if lost:
        lines += ["", "## Lost words", ""]
        for r in lost:
            for key, words in r.lost.items():
                lines.append(md_text(f"- {r.model} / {r.wordset} / set {key}: {', '.join(words)}"))
    warned = [r for r in report.results if r.warnings]
    if warned:
        lines += ["", "## Warnings", ""]
        for r in warned:
            for w in r.warnings:
                lines.append(md_text(f"- {r.wordset}: {w}"))
    return "\n".join(lines) + "\n"
