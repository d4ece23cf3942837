"""LEACE, LEAst-squares Concept Erasure (Belrose et al. 2023, "LEACE: Perfect linear concept erasure
in closed form").

Where INLP removes classifier directions one at a time and Hard-Debias removes principal directions
of pairs, LEACE solves the erasure in closed form: among all affine maps r(x) after which the
vectors have zero cross-covariance with the concept Z (male / female), it is the one that moves them
least in least squares (for every inner product at once). Zero cross-covariance is exactly what it
takes for no linear classifier to beat a constant predictor (for any convex loss); for two classes
it means the class means coincide.

With mu the mean of the training vectors X, Sigma their covariance, W = Sigma^(-1/2) the whitening
matrix (pseudo-inverse square root on the span of the data), W^+ its pseudo-inverse and P the
orthogonal projection onto the span of W Sigma_XZ (the whitened cross-covariance):

    r(x) = x - W^+ P W (x - mu)

For a binary concept with cross-covariance vector delta this is the oblique projection
x - delta delta^T Sigma^+ (x - mu) / (delta^T Sigma^+ delta).

Training data, from the same lists as INLP:
- word vectors: `training = "projection"` (the `per_class` words most and least aligned with the
  lists' direction pair) or `training = "pairs"` (the words of the definitional and equalize pairs);
- sentence encodings (a contextual model): the all-male and all-female versions of the sentence
  pairs Sent-Debias builds (from `corpus`, else templates), fitted separately for each way encodings
  are taken and applied on the fly; word encodings of a contextual model use the list pairs'
  vectors.

The eraser is affine and applied to every vector the model gives, words of the lists included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import BiasError, Capability
from bias.api.debiasing import LinearErasure, VectorTransform

RELATIVE_TOLERANCE = (
    1e-10  # eigenvalues (and singular values) below this share of the largest count as zero
)


@attrs.frozen
class LeaceEraser(VectorTransform):
    """r(x) = x - ((x - mean) @ down.T) @ up.T, the low-rank form of x - W^+ P W (x - mean):
    `down` = U^T W (rank x d) and `up` = W^+ U (d x rank), U an orthonormal basis of the span of the
    whitened cross-covariance."""

    mean: np.ndarray = attrs.field(eq=False)
    down: np.ndarray = attrs.field(eq=False)
    up: np.ndarray = attrs.field(eq=False)

    @property
    def rank(self) -> int:
        return int(self.down.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        X = np.asarray(vectors, dtype=np.float64)
        return X - ((X - self.mean) @ self.down.T) @ self.up.T

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return self.apply(vectors)

    def matrix(self) -> np.ndarray:
        """The d x d map W^+ P W (for checks and small models)."""
        return self.up @ self.down

    def describe(self) -> dict[str, Any]:
        return {"transform": "LEACE affine erasure", "erased_rank": self.rank}


def one_hot(labels: np.ndarray) -> np.ndarray:
    """Z for a label vector: one column per class but the last (the columns of a full one-hot
    encoding sum to one, so the last adds nothing to the span of the cross-covariance)."""
    classes = np.unique(labels)
    return (np.asarray(labels)[:, None] == classes[None, :-1]).astype(np.float64)


def fit_leace(X: np.ndarray, labels: np.ndarray) -> LeaceEraser:
    """The LEACE eraser of the concept `labels` (two or more classes) from the rows of X."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or len(X) != len(labels):
        raise BiasError(
            f"LEACE needs one label per training vector; got {len(labels)} labels for "
            f"{len(X)} vectors."
        )
    if len(np.unique(labels)) < 2:
        raise BiasError(
            "LEACE needs training vectors of both classes (male and female); only one was found."
        )
    n = len(X)
    mean = X.mean(axis=0)
    centred = X - mean
    Z = one_hot(labels)
    sigma = centred.T @ centred / n
    cross = centred.T @ (Z - Z.mean(axis=0)) / n  # d x (classes - 1)
    values, vectors = np.linalg.eigh(sigma)
    kept = values > max(values.max(), 0.0) * RELATIVE_TOLERANCE
    if not kept.any():
        raise BiasError(
            "LEACE's training vectors are all identical; there is nothing to erase from."
        )
    V, lam = vectors[:, kept], values[kept]
    whiten = (V / np.sqrt(lam)) @ V.T
    unwhiten = (V * np.sqrt(lam)) @ V.T
    U, singular, _ = np.linalg.svd(whiten @ cross, full_matrices=False)
    rank = (
        int((singular > singular.max() * RELATIVE_TOLERANCE).sum())
        if singular.size and singular.max() > 0
        else 0
    )
    U = U[:, :rank]
    return LeaceEraser(mean=mean, down=U.T @ whiten, up=unwhiten @ U)


def class_mean_gap(X: np.ndarray, labels: np.ndarray) -> float:
    """Largest absolute coordinate of the difference between the two class means (0 after
    erasure)."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    return float(
        np.abs(X[labels == classes[0]].mean(axis=0) - X[labels == classes[-1]].mean(axis=0)).max()
    )


@attrs.define
class Leace(LinearErasure):
    """Erase the linearly encoded gender concept in closed form, moving the vectors least."""

    name: ClassVar[str] = "leace"
    summary: ClassVar[str] = (
        "LEACE: closed-form least-squares linear concept erasure; no linear classifier "
        "beats chance (Belrose et al. 2023)."
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    label: ClassVar[str] = "LEACE"
    methods_hint: ClassVar[str] = (
        "Methods: hard, inlp and leace for static vectors; sent, inlp and leace for "
        "contextual models."
    )
    apply_timing: ClassVar[str] = "erase_s"

    def _fit_map(self, X: np.ndarray, y: np.ndarray) -> tuple[LeaceEraser, dict[str, Any]]:
        eraser = fit_leace(X, y)
        erased = eraser.apply(X)
        return eraser, {
            "erased_rank": eraser.rank,
            "training_vectors": len(y),
            "class_mean_gap_before": class_mean_gap(X, y),
            "class_mean_gap_after": class_mean_gap(erased, y),
            "mean_squared_change": float(np.mean(np.sum((erased - X) ** 2, axis=1))),
        }

    def _block_map(
        self, fitted: VectorTransform, dtype: np.dtype
    ) -> Callable[[np.ndarray], np.ndarray]:
        assert isinstance(fitted, LeaceEraser)
        return fitted.apply
