"""The SEAT JSON format of May et al. (2019): `targ1`, `targ2`, `attr1`, `attr2`, each with a
`category` and a list of `examples` (words or sentences). Files may be named .json or .jsonl (the
BIAS Detection Framework names its single-object SEAT and genSEAT files .jsonl); in its folder
layout (`<lang>/SEAT/<test>.jsonl`) the folder gives the language."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.static import with_layout_language
from bias.api.data import check_file_words, read_json

_KEYS = {"X": "targ1", "Y": "targ2", "A": "attr1", "B": "attr2"}


class SeatJsonFormat(WordSetFormat):
    name: ClassVar[str] = "seat-json"
    summary: ClassVar[str] = "SEAT JSON (targ1, targ2, attr1, attr2 with category and examples)."
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    folders: ClassVar[tuple[str, ...]] = ("SEAT", "genSEAT")

    def sniff(self, path: Path) -> bool:
        try:
            data = read_json(path)
        except (OSError, BiasError):
            return False
        return (
            isinstance(data, dict)
            and isinstance(data.get("targ1"), dict)
            and "examples" in data["targ1"]
        )

    def record(self, path: Path) -> dict[str, Any]:
        data = read_json(path)
        if not isinstance(data, dict):
            raise BiasError(f"{path}: expected a JSON object with targ1, targ2, attr1, attr2.")
        sets = {}
        for key, field in _KEYS.items():
            entry = data.get(field)
            if not isinstance(entry, dict) or not isinstance(entry.get("examples"), list):
                raise BiasError(
                    f"{path}: field '{field}' is missing or has no 'examples' list.",
                    'A SEAT file has targ1, targ2, attr1 and attr2, each {"category": ..., '
                    '"examples": [...]}.',
                )
            check_file_words(entry["examples"], path, f"{field}.examples")
            sets[key] = {"label": str(entry.get("category", field)), "words": entry["examples"]}
        examples = [e for entry in sets.values() for e in entry["words"] if isinstance(e, str)]
        sentences = sum(len(e.split()) > 1 for e in examples) > len(examples) / 2
        return with_layout_language(
            {
                "kind": "association",
                "stimuli": "sentences" if sentences else "words",
                "language": str(data.get("language", "und")),
                "bias_type": str(data.get("bias_type", "unspecified")),
                "source": str(data.get("source", f"user file {Path(path).name}")),
                "licence": str(data.get("licence", "unspecified")),
                "sets": sets,
            },
            Path(path),
        )
