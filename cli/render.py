"""Rich rendering of plugin listings, plugin details, results and validation problems."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table



def plugins_table(rows: Sequence[Any], groups: Sequence[str]) -> Table:
    table = Table(title="Installed plugins", show_lines=False, expand=False)
    for column in ("Name", "Kind", "Summary", "Distribution", "Status"):
        table.add_column(column, overflow="fold")
    for i, group in enumerate(groups):
        if i:
            table.add_section()
        members = [r for r in rows if r.group == group]
        table.add_row(f"[bold]{group}[/bold]", "", "" if members else "[dim](none installed)[/dim]", "", "")
        for row in members:
            status = "[green]ok[/green]" if row.status == "ok" else f"[red]broken[/red]: {row.reason}"
            table.add_row(f"  {row.name}", row.kind, row.summary, f"{row.distribution} {row.version}", status)
    return table


def results_table(results: Any, family: str = "run") -> Table:
    """The report table for the terminal; `results` is a `Report` or a list of results."""
    from bias.core.reports import Report, build

    rep = results if isinstance(results, Report) else build(list(results), family=family)
    results = rep.results
    # A column whose value is the same on every row moves into the title, to keep the table narrow.
    shared = [key for key in ("model", "metric") if results and len({getattr(r, key) for r in results}) == 1]
    title = "Results" + "".join(f" | {key}: {getattr(results[0], key)}" for key in shared)
    columns = [c for c in rep.columns() if c.key not in shared]
    table = Table(title=title, expand=False)
    for c in columns:
        table.add_column(c.label, overflow="fold")
    for row, result in zip(rep.rows(), results):
        style = None if result.status == "ok" else "yellow" if result.status == "refused" else "red"
        table.add_row(*(row[c.key] for c in columns), style=style)
    table.caption = " ".join(rep.notes()[2:])
    return table


def problems(console: Console, found: Sequence[Any]) -> None:
    for p in found:
        colour = "red" if p.severity == "error" else "yellow"
        console.print(f"[{colour}]{p.severity}[/{colour}] {p}", highlight=False, soft_wrap=True)
