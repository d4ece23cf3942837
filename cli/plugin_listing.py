"""`bias list`: one line per plugin, or with `--long` a table of whole summaries, kinds and
distributions. Apart from the other tables (`render`) so that the short listing imports no rich
table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bias.cli.say import cell as _escape


def plugins_table(
    rows: Sequence[Any],
    groups: Sequence[str],
    *,
    long: bool = False,
    title: str = "Installed plugins",
    width: int = 80,
) -> Any:
    """One line per plugin, names never broken (the summary is cut to the terminal instead); `long`
    adds the whole summary, the kind, the distribution and the status.

    The short listing is lines of text, not a rich table: its widths are known, and measuring a
    table of two hundred rows took most of `bias list`'s time."""
    longest = max([len(r.name) + 2 for r in rows] + [len(g) for g in groups])
    if not long:
        return _plugin_lines(rows, groups, longest, title, width)
    from rich.table import Table

    table = Table(title=title, box=None, show_header=False, expand=False, pad_edge=False)
    table.add_column("Name", no_wrap=True, min_width=longest)
    table.add_column("Summary", no_wrap=False, overflow="fold")
    for group in groups:
        members = [r for r in rows if r.group == group]
        head = f"[bold]{group}[/bold]" + ("" if members else " [dim](none installed)[/dim]")
        table.add_row(head, "")
        for row in members:
            broken = row.status != "ok"
            text = f"broken: {row.reason}" if broken else row.summary
            summary = (
                _escape(text).replace("broken:", "[red]broken[/red]:", 1)
                if broken
                else _escape(text)
            )
            origin = " | ".join(
                x
                for x in (
                    _escape(row.kind),
                    f"{_escape(row.distribution)} {_escape(row.version)}",
                )
                if x.strip()
            )
            summary += f"\n[dim]{origin}[/dim]"
            table.add_row(f"  {_escape(row.name)}", summary)
    return table


def _plugin_lines(
    rows: Sequence[Any], groups: Sequence[str], longest: int, title: str, width: int
) -> Any:
    """The short listing: the title centred, each group's name in bold, then one line per plugin,
    its summary cut to the terminal with an ellipsis."""
    from rich.console import Group

    from bias.cli.say import line

    room = max(10, width - longest - 2)
    lines = [line((title.center(min(width, longest + 2 + room)).rstrip(), "italic"))]
    for group in groups:
        members = [r for r in rows if r.group == group]
        lines.append(line((group, "bold"), *([] if members else [(" (none installed)", "dim")])))
        for row in members:
            broken = row.status != "ok"
            text = str(row.reason if broken else row.summary)
            room_left = room - (len("broken: ") if broken else 0)
            if len(text) > room_left:
                text = text[: room_left - 1].rstrip() + "…"
            name = f"  {row.name}".ljust(longest + 2)
            lines.append(line(name, *([("broken", "red"), ": "] if broken else []), text))
    return Group(*lines)
