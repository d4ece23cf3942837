"""Compatibility names for the report builders, which live in `bias.core.reports`."""

from __future__ import annotations

from collections.abc import Sequence

from bias.core.model import Result
from bias.core.reports.tables import format_p, lost_text, method_text, significance, sizes_text  # noqa: F401
from bias.core.reports.tables import build, to_markdown


def markdown(results: Sequence[Result], title: str = "Bias report", family: str = "run") -> str:
    """The Markdown report of `results` (one per experiment key)."""
    return to_markdown(build(results, family=family, title=title))


def rows(results: Sequence[Result]) -> list[dict[str, str]]:
    return build(results).rows()
