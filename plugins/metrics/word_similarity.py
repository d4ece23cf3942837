"""Word similarity: Spearman's rank correlation between a model's cosine similarities and human
similarity scores (SimLex-999, WordSim-353 and their translations), the usual check that a model
still knows what words mean, before and after debiasing.

A pair with a word the model has no vector for is left out and reported (as `pairs_lost` and the
lost words), never scored as zero. The interval is a seeded percentile bootstrap over pairs: each
resample draws as many pairs as were scored, with replacement, and recomputes rho with average ranks
for ties.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api import (
    DEFAULT_RESAMPLES,
    OK,
    REFUSED,
    Capability,
    Embedder,
    Metric,
    Result,
    between,
    generator,
    int_at_least,
    interval,
    param,
)
from bias.api.data import MIN_PAIRS, SIMILARITY_PAIRS, SimilarityPairs

_CHUNK_ELEMENTS = 2_000_000  # float64 elements per chunk of resamples (~16 MB per array)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n along the last axis, ties sharing their average rank."""
    from scipy.stats import rankdata

    return rankdata(values, axis=-1)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho for each row of x and y (the Pearson correlation of their average ranks); NaN
    where a row's ranks are constant."""
    rx = average_ranks(np.atleast_2d(x))
    ry = average_ranks(np.atleast_2d(y))
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    num = (rx * ry).sum(axis=-1)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def bootstrap_rho(x: np.ndarray, y: np.ndarray, resamples: int, seed: int | None) -> np.ndarray:
    """rho of `resamples` bootstrap resamples of the pairs; resample b takes the pairs
    generator(seed).integers(0, n, size=(resamples, n))[b], drawn in chunks of rows."""
    n = len(x)
    rng = generator(seed)
    out = np.empty(resamples)
    rows = max(1, _CHUNK_ELEMENTS // max(1, n))
    for start in range(0, resamples, rows):
        size = min(rows, resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        out[start : start + size] = spearman_rows(x[idx], y[idx])
    return out


def cosines(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Row-wise cosine; NaN where a vector is zero."""
    num = np.einsum("ij,ij->i", first, second)
    den = np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


@attrs.define
class WordSimilarity(Metric):
    """Spearman's rho between cosine similarities of word vectors and human scores of word pairs.

    Data: a similarity-pairs set (a SimLex/WordSim style file: word1, word2, score). Words are
    looked up as written (static vectors) or encoded alone (contextual models, with the model's word
    pooling). effect_size = rho (-1..1, higher is better; no p-value); figures give rho, its
    bootstrap interval, the pairs scored and lost, and Pearson's r."""

    name: ClassVar[str] = "word-similarity"
    summary: ClassVar[str] = (
        "Word similarity: Spearman's rho between cosines and human scores of word pairs "
        "(SimLex/WordSim), pairs lost reported."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "rho", "word similarity, Spearman's rho with human scores", reference=None, digits=3
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = SIMILARITY_PAIRS

    resamples: int = param(
        DEFAULT_RESAMPLES,
        "bootstrap resamples of the pairs for the interval (0: none)",
        validator=int_at_least(0),
    )
    ci_level: float = param(
        0.95, "confidence level of the bootstrap interval", validator=between(0.5, 0.999)
    )

    def compute(
        self, embedder: Embedder, data: SimilarityPairs, *, seed: int | None = None
    ) -> Result:
        base = self.result_fields(embedder.spec, data, seed)
        found = embedder.word_vectors(data.all_words())
        vectors = found.as_dict()
        kept = [p for p in data.pairs if p.first in vectors and p.second in vectors]
        lost_pairs = [f"{p.first} {p.second}" for p in data.pairs if p not in kept]
        lost_words = [w for w in data.all_words() if w not in vectors]
        lost = {"pairs": lost_words} if lost_words else {}
        if kept:
            sims = cosines(
                np.array([vectors[p.first] for p in kept]),
                np.array([vectors[p.second] for p in kept]),
            )
            zero = [f"{p.first} {p.second}" for p, s in zip(kept, sims) if not np.isfinite(s)]
            kept = [p for p, s in zip(kept, sims) if np.isfinite(s)]
            lost_pairs += zero
            sims = sims[np.isfinite(sims)]
        if len(kept) < MIN_PAIRS:
            return Result(
                status=REFUSED,
                reason=f"only {len(kept)} of {len(data.pairs)} pairs have vectors for both words; "
                f"at least {MIN_PAIRS} are needed "
                f"(missing: {', '.join(lost_words[:8])})",
                lost=lost,
                **base,
            )
        human = np.array([p.score for p in kept], dtype=np.float64)
        constant = (
            "human score"
            if np.ptp(human) == 0
            else "cosine similarity"
            if np.ptp(sims) == 0
            else None
        )
        if constant:  # a rank correlation with a constant has no value (0/0), not a value of 0
            value = human[0] if constant == "human score" else sims[0]
            return Result(
                status=REFUSED,
                reason=f"every {constant} of the {len(kept)} pairs scored is {value:g}: "
                "Spearman's rho is undefined when one side is constant",
                lost=lost,
                **base,
            )
        rho = float(spearman_rows(sims, human)[0])
        figures: dict[str, Any] = {
            "rho": rho,
            "pearson_r": float(np.corrcoef(sims, human)[0, 1])
            if np.std(sims) > 0 and np.std(human) > 0
            else None,
            "pairs_scored": len(kept),
            "pairs_lost": len(lost_pairs),
            "pairs": len(data.pairs),
            "lost_pairs": lost_pairs[:50],
        }
        if self.resamples:
            boot = bootstrap_rho(sims, human, self.resamples, seed)
            ci = interval(boot, rho, level=self.ci_level, method="percentile", seed=seed)
            figures.update(ci.figures())
        warnings = []
        if lost_pairs:
            warnings.append(
                f"{len(lost_pairs)} of {len(data.pairs)} pair(s) not scored: a word has no "
                "vector (not counted in rho)"
            )
        return Result(
            status=OK,
            effect_size=rho,
            p_value=None,
            figures=figures,
            convention={
                "statistic": "Spearman's rho (average ranks for ties) of cosine similarity "
                "against the "
                "human score",
                "interval": f"percentile bootstrap over pairs, {self.resamples} resamples"
                if self.resamples
                else "none",
                "lost": "pairs with a word that has no vector are left out",
            },
            sizes={"pairs": len(kept)},
            lost=lost,
            warnings=warnings,
            **base,
        )


__all__ = ["WordSimilarity", "bootstrap_rho", "spearman_rows"]
