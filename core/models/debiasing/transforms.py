"""How a fitted debiaser changes vectors, and the in-place block operations the transforms share.

Functions whose name ends in an underscore (`unit_rows_`, `remove_subspace_`) change the array they
are given in place, as numpy's `out=` and torch's `add_` do: a whole vocabulary is changed without a
second copy of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import attrs
import numpy as np

CHUNK_ROWS = (
    16_384  # rows per block of whole-vocabulary operations: temporaries stay ~20 MB at d=300
)


class VectorTransform(ABC):
    """How a fitted debiaser changes vectors that are not in a precomputed matrix."""

    @abstractmethod
    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        """Debiased word vectors (rows in the order of `words`)."""

    def encodings(
        self, vectors: np.ndarray, *, pooling: str, layer: Any, spans: bool
    ) -> np.ndarray:
        """Debiased contextual vectors; by default the same as word vectors without exemptions."""
        return self.words(vectors, [""] * len(vectors))

    def describe(self) -> dict[str, Any]:
        return {}


def unit_rows_(matrix: np.ndarray, rows: slice | np.ndarray | None = None) -> int:
    """Scale rows to unit length in place, block by block (no full-size temporaries); zero rows stay
    zero. Returns how many rows were zero."""
    n = matrix.shape[0]
    zero = 0
    if rows is not None and not isinstance(rows, slice):
        block = matrix[rows]
        zero += _unit_block(block)
        matrix[rows] = block
        return zero
    start, stop = (
        (0, n) if rows is None else (rows.start or 0, n if rows.stop is None else rows.stop)
    )
    for first in range(start, stop, CHUNK_ROWS):
        zero += _unit_block(matrix[first : min(first + CHUNK_ROWS, stop)])
    return zero


def _unit_block(block: np.ndarray) -> int:
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    nonzero = norms > 0
    block[nonzero] /= norms[nonzero, None].astype(block.dtype)
    return int((~nonzero).sum())


def remove_subspace_(matrix: np.ndarray, basis: np.ndarray, keep: np.ndarray | None = None) -> None:
    """v <- v - sum_j (v.b_j) b_j for every row not marked in `keep`, in place and in blocks;
    `basis` has orthonormal rows."""
    basis = np.asarray(basis, dtype=matrix.dtype)
    for first in range(0, matrix.shape[0], CHUNK_ROWS):
        block = matrix[first : first + CHUNK_ROWS]
        coefficients = block @ basis.T
        if keep is not None:
            coefficients[keep[first : first + CHUNK_ROWS]] = 0
        block -= coefficients @ basis


@attrs.frozen
class SubspaceRemoval(VectorTransform):
    """Unit-normalise, remove the projection on a subspace, renormalise (Hard-Debias'
    neutralisation, Sent-Debias); words in `exempt` (gender-specific words) are only normalised."""

    basis: np.ndarray = attrs.field(eq=False)
    exempt: frozenset[str] = frozenset()

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        out = np.array(vectors, dtype=np.float64)
        unit_rows_(out)
        keep = np.array([w in self.exempt for w in words], dtype=bool) if self.exempt else None
        remove_subspace_(out, self.basis, keep)
        unit_rows_(out)
        return out

    def describe(self) -> dict[str, Any]:
        return {"transform": "subspace removal", "rank": int(self.basis.shape[0])}


@attrs.frozen
class LinearProjection(VectorTransform):
    """v <- v P for a (symmetric) projection matrix P (INLP)."""

    matrix: np.ndarray = attrs.field(eq=False)

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float64) @ self.matrix

    def describe(self) -> dict[str, Any]:
        rank = round(float(np.trace(self.matrix)))
        return {"transform": "linear projection", "removed_rank": int(self.matrix.shape[0]) - rank}


@attrs.define
class PerEncoding(VectorTransform):
    """A transformation fitted separately for each way vectors are taken.

    A bias subspace found in mean-pooled sentence vectors of the last layer says little about [CLS]
    vectors of layer 6 or about word encodings, so Sent-Debias and sentence-level INLP fit one per
    (pooling, layer, span or sentence) the metrics actually ask for, the first time they ask.
    """

    fit: Callable[[Hashable], VectorTransform]
    fitted: dict[Hashable, VectorTransform] = attrs.field(factory=dict)

    def get(self, key: Hashable) -> VectorTransform:
        if key not in self.fitted:
            self.fitted[key] = self.fit(key)
        return self.fitted[key]

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return self.get(("words",)).words(vectors, words)

    def encodings(
        self, vectors: np.ndarray, *, pooling: str, layer: Any, spans: bool
    ) -> np.ndarray:
        return self.get(("span" if spans else "sentence", pooling, layer)).encodings(
            vectors, pooling=pooling, layer=layer, spans=spans
        )

    def describe(self) -> dict[str, Any]:
        return {"fitted_for": [list(map(str, key)) for key in self.fitted]}
