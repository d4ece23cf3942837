"""Bootstrap intervals: the vectorised resampling equals a plain loop over resamples, BCa agrees with
scipy's independent implementation, intervals cover the true effect at about the nominal rate, and
WEAT results carry them without changing any other figure."""

from __future__ import annotations

import numpy as np
import pytest

from bias import registry
from bias.core import bootstrap as bs
from bias.core import stats


def _vectors(seed: int = 3, n: int = 9, dim: int = 20) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(n, dim)), rng.normal(size=(n + 1, dim))
    X = rng.normal(size=(n, dim)) + 0.4 * A.mean(axis=0)
    Y = rng.normal(size=(n - 1, dim)) + 0.4 * B.mean(axis=0)
    return X, Y, A, B


def _loop_effect(X, Y, A, B, ix, iy, ia, ib, ddof):
    """The WEAT effect size of one resample, computed from its definition on the drawn vectors."""
    Ar, Br = A[ia], B[ib]
    sx = stats.association_scores(X[ix], Ar, Br)
    sy = stats.association_scores(Y[iy], Ar, Br)
    return stats.effect_size(sx, sy, ddof=ddof)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_association_interval_equals_a_loop_over_resamples(method):
    X, Y, A, B = _vectors()
    sets = (X, Y, A, B)
    resamples, seed, ddof = 300, 11, 1
    # Replay the generator: one chunk draws the counts of X, Y, A, B in that order.
    rng = bs.generator(seed)
    counts = [bs.resample_counts(rng, len(m), resamples) for m in sets]
    boot = []
    for r in range(resamples):
        idx = [np.repeat(np.arange(len(m)), c[r].astype(int)) for m, c in zip(sets, counts)]
        boot.append(_loop_effect(*sets, *idx, ddof))
    full = [np.arange(len(m)) for m in sets]
    estimate = _loop_effect(*sets, *full, ddof)
    jack = []
    for g, m in enumerate(sets):
        values = []
        for i in range(len(m)):
            idx = list(full)
            idx[g] = np.delete(full[g], i)
            values.append(_loop_effect(*sets, *idx, ddof))
        jack.append(np.array(values))
    accel = bs.acceleration(jack) if method == "bca" else 0.0
    expected = bs.interval(np.array(boot), estimate, level=0.9, method=method, accel=accel, seed=seed)
    got = bs.association_ci(*bs.cosine_blocks(*sets), ddof=ddof, resamples=resamples, seed=seed, level=0.9, method=method)
    assert got.estimate == pytest.approx(estimate, abs=1e-12)
    assert (got.low, got.high) == pytest.approx((expected.low, expected.high), abs=1e-10)
    assert got.method == method and got.resamples == resamples and got.level == 0.9
    if method == "bca":
        assert accel != 0.0  # the jackknife really contributed


def _effect(a, b, axis=-1):
    both = np.concatenate([a, b], axis=axis)
    return (a.mean(axis=axis) - b.mean(axis=axis)) / both.std(axis=axis, ddof=1)


@pytest.mark.parametrize("method, scipy_method", [("bca", "BCa"), ("percentile", "percentile")])
def test_two_sample_interval_agrees_with_scipy(method, scipy_method):
    from scipy.stats import bootstrap

    rng = np.random.default_rng(5)
    a, b = rng.normal(0.8, 1.0, 15), rng.gamma(2.0, 0.5, 12)  # skewed: BCa differs from percentile
    ours = bs.two_sample_ci(a, b, resamples=30_000, seed=1, method=method)
    theirs = bootstrap((a, b), _effect, n_resamples=30_000, method=scipy_method, random_state=2, vectorized=True).confidence_interval
    assert ours.estimate == pytest.approx(_effect(a, b))
    assert ours.low == pytest.approx(theirs.low, abs=0.04) and ours.high == pytest.approx(theirs.high, abs=0.04)


def test_intervals_cover_the_true_effect_at_about_the_nominal_rate():
    # s(X) ~ N(delta, 1), s(Y) ~ N(0, 1), 20 each: std over the union -> sqrt(1 + delta^2 / 4).
    delta, n, reps = 0.8, 20, 200
    true_d = delta / np.sqrt(1 + delta**2 / 4)
    rng = np.random.default_rng(2024)
    covered = {"bca": 0, "percentile": 0}
    for rep in range(reps):
        a, b = rng.normal(delta, 1.0, n), rng.normal(0.0, 1.0, n)
        for method in covered:
            ci = bs.two_sample_ci(a, b, resamples=999, seed=rep, method=method)
            covered[method] += ci.low <= true_d <= ci.high
    for method, hits in covered.items():
        assert 0.88 <= hits / reps <= 0.99, (method, hits / reps)


def test_seeded_and_degenerate_inputs():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 1, 10), rng.normal(0, 1, 10)
    assert bs.two_sample_ci(a, b, seed=4) == bs.two_sample_ci(a, b, seed=4)
    assert bs.two_sample_ci(a, b, seed=4).low != bs.two_sample_ci(a, b, seed=5).low
    flat = bs.two_sample_ci(np.ones(5), np.ones(5), seed=1)
    assert np.isnan(flat.low) and np.isnan(flat.high) and flat.resamples == 0
    with pytest.raises(ValueError):
        bs.two_sample_ci(a, b, resamples=0)
    with pytest.raises(ValueError):
        bs.two_sample_ci(a, b, method="normal")
    with pytest.raises(ValueError):
        bs.association_ci(np.ones((2, 3)), np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))


def test_weat_results_carry_the_interval_and_keep_their_figures(planted_files, planted_test):
    embedder = registry.build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    with_ci = registry.build_metric("weat", permutations=2000).compute(embedder, planted_test, seed=1)
    without = registry.build_metric("weat", permutations=2000, bootstrap=0).compute(embedder, planted_test, seed=1)
    f = with_ci.figures
    assert f["ci_method"] == "bca" and f["ci_level"] == 0.95 and f["ci_resamples"] == 2000
    assert 0.0 < f["ci_low"] < with_ci.effect_size < f["ci_high"]
    assert "ci_low" not in without.figures
    assert with_ci.effect_size == without.effect_size and with_ci.p_value == without.p_value
    assert {k: v for k, v in f.items() if not k.startswith("ci_")} == without.figures
    percentile = registry.build_metric("weat", permutations=2000, ci_method="percentile", ci_level=0.9).compute(embedder, planted_test, seed=1)
    assert percentile.figures["ci_method"] == "percentile" and percentile.figures["ci_high"] - percentile.figures["ci_low"] < f["ci_high"] - f["ci_low"]
    assert registry.build_metric("weat", permutations=2000).compute(embedder, planted_test, seed=1).figures == f  # seeded
