"""Labelled texts in a CSV or TSV file: a header with the columns `text` and `label` (any order,
other columns ignored), one text per row. What the `probe` metric classifies.

The separator is the one that splits the header into both columns (comma, tab, semicolon or bar).
Every error names the file (and the line), so a row can be fixed in a spreadsheet. The file says
nothing about its language or licence: the record marks them "und" and "unspecified".
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import MAX_DATASET_FILE, file_head, read_text

REQUIRED = ("text", "label")
SEPARATORS = (",", "\t", ";", "|")
MAX_FIELD = 1 << 20  # characters of one text, as any text of a house record (record_bounds)


def _names(header: str, sep: str) -> list[str]:
    try:  # a cell past csv's field limit (131,072 characters) names no column
        return [n.strip().lower() for n in next(csv.reader([header], delimiter=sep), [])]
    except csv.Error:
        return []


class LabelledCsvFormat(WordSetFormat):
    name: ClassVar[str] = "labelled-csv"
    summary: ClassVar[str] = (
        "Labelled texts, CSV/TSV with the columns text and label (for the probe metric)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".csv", ".tsv")
    kind: ClassVar[str] = "labelled-texts"

    def sniff(self, path: Any) -> bool:
        """A header naming `text` or `label` (so a file missing one of them gets this format's
        error)."""
        head = file_head(path)
        if head is None:
            return False
        first = head.split("\n", 1)[0]
        return any(col in _names(first, sep) for sep in SEPARATORS for col in REQUIRED)

    def record(self, path: Any) -> dict[str, Any]:
        path = Path(path)
        text = read_text(path, "CSV file", limit=MAX_DATASET_FILE)
        if not text.strip():
            raise BiasError(
                f"{path}: the file is empty.",
                "A labelled-texts file starts with a header line: text,label.",
            )
        header_line = text.split("\n", 1)[0].rstrip("\r")
        fallback = "\t" if path.suffix.lower() == ".tsv" else ","
        sep = next(
            (s for s in SEPARATORS if all(c in _names(header_line, s) for c in REQUIRED)), fallback
        )
        # The csv module's field limit is what a text may be while this file is read (the module
        # has one limit for the process: a CrowS file read later must not inherit it).
        previous = csv.field_size_limit(MAX_FIELD)
        try:
            items = _rows(path, text, sep)
        finally:
            csv.field_size_limit(previous)
        if not items:
            raise BiasError(
                f"{path}: the file has a header but no rows.",
                "Add one row per text: its text and its label.",
            )
        return {
            "kind": "labelled-texts",
            "language": "und",
            "bias_type": "non-social",
            "title": f"Labelled texts from {path.name}",
            "source": f"user file {path.name}",
            "licence": "unspecified",
            "items": items,
        }


def _rows(path: Path, text: str, sep: str) -> list[dict[str, Any]]:
    """The rows of a labelled-texts file, each with the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as exc:
        raise BiasError(f"{path}: line 1: unreadable header ({exc}).") from exc
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        shown = ", ".join(repr(h) for h in header[:8]) or "nothing"
        raise BiasError(
            f"{path}: line 1: missing column(s) {', '.join(missing)} (the header has {shown}).",
            "A labelled-texts file needs the columns text and label; the separator may "
            "be a comma or a tab.",
        )
    col = {c: header.index(c) for c in REQUIRED}
    width = max(col.values()) + 1
    items: list[dict[str, Any]] = []
    line = reader.line_num + 1
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) < width:
                    raise BiasError(
                        f"{path}: line {line}: {len(row)} field(s), but the header has "
                        f"{len(header)}.",
                        "Check the separators and quotes on that line.",
                    )
                items.append({"text": row[col["text"]], "label": row[col["label"]], "line": line})
            line = reader.line_num + 1
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise BiasError(
                f"{path}: line {line}: a field longer than {MAX_FIELD:,} characters.",
                "Shorten that text, or check for a quote left open before it.",
            ) from exc
        raise BiasError(
            f"{path}: line {reader.line_num}: malformed CSV ({exc}).",
            "Check the quotes on that line.",
        ) from exc
    return items
