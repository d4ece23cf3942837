"""Sentence-pair sets (`kind = "pairs"`): CrowS-Pairs style minimal pairs with a direction and a
bias type.

A pair is (more, less): `more` is CrowS-Pairs' sent_more, the sentence that is more stereotyping,
and `less` the same sentence with the group words changed. `direction` says whether `more` states a
stereotype (stereo) or violates one (antistereo); the pair metrics compare the model's scores of the
two sentences the same way in both cases and report the two subsets apart.

Problems name the field (`pairs[3].less`) and, for imported files, the line the pair came from.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import attrs

from bias.core.model import BIAS_TYPES, PAIRS, WordSetMeta
from bias.core.data.wordsets import Problem, check_bias_type, check_meta, meta_of, raise_on_errors

DIRECTIONS = ("stereo", "antistereo")
# Types recommended for a single pair: the social types, plus "unspecified" for files that do not
# say.
PAIR_BIAS_TYPES = tuple(t for t in BIAS_TYPES if t not in ("mixed", "any"))
PAIR_KEYS = ("more", "less", "direction", "bias_type", "line", "note")
_WORD = re.compile(r"\w+", re.UNICODE)


@attrs.frozen
class SentencePair:
    """One minimal pair; `line` is where it was read from in an imported file (None for TOML)."""

    more: str
    less: str
    direction: str
    bias_type: str
    line: int | None = None


@attrs.frozen
class PairSet:
    meta: WordSetMeta
    pairs: tuple[SentencePair, ...]
    dropped: tuple[
        str, ...
    ] = ()  # rows an importer left out, "line 7: the two sentences are identical"

    @property
    def name(self) -> str:
        return self.meta.name


def words_of(sentence: str) -> list[str]:
    """Case-folded words, for the data-level check that a pair shares context (the metrics align the
    model's own tokens)."""
    return [w.casefold() for w in _WORD.findall(unicodedata.normalize("NFC", sentence))]


def _where(entry: Any, index: int) -> str:
    line = entry.get("line") if isinstance(entry, dict) else None
    return f"line {line}: " if isinstance(line, int) else ""


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a pair-set record (from TOML or the CrowS-Pairs importer)."""
    problems = check_meta(data, file, ("pairs", "skipped"))
    # rows an importer could not use (identical or empty pairs)
    for entry in data.get("skipped") or []:
        if isinstance(entry, dict):
            problems.append(
                Problem(
                    file,
                    f"line {entry.get('line')}",
                    f"pair skipped: {entry.get('reason')}",
                    "warning",
                )
            )
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        problems.append(
            Problem(
                file,
                "pairs",
                "missing or empty: give [[pairs]] tables with more, less, direction and bias_type",
            )
        )
        return problems
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(pairs):
        field = f"pairs[{i}]"
        if not isinstance(entry, dict):
            problems.append(
                Problem(file, field, "must be a table with more, less, direction and bias_type")
            )
            continue
        where = _where(entry, i)
        sentences = {}
        for key in ("more", "less"):
            value = entry.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        f"{where}missing or empty: the pair needs both sentences",
                    )
                )
            else:
                sentences[key] = unicodedata.normalize("NFC", value).strip()
        direction = entry.get("direction")
        if direction not in DIRECTIONS:
            problems.append(
                Problem(
                    file,
                    f"{field}.direction",
                    f"{where}{direction!r} is not one of {', '.join(DIRECTIONS)}",
                )
            )
        bias_type = entry.get("bias_type")
        if not isinstance(bias_type, str) or not bias_type.strip():
            problems.append(
                Problem(
                    file, f"{field}.bias_type", f"{where}missing: every pair says its bias type"
                )
            )
        else:
            problems.extend(check_bias_type(bias_type, file, f"{field}.bias_type", PAIR_BIAS_TYPES))
        if "line" in entry and (
            isinstance(entry["line"], bool) or not isinstance(entry["line"], int)
        ):
            problems.append(
                Problem(
                    file,
                    f"{field}.line",
                    "must be a whole number (the source line of an imported pair)",
                )
            )
        for key in entry:
            if key not in PAIR_KEYS:
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        f"unknown field (known: {', '.join(PAIR_KEYS)})",
                        "warning",
                    )
                )
        if len(sentences) < 2:
            continue
        more, less = sentences["more"], sentences["less"]
        if more == less:
            problems.append(
                Problem(
                    file,
                    field,
                    f"{where}the two sentences are identical ({more!r}); a pair must "
                    "differ in its group words",
                )
            )
            continue
        if not set(words_of(more)) & set(words_of(less)):
            problems.append(
                Problem(
                    file,
                    field,
                    f"{where}the sentences share no word, so there is no common context to score "
                    f"({more!r} / {less!r}); the pair metrics skip it",
                    "warning",
                )
            )
        key = (more, less)
        if key in seen:
            problems.append(Problem(file, field, f"{where}repeats pair {seen[key]}", "warning"))
        else:
            seen[key] = i
    return problems


def build(data: dict[str, Any], name: str, path: str) -> PairSet:
    """A PairSet from a checked record; raises BiasError naming the first error."""
    raise_on_errors(check(data, path), path)
    pairs = tuple(
        SentencePair(
            more=unicodedata.normalize("NFC", entry["more"]).strip(),
            less=unicodedata.normalize("NFC", entry["less"]).strip(),
            direction=entry["direction"],
            bias_type=entry["bias_type"],
            line=entry.get("line"),
        )
        for entry in data["pairs"]
    )
    meta = meta_of(data, path, name)
    if meta.kind != PAIRS:
        meta = attrs.evolve(meta, kind=PAIRS)
    dropped = tuple(
        f"line {e.get('line')}: {e.get('reason')}"
        for e in data.get("skipped") or []
        if isinstance(e, dict)
    )
    return PairSet(meta, pairs, dropped)
