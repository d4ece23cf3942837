"""The `debias-lists` word-set kind: the word lists debiasing methods and bias-subspace metrics
need.

Bolukbasi et al. (2016) define a bias subspace from definitional pairs, keep gender-specific words
out of neutralisation and equalise pairs that should differ only along the subspace; the clustering
test (Gonen & Goldberg 2019) ranks words by one pair's direction, and direct bias averages over
neutral words. One file holds all of them (see docs/data-formats.md):

    kind = "debias-lists"
    definitional = [["man", "vrouw"], ["vader", "moeder"]]
    equalize = [["koning", "koningin"]]
    specific = ["moeder", "vader", "zwanger"]
    direction = ["man", "vrouw"]
    neutral = ["arts", "verpleger"]

Pairs are (male, female) in that order, because the sign of the bias direction and the swap of
sentence pairs (Sent-Debias) are read from it.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import attrs
from bias.core.errors import BiasError
from bias.core.model import DEBIAS_LISTS, WordSetMeta
from bias.core.data.wordsets import Problem, check_meta, meta_of, normalise, raise_on_errors
from bias.core.data.record_bounds import MAX_WORD_CHARS, WORD, oversized

MIN_DEFINITIONAL = 2  # one pair gives a direction but no PCA worth the name; Bolukbasi used ten
FIELDS = ("definitional", "equalize", "specific", "direction", "neutral")

Pair = tuple[str, str]


@attrs.frozen
class SentenceTemplates:
    """The SEAT templates of the lists' language, as whoever loaded the lists found them: debiasers
    fitted on sentences (Sent-Debias, and INLP and LEACE at sentence level) fill them with the
    definitional words. The lookup is done by the caller, which knows the installed word sets; a set
    that is installed but cannot be read is kept as its error, raised only if sentences are
    needed."""

    name: str  # <language>/seat-templates
    templates: Any = None  # the loaded template set; None when the language has none installed
    error: BiasError | None = None  # why the installed set could not be read


@attrs.frozen
class DebiasLists:
    """Checked, NFC-normalised lists; duplicates dropped (first kept), file order preserved.

    `templates` is attached when the lists are loaded through the registry (None for lists built by
    hand: the debiasers then use bare-word sentences); it is no part of the lists' identity."""

    meta: WordSetMeta
    definitional: tuple[Pair, ...]
    equalize: tuple[Pair, ...] = ()
    specific: tuple[str, ...] = ()
    direction: Pair | None = None
    neutral: tuple[str, ...] = ()
    templates: SentenceTemplates | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def ranking_pair(self) -> Pair:
        """The pair that ranks words by gender (clustering test, INLP's training words):
        `direction`, else the first definitional pair."""
        return self.direction or self.definitional[0]

    def all_words(self) -> list[str]:
        """Every word the lists mention, in file order, once."""
        seen: dict[str, None] = {}
        for pair in (*self.definitional, *self.equalize):
            seen.update(dict.fromkeys(pair))
        seen.update(dict.fromkeys(self.specific))
        if self.direction:
            seen.update(dict.fromkeys(self.direction))
        seen.update(dict.fromkeys(self.neutral))
        return list(seen)

    def gendered_words(self) -> set[str]:
        """The normalised forms of every gendered word (all but the neutral list): the words that
        whole-vocabulary measures (direct bias over the vocabulary, the clustering test) leave
        out."""
        words = set(self.specific)
        for pair in (
            *self.definitional,
            *self.equalize,
            *([self.direction] if self.direction else []),
        ):
            words.update(pair)
        return {normalise(w) for w in words}


def _word(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return unicodedata.normalize("NFC", value).strip()
    return None


def _check_pairs(value: Any, file: str, field: str, required: bool) -> tuple[list[Problem], int]:
    """Problems of a list of [male, female] pairs and how many distinct pairs it holds."""
    if value is None:
        if required:
            return [
                Problem(
                    file,
                    field,
                    'missing: give (male, female) pairs, e.g. [["man", "woman"], ["he", "she"]]',
                )
            ], 0
        return [], 0
    if not isinstance(value, list):
        return [
            Problem(file, field, 'must be a list of two-word lists, e.g. [["man", "woman"]]')
        ], 0
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for i, pair in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            problems.append(Problem(file, where, f"{pair!r} is not a pair of two words"))
            continue
        a, b = (_word(w) for w in pair)
        if a is None or b is None:
            problems.append(Problem(file, where, f"{pair!r}: both entries must be non-empty words"))
            continue
        key = (normalise(a), normalise(b))
        if key[0] == key[1]:
            problems.append(Problem(file, where, f"'{a}' is paired with itself"))
            continue
        if key in seen:
            problems.append(
                Problem(
                    file, where, f"the pair ({a}, {b}) repeats (duplicates are dropped)", "warning"
                )
            )
            continue
        seen.add(key)
    return problems, len(seen)


def _check_words(value: Any, file: str, field: str) -> list[Problem]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [Problem(file, field, "must be a list of words")]
    problems = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        word = _word(item)
        if word is None:
            problems.append(Problem(file, f"{field}[{i}]", f"{item!r} is not a word"))
        elif normalise(word) in seen:
            problems.append(
                Problem(
                    file, f"{field}[{i}]", f"'{word}' repeats (duplicates are dropped)", "warning"
                )
            )
        else:
            seen.add(normalise(word))
    return problems


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a debias-lists record, with its field."""
    problems = check_meta(data, file, FIELDS)
    words = {k: data[k] for k in ("definitional", "equalize", "specific", "neutral") if k in data}
    if long := oversized({**words, "direction": data.get("direction")}, MAX_WORD_CHARS, WORD):
        return problems + [Problem(file, field, message) for field, message in long]
    found, count = _check_pairs(data.get("definitional"), file, "definitional", required=True)
    problems.extend(found)
    if (
        "definitional" in data
        and isinstance(data["definitional"], list)
        and not found
        and count < MIN_DEFINITIONAL
    ):
        problems.append(
            Problem(
                file,
                "definitional",
                f"{count} pair(s); at least {MIN_DEFINITIONAL} are needed to find a bias "
                "direction by PCA",
            )
        )
    problems.extend(_check_pairs(data.get("equalize"), file, "equalize", required=False)[0])
    problems.extend(_check_words(data.get("specific"), file, "specific"))
    problems.extend(_check_words(data.get("neutral"), file, "neutral"))
    direction = data.get("direction")
    if direction is not None:
        problems.extend(_check_pairs([direction], file, "direction", required=False)[0])
    if not any(p.severity == "error" for p in problems):
        specific = {normalise(w) for w in data.get("specific") or []}
        clash = [w for w in data.get("neutral") or [] if normalise(w) in specific]
        if clash:
            problems.append(
                Problem(file, "neutral", f"also listed as gender-specific: {', '.join(clash[:8])}")
            )
        seen_in: dict[str, int] = {}
        for i, pair in enumerate(data.get("equalize") or []):
            for w in pair:
                if normalise(w) in seen_in and seen_in[normalise(w)] != i:
                    problems.append(
                        Problem(
                            file,
                            f"equalize[{i}]",
                            f"'{w}' is already in equalize[{seen_in[normalise(w)]}]; the "
                            "later pair moves it again",
                            "warning",
                        )
                    )
                seen_in.setdefault(normalise(w), i)
        unprotected = [
            w
            for pair in data.get("equalize") or []
            for w in pair
            if specific and normalise(w) not in specific
        ]
        if unprotected:
            problems.append(
                Problem(
                    file,
                    "equalize",
                    "words not in `specific` are neutralised before they are equalised: "
                    f"{', '.join(unprotected[:8])}",
                    "warning",
                )
            )
    return problems


def _pairs(value: Any) -> tuple[Pair, ...]:
    out: dict[tuple[str, str], Pair] = {}
    for pair in value or []:
        a, b = _word(pair[0]), _word(pair[1])
        assert a is not None and b is not None
        out.setdefault((normalise(a), normalise(b)), (a, b))
    return tuple(out.values())


def _words(value: Any) -> tuple[str, ...]:
    out: dict[str, str] = {}
    for item in value or []:
        word = _word(item)
        assert word is not None
        out.setdefault(normalise(word), word)
    return tuple(out.values())


def build(data: dict[str, Any], name: str, path: str) -> DebiasLists:
    """The lists of a checked record; raises BiasError naming the file and field of the first
    error."""
    raise_on_errors(check(data, path), path)
    direction = _pairs([data["direction"]])[0] if data.get("direction") is not None else None
    return DebiasLists(
        meta=meta_of(data, path, name),
        definitional=_pairs(data["definitional"]),
        equalize=_pairs(data.get("equalize")),
        specific=_words(data.get("specific")),
        direction=direction,
        neutral=_words(data.get("neutral")),
    )


def lists_of(value: Any, what: str = "debiasing") -> DebiasLists:
    """`value` if it is debiasing lists; otherwise a user error naming the kind that was given."""
    if isinstance(value, DebiasLists):
        return value
    kind = getattr(getattr(value, "meta", None), "kind", type(value).__name__)
    raise BiasError(
        f"{what} needs a word set of kind {DEBIAS_LISTS}, but "
        f"'{getattr(value, 'name', value)}' is of kind {kind}.",
        "Give debiasing lists such as en/debias-gender (see `bias list wordsets`).",
    )
