"""A debiaser written against the public API: remove from every vector of a static model its
component along the direction from the second to the first word of the definitional pairs (the mean
of their differences). `bias debias --method centroid-projection` writes the vectors, as for the
framework's own methods: it declares that it produces static vectors, and its transform gives an
embedder with a vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import (
    STATIC_VECTORS,
    BiasError,
    Capability,
    DebiasLists,
    Debiaser,
    Embedder,
    WordVectors,
    param,
)


@attrs.define
class ProjectedVectors(Embedder):
    """The debiased vocabulary: one vector per word, held in memory."""

    name: ClassVar[str] = "centroid-projected"
    summary: ClassVar[str] = "Static vectors after centroid projection."
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.VOCABULARY}
    )

    location: str
    words: tuple[str, ...] = ()
    matrix: np.ndarray = attrs.field(factory=lambda: np.zeros((0, 0)), eq=False, repr=False)

    def check(self) -> None:
        """Nothing to check: the vectors are in memory."""

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        index = {w: i for i, w in enumerate(self.words)}
        found = [w for w in dict.fromkeys(words) if w in index]
        rows = (
            self.matrix[[index[w] for w in found]] if found else np.zeros((0, self.matrix.shape[1]))
        )
        return WordVectors(
            tuple(found), rows, lost=tuple(w for w in dict.fromkeys(words) if w not in index)
        )

    def vocabulary(self, limit: int | None = None) -> list[str]:
        return list(self.words[:limit])

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        return WordVectors(tuple(self.words[:limit]), self.matrix[:limit])


@attrs.define
class CentroidProjection(Debiaser):
    """v <- v - (v . g) g for every word v, g the unit mean of (first - second) over the
    definitional pairs the model has."""

    name: ClassVar[str] = "centroid-projection"
    summary: ClassVar[str] = (
        "Remove the mean definitional-pair direction from every vector (example plugin)."
    )
    requires: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.VOCABULARY}
    )
    produces: ClassVar[frozenset[str]] = frozenset({STATIC_VECTORS})

    limit: int = param(0, "debias only the first N words of the vocabulary (0: all)")
    _direction: np.ndarray | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def fit(self, embedder: Embedder, lists: Any) -> CentroidProjection:
        if not isinstance(lists, DebiasLists):
            raise BiasError("centroid-projection needs debiasing lists (kind debias-lists).")
        found = embedder.word_vectors([w for pair in lists.definitional for w in pair]).as_dict()
        diffs = [found[a] - found[b] for a, b in lists.definitional if a in found and b in found]
        if not diffs:
            raise BiasError(
                "None of the definitional pairs is in the model.",
                "Give lists in the model's language.",
            )
        g = np.mean(np.asarray(diffs, dtype=np.float64), axis=0)
        self._direction = g / np.linalg.norm(g)
        return self

    def transform(self, embedder: Embedder) -> ProjectedVectors:
        if self._direction is None:
            raise BiasError("centroid-projection must be fitted before transform().")
        found = embedder.all_vectors(self.limit or None)
        vectors = np.asarray(found.vectors, dtype=np.float64)
        debiased = vectors - np.outer(vectors @ self._direction, self._direction)
        return ProjectedVectors(
            location=f"{embedder.spec}+{self.name}", words=tuple(found.words), matrix=debiased
        )
