"""INLP, Iterative Nullspace Projection (Ravfogel et al. 2020, "Null It Out").

A linear classifier is trained to predict the protected attribute (male vs female) from the vectors;
its weight direction is removed by projecting on its nullspace, and the next classifier is trained
on the projected vectors, for a set number of iterations. The final projection P = I - Q Q^T (Q an
orthonormal basis of every weight direction found) is applied to every vector: v <- v P.

Training data:
- word vectors, `training = "projection"` (the paper's setting for GloVe): the `per_class` words
  most aligned with the lists' direction pair (he - she) by cosine in the original space are "male",
  the `per_class` least aligned "female"; the direction words themselves are left out;
- word vectors, `training = "pairs"`: the words of the definitional and equalize pairs, labelled by
  their side of the pair (no ranking involved; useful for small vocabularies);
- sentence encodings (a contextual model): the all-male and all-female versions of the sentence
  pairs Sent-Debias builds (from `corpus`, else templates), labelled by version; fitted separately
  for each way encodings are taken and applied on the fly.

Each classifier is trained on a seeded 70/30 split and its held-out accuracy recorded, so the result
shows linear predictability falling towards chance (0.5 for balanced classes). The paper ran 35
iterations on 300-d GloVe; the default here is 10, a parameter.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import BiasError, Capability, int_at_least, one_of, param
from bias.api.debiasing import LinearErasure, LinearProjection, VectorTransform, params_in_order

CLASSIFIERS = ("svm", "logistic")
DEV_SHARE = 0.3


def make_classifier(kind: str, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    if kind == "svm":  # the paper's choice, without intercept so the weight is a pure direction
        return LinearSVC(fit_intercept=False, dual="auto", max_iter=5000, random_state=seed)
    return LogisticRegression(fit_intercept=False, max_iter=2000, random_state=seed)


def split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    dev = max(1, round(n * DEV_SHARE))
    return order[dev:], order[:dev]


def nullspace_projection(directions: list[np.ndarray], dim: int) -> np.ndarray:
    """P = I - Q Q^T, with Q an orthonormal basis of the span of every direction."""
    if not directions:
        return np.eye(dim)
    stacked = np.array(directions, dtype=np.float64)
    _, singular, vt = np.linalg.svd(stacked, full_matrices=False)
    rank = int((singular > singular[0] * 1e-10).sum()) if singular.size and singular[0] > 0 else 0
    basis = vt[:rank]
    return np.eye(dim) - basis.T @ basis


def inlp(
    X: np.ndarray, y: np.ndarray, *, iterations: int, classifier: str, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """The projection and, per iteration, the held-out accuracy of the classifier trained then."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        raise BiasError(
            "INLP needs training vectors of both classes (male and female); only one was found."
        )
    train, dev = split(len(y), seed)
    if len(np.unique(y[train])) < 2:
        raise BiasError(
            f"INLP has too few training vectors ({len(y)}) to hold both classes in its "
            "training split."
        )
    dim = X.shape[1]
    directions: list[np.ndarray] = []
    P = np.eye(dim)
    accuracies = []
    not_converged = 0
    from sklearn.exceptions import ConvergenceWarning

    for i in range(iterations):
        projected = X @ P
        clf = make_classifier(classifier, seed + i)
        with warnings.catch_warnings(record=True) as caught:
            # only convergence warnings are expected (nearly separable data); they are counted and
            # reported, and every other warning is passed on
            warnings.simplefilter("always")
            clf.fit(projected[train], y[train])
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                not_converged += 1
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        accuracies.append(float(clf.score(projected[dev], y[dev])))
        w = np.asarray(clf.coef_, dtype=np.float64).reshape(-1, dim)
        norms = np.linalg.norm(w, axis=1)
        if not (norms > 1e-12).any():
            break  # nothing left to remove
        directions.extend(w[norms > 1e-12] / norms[norms > 1e-12, None])
        P = nullspace_projection(directions, dim)
    if not_converged:
        logging.getLogger(__name__).warning(
            "INLP: %d of %d classifiers stopped before converging (recorded as "
            "classifiers_not_converged); "
            "their directions are still removed.",
            not_converged,
            len(accuracies),
        )
    majority = float(max(np.mean(y[dev] == c) for c in np.unique(y)))
    return P, {
        "accuracy_per_iteration": accuracies,
        "majority_baseline": majority,
        "removed_rank": round(dim - np.trace(P)),
        "training_vectors": len(y),
        "classifiers_not_converged": not_converged,
    }


@attrs.define(
    field_transformer=params_in_order(
        "iterations",
        "classifier",
        "training",
        "per_class",
        "level",
        "corpus",
        "limit",
        "seed",
        "precision",
    )
)
class Inlp(LinearErasure):
    """Project out, one classifier at a time, every linear direction that predicts gender."""

    name: ClassVar[str] = "inlp"
    summary: ClassVar[str] = (
        "INLP: iterative nullspace projection of linear gender classifiers (Ravfogel et al. 2020)."
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    label: ClassVar[str] = "INLP"
    methods_hint: ClassVar[str] = (
        "Methods: hard and inlp for static vectors, sent and inlp for contextual models."
    )
    apply_timing: ClassVar[str] = "project_s"
    check_word_pairs: ClassVar[bool] = False

    iterations: int = param(
        10,
        "classifiers trained and projected out (the paper used 35 on 300-d GloVe)",
        validator=int_at_least(1),
    )
    classifier: str = param(
        "svm",
        "linear classifier: svm (LinearSVC, as in the paper) or logistic",
        validator=one_of(CLASSIFIERS),
    )
    seed: int = param(0, "seed of the data split and the classifiers", validator=int_at_least(0))

    def _fit_map(self, X: np.ndarray, y: np.ndarray) -> tuple[LinearProjection, dict[str, Any]]:
        P, report = inlp(
            X, y, iterations=self.iterations, classifier=self.classifier, seed=self.seed
        )
        return LinearProjection(P), report

    def _headline(self, report: dict[str, Any]) -> dict[str, Any]:
        return {"accuracy": report["accuracy_per_iteration"]}

    def _block_map(
        self, fitted: VectorTransform, dtype: np.dtype
    ) -> Callable[[np.ndarray], np.ndarray]:
        assert isinstance(fitted, LinearProjection)
        projection = fitted.matrix.astype(dtype)  # in the matrix's own precision
        return lambda block: block @ projection
