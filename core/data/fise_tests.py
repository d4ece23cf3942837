"""FISE tests (`kind = "fise"`): social axes, trait lists and optional affect stimuli.

Flexible Intersectional Stereotype Extraction (Charlesworth, Ghate, Caliskan & Banaji 2024) places
traits on two social axes at once. A FISE test holds:

- `axes`: each axis (`gender`, `race`, `class`, ...) has exactly two groups of words, the first the
  positive end of the axis (`{ male = [...], female = [...] }`); a group word may be a list of
  variants (grammatical-gender forms), whose vectors are averaged;
- `traits`: the words placed on the axes; a trait may be a phrase or a list of variants;
- `affect` (optional): `positive` and `negative` words that give each trait a valence.

The BIAS Detection Framework keeps these in separate files (axes `.json`; traits `.txt` with one
trait per line, a line may be a list literal such as `['calmo', 'calma']`; affect `.csv` with a
positive and a negative column). The readers below parse those lines as data (JSON or Python
literals through `ast.literal_eval`), never as code.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import unicodedata
from pathlib import Path
from typing import Any, Union

import attrs

from bias.core.errors import BiasError
from bias.core.model import WordSetMeta
from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors
from bias.core.data.record_bounds import MAX_WORD_CHARS, WORD, oversized
from bias.core.text import shown
from bias.core.data.file_reading import read_json, read_text

KNOWN_FIELDS = ("axes", "traits", "affect")

# A stimulus is one word or phrase, or a tuple of variants (grammatical-gender forms) averaged
# together.
Stimulus = Union[str, tuple[str, ...]]


def label(stimulus: Stimulus) -> str:
    """How a stimulus is shown: the word, or its variants joined by '/'."""
    return stimulus if isinstance(stimulus, str) else "/".join(stimulus)


def words_of(stimulus: Stimulus) -> tuple[str, ...]:
    return (stimulus,) if isinstance(stimulus, str) else stimulus


@attrs.frozen
class Axis:
    """One social axis: the positive group first (`first`), then the negative one."""

    name: str
    first: str
    second: str
    first_words: tuple[Stimulus, ...]
    second_words: tuple[Stimulus, ...]


@attrs.frozen
class FiseTest:
    meta: WordSetMeta
    axes: tuple[Axis, ...]
    traits: tuple[Stimulus, ...] = ()
    positive: tuple[Stimulus, ...] = ()
    negative: tuple[Stimulus, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    def axis(self, name: str) -> Axis:
        for axis in self.axes:
            if axis.name == name:
                return axis
        raise BiasError(
            f"{self.name} has no axis '{name}' (its axes: {', '.join(a.name for a in self.axes)}).",
            "Choose two of its axes, e.g. --param axes=gender,race.",
        )


def _stimulus(value: Any) -> Stimulus | None:
    """A checked stimulus, NFC-normalised; None when it is not a word, phrase or list of them."""
    if isinstance(value, str) and value.strip():
        return unicodedata.normalize("NFC", value).strip()
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, str) and v.strip() for v in value)
    ):
        forms = tuple(unicodedata.normalize("NFC", v).strip() for v in value)
        return forms[0] if len(forms) == 1 else forms
    return None


def _check_list(value: Any, file: str, field: str, problems: list[Problem]) -> None:
    if not isinstance(value, list) or not value:
        problems.append(
            Problem(
                file,
                field,
                "missing or empty: give a list of words (a word may be a list of variants)",
            )
        )
        return
    seen: dict[Stimulus, int] = {}
    for i, item in enumerate(value):
        stimulus = _stimulus(item)
        if stimulus is None:
            problems.append(
                Problem(
                    file, f"{field}[{i}]", f"{item!r} is not a word, phrase or list of variants"
                )
            )
        elif stimulus in seen:
            problems.append(
                Problem(
                    file,
                    f"{field}[{i}]",
                    f"'{label(stimulus)}' repeats item {seen[stimulus]} (dropped)",
                    "warning",
                )
            )
        else:
            seen[stimulus] = i


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a FISE record, with its field (`axes.gender`, `traits[3]`)."""
    problems = check_meta(data, file, KNOWN_FIELDS)
    if long := oversized({"axes": data.get("axes")}, MAX_WORD_CHARS, WORD):
        return problems + [Problem(file, field, message) for field, message in long]
    axes = data.get("axes")
    if not isinstance(axes, dict) or len(axes) < 2:
        problems.append(
            Problem(
                file,
                "axes",
                "give at least two axes, each a table of two groups, e.g. gender = { male "
                "= [...], female = [...] }",
            )
        )
    else:
        for name, groups in axes.items():
            if not isinstance(groups, dict) or len(groups) != 2:
                problems.append(
                    Problem(
                        file,
                        f"axes.{name}",
                        "an axis has exactly two groups (the positive end first)",
                    )
                )
                continue
            for group, words in groups.items():
                _check_list(words, file, f"axes.{name}.{group}", problems)
    if "traits" in data:
        _check_list(data["traits"], file, "traits", problems)
    affect = data.get("affect")
    if affect is not None:
        if not isinstance(affect, dict) or set(affect) != {"positive", "negative"}:
            problems.append(
                Problem(file, "affect", "a table with `positive` and `negative` word lists")
            )
        else:
            for key in ("positive", "negative"):
                _check_list(affect[key], file, f"affect.{key}", problems)
    return problems


def _stimuli(values: list[Any] | None) -> tuple[Stimulus, ...]:
    out: dict[Stimulus, None] = {}
    for item in values or []:
        stimulus = _stimulus(item)
        if stimulus is not None:
            out.setdefault(stimulus, None)
    return tuple(out)


def build(data: dict[str, Any], name: str, path: str) -> FiseTest:
    raise_on_errors(check(data, path), path)
    axes = []
    for axis_name, groups in data["axes"].items():
        (first, first_words), (second, second_words) = list(groups.items())
        axes.append(
            Axis(
                str(axis_name),
                str(first),
                str(second),
                _stimuli(first_words),
                _stimuli(second_words),
            )
        )
    affect = data.get("affect") or {}
    meta = meta_of(data, path, name)  # of kind fise: the kind's handler is chosen by it
    return FiseTest(
        meta,
        tuple(axes),
        _stimuli(data.get("traits")),
        _stimuli(affect.get("positive")),
        _stimuli(affect.get("negative")),
    )


# -- the framework's separate files ---------------------------------------------------------------


def parse_trait_line(line: str, where: str) -> Stimulus:
    """One line of a trait list: a word or phrase, or a list literal of variants (`['calmo',
    'calma']`), read as data by json or ast.literal_eval, which evaluate no code."""
    text = line.strip()
    if not text.startswith("["):
        return unicodedata.normalize("NFC", text)
    value: Any = None
    try:
        value = json.loads(text)
    except RecursionError:
        pass
    except ValueError:  # JSONDecodeError, or a number of more than 4,300 digits
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    if value is None:
        raise BiasError(
            f"{where}: {shown(text, 60)!r} is not a list of words.",
            "Write variants as ['calmo', 'calma'].",
        ) from None
    stimulus = _stimulus(value)
    if stimulus is None:
        raise BiasError(
            f"{where}: {text[:60]!r} is not a list of words.",
            "Write variants as ['calmo', 'calma'].",
        )
    return stimulus


def read_traits(path: Path) -> list[Stimulus]:
    """A trait list: one trait per line, blank lines and `#` comments skipped."""
    traits = []
    for number, raw in enumerate(read_text(path, "file").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        traits.append(parse_trait_line(line, f"{path}: line {number}"))
    if not traits:
        raise BiasError(
            f"{path}: no traits found.",
            "A trait list has one trait (or a list of variants) per line.",
        )
    return traits


def read_affect(path: Path) -> tuple[list[str], list[str]]:
    """Affect stimuli: a header row, then a positive and a negative column (either may run
    shorter)."""
    text = read_text(path, "file")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:  # an open quote, or a cell past csv's field limit
        raise BiasError(f"{path}: not a readable CSV file ({exc}).", "Check its quotes.") from exc
    if len(rows) < 2 or len(rows[0]) < 2:
        raise BiasError(f"{path}: expected a header and rows of two columns (positive, negative).")
    positive = [r[0].strip() for r in rows[1:] if len(r) > 0 and r[0].strip()]
    negative = [r[1].strip() for r in rows[1:] if len(r) > 1 and r[1].strip()]
    if not positive or not negative:
        raise BiasError(f"{path}: the positive or the negative column is empty.")
    return positive, negative


def axes_from_json(path: Path) -> dict[str, Any]:
    """The axes of a framework FISE `.json`: { axis: { group: [words] , group: [words] }, ... }."""
    data = read_json(path, "file")
    if not isinstance(data, dict):
        raise BiasError(
            f'{path}: expected a JSON object of axes, e.g. {{"gender": {{"male": [...], '
            f'"female": [...]}}}}.'
        )
    return data


def looks_like_fise(data: Any) -> bool:
    """A framework FISE file: an object whose values are all objects of exactly two word lists."""
    return (
        isinstance(data, dict)
        and bool(data)
        and all(
            isinstance(v, dict) and len(v) == 2 and all(isinstance(w, list) for w in v.values())
            for v in data.values()
        )
    )
