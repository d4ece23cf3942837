"""The data model: test data, word vectors and results, as attrs value classes.

Results round-trip through JSON (`Result.to_json` / `Result.from_json`) because a results file is
the only input the report builders get."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # numpy is imported where vectors are made, not to list or describe word sets
    import numpy as np

ASSOCIATION = "association"
TEMPLATES = "templates"
LPBS = "lpbs"
PAIRS = "pairs"
DEBIAS_LISTS = "debias-lists"
ANALOGIES = "analogies"
FISE = "fise"
LABELLED_TEXTS = "labelled-texts"  # texts with a class label: what the probe metric classifies
SIMILARITY_PAIRS = "similarity-pairs"  # word pairs with human similarity scores
# multiple-choice bias questions (Parrish et al. 2022): what the bbq metric asks a causal LM
BBQ = "bbq"
# StereoSet intrasentence examples (Nadeem et al. 2021): what the stereoset metric scores
STEREOSET = "stereoset"
# yes/no decisions about applicants who differ only in the name (hiring audits)
DECISIONS = "decisions"
DIRECTIONS = ("positive", "negative", "none")
# The first-party kinds of word set; a third party adds one through the entry-point group
# `bias.kinds`. The social dimension a word set measures: free text, these are the recommended names
# (validation warns about any other, since reports group the tests of different packages by it).
# "origin" is ethnic or migration background (the European framing), "race" the US one of the
# published WEAT tests; "non-social" marks the validation tests (flowers/insects,
# instruments/weapons); "mixed" a pair set whose pairs carry their own types. "gender-identity"
# (cisgender vs transgender and non-binary) is kept apart from "gender" (men vs women).
BIAS_TYPES = (
    "gender",
    "race",
    "origin",
    "nationality",
    "religion",
    "age",
    "disability",
    "health",
    "sexual-orientation",
    "gender-identity",
    "socioeconomic",
    "physical-appearance",
    "non-social",
    "mixed",
    "any",
    "unspecified",
)
STIMULI = ("words", "sentences")
# The share of a set's stimuli a model may lack before an association test on it is refused (the
# default of the metrics' `lost_threshold`), also what `bias validate` warns about.
LOST_THRESHOLD = 0.2


@attrs.frozen
class WordSetMeta:
    """What every word set says about itself: where it comes from and how it may be used."""

    name: str
    kind: str
    language: str
    bias_type: str
    title: str = ""
    description: str = ""
    source: str = ""
    licence: str = ""
    expected_direction: str = "positive"
    notes: str = ""
    path: str = ""  # the file it was read from, for error messages
    # Variants of one test: word sets that ask the same question with other stimuli (WEAT 6 with
    # first names, and with group terms) share a `concept`; `descriptor` says how each describes the
    # groups ("names", "terms"). The robustness report puts variants of a concept side by side.
    concept: str = ""
    descriptor: str = ""


@attrs.frozen
class WordList:
    """A labelled list of stimuli. `grammar` maps a word to its grammatical features (gender,
    plural, class, ...), which templates use to build grammatical sentences (see
    `bias.core.data.grammar`)."""

    label: str
    words: tuple[str, ...]
    grammar: dict[str, dict[str, str]] = attrs.field(factory=dict, hash=False)
    # Every stimulus as the file lists it, repeats included, when it repeats any (else empty): the
    # `duplicates = "keep"` convention of tools that count a repeated word twice.
    listed: tuple[str, ...] = ()
    # The features of each entry of `listed`, when a repeated stimulus is listed with features of
    # its own (a word that is both singular and plural, German "Lehrer"); else empty: every copy has
    # the word's features.
    listed_features: tuple[dict[str, str], ...] = attrs.field(default=(), hash=False)

    def features(self, word: str) -> dict[str, str]:
        return self.grammar.get(word, {})

    def entries(self) -> list[tuple[str, dict[str, str]]]:
        """Every stimulus as the file lists it, repeats included, each with its own features."""
        if self.listed_features:
            return list(zip(self.listed, self.listed_features))
        return [(w, self.features(w)) for w in self.listed or self.words]

    def with_entries(self, entries: Sequence[tuple[str, dict[str, str]]]) -> WordList:
        """The list of these (word, features) entries, in their order: a word's features are those
        of its first entry, and a repeat's own are kept where they differ (`entries`)."""
        listed = tuple(w for w, _ in entries)
        words = tuple(dict.fromkeys(listed))
        grammar = dict(self.grammar)
        for w, f in reversed(entries):
            if f:
                grammar[w] = dict(f)
            else:
                grammar.pop(w, None)
        repeated = len(listed) > len(words)
        differ = repeated and any(f != grammar.get(w, {}) for w, f in entries)
        return attrs.evolve(
            self,
            words=words,
            grammar=grammar,
            listed=listed if repeated else (),
            listed_features=tuple(f for _, f in entries) if differ else (),
        )

    def repeats(self) -> dict[str, int]:
        """Each repeated stimulus and how often the file lists it."""
        counts: dict[str, int] = {}
        for w in self.listed:
            counts[w] = counts.get(w, 0) + 1
        return {w: n for w, n in counts.items() if n > 1}

    def with_duplicates(self) -> WordList:
        """The list with repeated stimuli kept (each copy counts), as the file has it."""
        return attrs.evolve(self, words=self.listed) if self.listed else self

    def merged(self, key: Callable[[str], str]) -> WordList:
        """The list with stimuli that share `key` counted as repeats of the first: what a run that
        looks words up lowercased makes of `Paradiso` and `paradiso` (one word, listed twice)."""
        kept: dict[str, str] = {}
        listed = []
        for word in self.listed or self.words:
            listed.append(kept.setdefault(key(word), word))
        words = tuple(kept.values())
        repeated = len(listed) > len(words)
        return attrs.evolve(
            self,
            words=words,
            listed=tuple(listed) if repeated else (),
            listed_features=self.listed_features if repeated else (),
        )


@attrs.frozen
class AssociationTest:
    """Targets X, Y and attributes A, B (Caliskan et al. 2017).

    A positive effect means X is closer to A and Y to B; `meta.expected_direction` records which
    sign the published test expects."""

    meta: WordSetMeta
    X: WordList
    Y: WordList
    A: WordList
    B: WordList
    stimuli: str = "words"  # "sentences" when the stimuli are already sentences (SEAT JSON files)

    @property
    def name(self) -> str:
        return self.meta.name

    def sets(self) -> dict[str, WordList]:
        return {"X": self.X, "Y": self.Y, "A": self.A, "B": self.B}

    def with_duplicates(self) -> AssociationTest:
        """The test with repeated stimuli kept in every set (see `WordList.with_duplicates`)."""
        return attrs.evolve(self, **{key: wl.with_duplicates() for key, wl in self.sets().items()})

    def merged(self, key: Callable[[str], str]) -> AssociationTest:
        """The test with stimuli sharing `key` counted as repeats in every set (see
        `WordList.merged`)."""
        return attrs.evolve(self, **{k: wl.merged(key) for k, wl in self.sets().items()})

    def repeats(self) -> dict[str, dict[str, int]]:
        """Per set, the stimuli the file repeats (dropped unless duplicates are kept)."""
        return {key: wl.repeats() for key, wl in self.sets().items() if wl.repeats()}

    def all_words(self) -> list[str]:
        seen: dict[str, None] = {}
        for wl in (self.X, self.Y, self.A, self.B):
            seen.update(dict.fromkeys(wl.words))
        return list(seen)


@attrs.frozen
class WordVectors:
    """Vectors an embedder found for a request, and what it could not find.

    `approximated` lists words that had no vector of their own but got one built from sub-words
    (fastText): they are used, and reported.
    """

    words: tuple[str, ...]
    vectors: np.ndarray = attrs.field(eq=False)
    lost: tuple[str, ...] = ()
    approximated: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, np.ndarray]:
        return {w: self.vectors[i] for i, w in enumerate(self.words)}


OK = "ok"
REFUSED = "refused"  # the input does not allow a sound answer (too many lost words, empty set, ...)
FAILED = "failed"  # something broke while running


@attrs.frozen
class Result:
    """Every figure of one experiment and the convention that produced it.

    `figures` holds metric-specific numbers (for WEAT: the test statistic, the mean s(w) per set);
    `convention` holds the choices that change numbers (ddof, exact or sampled, permutations, seed,
    alternative); `sizes` the set sizes actually used; `lost` the words dropped per set.
    """

    key: str
    model: str
    wordset: str
    metric: str
    status: str = OK
    effect_size: float | None = None
    p_value: float | None = None
    figures: dict[str, Any] = attrs.Factory(dict)
    convention: dict[str, Any] = attrs.Factory(dict)
    sizes: dict[str, int] = attrs.Factory(dict)
    lost: dict[str, list[str]] = attrs.Factory(dict)
    approximated: dict[str, list[str]] = attrs.Factory(dict)
    warnings: list[str] = attrs.Factory(list)
    reason: str | None = None
    params: dict[str, Any] = attrs.Factory(dict)
    seed: int | None = None
    timings: dict[str, float] = attrs.Factory(dict)
    versions: dict[str, str] = attrs.Factory(dict)
    meta: dict[str, Any] = attrs.Factory(dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        # one pass over the fields' values (attrs.asdict would copy every nested dict first)
        return {f.name: _jsonable(getattr(self, f.name)) for f in attrs.fields(type(self))}

    def to_json(self) -> str:
        return _ENCODER.encode(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        names = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_json(cls, line: str) -> Result:
        return cls.from_dict(json.loads(line))


# A results line: keys sorted, text as it is, no NaN (made None first). Built once, not per line.
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=False)

# Types written as they are, checked before a call: most of a result's values are these.
_PLAIN = frozenset({str, int, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """Plain JSON types only: numpy scalars become Python numbers, NaN/inf become None."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {
            (k if type(k) is str else str(k)): (v if type(v) in _PLAIN else _jsonable(v))
            for k, v in value.items()
        }
    if kind is list:
        return [v if type(v) in _PLAIN else _jsonable(v) for v in value]
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if attrs.has(kind):  # its fields, each made plain (attrs.asdict would copy them first)
        return {f.name: _jsonable(getattr(value, f.name)) for f in attrs.fields(kind)}
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value
