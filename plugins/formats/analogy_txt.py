"""The word2vec analogy questions format (Mikolov et al. 2013): `: section` lines, each followed by
questions of four words `a b c d` (a is to b as c is to d), one per line.

Lines starting with `#` are comments; `# language: en` (and `# bias_type:`, `# source:`, `#
licence:`, `# title:`) set metadata. The format shares the `.txt` suffix with the WEAT text
importer, so `sniff` tells them apart: analogy files have section lines and four-word lines, WEAT
files comma lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import ANALOGIES, BiasError, WordSetFormat
from bias.api.data import content_lines
from bias.api.static import read_lines

_SNIFF_LINES = 20


class AnalogyTxtFormat(WordSetFormat):
    name: ClassVar[str] = "analogy-txt"
    summary: ClassVar[str] = "word2vec analogy questions: ': section' lines, then 'a b c d' lines."
    suffixes: ClassVar[tuple[str, ...]] = (".txt",)
    kind: ClassVar[str] = ANALOGIES

    def sniff(self, path: Path) -> bool:
        """An analogy file starts with a section line, or its first lines are four words without
        commas."""
        found = content_lines(path, _SNIFF_LINES)
        if not found:
            return False
        lines = [line.strip() for line in found]
        if lines[0].startswith(":"):  # a WEAT line may hold a colon, but never starts with one
            return True
        return all(
            line.startswith(":") or (len(line.split()) == 4 and "," not in line) for line in lines
        )

    def record(self, path: Path) -> dict[str, Any]:
        meta, lines = read_lines(path, bias_type="non-social")
        sections: list[dict[str, Any]] = []
        for number, line in lines:
            if line.startswith(":"):
                name = line[1:].strip()
                if not name:
                    raise BiasError(
                        f"{path}: line {number}: a section line needs a name, e.g. ': "
                        "capital-country'."
                    )
                sections.append({"name": name, "questions": []})
                continue
            words = line.split()
            if len(words) != 4:
                raise BiasError(
                    f"{path}: line {number}: expected four words 'a b c d', found "
                    f"{len(words)}: {line[:60]!r}.",
                    "Each question is one line of four words separated by spaces; sections "
                    "start with ': name'.",
                )
            if not sections:
                raise BiasError(
                    f"{path}: line {number}: a question before the first section line.",
                    "Start the file with a section line such as ': capital-country'.",
                )
            sections[-1]["questions"].append(" ".join(words))
        if not sections:
            raise BiasError(
                f"{path}: no sections found.",
                "An analogy file has ': section' lines followed by 'a b c d' questions.",
            )
        empty = [s["name"] for s in sections if not s["questions"]]
        if empty:
            raise BiasError(
                f"{path}: section '{empty[0]}' has no questions.",
                "Remove the empty section or add questions under it.",
            )
        return {"kind": ANALOGIES, **meta, "sections": sections}
