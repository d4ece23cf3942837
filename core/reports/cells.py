"""Text from results as each file format writes it in a cell: Markdown (`md_text`) and CSV
(`records_csv`). A results folder may come from someone else, so what it holds is written literally:
no HTML a Markdown viewer would run, no formula a spreadsheet would run, no escape code a terminal
would act on when the file is shown with `cat`. report.html and results.tex escape for their own
formats (`html.escape`, `latex.escape`)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Any

from bias.core.text import csv_cell, visible

_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def md_text(text: object) -> str:
    """Text from results (test, model and word names, warnings) as Markdown shows it, literally: a
    `<` that could open an HTML tag becomes `&lt;` (report.md rendered with raw HTML allowed runs
    nothing a name carries; `<1e-6` stays as written), `|` is escaped so tables keep their columns,
    line breaks are joined, and control, bidi and invisible characters written as <U+XXXX> (an
    escape code shown by `cat report.md` would redraw the terminal). report.html and results.tex
    escape for their own formats."""
    joined = visible(str(text).replace("\r\n", " ").replace("\n", " "))
    return _TAG_START.sub("&lt;", joined).replace("|", "\\|")


def records_csv(records: Sequence[dict[str, Any]], fields: Sequence[str] = ()) -> str:
    """Records as CSV text, the first record's keys as the header (`fields` when there is none, or
    nothing): an empty cell for None, every cell through `csv_cell` (a results folder someone sent
    may hold text that a terminal or a spreadsheet would act on)."""
    header = list(records[0]) if records else list(fields)
    if not header:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writerow({k: csv_cell(k) for k in header})  # the header too: keys come from results
    for rec in records:
        writer.writerow({k: "" if v is None else csv_cell(v) for k, v in rec.items()})
    return buffer.getvalue()
