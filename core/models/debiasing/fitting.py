"""What the debiasers share around a fit: fitting on first load, the vocabulary matrix they change,
labelled training words, and the record of parameters and timings."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.data.debias_lists import DebiasLists
from bias.core.models.debiasing.embedder import DebiasedEmbedder
from bias.core.models.debiasing.transforms import CHUNK_ROWS
from bias.core.errors import BiasError
from bias.core.interfaces import Embedder


class FitOnLoad:
    """Mixin of the first-party debiasers: `wrap(embedder, lists)` returns the debiased model at
    once, fitting (and transforming) only when it is first loaded; what `bias run --debias` uses."""

    name: ClassVar[str]

    def wrap(self, embedder: Embedder, lists: Any) -> DebiasedEmbedder:
        def fit(source: Embedder) -> DebiasedEmbedder:
            return self.fit(source, lists).transform(source)  # type: ignore[attr-defined]

        return DebiasedEmbedder(source=embedder, method=self.name, pending=fit)


def vocabulary_matrix(
    embedder: Embedder, limit: int | None, extra: Sequence[str] = (), dtype: str = "float32"
) -> tuple[list[str], np.ndarray]:
    """The first `limit` words of the vocabulary (all when None) and their vectors as one new,
    writable matrix of `dtype`, plus the words of `extra` the model has beyond the limit (list words
    must be debiased whatever the limit)."""
    embedder.load()
    found = embedder.all_vectors(limit)
    words, vectors = list(found.words), found.vectors
    matrix = np.array(vectors, dtype=dtype, copy=True)
    have = set(words)
    beyond = [w for w in dict.fromkeys(extra) if w not in have]
    if beyond:
        more = embedder.word_vectors(beyond)
        own = [i for i, w in enumerate(more.words) if w not in set(more.approximated)]
        if own:
            words.extend(more.words[i] for i in own)
            matrix = np.concatenate([matrix, np.asarray(more.vectors[own], dtype=dtype)])
    return words, matrix


def labelled_words(
    words: list[str],
    matrix: np.ndarray,
    lists: DebiasLists,
    training: str,
    per_class: int,
    method: str,
) -> tuple[np.ndarray, np.ndarray, tuple[list[str], list[str]]]:
    """Training vectors of a static model labelled 1 (male) and 0 (female), for the debiasers that
    learn the concept from words (INLP, LEACE):

    - `training = "pairs"`: the words of the definitional and equalize pairs, labelled by their
      side;
    - `training = "projection"`: the `per_class` words most aligned with the lists' direction pair
      (he - she) by cosine are male, the `per_class` least aligned female; the pair itself is left
      out.

    Returns the float64 rows, the labels and the (male, female) words chosen.
    """
    index = {w: i for i, w in enumerate(words)}
    if training == "pairs":
        pairs = [
            (a, b) for a, b in (*lists.definitional, *lists.equalize) if a in index and b in index
        ]
        male = list(dict.fromkeys(a for a, _ in pairs))
        female = list(dict.fromkeys(b for _, b in pairs if b not in male))
        if len(male) < 2 or len(female) < 2:
            raise BiasError(
                f"{method} found only {len(pairs)} list pairs in the model to train on.",
                "Use training = projection.",
            )
    else:
        a, b = lists.ranking_pair
        if a not in index or b not in index:
            missing = [w for w in (a, b) if w not in index]
            raise BiasError(
                f"The direction pair ({a}, {b}) of {lists.name} is not in the model: "
                f"{', '.join(missing)} missing.",
                "Use training = pairs, or lists whose direction pair the model has.",
            )
        g = matrix[index[a]].astype(np.float64) - matrix[index[b]].astype(np.float64)
        g /= np.linalg.norm(g)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)).astype(np.float64)
        scores = np.empty(len(words))
        for first in range(0, len(words), CHUNK_ROWS):
            block = matrix[first : first + CHUNK_ROWS].astype(np.float64)
            scores[first : first + CHUNK_ROWS] = block @ g
        scores /= np.where(norms > 0, norms, 1.0)
        candidates = np.array(
            [i for i in range(len(words)) if words[i] not in (a, b) and norms[i] > 0]
        )
        k = min(per_class, len(candidates) // 2)
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        male = [words[i] for i in order[:k]]
        female = [words[i] for i in order[len(order) - k :]]
    rows = [index[w] for w in male] + [index[w] for w in female]
    X = matrix[rows].astype(np.float64)
    y = np.array([1] * len(male) + [0] * len(female))
    return X, y, (male, female)


def check_dtype(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value not in ("float32", "float64"):
        raise BiasError(
            f"{attribute.name} must be float32 or float64, not {value!r}.",
            "float32 halves the memory of a large vocabulary.",
        )


def timed(info: dict[str, Any], key: str, started: float) -> None:
    info.setdefault("timings", {})[key] = round(time.perf_counter() - started, 4)
