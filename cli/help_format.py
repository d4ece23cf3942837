"""How `--help` shows a command: plain text, sections by panel, names never broken.

The help is click's plain layout, not typer's rich panels: rendering those imports a markdown
parser and compiles rich's highlighters, most of the 0.2 s `bias --help` took beyond its imports.
Plain text also reads the same on a terminal, in a pipe and in a log.
"""

from __future__ import annotations

import textwrap
from typing import Any

from typer.core import TyperCommand

TERM_MAX = 30  # widest option column; a longer option puts its help on the next line
GAP = 2


class GroupedCommand(TyperCommand):
    """A command whose options are listed in sections named by their panel (Model, Data, ...), in
    the order the panels first appear; options without one under "Options"."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                title = "Arguments"
            else:
                title = getattr(param, "rich_help_panel", None) or "Options"
            sections.setdefault(title, []).append(record)
        # one column width for every section, so that the help reads as one list
        first = min(max(len(term) for rows in sections.values() for term, _ in rows), TERM_MAX)
        for title, rows in sections.items():
            with formatter.section(title):
                write_rows(formatter, rows, first)


def write_rows(formatter: Any, rows: list[tuple[str, str]], first: int) -> None:
    """click's two-column list (`first`: the width of the option column), wrapped at spaces only:
    click breaks at hyphens too, which cut word-set names (`en/crows-` / `sample`) and flags in
    two."""
    indent = formatter.current_indent
    margin = " " * (indent + first + GAP)
    width = max(formatter.width - len(margin), 20)
    for term, text in rows:
        formatter.write(" " * indent + term)
        if not text:
            formatter.write("\n")
            continue
        if len(term) <= first:
            formatter.write(" " * (first - len(term) + GAP))
        else:
            formatter.write("\n" + margin)
        lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)
        formatter.write(("\n" + margin).join(lines or [""]) + "\n")
