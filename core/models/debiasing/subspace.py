"""The bias subspace of word pairs: the principal directions of pair-centred vectors.

Hard-Debias, Sent-Debias and the direct-bias metric all find the gender direction this way
(Bolukbasi et al. 2016), so it is defined once; a second copy would let their directions drift
apart."""

from __future__ import annotations

import numpy as np


def pair_subspace(first: np.ndarray, second: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first k principal directions of pair-centred rows (k x d, orthonormal), and the
    explained-variance ratio of every component (zeros when the rows are all zero).

    Rows i of `first` and `second` form a pair; each contributes first_i - c_i and second_i - c_i
    with c_i their mean. The stacked rows already have mean zero, so PCA is the SVD of that matrix
    (exact, no centring). Each direction is signed so that mean((first - second) . v) > 0, the first
    words (male, by the lists' convention) projecting higher; a direction the pairs do not order (a
    tie) takes the sign that makes its largest coordinate positive, so runs and machines agree.
    Callers normalise the vectors first when the method asks for unit vectors."""
    first = np.asarray(first, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    centre = (first + second) / 2
    stacked = np.concatenate([first - centre, second - centre])
    _, singular, vt = np.linalg.svd(stacked, full_matrices=False)
    power = singular**2
    ratio = power / power.sum() if power.sum() > 0 else np.zeros_like(power)
    basis = vt[:k].copy()
    order = (first - second).mean(axis=0) @ basis.T
    largest = basis[np.arange(len(basis)), np.argmax(np.abs(basis), axis=1)]
    signs = np.where(order > 0, 1.0, np.where(order < 0, -1.0, np.sign(largest)))
    return basis * signs[:, None], ratio
