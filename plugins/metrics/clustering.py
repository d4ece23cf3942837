"""The clustering test of Gonen & Goldberg (2019), "Lipstick on a Pig": after debiasing, do the
words that were most gendered still cluster by gender?

The words are chosen in the ORIGINAL space (their projection on a gender pair such as he-she, or
man-vrouw in Dutch, where zij also means they); the vectors clustered are those of the model being
measured. Projecting the whole vocabulary is one matrix-vector product, without a normalised copy of
the matrix, so a 200,000-word vocabulary is ranked in well under a second
(benchmarks/bench_clustering.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api import (
    DEBIAS_LISTS,
    MODEL_INPUT,
    OK,
    REFUSED,
    BiasError,
    Capability,
    DebiasLists,
    Embedder,
    InputRequest,
    Metric,
    ResolvedModel,
    Result,
    int_at_least,
    param,
    unit_rows,
)
from bias.api.data import normalise
from bias.api.debiasing import lists_of

_SHOWN = 20
_CHUNK = 16_384  # rows per block: temporaries stay small next to the matrix itself


def projections(vectors: np.ndarray, male: np.ndarray, female: np.ndarray) -> np.ndarray:
    """cos(w, male) - cos(w, female) for every row w: the gender lean of each word (Gonen & Goldberg
    rank by the dot products of unit vectors with he and with she). Computed in row blocks in the
    matrix's own precision (float32 for most files), so the only full-size temporary is the
    result."""
    vectors = np.asarray(vectors)
    dtype = vectors.dtype if vectors.dtype in (np.float32, np.float64) else np.float64
    direction = (male / np.linalg.norm(male) - female / np.linalg.norm(female)).astype(dtype)
    out = np.empty(len(vectors), dtype=np.float64)
    for start in range(0, len(vectors), _CHUNK):
        block = np.asarray(vectors[start : start + _CHUNK], dtype=dtype)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start : start + len(block)] = np.where(
                norms > 0, (block @ direction) / norms, np.nan
            )
    return out


def most_biased(scores: np.ndarray, eligible: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the k highest and the k lowest scores among the eligible rows, most extreme
    first (ties broken by row, i.e. by frequency). Needs at least 2k eligible rows, so the two sets
    never share a word."""
    rows = np.flatnonzero(eligible & np.isfinite(scores))
    if len(rows) < 2 * k:
        raise BiasError(
            f"The clustering test needs 2k = {2 * k} words outside the lists, but the "
            f"vocabulary scanned has {len(rows)}.",
            "Lower k (--param k=...) or raise vocabulary_limit.",
        )
    values = scores[rows]
    order = np.lexsort((rows, -values))  # descending score, then ascending row
    top = rows[order[:k]]
    order_low = np.lexsort((rows, values))
    bottom = rows[order_low[:k]]
    return top, bottom


def cluster_accuracy(
    vectors: np.ndarray, labels: np.ndarray, *, seed: int, n_init: int = 10
) -> tuple[float, float, np.ndarray]:
    """KMeans (k = 2) on unit rows; returns (max(acc, 1 - acc), acc, predicted clusters)."""
    from sklearn.cluster import KMeans

    unit = unit_rows(vectors)
    predicted = KMeans(n_clusters=2, random_state=seed, n_init=n_init).fit_predict(unit)
    acc = float(np.mean(predicted == labels))
    return max(acc, 1.0 - acc), acc, predicted


def alignment_p(labels: np.ndarray, predicted: np.ndarray) -> float:
    """Exact p of the score max(acc, 1 - acc) under random labels given the two clusters.

    With n words, n1 of label 1 and c words in cluster 1, the number m of label-1 words in cluster 1
    is hypergeometric under the null, and acc = (2m + n - n1 - c) / n; p = P(score >= observed).
    """
    from scipy.stats import hypergeom

    n, n1, c = len(labels), int(labels.sum()), int(predicted.sum())
    observed = int(np.sum((labels == 1) & (predicted == 1)))
    support = np.arange(max(0, n1 + c - n), min(n1, c) + 1)
    acc = (2 * support + n - n1 - c) / n
    score = np.maximum(acc, 1 - acc)
    obs_acc = (2 * observed + n - n1 - c) / n
    obs = max(obs_acc, 1 - obs_acc)
    pmf = hypergeom.pmf(support, n, n1, c)
    return float(min(1.0, pmf[score >= obs - 1e-12].sum()))


def _row_of(words: list[str], word: str) -> int | None:
    try:
        return words.index(word)
    except ValueError:
        return None


@attrs.define
class Clustering(Metric):
    """Clustering test (Gonen & Goldberg 2019): the k most male- and k most female-leaning words,
    chosen in the ORIGINAL space, are clustered (KMeans, 2 clusters, unit vectors, n_init restarts,
    seeded) in the model being measured; score = max(acc, 1 - acc) against the male/female labels.

    Data: debiasing lists (kind "debias-lists"): `direction` (else the first definitional pair)
    ranks the words by cos(w, male) - cos(w, female) over the `vocabulary_limit` most frequent
    words, leaving out every word of the lists (specific, definitional, equalize and direction
    words). Direction: 0.5 = words do not cluster by gender (no residual bias); 1.0 = perfectly
    separated. p_value: exact test of the score under random labels given the clusters
    (hypergeometric); small p means the clusters still follow gender.

    The original space is an input resolved and loaded once before the run (`inputs`): `original` (a
    model spec) if given; else the measured model's `source` (a model debiased on the fly); else the
    `source_model` recorded in a debias.json next to the model file (written by `bias debias`); else
    the measured model itself ("same"), which the result's warnings say. How it was found is
    recorded as convention.original."""

    name: ClassVar[str] = "clustering"
    summary: ClassVar[str] = (
        "Clustering test: do the most gendered words (original space) still cluster by "
        "gender? (Gonen & Goldberg 2019)"
    )
    value: ClassVar[ValueKind] = ValueKind(
        "accuracy", "clustering accuracy (0.5 = chance)", reference=0.5, signed=False
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = DEBIAS_LISTS

    k: int = param(
        500, "words taken from each end of the gender ranking", validator=int_at_least(1)
    )
    vocabulary_limit: int = param(
        50_000,
        "rank this many most frequent words of the original model (0: all)",
        validator=int_at_least(0),
    )
    original: str | None = param(
        None, "model spec of the original (not debiased) space; found automatically when omitted"
    )
    n_init: int = param(10, "KMeans restarts", validator=int_at_least(1))

    def inputs(self, data: Any) -> dict[str, InputRequest]:
        """The original space the words are ranked in (see the class docstring for how it is
        found)."""
        return {
            "original": InputRequest(
                MODEL_INPUT,
                self.original,
                hint="Give the original model with --param original=SPEC.",
            )
        }

    def compute(
        self,
        embedder: Embedder,
        data: Any,
        *,
        seed: int | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Result:
        lists = lists_of(data, "The clustering test")
        used_seed = 0 if seed is None else seed
        resolved = (inputs or {}).get("original")
        if not isinstance(resolved, ResolvedModel):
            raise BiasError(
                f"The clustering test on {lists.name} needs its original model, resolved "
                "before the run, as inputs['original'].",
                "Run it through `bias run`, or pass the ResolvedModel the metric's "
                "inputs() asks for.",
            )
        original = resolved.embedder
        how = f"parameter original = {self.original}" if self.original else resolved.how
        vocab = original.all_vectors(self.vocabulary_limit or None)
        words = list(vocab.words)
        male_word, female_word = lists.ranking_pair
        pair_vectors = self._pair_vectors(original, vocab, words, male_word, female_word, lists)

        banned = lists.gendered_words()
        eligible = np.array([normalise(w) not in banned for w in words], dtype=bool)
        scores = projections(vocab.vectors, *pair_vectors)
        top, bottom = most_biased(scores, eligible, self.k)
        chosen = [words[i] for i in top] + [words[i] for i in bottom]
        labels = np.array([1] * len(top) + [0] * len(bottom))

        base: dict[str, Any] = self.result_fields(embedder.spec, lists, used_seed)
        if original is embedder:
            matrix = np.asarray(vocab.vectors[np.concatenate([top, bottom])], dtype=np.float64)
            lost: list[str] = []
        else:
            found = embedder.word_vectors(chosen)
            by_word = found.as_dict()
            lost = [w for w in chosen if w not in by_word]
            keep = np.array([w in by_word for w in chosen])
            labels = labels[keep]
            chosen = [w for w in chosen if w in by_word]
            matrix = np.array([by_word[w] for w in chosen], dtype=np.float64)
        if labels.sum() < 2 or (1 - labels).sum() < 2:
            return Result(
                status=REFUSED,
                reason=f"too few of the chosen words are in the measured model ({len(lost)} "
                "missing)",
                lost={"words": lost},
                **base,
            )

        score, acc, predicted = cluster_accuracy(matrix, labels, seed=used_seed, n_init=self.n_init)
        p = alignment_p(labels, predicted)
        warnings = []
        if how == "same":
            warnings.append(
                "no original space was found (no `original` parameter, no source model, no "
                "debias.json): words were "
                "ranked in the measured model itself, so this is the model's own gender "
                "clustering, not residual bias"
            )
        if lost:
            warnings.append(
                f"{len(lost)} chosen word(s) are missing from the measured model and were left out"
            )
        male_words = [w for w, lab in zip(chosen, labels) if lab == 1]
        female_words = [w for w, lab in zip(chosen, labels) if lab == 0]
        return Result(
            status=OK,
            effect_size=score,
            p_value=p,
            figures={
                "accuracy": score,
                "raw_accuracy": acc,
                "k": self.k,
                "words_used": int(len(labels)),
                "cluster_sizes": [int((predicted == 0).sum()), int((predicted == 1).sum())],
                "vocabulary_scanned": len(words),
                "eligible": int(eligible.sum()),
                "male_words": male_words[:_SHOWN],
                "female_words": female_words[:_SHOWN],
                "min_male_projection": float(scores[top].min()),
                "max_female_projection": float(scores[bottom].max()),
            },
            convention={
                "original": how,
                "direction": [male_word, female_word],
                "ranking": "cos(w, male) - cos(w, female) in the original space",
                "excluded": "every word of the lists except the neutral ones",
                "kmeans": f"k=2, n_init={self.n_init}, random_state={used_seed}, unit vectors",
                "score": "max(acc, 1 - acc)",
                "p_value": "exact hypergeometric test of the labels given the clusters",
            },
            sizes={"male": int(labels.sum()), "female": int(len(labels) - labels.sum())},
            lost={"words": lost} if lost else {},
            warnings=warnings,
            **base,
        )

    def _pair_vectors(
        self,
        original: Embedder,
        vocab: Any,
        words: list[str],
        male: str,
        female: str,
        lists: DebiasLists,
    ) -> tuple[np.ndarray, np.ndarray]:
        out = []
        missing = []
        for word in (male, female):
            row = _row_of(words, word)
            if row is not None:
                out.append(np.asarray(vocab.vectors[row], dtype=np.float64))
                continue
            # beyond the vocabulary limit, or built from sub-words
            found = original.word_vectors([word])
            if found.words:
                out.append(np.asarray(found.vectors[0], dtype=np.float64))
            else:
                missing.append(word)
        if missing:
            raise BiasError(
                f"The direction pair ({male}, {female}) of {lists.name}: "
                f"{', '.join(missing)} not in {original.spec}.",
                "Choose a direction pair of frequent words in the lists (`direction = "
                "[...]`), or check the model's language.",
            )
        return out[0], out[1]
