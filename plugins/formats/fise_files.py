"""The FISE files of the BIAS Detection Framework (`<lang>/FISE/`):

- the test, `.json`: its axes, `{"gender": {"male": [...], "female": [...]}, "race": {...}}`, the
  first group of each axis its positive end; a group word may be a list of variants;
- trait lists, `.txt`: one trait per line, a line may be a list literal of grammatical-gender
  variants;
- affect stimuli, `.csv`: a header, then a positive and a negative column.

A test imports as a word set of kind `fise`; trait lists and affect files are what the `fise`
metric's `traits` and `affect` parameters name, so they are checked by `bias validate` but are not
word sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import FISE, file_head, fise_data, read_json, read_text
from bias.api.static import with_layout_language


class FiseJsonFormat(WordSetFormat):
    name: ClassVar[str] = "fise-json"
    summary: ClassVar[str] = (
        "FISE test of the BIAS Detection Framework: axes of two word groups each (.json)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    folders: ClassVar[tuple[str, ...]] = ("FISE",)
    kind: ClassVar[str] = FISE

    def sniff(self, path: Path) -> bool:
        try:
            data = read_json(path)
        except (OSError, BiasError):
            return False
        # StereoSet's {"data": {"intrasentence": [...], "intersentence": [...]}} (no version) has
        # the shape of one axis of two groups: the stereoset-json importer's file, not a FISE test.
        stereoset = (
            isinstance(data, dict)
            and isinstance(data.get("data"), dict)
            and "intrasentence" in data["data"]
        )
        return fise_data.looks_like_fise(data) and not stereoset

    def record(self, path: Path) -> dict[str, Any]:
        path = Path(path)
        axes = fise_data.axes_from_json(path)
        record = {
            "kind": FISE,
            "language": "und",
            "bias_type": "mixed",
            "source": f"user file {path.name} (FISE test of the BIAS Detection Framework)",
            "licence": "unspecified",
            "axes": axes,
        }
        return with_layout_language(record, path)


class _Companion(WordSetFormat):
    """A file the `fise` metric reads through a parameter: validated, never loaded as a word set."""

    kind: ClassVar[str] = FISE
    parameter: ClassVar[str]

    def record(self, path: Any) -> dict[str, Any]:
        raise BiasError(  # a two-column CSV written as a word set reads as one: say both ways
            f"{path} is not a word set: it reads as a FISE {self.parameter} file.",
            "Write a word set as TOML (`bias list wordsets` shows shipped ones); a FISE test "
            f"(.json) takes this file as --param {self.parameter}={Path(path).name}.",
        )

    def read(self, path: Path) -> Any:
        raise NotImplementedError

    def validate(self, path: Any) -> list[Any]:
        from bias.api import Problem

        try:
            self.read(Path(path))
        except BiasError as exc:
            return [Problem(str(path), "", exc.message)]
        return []


def _scored(line: str) -> bool:
    """Two words then a number among the later fields (SimLex has a part of speech before it)."""
    fields = line.split()
    for field in fields[2:]:
        try:
            float(field)
        except ValueError:
            continue
        return True
    return False


class FiseTraitsFormat(_Companion):
    name: ClassVar[str] = "fise-traits"
    summary: ClassVar[str] = (
        "FISE trait list: one trait per line, or a list literal of variants (.txt)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".txt",)
    folders: ClassVar[tuple[str, ...]] = ("FISE",)
    parameter: ClassVar[str] = "traits"

    def sniff(self, path: Path) -> bool:
        """One trait per line: no comma outside a list literal, no analogy section lines."""
        try:
            text = read_text(path, "FISE traits file")  # bounded: the file may be anything
        except BiasError:
            return False
        lines = [
            ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")
        ]
        if len(lines) > 1 and all(_scored(ln) for ln in lines[1:]):
            return False  # word pairs with scores (word1 word2 score): the similarity-tsv layout
        return bool(lines) and all(
            ln.startswith("[") or ("," not in ln and not ln.startswith(":")) for ln in lines
        )

    def read(self, path: Path) -> Any:
        return fise_data.read_traits(path)


class FiseAffectFormat(_Companion):
    name: ClassVar[str] = "fise-affect"
    summary: ClassVar[str] = (
        "FISE affect stimuli: a header, then positive and negative columns (.csv)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".csv",)
    folders: ClassVar[tuple[str, ...]] = ("FISE",)
    parameter: ClassVar[str] = "affect"

    def sniff(self, path: Path) -> bool:
        head = file_head(path)
        if head is None:
            return False
        first = head.split("\n", 1)[0]
        # A header naming `text` or `label` is a labelled-texts file (the probe's), not affect
        # columns.
        labelled = {c.strip().lower() for c in first.split(",")} & {"text", "label"}
        return "sent_more" not in head and first.count(",") == 1 and not labelled

    def read(self, path: Path) -> Any:
        return fise_data.read_affect(path)
