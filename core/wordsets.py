"""The house format of word sets (TOML) and its validation.

A word-set file is declarative and human-edited; every problem is reported with the file and the
field so that the person editing it knows where to look. Language packages are folders of such files
published under one language code through a `DataPackage` entry point.
"""

from __future__ import annotations

import logging
import re
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.model import ASSOCIATION, DIRECTIONS, WORDSET_KINDS, AssociationTest, WordList, WordSetMeta

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger(__name__)

MIN_STIMULI = 8  # Caliskan et al.'s smallest sets; fewer makes the permutation test very coarse
REQUIRED_META = ("kind", "language", "bias_type", "source", "licence")
KNOWN_META = REQUIRED_META + ("name", "title", "description", "expected_direction", "notes", "format", "sets")
SET_KEYS = ("X", "Y", "A", "B")


@attrs.frozen
class Problem:
    """One finding of validation. Errors stop a file from loading; warnings are reported only."""

    file: str
    field: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


@attrs.frozen
class DataPackage:
    """A folder of word-set files published under one language code (what a language package exports).

    Register it under the entry-point group `bias.wordsets`, e.g. `en = "bias_lang_en:PACKAGE"`.
    Each `*.toml` file in `root` becomes the word set `<language>/<file stem>`.
    """

    language: str
    root: Path
    description: str = ""

    def files(self) -> list[Path]:
        return sorted((p for p in Path(self.root).glob("*.toml") if p.is_file()), key=lambda p: natural_key(p.stem))

    def names(self) -> list[str]:
        return [f"{self.language}/{p.stem}" for p in self.files()]


def natural_key(text: str) -> list[Any]:
    """Sort weat2 before weat10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def normalise(word: str) -> str:
    """The form under which two stimuli count as duplicates."""
    return unicodedata.normalize("NFC", word).strip().casefold()


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise BiasError(f"File not found: {path}", "Check the path.") from None
    except IsADirectoryError:
        raise BiasError(f"{path} is a folder, not a TOML file.") from None
    except tomllib.TOMLDecodeError as exc:
        raise BiasError(f"{path}: malformed TOML: {exc}", "Fix the syntax at that line.") from None
    except UnicodeDecodeError as exc:
        raise BiasError(f"{path}: not UTF-8 text ({exc.reason}).", "Save the file as UTF-8.") from None


def check_association(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of an association-test record (from TOML or an importer)."""
    problems: list[Problem] = []

    def err(field: str, msg: str) -> None:
        problems.append(Problem(file, field, msg))

    def warn(field: str, msg: str) -> None:
        problems.append(Problem(file, field, msg, "warning"))

    for key in REQUIRED_META:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            err(key, "missing or empty; every word set must say its " + key.replace("_", " "))
    for key in data:
        if key not in KNOWN_META:
            warn(key, f"unknown field (known: {', '.join(KNOWN_META)})")
    kind = data.get("kind")
    if isinstance(kind, str) and kind not in WORDSET_KINDS:
        err("kind", f"'{kind}' is not a word-set kind ({', '.join(WORDSET_KINDS)})")
    direction = data.get("expected_direction", "positive")
    if direction not in DIRECTIONS:
        err("expected_direction", f"'{direction}' must be one of {', '.join(DIRECTIONS)}")

    sets = data.get("sets")
    if not isinstance(sets, dict):
        err("sets", "missing: give [sets.X], [sets.Y], [sets.A] and [sets.B], each with `words`")
        return problems
    sizes: dict[str, int] = {}
    for key in SET_KEYS:
        entry = sets.get(key)
        field = f"sets.{key}"
        if not isinstance(entry, dict):
            err(field, "missing (targets X, Y and attributes A, B are all needed)")
            continue
        words = entry.get("words")
        if not isinstance(words, list) or not words:
            err(f"{field}.words", "empty or missing: a set needs at least one word")
            continue
        seen: dict[str, int] = {}
        for i, word in enumerate(words):
            if not isinstance(word, str) or not word.strip():
                err(f"{field}.words[{i}]", f"{word!r} is not a word")
                continue
            norm = normalise(word)
            if norm in seen:
                warn(f"{field}.words[{i}]", f"'{word}' repeats word {seen[norm]} (duplicates are dropped)")
            else:
                seen[norm] = i
        sizes[key] = len(seen)
        if 0 < len(seen) < MIN_STIMULI:
            warn(f"{field}.words", f"{len(seen)} stimuli, fewer than {MIN_STIMULI} (Caliskan's smallest sets)")
        if "label" in entry and not isinstance(entry["label"], str):
            err(f"{field}.label", "must be a string")
    for key in sets:
        if key not in SET_KEYS:
            warn(f"sets.{key}", "unknown set (an association test has X, Y, A, B)")
    if "X" in sizes and "Y" in sizes and sizes["X"] != sizes["Y"]:
        warn(
            "sets",
            f"targets differ in size (X {sizes['X']}, Y {sizes['Y']}): the permutation test then uses "
            "random partitions of the observed sizes",
        )
    return problems


def association_from_record(data: dict[str, Any], name: str, path: str) -> AssociationTest:
    """Build a test from a checked record; duplicates are dropped (first occurrence kept)."""
    problems = check_association(data, path)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more; run `bias validate {path}`)" if len(errors) > 1 else ""
        raise BiasError(f"Invalid word set: {errors[0]}{more}", "Fix the file and try again.")
    for problem in problems:
        log.warning("%s", problem)
    sets = data["sets"]

    def wordlist(key: str) -> WordList:
        kept: dict[str, str] = {}
        for word in sets[key]["words"]:
            kept.setdefault(normalise(word), unicodedata.normalize("NFC", word).strip())
        return WordList(str(sets[key].get("label", key)), tuple(kept.values()))

    meta = WordSetMeta(
        name=name,
        kind=data["kind"],
        language=data["language"],
        bias_type=data["bias_type"],
        title=data.get("title", ""),
        description=data.get("description", ""),
        source=data["source"],
        licence=data["licence"],
        expected_direction=data.get("expected_direction", "positive"),
        notes=data.get("notes", ""),
        path=path,
    )
    return AssociationTest(meta, wordlist("X"), wordlist("Y"), wordlist("A"), wordlist("B"))


def meta_of(data: dict[str, Any], path: Path, name: str) -> WordSetMeta:
    """The metadata of a parsed house-format record without building its sets (for listings)."""
    return WordSetMeta(
        name=name,
        kind=str(data.get("kind", "")),
        language=str(data.get("language", "")),
        bias_type=str(data.get("bias_type", "")),
        title=str(data.get("title", "")),
        description=str(data.get("description", "")),
        source=str(data.get("source", "")),
        licence=str(data.get("licence", "")),
        expected_direction=str(data.get("expected_direction", "positive")),
        path=str(path),
    )


def load_toml_wordset(path: Path, name: str | None = None) -> AssociationTest:
    data = read_toml(path)
    kind = data.get("kind")
    if kind not in (None, ASSOCIATION):
        raise BiasError(
            f"{path}: word sets of kind '{kind}' are not supported by this version.",
            "Only association tests (X, Y, A, B) can be loaded so far.",
        )
    return association_from_record(data, name or str(data.get("name") or path.stem), str(path))


def validate_toml_file(path: Path, language: str | None = None) -> list[Problem]:
    try:
        data = read_toml(path)
    except BiasError as exc:
        return [Problem(str(path), "", exc.message)]
    problems = check_association(data, str(path))
    if language is not None and data.get("language") not in (None, language):
        problems.append(
            Problem(str(path), "language", f"'{data.get('language')}' but the package publishes '{language}'")
        )
    return problems


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
