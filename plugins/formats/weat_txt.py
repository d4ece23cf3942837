"""The plain WEAT text format: four lines of comma-separated stimuli, in the order X, Y, A, B.

A line may start with a label and a colon ("Flowers: aster, clover, ..."). Lines starting with `#`
are comments; `# language: nl` (and `# bias_type:`, `# source:`, `# licence:`) set metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.core.errors import BiasError
from bias.core.interfaces import WordSetFormat

_META_KEYS = ("language", "bias_type", "source", "licence", "title")


class WeatTxtFormat(WordSetFormat):
    name: ClassVar[str] = "weat-txt"
    summary: ClassVar[str] = "WEAT text file: four comma-separated lines X, Y, A, B."
    suffixes: ClassVar[tuple[str, ...]] = (".txt",)

    def record(self, path: Path) -> dict[str, Any]:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BiasError(f"Word-set file not found: {path}") from None
        except UnicodeDecodeError as exc:
            raise BiasError(f"{path}: not UTF-8 text ({exc.reason}).", "Save the file as UTF-8.") from None
        meta = {"language": "und", "bias_type": "unspecified", "source": f"user file {Path(path).name}", "licence": "unspecified"}
        lines: list[tuple[int, str]] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                key, sep, value = line[1:].partition(":")
                if sep and key.strip().lower() in _META_KEYS:
                    meta[key.strip().lower()] = value.strip()
                continue
            lines.append((number, line))
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
