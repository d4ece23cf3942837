"""The robustness report's tables and files: one row per curve and one per specification (Markdown
and CSV), the notes under them, and `write_robustness`, which writes them beside the curves'
figures. The curves themselves are computed in `robustness.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bias.core.reports.robustness import ALPHA, Curve, robust_curves, share_text
from bias.core.reports.robustness_figure import draw, figure_names
from bias.core.reports.cells import md_text, records_csv
from bias.core.reports.tables import Report, ci_of
from bias.core.reports.values import ValueKind, format_p
from bias.core.runs.folder import open_in_run


def _number(kind: ValueKind, x: float) -> str:
    return kind.format(x, 2)


def summary_records(found: Sequence[Curve]) -> list[dict[str, Any]]:
    """One unformatted row per curve, for CSV and programs."""
    rows = []
    for c in found:
        rows.append(
            {
                "concept": c.concept,
                "model": c.model,
                "value": c.value_label,
                "specifications": c.n,
                "same_sign_share": c.same_sign_share,
                "significant_share": c.significant_share,
                "with_p_value": c.with_p,
                "alpha": c.alpha,
                "median": c.median,
                "min": c.low,
                "max": c.high,
                "choices_varied": "; ".join(c.dimensions),
                "tests": "; ".join(c.tests),
            }
        )
    return rows


def specification_records(found: Sequence[Curve]) -> list[dict[str, Any]]:
    """One row per specification (in curve order, sorted by value), with every varied choice."""
    dims = list(dict.fromkeys(d for c in found for d in c.dimensions))
    rows = []
    for c in found:
        for rank, s in enumerate(c.specifications, start=1):
            ci = ci_of(s.result)
            rows.append(
                {
                    "concept": c.concept,
                    "model": c.model,
                    "rank": rank,
                    "wordset": s.result.wordset,
                    **{d: s.choices.get(d, "") for d in dims},
                    "effect_size": s.effect,
                    "ci_low": ci[0] if ci else None,
                    "ci_high": ci[1] if ci else None,
                    "p_value": s.result.p_value,
                    "p_holm": s.p_adjusted,
                    "significant": s.significant(c.alpha),
                    "key": s.result.key,
                }
            )
    return rows


def to_csv(found: Sequence[Curve]) -> str:
    return records_csv(summary_records(found))


def specifications_csv(found: Sequence[Curve]) -> str:
    return records_csv(specification_records(found))


def notes(report: Report, found: Sequence[Curve]) -> list[str]:
    fam = report.family
    alpha = found[0].alpha if found else ALPHA
    return [
        "Specification: one result of the test, with the choices it made (metric, level, pooling, "
        "layer, test variant, ...); a curve holds every specification of one concept on one model.",
        "Same sign: share of specifications on the same side of the no-bias value as the median.",
        f"Significant: share of all specifications with Holm-adjusted p < {alpha:g} "
        f"(family: {fam}); one without a p-value counts as not significant.",
        "Median and range: of the value over the specifications.",
    ]


def to_markdown(
    report: Report, found: Sequence[Curve], figures: dict[str, str] | None = None
) -> str:
    lines = ["# Robustness to design choices", "", f"Run: {md_text(report.title)}.", ""]
    lines += [
        "| Concept | Model | Value | Specs | Same sign | Significant | Median | Range "
        "| Choices varied |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in found:
        rng = f"{_number(c.scale, c.low)} to {_number(c.scale, c.high)}"
        cells = [
            c.concept,
            c.model,
            c.value_label,
            str(c.n),
            share_text(c.same_sign_share),
            share_text(c.significant_share),
            _number(c.scale, c.median),
            rng,
            ", ".join(c.dimensions),
        ]
        lines.append("| " + " | ".join(md_text(x) for x in cells) + " |")
    lines += ["", "Notes:", ""] + [f"- {n}" for n in notes(report, found)]
    titles = [c.title for c in found]
    for c in found:
        scale = f" ({c.value_label})" if titles.count(c.title) > 1 else ""
        lines += ["", f"## {md_text(c.concept)} on {md_text(c.model)}{scale}", ""]
        if figures and c.key in figures:
            lines += [f"![Specification curve of {md_text(c.concept)}]({figures[c.key]})", ""]
        lines.append(
            "| # | " + " | ".join(md_text(d) for d in c.dimensions) + " | Value | p (Holm) |"
        )
        lines.append("|---|" + "---|" * len(c.dimensions) + "---|---|")
        for rank, s in enumerate(c.specifications, start=1):
            marks = "*" if s.significant(c.alpha) else ""
            cells = [
                str(rank),
                *(s.choices.get(d, "") for d in c.dimensions),
                _number(c.scale, s.effect),
                (format_p(s.p_adjusted) + marks) if s.p_adjusted is not None else "-",
            ]
            lines.append("| " + " | ".join(md_text(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def write_robustness(
    report: Report,
    folder: Path,
    formats: Sequence[str] = ("md", "csv", "png"),
    alpha: float = ALPHA,
) -> tuple[list[Curve], list[Path]]:
    """Curves with two or more specifications, their figures (`robustness-<concept>-<model>.png`)
    and tables (robustness.md; robustness.csv, one row per curve; robustness-specifications.csv)."""
    found = robust_curves(report, alpha)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    names = figure_names(found)
    images = tuple(f for f in formats if f in ("png", "svg"))
    figures: dict[str, str] = {}
    if images:
        for c in found:
            paths = draw(c, folder / names[c.key], images)
            written += paths
            figures[c.key] = paths[-1].name if paths else ""
    if "md" in formats:
        with open_in_run(folder, "robustness.md") as fh:
            fh.write(to_markdown(report, found, figures))
        written.append(folder / "robustness.md")
    if "csv" in formats:
        for name, text in (
            ("robustness.csv", to_csv(found)),
            ("robustness-specifications.csv", specifications_csv(found)),
        ):
            with open_in_run(folder, name) as fh:
                fh.write(text)
            written.append(folder / name)
    return found, written
