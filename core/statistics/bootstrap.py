"""Bootstrap confidence intervals for standardised effect sizes, vectorised over resamples.

An effect size from eight words per set is a noisy number; its interval says how much it depends on
which stimuli were chosen. Each set is resampled within itself (stratified bootstrap: X, Y, A and B
keep their sizes), with a seeded generator.

How it stays fast: a resample of a set is a vector of multinomial counts (how often each stimulus
was drawn), so every statistic is a weighted mean over fixed matrices. For WEAT/SEAT the cosine
matrices X.A, X.B, Y.A, Y.B are computed once; the mean cosine of every target with a resampled A is
one matrix product for a whole chunk of resamples. No Python loop runs over resamples, only over
chunks of bounded memory. The jackknife (leave one stimulus out, for the BCa acceleration) uses the
same weighted code with 0/1 weights.

Intervals (Efron & Tibshirani 1993; Davison & Hinkley 1997):
- percentile: the alpha/2 and 1 - alpha/2 quantiles of the bootstrap distribution;
- BCa: quantiles at Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))), with bias correction z0 =
  Phi^-1(share of resamples below the estimate, ties counted half) and acceleration a = sum_k n_k^-3
  sum_i U_ki^3 / (6 (sum_k n_k^-2 sum_i U_ki^2)^(3/2)), U_ki = (n_k - 1)(mean_i theta_(ki) -
  theta_(ki)) the jackknife influence of stimulus i of set k (the multi-sample form; one sample
  gives the usual formula). Where z0 is infinite (the estimate lies outside every resample) BCa is
  undefined and the percentile interval is returned, its method saying so.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np
from scipy.special import ndtr, ndtri

METHODS = ("bca", "percentile")
DEFAULT_RESAMPLES = 2000
_CHUNK_ELEMENTS = 4_000_000  # float64 elements per chunk of the largest intermediate (~32 MB)
_SEED_STREAM = 0xB0075  # spawn key separating the bootstrap stream from the permutation test's


@attrs.frozen
class Interval:
    """A confidence interval and how it was obtained."""

    estimate: float
    low: float
    high: float
    level: float
    method: str  # "bca", "percentile", or "percentile (bca undefined)"
    resamples: int  # resamples with a defined statistic (degenerate ones are dropped)
    seed: int | None

    def figures(self) -> dict[str, float | int | str]:
        """The keys a Result carries in `figures`."""
        return {
            "ci_low": self.low,
            "ci_high": self.high,
            "ci_method": self.method,
            "ci_level": self.level,
            "ci_resamples": self.resamples,
        }


def generator(seed: int | None) -> np.random.Generator:
    """A generator for resampling, independent of the permutation test's stream for the same
    seed."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SEED_STREAM,)))


def resample_counts(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """`size` bootstrap resamples of n items as counts (size x n): n draws with replacement per row,
    counted with one bincount (several times faster than numpy's multinomial sampler)."""
    draws = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
    return np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)


def leave_one_out(n: int) -> np.ndarray:
    """Jackknife weights: row i leaves item i out."""
    return 1.0 - np.eye(n)


def weighted_effect(
    sa: np.ndarray, sb: np.ndarray, wa: np.ndarray, wb: np.ndarray, ddof: int
) -> np.ndarray:
    """(mean a - mean b) / std(a u b) for each row of weights (counts of each value in the
    resample).

    `sa`, `sb` are the values (one row, or one row per weight row); `wa`, `wb` the weights, R x n.
    A row whose std is zero (every drawn value equal) gives NaN.
    """
    na, nb = wa.sum(axis=1), wb.sum(axis=1)
    sum_a = (wa * sa).sum(axis=1)
    sum_b = (wb * sb).sum(axis=1)
    n = na + nb
    mean = (sum_a + sum_b) / n
    dev_a = sa - mean[:, None]
    dev_b = sb - mean[:, None]
    var = ((wa * dev_a * dev_a).sum(axis=1) + (wb * dev_b * dev_b).sum(axis=1)) / (n - ddof)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(var)
        d = (sum_a / na - sum_b / nb) / std
    tiny = 1e-12 * np.maximum(1.0, np.abs(mean))
    d[~(std > tiny)] = np.nan
    return d


def acceleration(jackknife: Sequence[np.ndarray]) -> float:
    """The BCa acceleration from leave-one-out estimates, one array per resampled set."""
    num = 0.0
    den = 0.0
    for theta in jackknife:
        theta = np.asarray(theta, dtype=np.float64)
        theta = theta[np.isfinite(theta)]
        n = len(theta)
        if n < 2:
            continue
        u = (n - 1) * (theta.mean() - theta)
        num += float((u**3).sum()) / n**3
        den += float((u**2).sum()) / n**2
    if den <= 0.0:
        return 0.0
    return num / (6.0 * den**1.5)


def interval(
    samples: np.ndarray,
    estimate: float,
    *,
    level: float = 0.95,
    method: str = "bca",
    accel: float = 0.0,
    seed: int | None = None,
) -> Interval:
    """Percentile or BCa interval from bootstrap samples (NaN samples are dropped)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    boot = np.asarray(samples, dtype=np.float64)
    boot = boot[np.isfinite(boot)]
    if boot.size == 0 or not np.isfinite(estimate):
        return Interval(
            float(estimate), float("nan"), float("nan"), level, method, int(boot.size), seed
        )
    alpha = (1.0 - level) / 2.0
    quantiles = np.array([alpha, 1.0 - alpha])
    used = method
    if method == "bca":
        below = np.count_nonzero(boot < estimate) + 0.5 * np.count_nonzero(boot == estimate)
        z0 = ndtri(below / boot.size)
        if np.isfinite(z0):
            z = ndtri(quantiles)
            quantiles = ndtr(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
        else:
            used = "percentile (bca undefined)"
    low, high = np.quantile(boot, quantiles)
    return Interval(float(estimate), float(low), float(high), level, used, int(boot.size), seed)


def _chunks(total: int, per_resample: int) -> list[tuple[int, int]]:
    size = max(1, min(total, _CHUNK_ELEMENTS // max(1, per_resample)))
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def _check(resamples: int, level: float, method: str) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError("resamples must be a positive whole number")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")


def association_effects(
    XA: np.ndarray,
    XB: np.ndarray,
    YA: np.ndarray,
    YB: np.ndarray,
    wX: np.ndarray,
    wY: np.ndarray,
    wA: np.ndarray,
    wB: np.ndarray,
    ddof: int,
) -> np.ndarray:
    """WEAT effect sizes for rows of set weights, from the cosine matrices (|X| x |A| and so on).

    s(x) under attribute weights wA, wB is (wA / |wA|) . cos(x, A) - (wB / |wB|) . cos(x, B); the
    effect is then the weighted two-sample effect of s over X and Y.
    """
    pA = wA / wA.sum(axis=1, keepdims=True)
    pB = wB / wB.sum(axis=1, keepdims=True)
    sX = pA @ XA.T - pB @ XB.T
    sY = pA @ YA.T - pB @ YB.T
    return weighted_effect(sX, sY, wX, wY, ddof)


def association_ci(
    XA: np.ndarray,
    XB: np.ndarray,
    YA: np.ndarray,
    YB: np.ndarray,
    *,
    ddof: int = 1,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    level: float = 0.95,
    method: str = "bca",
) -> Interval:
    """Interval for the WEAT effect size, resampling the stimuli of X, Y, A and B within each set.

    Takes the cosine matrices (rows: targets, columns: attributes), computed once by the caller.
    """
    _check(resamples, level, method)
    mats = [np.asarray(m, dtype=np.float64) for m in (XA, XB, YA, YB)]
    XA, XB, YA, YB = mats
    nX, nA = XA.shape
    nY, nB = YB.shape
    if XB.shape != (nX, nB) or YA.shape != (nY, nA) or min(nX, nY, nA, nB) < 1:
        raise ValueError(
            "cosine matrices must be |X| x |A|, |X| x |B|, |Y| x |A|, |Y| x |B| and non-empty"
        )
    sizes = (nX, nY, nA, nB)

    def ones(rows: int) -> list[np.ndarray]:
        return [np.ones((rows, n)) for n in sizes]

    estimate = float(association_effects(*mats, *ones(1), ddof)[0])
    rng = generator(seed)
    boot = np.empty(resamples)
    for start, rows in _chunks(resamples, (nA + nB) * (nX + nY) + 2 * (nX + nY)):
        weights = [resample_counts(rng, n, rows) for n in sizes]
        boot[start : start + rows] = association_effects(*mats, *weights, ddof)
    accel = 0.0
    if method == "bca":
        jack = []
        for g, n in enumerate(sizes):
            if n < 2:
                continue
            weights = ones(n)
            weights[g] = leave_one_out(n)
            jack.append(association_effects(*mats, *weights, ddof))
        accel = acceleration(jack)
    return interval(boot, estimate, level=level, method=method, accel=accel, seed=seed)


def cosine_blocks(
    X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The cosine matrices X.A, X.B, Y.A, Y.B from raw vectors (rows), in float64."""

    def unit(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.float64)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    Xu, Yu, Au, Bu = unit(X), unit(Y), unit(A), unit(B)
    return Xu @ Au.T, Xu @ Bu.T, Yu @ Au.T, Yu @ Bu.T
