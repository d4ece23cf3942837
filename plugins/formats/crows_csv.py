"""CrowS-Pairs files (Nangia et al. 2020): CSV or TSV with the columns sent_more, sent_less,
stereo_antistereo and bias_type (other columns, such as the annotations, are ignored), and Excel
workbooks (.xlsx, first sheet, read through openpyxl) with the same columns.

The separator is found from the header line (the one that splits it into the required columns), else
by csv.Sniffer. CrowS-Pairs' bias types are mapped to the framework's (race-color -> race; the
others keep their names). Every error gives the file and the line, so a row can be fixed in a
spreadsheet."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import file_head, listed, read_text, shown
from bias.api.lm import DIRECTIONS
from bias.api.static import with_layout_language

REQUIRED = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")
SEPARATORS = (",", "\t", ";", "|")
# CrowS-Pairs' names -> the framework's bias types.
BIAS_TYPE_MAP = {
    "race-color": "race",
    "race": "race",
    "sexual-orientation": "sexual-orientation",
    "physical-appearance": "physical-appearance",
    "socioeconomic": "socioeconomic",
    "nationality": "nationality",
    "religion": "religion",
    "age": "age",
    "disability": "disability",
    "gender": "gender",
}


def _normal_key(value: str) -> str:
    return value.strip().lower().replace("_", "-").replace(" ", "-")


def detect_separator(text: str) -> str | None:
    """The separator that splits the header into the required columns; else csv.Sniffer's guess."""
    header = text.split("\n", 1)[0]
    for sep in SEPARATORS:
        try:  # a cell past csv's field limit (131,072 characters) is an error, not a header
            cells = next(csv.reader([header], delimiter=sep), [])
        except csv.Error:
            continue
        names = {_normal_key(n).replace("-", "_") for n in cells}
        if all(col in names for col in REQUIRED):
            return sep
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters="".join(SEPARATORS)).delimiter
    except csv.Error:
        return None


class CrowsCsvFormat(WordSetFormat):
    name: ClassVar[str] = "crows-csv"
    summary: ClassVar[str] = (
        "CrowS-Pairs CSV/TSV (sent_more, sent_less, stereo_antistereo, bias_type)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".csv", ".tsv")
    folders: ClassVar[tuple[str, ...]] = ("CROWS",)
    kind: ClassVar[str] = "pairs"

    def sniff(self, path: Any) -> bool:
        head = file_head(path)
        if head is None:
            return False
        return "sent_more" in head and "sent_less" in head

    def record(self, path: Any) -> dict[str, Any]:
        path = Path(path)
        text = read_text(path, "CrowS-Pairs file")
        if not text.strip():
            raise BiasError(
                f"{path}: the file is empty.",
                f"A CrowS-Pairs file starts with a header: {', '.join(REQUIRED)}.",
            )
        sep = detect_separator(text) or ("\t" if path.suffix.lower() == ".tsv" else ",")
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
        try:
            header = next(reader)
        except csv.Error as exc:
            raise BiasError(f"{path}: line 1: unreadable header ({exc}).") from exc
        rows: list[tuple[int, list[str]]] = []
        start = reader.line_num + 1
        try:
            for row in reader:
                rows.append((start, row))
                start = reader.line_num + 1
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):  # a quote left open, most often
                raise BiasError(
                    f"{path}: line {start}: a field longer than {csv.field_size_limit():,} "
                    "characters.",
                    "Check for a quote left open on that line; a sentence is never that long.",
                ) from exc
            raise BiasError(
                f"{path}: line {reader.line_num}: malformed CSV ({exc}).",
                "Check the quotes on that line.",
            ) from exc
        return pairs_record(path, header, rows)


def _why(skipped: list[dict[str, Any]]) -> str:
    """Skipped rows grouped by reason, with their lines: 'the two sentences are identical on lines
    2, 3'."""
    lines: dict[str, list[int]] = {}
    for row in skipped:
        lines.setdefault(row["reason"].split(" (")[0], []).append(row["line"])
    return "; ".join(
        f"{reason} on line{'s' if len(found) > 1 else ''} {listed(found, 8)}"
        for reason, found in lines.items()
    )


def pairs_record(
    path: Path, header: list[str], rows: list[tuple[int, list[str]]]
) -> dict[str, Any]:
    """The house record of CrowS-Pairs rows (line number, cells) under `header`, from a CSV or a
    sheet.

    Extra columns (an unnamed index, `Corrected`, annotations) are ignored. A pair whose sentences
    are identical or empty cannot be scored: it is skipped and listed under `skipped` with its line,
    which validation reports; a wrong direction or bias type is an error naming the line."""
    columns = {_normal_key(name).replace("-", "_"): i for i, name in enumerate(header)}
    missing = [col for col in REQUIRED if col not in columns]
    if missing:
        shown = ", ".join(repr(h) for h in header[:8]) or "nothing"
        raise BiasError(
            f"{path}: line 1: missing column(s) {', '.join(missing)} (the header has {shown}).",
            f"A CrowS-Pairs file needs the columns {', '.join(REQUIRED)}; the separator "
            "may be a comma or a tab.",
        )
    pairs = []
    skipped = []
    width = max(columns[col] for col in REQUIRED) + 1
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < width:
            raise BiasError(
                f"{path}: line {line}: {len(row)} field(s), but the header has {len(header)}.",
                "Check the separators and quotes on that line.",
            )
        value = {col: row[columns[col]].strip() for col in REQUIRED}
        if not value["sent_more"] or not value["sent_less"]:
            skipped.append({"line": line, "reason": "a sentence is empty"})
            continue
        if value["sent_more"] == value["sent_less"]:
            skipped.append(
                {
                    "line": line,
                    "reason": f"the two sentences are identical ({value['sent_more'][:50]!r})",
                }
            )
            continue
        direction = value["stereo_antistereo"].lower()
        if direction not in DIRECTIONS:
            raise BiasError(
                f"{path}: line {line}: stereo_antistereo is "
                f"{value['stereo_antistereo']!r}, not one of {', '.join(DIRECTIONS)}.",
                "Each row says whether sent_more states a stereotype (stereo) or violates "
                "one (antistereo).",
            )
        bias_type = BIAS_TYPE_MAP.get(_normal_key(value["bias_type"]))
        if bias_type is None:
            raise BiasError(
                f"{path}: line {line}: unknown bias_type {value['bias_type']!r}.",
                "CrowS-Pairs types are "
                f"{', '.join(sorted(k for k in BIAS_TYPE_MAP if k != 'race'))}.",
            )
        pairs.append(
            {
                "more": value["sent_more"],
                "less": value["sent_less"],
                "direction": direction,
                "bias_type": bias_type,
                "line": line,
            }
        )
    if not pairs:
        raise BiasError(
            f"{path}: the file has a header but no pairs"
            + (f" ({len(skipped)} skipped: {_why(skipped)})." if skipped else "."),
            "A pair needs two different, non-empty sentences.",
        )
    record = {
        "kind": "pairs",
        "language": "und",
        "bias_type": "mixed",
        "title": f"Sentence pairs from {path.name}",
        "source": f"user file {path.name} (CrowS-Pairs format, Nangia et al. 2020)",
        "licence": "unspecified",
        "pairs": pairs,
        **({"skipped": skipped} if skipped else {}),
    }
    return with_layout_language(record, path)


class CrowsXlsxFormat(WordSetFormat):
    """CrowS-Pairs in an Excel workbook (the BIAS Detection Framework's Italian files): the first
    sheet, a header row, one pair per row; line numbers are the sheet's row numbers."""

    name: ClassVar[str] = "crows-xlsx"
    summary: ClassVar[str] = (
        "CrowS-Pairs Excel workbook (.xlsx, first sheet; same columns as the CSV)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".xlsx",)
    folders: ClassVar[tuple[str, ...]] = ("CROWS",)
    kind: ClassVar[str] = "pairs"

    def record(self, path: Any) -> dict[str, Any]:
        import zipfile

        from openpyxl import load_workbook

        path = Path(path)
        if not path.is_file():
            raise BiasError(f"Word-set file not found: {path}", "Check the path.")
        from xml.etree.ElementTree import ParseError
        from zlib import error as ZlibError

        # A damaged or hostile workbook fails inside openpyxl or its XML parser (cut sheet XML, an
        # entity expanded past expat's amplification limit, a broken zip member): all say the same.
        unreadable = (
            zipfile.BadZipFile,
            KeyError,
            OSError,
            ValueError,
            TypeError,
            IndexError,
            EOFError,
            ParseError,
            ZlibError,
        )
        try:
            book = load_workbook(path, read_only=True, data_only=True)
            try:
                sheet = book.worksheets[0]
                cells = [
                    ["" if v is None else str(v) for v in row]
                    for row in sheet.iter_rows(values_only=True)
                ]
            finally:
                book.close()
        except unreadable as exc:
            raise BiasError(
                f"{path}: not a readable .xlsx workbook ({shown(exc, 120)}).",
                "Save it again as an Excel workbook, or as CSV.",
            ) from exc
        if not cells:
            raise BiasError(
                f"{path}: the first sheet is empty.",
                f"A CrowS-Pairs sheet starts with a header: {', '.join(REQUIRED)}.",
            )
        return pairs_record(path, cells[0], [(i, row) for i, row in enumerate(cells[1:], start=2)])
