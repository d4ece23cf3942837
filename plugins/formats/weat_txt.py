"""The plain WEAT text format: four lines of comma-separated stimuli, in the order X, Y, A, B.

A line may start with a label and a colon ("Flowers: aster, clover, ..."). Lines starting with `#`
are comments; `# language: nl` (and `# bias_type:`, `# source:`, `# licence:`) set metadata. Blank
lines, spaces around commas and a trailing comma (as in the XWEAT files of Lauscher & Glavaš 2019)
are accepted; an empty entry between two commas is an error, since it is most likely a lost word.
In the BIAS Detection Framework's layout (`<lang>/WEAT/<test>.txt`) the folder gives the language.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.static import read_lines


class WeatTxtFormat(WordSetFormat):
    name: ClassVar[str] = "weat-txt"
    summary: ClassVar[str] = "WEAT text file: four comma-separated lines X, Y, A, B."
    suffixes: ClassVar[tuple[str, ...]] = (".txt",)
    folders: ClassVar[tuple[str, ...]] = ("WEAT",)

    def sniff(self, path: Path) -> bool:
        """A WEAT file's content lines are comma lists; trait lists and analogy files have no
        commas."""
        try:
            _, lines = read_lines(path)
        except BiasError:
            return False
        return bool(lines) and sum("," in line for _, line in lines) >= min(len(lines), 4)

    def record(self, path: Path) -> dict[str, Any]:
        meta, lines = read_lines(path)
        if len(lines) != 4:
            raise BiasError(
                f"{path}: expected 4 lines of comma-separated words (X, Y, A, B), found "
                f"{len(lines)}.",
                "Put one set per line; blank lines and # comments are ignored.",
            )
        sets = {}
        for key, (number, line) in zip("XYAB", lines):
            label, sep, rest = line.partition(":")
            if not sep or "," in label:
                label, rest = key, line
            words = [w.strip() for w in rest.split(",")]
            while words and not words[-1]:  # a trailing comma
                words.pop()
            if any(not w for w in words):
                raise BiasError(
                    f"{path}: line {number} has an empty entry between commas.",
                    "Remove the stray comma.",
                )
            sets[key] = {"label": label.strip(), "words": words}
        return {"kind": "association", **meta, "sets": sets}
