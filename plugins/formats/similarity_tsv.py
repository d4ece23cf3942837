"""Word-similarity pair files in the common SimLex / WordSim layout: one pair per line, `word1 word2
score`, separated by tabs (or, in a file without tabs, by spaces); a header line is optional.

The score is the third column, unless the header names another: the first header field among
`score`, `similarity`, `relatedness`, `human`, `mean`, `simlex999` (case ignored) is the score
column, so a SimLex-999 file (word1, word2, POS, SimLex999, ...) reads as it is. `#` lines are
comments, and `# language: en` (and `# source:`, `# licence:`, `# title:`) set metadata.

The layout shares `.txt` with the WEAT and analogy importers, so `sniff` looks for lines whose score
column is a number.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import SIMILARITY_PAIRS, content_lines
from bias.api.static import read_lines

SCORE_NAMES = ("score", "similarity", "relatedness", "human", "mean", "simlex999")
_SNIFF_LINES = 20


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _fields(line: str, tabs: bool) -> list[str]:
    return [f.strip() for f in line.split("\t")] if tabs else line.split()


def _score_column(header: list[str]) -> int:
    names = [h.strip().casefold() for h in header]
    for i, name in enumerate(names):
        if i >= 2 and any(name == s or name.startswith(s) for s in SCORE_NAMES):
            return i
    return 2


def _is_header(fields: list[str]) -> bool:
    return len(fields) >= 3 and _number(fields[2]) is None


class SimilarityTsvFormat(WordSetFormat):
    name: ClassVar[str] = "similarity-tsv"
    summary: ClassVar[str] = (
        "Word pairs with human similarity scores (SimLex/WordSim layout: word1, word2, "
        "score; header optional)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".tsv", ".txt")
    kind: ClassVar[str] = SIMILARITY_PAIRS

    def sniff(self, path: Path) -> bool:
        """A pairs file: past an optional header, at least half its first lines have three fields or
        more and a number in the score column."""
        lines = content_lines(path, _SNIFF_LINES)
        if not lines:
            return False
        tabs = any("\t" in line for line in lines)
        rows = [_fields(line, tabs) for line in lines]
        column = 2
        if _is_header(rows[0]):
            column = _score_column(rows[0])
            rows = rows[1:]
        if not rows or any("," in r[0] for r in rows):
            return False
        # at least half the lines, so that a file with a bad line still reaches this importer's
        # errors
        scored = sum(
            len(r) > column and _number(r[column]) is not None and _number(r[0]) is None
            for r in rows
        )
        return scored * 2 >= len(rows)

    def record(self, path: Path) -> dict[str, Any]:
        meta, lines = read_lines(path, bias_type="non-social")
        if not lines:
            raise BiasError(
                f"{path}: no word pairs found.",
                "Each line is 'word1<TAB>word2<TAB>score'; a header line is optional.",
            )
        tabs = any("\t" in line for _, line in lines)
        column = 2
        first = _fields(lines[0][1], tabs)
        if _is_header(first):
            column = _score_column(first)
            lines = lines[1:]
        pairs: list[list[Any]] = []
        for number, line in lines:
            fields = _fields(line, tabs)
            if len(fields) <= column or len(fields) < 3:
                raise BiasError(
                    f"{path}: line {number}: expected 'word1 word2 score', found "
                    f"{len(fields)} field(s): {line[:60]!r}.",
                    "Separate the fields by tabs (or spaces when no word holds one); a "
                    "header line is optional.",
                )
            score = _number(fields[column])
            if score is None:
                raise BiasError(
                    f"{path}: line {number}: the score {fields[column]!r} is not a number.",
                    "The score column holds numbers such as 7.25; only the first line may "
                    "be a header.",
                )
            pairs.append([fields[0], fields[1], score])
        if not pairs:
            raise BiasError(
                f"{path}: a header but no word pairs.",
                "Add lines 'word1<TAB>word2<TAB>score' below the header.",
            )
        return {"kind": SIMILARITY_PAIRS, **meta, "pairs": pairs}
