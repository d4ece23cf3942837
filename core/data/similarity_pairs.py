"""The `similarity-pairs` word-set kind: word pairs with a human similarity (or relatedness) score.

Like analogy accuracy it is not a bias measure but a check of what a model still knows: Spearman's
rank correlation between the model's cosine similarities and the human scores (the `word-similarity`
metric), before and after debiasing. Files in the common SimLex / WordSim layout (`word1 word2
score` lines, tab or space separated, an optional header) are read by the `similarity-tsv` importer
into the same record; the house format is

```toml
kind = "similarity-pairs"
language = "en"
bias_type = "non-social"
source = "..."
licence = "..."
pairs = [["car", "automobile", 9.1], ["noon", "string", 0.4]]
```
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import attrs
from bias.core.errors import BiasError
from bias.core.model import WordSetMeta
from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors

MIN_PAIRS = 3  # Spearman's rho of fewer pairs says nothing


@attrs.frozen
class ScoredPair:
    first: str
    second: str
    score: float


@attrs.frozen
class SimilarityPairs:
    """Scored word pairs in file order (a pair given twice keeps its first score)."""

    meta: WordSetMeta
    pairs: tuple[ScoredPair, ...]

    @property
    def name(self) -> str:
        return self.meta.name

    def all_words(self) -> list[str]:
        seen: dict[str, None] = {}
        for p in self.pairs:
            seen.update(dict.fromkeys((p.first, p.second)))
        return list(seen)


def _word(value: Any) -> str | None:
    if isinstance(value, str) and value.strip() and len(value.split()) == 1:
        return unicodedata.normalize("NFC", value.strip())
    return None


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def pair_key(a: str, b: str) -> tuple[str, str]:
    """One pair however it is written: similarity is symmetric and human ratings ignore case, so
    (algebra, math), (math, algebra) and (Math, Algebra) are the same pair."""
    return tuple(sorted((a.casefold(), b.casefold())))  # type: ignore[return-value]


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a similarity-pairs record (TOML or imported), with its field."""
    problems = check_meta(data, file, ("pairs",))
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        problems.append(
            Problem(file, "pairs", "missing or empty: give [word1, word2, score] entries")
        )
        return problems
    seen: dict[tuple[str, str], int] = {}
    written: dict[int, tuple[str, str]] = {}
    for i, entry in enumerate(pairs):
        field = f"pairs[{i}]"
        if not isinstance(entry, list) or len(entry) != 3:
            problems.append(Problem(file, field, f"{entry!r}: an entry is [word1, word2, score]"))
            continue
        a, b, score = _word(entry[0]), _word(entry[1]), _score(entry[2])
        if a is None or b is None:
            problems.append(
                Problem(file, field, f"{entry!r}: both words must be single, non-empty words")
            )
            continue
        if score is None:
            problems.append(Problem(file, field, f"{entry!r}: the score must be a finite number"))
            continue
        key = pair_key(a, b)
        if key in seen:
            first = written[seen[key]]
            how = "" if first == (a, b) else f" ({first[0]}, {first[1]}) in another order or case"
            problems.append(
                Problem(
                    file,
                    field,
                    f"({a}, {b}) repeats pair {seen[key]}{how} (the first score is kept)",
                    "warning",
                )
            )
        else:
            seen[key] = i
            written[i] = (a, b)
    if not any(p.severity == "error" for p in problems) and len(seen) < MIN_PAIRS:
        problems.append(
            Problem(
                file,
                "pairs",
                f"{len(seen)} distinct pair(s); at least {MIN_PAIRS} are needed for a rank "
                "correlation",
            )
        )
    return problems


def build(data: dict[str, Any], name: str, path: str) -> SimilarityPairs:
    """The pairs of a checked record; raises BiasError naming the file and field of the first
    error."""
    raise_on_errors(check(data, path), path)
    out: dict[tuple[str, str], ScoredPair] = {}
    for entry in data["pairs"]:
        a, b, score = _word(entry[0]), _word(entry[1]), _score(entry[2])
        assert a is not None and b is not None and score is not None
        out.setdefault(pair_key(a, b), ScoredPair(a, b, score))
    if not out:  # pragma: no cover - refused by check
        raise BiasError(f"{path}: no scored pairs.")
    return SimilarityPairs(meta_of(data, path, name), tuple(out.values()))
