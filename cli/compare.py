"""`bias compare BEFORE AFTER`: a before/after table of two runs, printed and written as Markdown
and CSV."""

from __future__ import annotations

from pathlib import Path

from bias.cli.say import cell_lines, say, warn
from bias.core.reports.compare import (
    PAIRED_NOTE,
    STARS,
    ComparisonTable,
    cells,
    columns,
    has_paired,
    side_name,
)
from rich.console import Console
from rich.table import Table


def rich_table(table: ComparisonTable) -> Table:
    # One line per side, each named with what was done to it (a debiased model and its original
    # share a spec).
    out = Table(
        title=cell_lines(
            f"Before: {side_name(table.before_model)}\nAfter: {side_name(table.after_model)}"
        ),
        expand=False,
    )
    shown = columns(table)
    for key, label in shown:
        out.add_column(
            label,
            overflow="fold",
            justify="right" if key in ("before", "after", "change") else "left",
        )
    for row in cells(table):
        out.add_row(*(cell_lines(str(row[key])) for key, _ in shown))
    out.caption = f"Change = after - before. {STARS}" + (
        f" {PAIRED_NOTE}" if has_paired(table) else ""
    )
    return out


def execute(
    before: Path,
    after: Path,
    *,
    out: Path | None,
    before_model: str | None,
    after_model: str | None,
    console: Console,
) -> int:
    from bias.core.reports.compare import compare, csv_text, markdown
    from bias.core.errors import BiasError
    from bias.core.runs.results import read_results
    from bias.core.runs.folder import open_in_run

    from bias.core.runs.results import results_path

    table = compare(
        read_results(before),
        read_results(after),
        before_model=before_model,
        after_model=after_model,
        before_folder=results_path(before).parent,
        after_folder=results_path(after).parent,
    )
    folder = out or (after if after.is_dir() else after.parent)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open_in_run(folder, "compare.md") as fh:
            fh.write(markdown(table))
        with open_in_run(folder, "compare.csv") as fh:
            fh.write(csv_text(table))
    except OSError as exc:
        raise BiasError(
            f"Cannot write the comparison to {folder}: {exc.strerror or exc}.",
            "Choose another folder with --out.",
        ) from exc
    console.print(rich_table(table))
    for note in table.notes:
        warn(console, note, label="note")
    say(console, f"Written: {folder / 'compare.md'}, {folder / 'compare.csv'}")
    return 0
