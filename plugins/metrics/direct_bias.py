"""Direct bias (Bolukbasi et al. 2016, "Man is to Computer Programmer as Woman is to Homemaker?"):
how far gender-neutral words lean along the gender direction, DB_c = mean |cos(w, g)|^c.

It is the measure Hard-Debias drives to zero by construction, so it says that the neutralisation
worked, not that the bias is gone; read it beside the clustering test.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api import (
    DEBIAS_LISTS,
    OK,
    REFUSED,
    BiasError,
    Capability,
    DebiasLists,
    Embedder,
    Metric,
    Result,
    between,
    int_at_least,
    one_of,
    param,
    unit_rows,
)
from bias.api.association import (
    LOOKUP_CASES,
    UNCASED_HINT,
    case_param,
    lookup,
    lost_threshold_param,
    too_many_lost,
)
from bias.api.data import normalise
from bias.api.debiasing import lists_of, pair_subspace

DIRECTIONS = ("definitional", "pair")
WORDS = ("neutral", "vocabulary")
_SHOWN = 10


def gender_direction(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, float]:
    """Unit first principal component of the pair-centred, unit-normalised definitional vectors
    (`pair_subspace`, signed so that the first, male words of the pairs lie on the positive side),
    and its share of the variance (1 when the pairs do not differ at all)."""
    if not pairs:
        raise ValueError("no pairs")
    first = np.array([a / np.linalg.norm(a) for a, _ in pairs], dtype=np.float64)
    second = np.array([b / np.linalg.norm(b) for _, b in pairs], dtype=np.float64)
    basis, ratio = pair_subspace(first, second, 1)
    explained = float(ratio[0]) if ratio.any() else 1.0
    return basis[0], explained


def direct_bias(vectors: np.ndarray, g: np.ndarray, c: float = 1.0) -> tuple[float, np.ndarray]:
    """DB_c = mean over rows w of |cos(w, g)|^c, and the signed cosines."""
    cos = unit_rows(vectors) @ (g / np.linalg.norm(g))
    return float(np.mean(np.abs(cos) ** c)), cos


@attrs.define
class DirectBias(Metric):
    """Direct bias DB_c = mean over gender-neutral words w of |cos(w, g)|^c (Bolukbasi et al. 2016).

    Data: debiasing lists (kind "debias-lists"). g is the first principal component of the
    definitional pairs (pair-centred, unit vectors; `direction = definitional`, as in the paper) or
    the difference of the `direction` pair (`direction = pair`). The neutral words are the lists'
    `neutral` words (`words = neutral`) or the `vocabulary_limit` most frequent words minus every
    word of the lists (`words = vocabulary`). c (`strictness`) is the paper's c: 1 by default; large
    c counts only words far along g. Direction: none; DB lies in [0, 1], 0 means the neutral words
    are orthogonal to g (no direct bias). Figures list the words that lean most. No p-value."""

    name: ClassVar[str] = "direct-bias"
    summary: ClassVar[str] = (
        "Direct bias: mean |cos(w, g)|^c of gender-neutral words (Bolukbasi et al. 2016)."
    )
    value: ClassVar[ValueKind] = ValueKind("DB", "direct bias", signed=False, digits=3)
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = DEBIAS_LISTS

    strictness: float = param(1.0, "the exponent c of |cos(w, g)|^c", validator=between(0.0, 100.0))
    direction: str = param(
        "definitional",
        "g from the definitional pairs (first principal component) or the direction pair",
        validator=one_of(DIRECTIONS),
    )
    words: str = param(
        "neutral",
        "neutral words: the lists' neutral list, or the vocabulary minus the lists' words",
        validator=one_of(WORDS),
    )
    vocabulary_limit: int = param(
        50_000,
        "with words = vocabulary: this many most frequent words (0: all)",
        validator=int_at_least(0),
    )
    lost_threshold: float = lost_threshold_param()
    case: str = case_param("exact", LOOKUP_CASES, UNCASED_HINT)

    def compute(self, embedder: Embedder, data: Any, *, seed: int | None = None) -> Result:
        lists = lists_of(data, "direct-bias")
        g, explained, used_pairs, lost = self._direction(embedder, lists)
        if self.words == "neutral":
            if not lists.neutral:
                raise BiasError(
                    f"The lists {lists.name} have no neutral words, which direct bias "
                    "averages over.",
                    "Add `neutral = [...]` to the lists, or use --param words=vocabulary.",
                )
            vectors, _, dim = lookup(embedder, list(lists.neutral), self.case)
            neutral = [w for w in lists.neutral if w in vectors]
            missing = [w for w in lists.neutral if w not in vectors]
            if missing:
                lost["neutral"] = missing
            why = too_many_lost(missing, len(lists.neutral), self.lost_threshold)
            # even lost_threshold = 1 needs one word to average over
            if why is None and not neutral:
                why = f"(100%, none left): {', '.join(missing[:8])}"
            if why:
                return self.make_result(
                    embedder.spec,
                    lists,
                    seed,
                    status=REFUSED,
                    reason=f"neutral words: {len(missing)} of {len(lists.neutral)} missing from "
                    f"the model {why}",
                    lost=lost,
                )
            matrix = np.array([vectors[w] for w in neutral], dtype=np.float64).reshape(
                len(neutral), dim
            )
        else:
            found = embedder.all_vectors(self.vocabulary_limit or None)
            banned = lists.gendered_words()
            keep = [i for i, w in enumerate(found.words) if normalise(w) not in banned]
            neutral = [found.words[i] for i in keep]
            matrix = np.asarray(found.vectors[keep], dtype=np.float64)
            nonzero = np.linalg.norm(matrix, axis=1) > 0
            neutral, matrix = [w for w, ok in zip(neutral, nonzero) if ok], matrix[nonzero]
            if not neutral:
                raise BiasError(
                    f"No vocabulary word of {embedder.spec} is outside the lists {lists.name}."
                )
        db, cos = direct_bias(matrix, g, self.strictness)
        order = np.argsort(-np.abs(cos))[:_SHOWN]
        warnings = []
        if len(used_pairs) < 2 and self.direction == "definitional":
            warnings.append(
                "only one definitional pair was found in the model: g is that pair's difference"
            )
        return self.make_result(
            embedder.spec,
            lists,
            seed,
            status=OK,
            effect_size=db,
            p_value=None,
            figures={
                "direct_bias": db,
                "mean_cos": float(cos.mean()),
                "words": len(neutral),
                "explained_variance": explained,
                "most_biased": {neutral[i]: float(cos[i]) for i in order},
                "pairs": [list(p) for p in used_pairs],
            },
            convention={
                "c": self.strictness,
                "direction": self.direction,
                "words": self.words,
                "vocabulary_limit": self.vocabulary_limit if self.words == "vocabulary" else None,
                "sign": "cos > 0: towards the first (male) word of the pairs",
                "case": self.case,
            },
            sizes={"neutral": len(neutral), "pairs": len(used_pairs)},
            lost=lost,
            warnings=warnings,
        )

    def _direction(
        self, embedder: Embedder, lists: DebiasLists
    ) -> tuple[np.ndarray, float, list[tuple[str, str]], dict[str, list[str]]]:
        lost: dict[str, list[str]] = {}
        if self.direction == "pair":
            pair = lists.ranking_pair
            vectors, _, _ = lookup(embedder, list(pair), self.case)
            missing = [w for w in pair if w not in vectors]
            if missing:
                raise BiasError(
                    f"The direction pair ({pair[0]}, {pair[1]}) of {lists.name}: "
                    f"{', '.join(missing)} not in {embedder.spec}.",
                    "Choose a direction pair of frequent words, or use --param "
                    "direction=definitional.",
                )
            g = vectors[pair[0]] / np.linalg.norm(vectors[pair[0]]) - vectors[
                pair[1]
            ] / np.linalg.norm(vectors[pair[1]])
            return g / np.linalg.norm(g), 1.0, [pair], lost
        words = [w for p in lists.definitional for w in p]
        vectors, _, _ = lookup(embedder, words, self.case)
        used = [p for p in lists.definitional if p[0] in vectors and p[1] in vectors]
        missing = [w for w in words if w not in vectors]
        if missing:
            lost["definitional"] = missing
        if not used:
            raise BiasError(
                f"No definitional pair of {lists.name} has both words in {embedder.spec} "
                f"(missing: {', '.join(missing[:8])}).",
                "Check the model's language and case (--case lower for uncased vocabularies).",
            )
        g, explained = gender_direction([(vectors[a], vectors[b]) for a, b in used])
        return g, explained, used, lost
