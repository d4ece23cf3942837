"""LPBS tests in the BIAS Detection Framework's JSON (files named .jsonl, one object):

    targ1, targ2   {"singular": [...], "plural": [...]}   (a plural list may be empty)
    attr1, attr2   [words]
    templates      {"singular": [...], "plural": [...]}   with the placeholders TARGET and ATTRIBUTE

A template may be as short as "TARGET ATTRIBUTE". Singular templates take the singular targets and
plural templates the plural ones: each target carries `number = "singular"` or `"plural"` and each
template a `when` condition on it, so the house LPBS machinery renders exactly those sentences.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import LPBS, BiasError, WordSetFormat
from bias.api.static import with_layout_language
from bias.api.data import check_file_words, read_json

NUMBERS = ("singular", "plural")


def _load(path: Path) -> Any:
    return read_json(path)


def _template(text: str) -> str:
    """TARGET / ATTRIBUTE placeholders as the house template slots {target} / {attribute}."""
    return text.replace("TARGET", "{target}").replace("ATTRIBUTE", "{attribute}")


class LpbsJsonFormat(WordSetFormat):
    name: ClassVar[str] = "lpbs-json"
    summary: ClassVar[str] = (
        "LPBS JSON of the BIAS Detection Framework (targ/attr lists, TARGET/ATTRIBUTE templates)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    folders: ClassVar[tuple[str, ...]] = ("LPBS",)
    kind: ClassVar[str] = LPBS

    def sniff(self, path: Path) -> bool:
        try:
            data = _load(path)
        except BiasError:
            return False
        return (
            isinstance(data, dict)
            and "templates" in data
            and isinstance(data.get("targ1"), dict)
            and "examples" not in data["targ1"]
        )

    def record(self, path: Path) -> dict[str, Any]:
        path = Path(path)
        data = _load(path)
        if not isinstance(data, dict):
            raise BiasError(
                f"{path}: expected a JSON object with targ1, targ2, attr1, attr2 and templates."
            )
        templates = data.get("templates")
        if not isinstance(templates, dict):
            raise BiasError(
                f'{path}: field \'templates\' must be {{"singular": [...], "plural": '
                f"[...]}} with TARGET and ATTRIBUTE."
            )
        # Targets of a number no template is written for are left out, as the framework leaves them.
        numbers = [n for n in NUMBERS if templates.get(n)]
        sets: dict[str, Any] = {}
        for key, field in (("X", "targ1"), ("Y", "targ2")):
            entry = data.get(field)
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("singular", []), list)
                or not isinstance(entry.get("plural", []), list)
            ):
                raise BiasError(
                    f'{path}: field \'{field}\' must be {{"singular": [...], "plural": [...]}}.'
                )
            for number in numbers:
                check_file_words(entry.get(number, []), path, f"{field}.{number}")
            words = [
                {"word": w, "number": number} if isinstance(w, str) else w
                for number in numbers
                for w in entry.get(number, [])
            ]
            sets[key] = {"label": field, "words": words}
        for key, field in (("A", "attr1"), ("B", "attr2")):
            entry = data.get(field)
            if not isinstance(entry, list):
                raise BiasError(f"{path}: field '{field}' must be a list of words.")
            check_file_words(entry, path, field)
            sets[key] = {"label": field, "words": entry}
        entries = []
        for number in NUMBERS:
            texts = templates.get(number, [])
            if not isinstance(texts, list):
                raise BiasError(f"{path}: templates.{number} must be a list of sentences.")
            check_file_words(texts, path, f"templates.{number}", templates=True)
            for text in texts:
                if not isinstance(text, str):
                    raise BiasError(f"{path}: templates.{number} holds {text!r}, not a sentence.")
                entries.append({"text": _template(text), "when": {"target.number": number}})
        return with_layout_language(
            {
                "kind": LPBS,
                "language": "und",
                "bias_type": "unspecified",
                "source": f"user file {path.name} (LPBS JSON of the BIAS Detection Framework)",
                "licence": "unspecified",
                "sets": sets,
                "templates": entries,
            },
            path,
        )
