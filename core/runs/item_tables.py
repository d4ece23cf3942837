"""Reading a run's per-item tables (`scores-*.csv`, `predictions-*.csv`): each cell as it was
before `csv_cell` defused it, each `s` checked, and never more cells than a run writes, so that a
damaged or hostile table is refused naming the file instead of filling memory or failing halfway
through a report."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bias.core.errors import BiasError
from bias.core.regular_files import open_regular
from bias.core.runs.folder import MAX_TABLE
from bias.core.runs.results import MAX_MAGNITUDE
from bias.core.text import cell_value

MAX_CELLS = 5_000_000  # of a per-item table: 100,000 items of 50 columns (about 100 B a cell)


@contextmanager
def table_text(path: Path, what: str) -> Iterator[Any]:
    """A per-item table of a run folder opened as CSV text: a plain file (no link, pipe or
    device) of at most MAX_TABLE bytes, else refused naming it."""
    with (
        open_regular(path, limit=MAX_TABLE, follow_links=False, what=what) as raw,
        io.TextIOWrapper(raw, encoding="utf-8", newline="") as fh,
    ):
        yield fh


def within_cells(rows: Any, width: int, path: Path) -> list[Any]:
    """The rows of a CSV reader, refused naming the file once they hold more than MAX_CELLS cells
    (the header's width for every row: a file of short rows under a wide header is many cells)."""
    out, cells = [], 0
    for row in rows:
        cells += max(width, len(row) if isinstance(row, list) else 0, 1)
        if cells > MAX_CELLS:
            raise BiasError(
                f"{path}: more than {MAX_CELLS:,} cells, more than a run's per-item table holds.",
                "Run the experiment again, or remove the damaged file.",
            )
        out.append(row)
    return out


def read_scores(path: Path) -> list[dict[str, str]]:
    """The rows of a per-item scores table of a run folder (`scores-*.csv`: set, item, s, ...), its
    cells as they were before `csv_cell` defused them, each `s` checked to be a number: a file
    damaged or edited by hand is refused naming its line, never met as a ValueError halfway through
    a report."""
    import csv

    damaged = "Run the experiment again, or remove the damaged file."
    try:
        with table_text(path, "scores table") as fh:
            reader = csv.reader(fh)
            header = [cell_value(name) for name in next(reader, [])]
            lines = within_cells(reader, len(header), path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise BiasError(f"{path}: not a readable scores table ({exc}).", damaged) from None
    if len(set(header)) != len(header):
        raise BiasError(f"{path}: the header names a column twice.", damaged)
    if "s" in header and not {"set", "item"} <= set(header):
        raise BiasError(f"{path}: a table of s(w) without its set and item columns.", damaged)
    rows = []
    for line, cells in enumerate(lines, start=2):
        if not cells:  # a blank line, as csv.DictReader skips it
            continue
        if len(cells) != len(header):
            raise BiasError(f"{path}: line {line} does not have the header's columns.", damaged)
        row = dict(zip(header, (cell_value(cell) for cell in cells)))
        if "s" in row:
            try:
                value = float(row["s"])
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and abs(value) <= MAX_MAGNITUDE):
                raise BiasError(
                    f"{path}: line {line}: s = {row['s'][:40]!r} is not a finite number of a "
                    "metric's range.",
                    damaged,
                )
        rows.append(row)
    return rows
