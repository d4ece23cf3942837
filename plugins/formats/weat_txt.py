"""The plain WEAT text format: four lines of comma-separated stimuli, in the order X, Y, A, B.

A line may start with a label and a colon ("Flowers: aster, clover, ..."). Lines starting with `#`
are comments; `# language: nl` (and `# bias_type:`, `# source:`, `# licence:`) set metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.core.errors import BiasError
from bias.core.interfaces import WordSetFormat
from bias.plugins.formats.text_lines import read_lines



class WeatTxtFormat(WordSetFormat):
    name: ClassVar[str] = "weat-txt"
    summary: ClassVar[str] = "WEAT text file: four comma-separated lines X, Y, A, B."
    suffixes: ClassVar[tuple[str, ...]] = (".txt",)

    def record(self, path: Path) -> dict[str, Any]:
        meta, lines = read_lines(path)
        if len(lines) != 4:
            raise BiasError(
                f"{path}: expected 4 lines of comma-separated words (X, Y, A, B), found {len(lines)}.",
                "Put one set per line; blank lines and # comments are ignored.",
            )
        sets = {}
        for key, (number, line) in zip("XYAB", lines):
            label, sep, rest = line.partition(":")
            if not sep or "," in label:
                label, rest = key, line
            words = [w.strip() for w in rest.split(",")]
            if any(not w for w in words):
                raise BiasError(f"{path}: line {number} has an empty entry between commas.", "Remove the stray comma.")
            sets[key] = {"label": label.strip(), "words": words}
        return {"kind": "association", **meta, "sets": sets}
