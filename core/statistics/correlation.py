"""Pearson and Spearman correlations with their 95% intervals, for how far two methods agree.

Pearson's interval is Fisher's: z = atanh(r) is near normal with standard error 1/sqrt(n - 3), so
the interval is tanh(z -+ 1.96 / sqrt(n - 3)) (needs n > 3). Spearman's rho uses the same transform
with the standard error sqrt(1.06 / (n - 3)) of Fieller, Hartley & Pearson (1957). With fewer than
three pairs, or a constant series, there is no correlation to report (None), never a number that
reads as one; at |r| = 1 there is no interval (z is infinite), rather than the point [1, 1] that
reads as certainty."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile
SPEARMAN_VARIANCE = 1.06  # Fieller, Hartley & Pearson (1957): var(atanh rho) ~ 1.06 / (n - 3)


@attrs.frozen
class Correlation:
    """A correlation over n pairs, with its interval (None where it cannot be computed)."""

    n: int
    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)


def _fisher_interval(
    r: float, n: int, variance: float, level_z: float = Z_95
) -> tuple[float | None, float | None]:
    if n <= 3 or abs(r) >= 1.0:  # at |r| = 1 atanh is infinite: Fisher's interval does not exist
        return None, None
    z, se = math.atanh(r), math.sqrt(variance / (n - 3))
    return math.tanh(z - level_z * se), math.tanh(z + level_z * se)


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3:
        return None
    # scaled first: r does not change, and values near the float limit (a hand-edited results file's
    # 1e308) do not overflow the sums of squares
    x, y = x / max(float(np.max(np.abs(x))), 1e-300), y / max(float(np.max(np.abs(y))), 1e-300)
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0.0:
        return None
    return max(-1.0, min(1.0, float(dx @ dy) / denominator))


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given the mean of the ranks they span (as Spearman's rho needs)."""
    order = np.argsort(values, kind="mergesort")
    ranked = np.empty(len(values), dtype=np.float64)
    ranked[order] = np.arange(1, len(values) + 1, dtype=np.float64)
    for value in np.unique(values):
        tied = values == value
        if tied.sum() > 1:
            ranked[tied] = ranked[tied].mean()
    return ranked


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson's r with Fisher's 95% interval."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    r = _pearson(a, b)
    if r is None:
        return Correlation(len(a), None)
    return Correlation(len(a), r, *_fisher_interval(r, len(a), 1.0))


def spearman(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Spearman's rho (Pearson's r of the ranks) with the Fieller-Hartley-Pearson 95% interval."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rho = _pearson(ranks(a), ranks(b)) if len(a) else None
    if rho is None:
        return Correlation(len(a), None)
    return Correlation(len(a), rho, *_fisher_interval(rho, len(a), SPEARMAN_VARIANCE))
