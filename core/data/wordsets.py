"""The house format of word sets (TOML) and its validation.

A word-set file is declarative and human-edited; every problem is reported with the file and the
field so that the person editing it knows where to look. Language packages are folders of such files
published under one language code through a `DataPackage` entry point.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from bias.core.data.file_reading import read_toml
from bias.core.data.kinds import DataKind, kind_handler, known_kinds
from bias.core.data.record_bounds import MAX_SET_WORDS, MAX_WORD_CHARS, WORD, oversized
from bias.core.errors import BiasError
from bias.core.model import (
    ASSOCIATION,
    BIAS_TYPES,
    STIMULI,
    DIRECTIONS,
    AssociationTest,
    WordList,
    WordSetMeta,
)
from bias.core.text import natural_key

log = logging.getLogger(__name__)

# The documented minimum; fewer makes the permutation test coarse and the effect size unstable.
MIN_STIMULI = 8
# A warning when a test is run, an error in `bias validate` (unless published so).
SMALL_SET = "small-set"
# Metadata marker: the sets are small because the published test's are.
PUBLISHED_SMALL = "published_small_sets"
REQUIRED_META = ("kind", "language", "bias_type", "source", "licence")
COMMON_META = REQUIRED_META + (
    "name",
    "title",
    "description",
    "expected_direction",
    "notes",
    "format",
    "concept",
    "descriptor",
)
# Usual descriptors of a test's groups (Husse & Spitz 2022): first names, or group terms (woman,
# man). Others are allowed (e.g. "pronouns"); they are words, not sentences.
DESCRIPTORS = ("names", "terms")
VARIANT_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
SET_KEYS = ("X", "Y", "A", "B")


@attrs.frozen
class Problem:
    """One finding of validation. Errors stop a file from loading; warnings are reported only."""

    file: str
    field: str
    message: str
    severity: str = "error"  # error, warning, or note (a fact worth knowing, not a problem)
    code: str = ""  # a name for problems treated differently in places (SMALL_SET)

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


@attrs.frozen
class DataPackage:
    """What a language package exports: its word-set files, published under one language code.

    Register it under the entry-point group `bias.wordsets`, e.g. `en = "bias_lang_en:PACKAGE"`.
    Each `*.toml` file in `root` becomes the word set `<language>/<file stem>`.
    """

    language: str
    root: Path
    description: str = ""

    def files(self) -> list[Path]:
        return sorted(
            (p for p in Path(self.root).glob("*.toml") if p.is_file()),
            key=lambda p: natural_key(p.stem),
        )

    def names(self) -> list[str]:
        return [f"{self.language}/{p.stem}" for p in self.files()]


def normalise(word: str) -> str:
    """The case-folded form under which two words count as one where case cannot matter (a word in
    two sets, a debias list, a frequency list)."""
    return unicodedata.normalize("NFC", word).strip().casefold()


def stimulus_key(word: str) -> str:
    """The form under which a set's stimuli repeat: case-sensitive, as the BIAS Detection Framework
    and the WEAT paper count them (`Paradiso` and `paradiso` are two stimuli of a cased model); a
    run whose `case` lowercases the words merges them there (`bias.core.model.WordList.merged`)."""
    return unicodedata.normalize("NFC", word).strip()


def check_meta(data: dict[str, Any], file: str, known: Iterable[str] = ()) -> list[Problem]:
    """Problems of the metadata every word-set file carries, whatever its kind.

    `known` lists the kind's own top-level fields; anything else is reported as unknown (a warning,
    so a typo in an optional field is seen but does not stop a run).
    """
    problems: list[Problem] = []
    for key in REQUIRED_META:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(
                Problem(
                    file,
                    key,
                    "missing or empty; every word set must say its " + key.replace("_", " "),
                )
            )
    allowed = set(COMMON_META) | set(known)
    for key in data:
        if key not in allowed:
            problems.append(
                Problem(
                    file, key, f"unknown field (known: {', '.join(sorted(allowed))})", "warning"
                )
            )
    kind = data.get("kind")
    if isinstance(kind, str) and kind not in known_kinds():
        problems.append(
            Problem(file, "kind", f"'{kind}' is not a word-set kind ({', '.join(known_kinds())})")
        )
    problems.extend(check_bias_type(data.get("bias_type"), file, "bias_type"))
    problems.extend(check_variant(data, file))
    direction = data.get("expected_direction", "positive")
    if direction not in DIRECTIONS:
        problems.append(
            Problem(
                file, "expected_direction", f"'{direction}' must be one of {', '.join(DIRECTIONS)}"
            )
        )
    return problems


def check_bias_type(
    value: Any, file: str, field: str, recommended: Iterable[str] = BIAS_TYPES
) -> list[Problem]:
    """A bias type is free text, so that a package can measure a dimension nobody listed yet; one
    off the recommended list is a warning because reports group tests of different packages by
    it."""
    if not isinstance(value, str) or not value.strip() or value in recommended:
        return []
    return [
        Problem(
            file,
            field,
            f"'{value}' is not a known bias type (recommended: {', '.join(recommended)}); it is "
            "accepted, but tests of other packages that measure the same thing will not be "
            "grouped with it",
            "warning",
        )
    ]


def check_variant(data: dict[str, Any], file: str) -> list[Problem]:
    """`concept` and `descriptor` mark variants of one test (see `WordSetMeta`): short lower-case
    names, and a descriptor only beside a concept (alone it would group nothing)."""
    problems = []
    for key in ("concept", "descriptor"):
        if key in data and (not isinstance(data[key], str) or not VARIANT_NAME.match(data[key])):
            problems.append(
                Problem(
                    file,
                    key,
                    f"{data[key]!r} must be a short lower-case name such as "
                    + ('"gender-career"' if key == "concept" else '"names" or "terms"'),
                )
            )
    if "descriptor" in data and "concept" not in data:
        problems.append(
            Problem(
                file,
                "descriptor",
                "given without `concept`: name the concept this test is a variant of",
                "warning",
            )
        )
    return problems


def check_features(value: Any, file: str, field: str) -> list[Problem]:
    """Grammatical features must be a table of strings (gender = "f", plural = "Rosen", ...)."""
    if not isinstance(value, dict):
        return [
            Problem(
                file, field, 'must be a table of features, e.g. { gender = "f", plural = "Rosen" }'
            )
        ]
    return [
        Problem(file, f"{field}.{k}", f"feature values are strings, not {type(v).__name__}")
        for k, v in value.items()
        if not isinstance(v, str)
    ]


def word_entry(entry: Any) -> tuple[str | None, dict[str, Any]]:
    """A stimulus is a string, or a table `{ word = "Rose", gender = "f", plural = "Rosen" }`."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, dict):
        word = entry.get("word")
        return (word if isinstance(word, str) else None), {
            k: v for k, v in entry.items() if k != "word"
        }
    return None, {}


TOO_LONG = f"longer than {MAX_WORD_CHARS:,} characters ({WORD})"


def check_word_list(entry: Any, file: str, field: str) -> tuple[list[Problem], int]:
    """Problems of one `[sets.KEY]` table (label, grammar defaults, words) and its distinct size."""
    problems: list[Problem] = []
    if not isinstance(entry, dict):
        return [Problem(file, field, "missing: a table with `words`")], 0
    words = entry.get("words")
    if not isinstance(words, list) or not words:
        return [
            Problem(file, f"{field}.words", "empty or missing: a set needs at least one word")
        ], 0
    if len(words) > MAX_SET_WORDS:  # each is encoded and compared with every other word
        return [Problem(file, f"{field}.words", f"more than {MAX_SET_WORDS:,} words")], 0
    if "label" in entry and not isinstance(entry["label"], str):
        problems.append(Problem(file, f"{field}.label", "must be a string"))
    if "grammar" in entry:
        problems.extend(check_features(entry["grammar"], file, f"{field}.grammar"))
    unknown = "unknown field (known: label, words, grammar, description)"
    for key in entry:
        if key not in ("label", "words", "grammar", "description"):
            problems.append(Problem(file, f"{field}.{key}", unknown, "warning"))
    seen: dict[str, int] = {}
    folded: dict[str, int] = {}
    for i, item in enumerate(words):
        word, features = word_entry(item)
        if word is None or not word.strip():
            hint = "a table needs `word`" if isinstance(item, dict) else "not a word"
            problems.append(Problem(file, f"{field}.words[{i}]", f"{item!r}: {hint}"))
            continue
        if len(word) > MAX_WORD_CHARS:  # a "word" of a million tokens was refused after 28 s
            problems.append(Problem(file, f"{field}.words[{i}]", TOO_LONG))
            continue
        if features:
            problems.extend(check_features(features, file, f"{field}.words[{i}]"))
        norm = stimulus_key(word)
        if norm in seen:
            problems.append(
                Problem(
                    file,
                    f"{field}.words[{i}]",
                    f"'{word}' repeats word {seen[norm]} (duplicates are dropped unless a run sets "
                    "duplicates = keep)",
                    "warning",
                )
            )
        else:
            seen[norm] = i
            if normalise(word) in folded:
                problems.append(
                    Problem(
                        file,
                        f"{field}.words[{i}]",
                        f"'{word}' differs from word {folded[normalise(word)]} only in case: two "
                        "stimuli by default, one word repeated when a run sets case = lower (then "
                        "duplicates are dropped unless a run sets duplicates = keep)",
                        "warning",
                    )
                )
            folded.setdefault(normalise(word), i)
    if 0 < len(seen) < MIN_STIMULI:
        problems.append(
            Problem(
                file,
                f"{field}.words",
                f"{len(seen)} stimuli, fewer than the minimum of {MIN_STIMULI}: the permutation "
                "test becomes coarse and the effect size unstable",
                "warning",
                SMALL_SET,
            )
        )
    return problems, len(seen)


def word_list(entry: dict[str, Any], default_label: str) -> WordList:
    """A checked `[sets.KEY]` table as a WordList; duplicates dropped (first kept),
    NFC-normalised."""
    defaults = {k: str(v) for k, v in (entry.get("grammar") or {}).items()}
    kept: dict[str, str] = {}
    grammar: dict[str, dict[str, str]] = {}
    listed: list[str] = []
    own: list[
        dict[str, str]
    ] = []  # each entry's features: a repeat may carry other ones (singular, plural)
    for item in entry["words"]:
        word, features = word_entry(item)
        assert word is not None
        word = unicodedata.normalize("NFC", word).strip()
        norm = stimulus_key(word)
        merged = {
            **defaults,
            **{k: unicodedata.normalize("NFC", str(v)) for k, v in features.items()},
        }
        own.append(merged)
        if norm in kept:
            listed.append(kept[norm])
            continue
        listed.append(word)
        kept[norm] = word
        if merged:
            grammar[word] = merged
    repeated = len(listed) > len(kept)
    differ = repeated and any(f != grammar.get(w, {}) for w, f in zip(listed, own))
    return WordList(
        str(entry.get("label", default_label)),
        tuple(kept.values()),
        grammar,
        tuple(listed) if repeated else (),
        tuple(own) if differ else (),
    )


def check_association(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of an association-test record (from TOML or an importer)."""
    problems = check_meta(data, file, ("sets", "stimuli", PUBLISHED_SMALL))
    if data.get("stimuli", "words") not in STIMULI:
        problems.append(Problem(file, "stimuli", f"must be one of {', '.join(STIMULI)}"))
    sets = data.get("sets")
    if not isinstance(sets, dict):
        problems.append(
            Problem(
                file,
                "sets",
                "missing: give [sets.X], [sets.Y], [sets.A] and [sets.B], each with `words`",
            )
        )
        return problems
    sizes: dict[str, int] = {}
    for key in SET_KEYS:
        field = f"sets.{key}"
        if not isinstance(sets.get(key), dict):
            problems.append(
                Problem(file, field, "missing (targets X, Y and attributes A, B are all needed)")
            )
            continue
        found, size = check_word_list(sets[key], file, field)
        problems.extend(found)
        if size:
            sizes[key] = size
    for key in sets:
        if key not in SET_KEYS:
            problems.append(
                Problem(
                    file,
                    f"sets.{key}",
                    "unknown set (an association test has X, Y, A, B)",
                    "warning",
                )
            )
    if PUBLISHED_SMALL in data and not isinstance(data[PUBLISHED_SMALL], bool):
        problems.append(Problem(file, PUBLISHED_SMALL, "must be true or false"))
    if data.get(PUBLISHED_SMALL) is True and any(p.code == SMALL_SET for p in problems):
        problems = [p for p in problems if p.code != SMALL_SET]
        problems.append(Problem(file, "sets", small_set_note(sizes), "note"))
    if "X" in sizes and "Y" in sizes and sizes["X"] != sizes["Y"]:
        problems.append(
            Problem(
                file,
                "sets",
                f"targets differ in size (X {sizes['X']}, Y {sizes['Y']}): the permutation test "
                "then uses random partitions of the observed sizes",
                "warning",
            )
        )
    return problems


def small_set_note(sizes: dict[str, int]) -> str:
    """The one fact a published test with small sets needs: how coarse its permutation test is."""
    from math import comb

    shown = ", ".join(f"{k} {v}" for k, v in sizes.items())
    note = (
        f"the published test's sets are smaller than {MIN_STIMULI} ({shown}) and are kept as "
        "published"
    )
    if "X" in sizes and "Y" in sizes:
        partitions = comb(sizes["X"] + sizes["Y"], sizes["X"])
        note += (
            f"; its exact permutation test has {partitions:,} partitions, so p cannot be below "
            f"1/{partitions:,}"
        )
    return note


def raise_on_errors(problems: list[Problem], path: str) -> None:
    """Stop loading a file with errors (first one shown); log its warnings."""
    if errors := errors_of(problems):
        more = (
            f" (and {len(errors) - 1} more; run `bias validate {path}`)" if len(errors) > 1 else ""
        )
        raise BiasError(f"Invalid word set: {errors[0]}{more}", "Fix the file and try again.")
    for problem in problems[:MAX_LOGGED]:  # 20,000 repeated words printed 20,000 lines
        log.warning("note: %s" if problem.severity == "note" else "%s", problem)
    if len(problems) > MAX_LOGGED:
        more = len(problems) - MAX_LOGGED
        log.warning("... and %d more warnings (`bias validate %s` lists them)", more, path)


MAX_LOGGED = 20  # warnings of a word set logged one by one when it is loaded


def association_from_record(data: dict[str, Any], name: str, path: str) -> AssociationTest:
    """Build a test from a checked record; duplicates are dropped (first occurrence kept)."""
    raise_on_errors(check_association(data, path), path)
    sets = data["sets"]
    return AssociationTest(
        meta_of(data, path, name),
        *(word_list(sets[key], key) for key in SET_KEYS),
        stimuli=data.get("stimuli", "words"),
    )


def meta_of(data: dict[str, Any], path: Path | str, name: str) -> WordSetMeta:
    """The metadata of a parsed house-format record, without building its contents."""
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
        notes=str(data.get("notes", "")),
        path=str(path),
        concept=str(data.get("concept", "") or ""),
        descriptor=str(data.get("descriptor", "") or ""),
    )


ASSOCIATION_KIND = DataKind(check_association, association_from_record)


def check_record(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a house-format record, checked by the handler of its kind."""
    if too_long := [Problem(file, field, message) for field, message in oversized(data)]:
        return too_long
    kind = data.get("kind", ASSOCIATION)
    if kind not in known_kinds():
        return check_meta(data, file) or [Problem(file, "kind", f"'{kind}' is not a word-set kind")]
    return kind_handler(kind, file).check(data, file)


def build_record(data: dict[str, Any], name: str, file: str) -> Any:
    raise_on_errors([Problem(file, field, message) for field, message in oversized(data)], file)
    return kind_handler(data.get("kind", ASSOCIATION), file).build(data, name, file)


def load_toml_wordset(path: Path, name: str | None = None) -> Any:
    """Any kind of house-format file: an association test, templates, pairs, lists or analogies."""
    data = read_toml(path)
    return build_record(data, name or str(data.get("name") or Path(path).stem), str(path))


def validate_toml_file(path: Path, language: str | None = None) -> list[Problem]:
    return read_and_validate(path, language)[1]


def read_and_validate(path: Path, language: str | None = None) -> tuple[Any, list[Problem]]:
    """The file's data (None when it cannot be read) and its problems, the file read once."""
    try:
        data = read_toml(path)
    except BiasError as exc:  # the problem names the file
        return None, [Problem(str(path), "", exc.message.removeprefix(f"{path}: "))]
    problems = check_record(data, str(path))
    if language is not None and data.get("language") not in (None, language):
        found = f"'{data.get('language')}' but the package publishes '{language}'"
        problems.append(Problem(str(path), "language", found))
    return data, problems


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
