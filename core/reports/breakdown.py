"""The table of a result's scores broken down (per category, per prompt variant, ...) that a metric
gives in figures["breakdown"], shown under the results table of report.md and report.html, with the
caption the metric writes for it (how its answers were got, say)."""

from __future__ import annotations

from bias.core.model import OK, Result
from bias.core.text import shown


def _given(result: Result) -> dict:
    """figures["breakdown"] of a result with a value; {} when there is none or it is no table."""
    found = (result.figures or {}).get("breakdown") if result.status == OK else None
    return found if isinstance(found, dict) else {}


def breakdown_of(result: Result) -> tuple[list[str], list[list[str]]]:
    """The table a metric gives in figures["breakdown"] (its scores per category, say:
    {"columns": [...], "rows": [[...], ...]}, the cells already written as text), shown under the
    results table of report.md and report.html; ([], []) when there is none."""
    found = _given(result)
    columns, rows = found.get("columns"), found.get("rows")
    if not isinstance(columns, list) or not isinstance(rows, list) or not rows:
        return [], []
    if not all(isinstance(row, list) and len(row) == len(columns) for row in rows):
        return [], []
    return [str(c) for c in columns], [[str(cell) for cell in row] for row in rows]


def breakdown_caption(result: Result) -> str:
    """The metric's caption of its breakdown (figures["breakdown"]["caption"]), as text a results
    file from elsewhere may hold: made visible and cut; "" when there is none."""
    caption = _given(result).get("caption")
    return shown(caption, 600) if isinstance(caption, str) and caption.strip() else ""
