"""The WEAT statistics checked against brute force written independently of `bias.core.statistics.association`.

The reference implementations below use plain Python (loops over `itertools.combinations`,
`math.fsum`, cosines from explicit dot products) so that a shared vectorisation mistake cannot make
both sides agree. Every published convention that has been got wrong by a peer toolkit (ties,
p = 0, p > 1, two-sided against the signed statistic, sampling with replacement) has a test here.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bias.core.statistics import association as stats


def sampled_null(s: np.ndarray, n_x: int, permutations: int, seed: int, total: float) -> np.ndarray:
    """Every sampled null statistic of the permutation test, in the order it draws them."""
    return np.concatenate(list(stats._sampled_null_chunks(s, n_x, permutations, seed, total)))


ALTERNATIVES = ("greater", "less", "two-sided")


# --------------------------------------------------------------------------------------------------
# Brute-force references
# --------------------------------------------------------------------------------------------------


def bf_cos(u, v) -> float:
    dot = math.fsum(float(a) * float(b) for a, b in zip(u, v))
    nu = math.sqrt(math.fsum(float(a) * float(a) for a in u))
    nv = math.sqrt(math.fsum(float(b) * float(b) for b in v))
    return dot / (nu * nv)


def bf_s(w, A, B) -> float:
    return math.fsum(bf_cos(w, a) for a in A) / len(A) - math.fsum(bf_cos(w, b) for b in B) / len(B)


def bf_effect_size(sx, sy, ddof: int) -> float:
    sx, sy = [float(v) for v in sx], [float(v) for v in sy]
    both = sx + sy
    mean = math.fsum(both) / len(both)
    var = math.fsum((v - mean) ** 2 for v in both) / (len(both) - ddof)
    return (math.fsum(sx) / len(sx) - math.fsum(sy) / len(sy)) / math.sqrt(var)


def bf_null(s, n_x):
    """S_i of every partition, each summed in one exactly rounded `fsum`.

    One exactly rounded sum per partition means two partitions with the same multiset of signed
    values give bit-identical S_i, so the observed partition ties with itself without any tolerance.
    """
    s = [float(v) for v in s]
    out = []
    for chosen in itertools.combinations(range(len(s)), n_x):
        inside = set(chosen)
        out.append(math.fsum(v if i in inside else -v for i, v in enumerate(s)))
    return out


def bf_count(null, observed, alternative, tol=0.0):
    center = math.fsum(null) / len(null)
    if alternative == "greater":
        return sum(1 for v in null if v >= observed - tol)
    if alternative == "less":
        return sum(1 for v in null if v <= observed + tol)
    return sum(1 for v in null if abs(v - center) >= abs(observed - center) - tol)


def bf_exact_p(sx, sy, alternative, tol=1e-9):
    """p = count / C(N, |X|), observed partition included, ties counted."""
    s = [float(v) for v in sx] + [float(v) for v in sy]
    observed = math.fsum([float(v) for v in sx] + [-float(v) for v in sy])
    null = bf_null(s, len(sx))
    assert len(null) == math.comb(len(s), len(sx))
    return bf_count(null, observed, alternative, tol) / len(null)


def exact(sx, sy, alternative="greater"):
    return stats.permutation_test(np.asarray(sx, float), np.asarray(sy, float), alternative=alternative)


def sampled(sx, sy, alternative="greater", m=2000, seed=0):
    return stats.permutation_test(
        np.asarray(sx, float), np.asarray(sy, float), alternative=alternative, exact_limit=0, permutations=m, seed=seed
    )


def shifted_sets(n_x, n_y, shift, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n_x), rng.normal(0.0, 1.0, n_y)


# --------------------------------------------------------------------------------------------------
# s(w, A, B), the statistic and the effect size
# --------------------------------------------------------------------------------------------------


def test_association_scores_match_a_loop_of_cosines():
    rng = np.random.default_rng(1)
    # Rows of very different norms: s(w) must depend on directions only.
    words = rng.normal(size=(6, 9)) * rng.uniform(0.01, 50.0, size=(6, 1))
    A = rng.normal(size=(4, 9)) * rng.uniform(0.01, 50.0, size=(4, 1))
    B = rng.normal(size=(5, 9)) * rng.uniform(0.01, 50.0, size=(5, 1))
    got = stats.association_scores(words, A, B)
    assert got.shape == (6,)
    assert got.dtype == np.float64
    for i, w in enumerate(words):
        assert got[i] == pytest.approx(bf_s(w, A, B), abs=1e-12)


def test_association_scores_are_scale_invariant_and_antisymmetric():
    rng = np.random.default_rng(2)
    words, A, B = rng.normal(size=(5, 7)), rng.normal(size=(3, 7)), rng.normal(size=(4, 7))
    base = stats.association_scores(words, A, B)
    np.testing.assert_allclose(stats.association_scores(3.0 * words, 0.5 * A, 7.0 * B), base, atol=1e-13)
    np.testing.assert_allclose(stats.association_scores(words, B, A), -base, atol=1e-13)


def test_association_scores_accept_float32_but_compute_in_float64():
    rng = np.random.default_rng(3)
    words, A, B = (rng.normal(size=(n, 11)).astype(np.float32) for n in (4, 3, 3))
    got = stats.association_scores(words, A, B)
    assert got.dtype == np.float64
    for i, w in enumerate(words):
        assert got[i] == pytest.approx(bf_s(w, A, B), abs=1e-12)


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("sizes", [(4, 4), (8, 8), (5, 9)])
def test_effect_size_matches_brute_force(ddof, sizes):
    sx, sy = shifted_sets(*sizes, shift=0.7, seed=sum(sizes) + ddof)
    assert stats.effect_size(sx, sy, ddof=ddof) == pytest.approx(bf_effect_size(sx, sy, ddof), rel=1e-12)


def test_effect_size_default_is_sample_std():
    sx, sy = shifted_sets(6, 6, 0.5, seed=5)
    assert stats.effect_size(sx, sy) == stats.effect_size(sx, sy, ddof=1)


@pytest.mark.parametrize("sizes", [(2, 2), (4, 4), (8, 8), (3, 7), (25, 25)])
def test_effect_size_ratio_between_conventions(sizes):
    sx, sy = shifted_sets(*sizes, shift=-0.4, seed=6)
    n = sum(sizes)
    ratio = stats.effect_size(sx, sy, ddof=0) / stats.effect_size(sx, sy, ddof=1)
    assert ratio == pytest.approx(math.sqrt(n / (n - 1)), rel=1e-12)


def test_effect_size_sign_follows_the_direction():
    sx, sy = shifted_sets(6, 6, 2.0, seed=7)
    assert stats.effect_size(sx, sy) > 0
    assert stats.effect_size(sy, sx) == pytest.approx(-stats.effect_size(sx, sy), rel=1e-14)


def test_effect_size_is_nan_without_spread():
    assert math.isnan(stats.effect_size(np.full(4, 0.25), np.full(4, 0.25)))


# --------------------------------------------------------------------------------------------------
# Exact permutation test
# --------------------------------------------------------------------------------------------------


def test_partition_table_lists_every_subset_once():
    table = stats.partition_table(7, 3)
    assert table.shape == (math.comb(7, 3), 3)
    assert {tuple(sorted(row)) for row in table.tolist()} == set(itertools.combinations(range(7), 3))
    assert stats.partition_table(7, 3) is table  # cached: built once per size
    with pytest.raises(ValueError):
        table[0, 0] = 5  # shared between calls, so it must not be writable


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize(
    ("n_x", "n_y", "shift", "seed"),
    [(4, 4, 0.8, 10), (5, 5, 0.3, 11), (6, 6, 0.6, 12), (4, 6, 0.5, 13), (6, 4, -0.5, 14), (6, 6, -0.7, 15)],
)
def test_exact_p_equals_enumeration(alternative, n_x, n_y, shift, seed):
    sx, sy = shifted_sets(n_x, n_y, shift, seed)
    result = exact(sx, sy, alternative)
    assert result.method == "exact"
    assert result.permutations == math.comb(n_x + n_y, n_x)
    assert result.seed is None
    assert result.alternative == alternative
    assert result.statistic == pytest.approx(math.fsum(list(sx) + [-v for v in sy]), abs=1e-13)
    assert abs(result.p_value - bf_exact_p(sx, sy, alternative)) <= 1e-12


def test_exact_null_moments_match_enumeration():
    sx, sy = shifted_sets(5, 6, 0.4, seed=16)
    null = bf_null(list(sx) + list(sy), 5)
    mean = math.fsum(null) / len(null)
    # The fitted normal uses the sample std of the null statistics (ddof=1).
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in null) / (len(null) - 1))
    result = exact(sx, sy)
    assert result.null_mean == pytest.approx(mean, abs=1e-12)
    assert result.null_std == pytest.approx(std, rel=1e-12)
    # E[S_i] = (2|X|/N - 1) * sum(s): the centre of the two-sided test for unequal sizes.
    total = math.fsum(list(sx) + list(sy))
    assert mean == pytest.approx((2 * 5 / 11 - 1) * total, abs=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_p_counts_ties(alternative):
    # Integer scores: many partitions share the observed statistic exactly.
    sx, sy = [1, 1, 0, 2, 1], [0, 1, 1, 0, 0]
    null = bf_null(sx + sy, len(sx))
    observed = math.fsum(sx) - math.fsum(sy)
    ties = sum(1 for v in null if v == observed)
    assert ties > 20  # the case really is full of ties
    expected = bf_count(null, observed, alternative) / len(null)
    assert exact(sx, sy, alternative).p_value == pytest.approx(expected, abs=1e-12)
    if alternative == "greater":
        strict = sum(1 for v in null if v > observed) / len(null)
        assert exact(sx, sy, alternative).p_value >= strict + ties / len(null) - 1e-12


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize(("sx", "sy"), [([1, 1, 0, 2, 1], [0, 1, 1, 0, 0]), ([2, 0, 1, 1], [0, 1, 1, 0, 2, 1])])
def test_strict_ties_count_only_the_partitions_more_extreme(alternative, sx, sy):
    """ties = "strict" (the paper's Pr[S_i > S]): a partition tying with the observed statistic,
    the observed one included, is not counted. Integer scores, so the brute force is exact."""
    null = bf_null(sx + sy, len(sx))
    observed = math.fsum(sx) - math.fsum(sy)
    center = math.fsum(null) / len(null)  # integers and halves: exact
    more = {
        "greater": sum(1 for v in null if v > observed),
        "less": sum(1 for v in null if v < observed),
        "two-sided": sum(1 for v in null if abs(v - center) > abs(observed - center)),
    }[alternative]
    assert sum(1 for v in null if v == observed) > 5  # ties that the two conventions count differently
    got = stats.permutation_test(np.asarray(sx, float), np.asarray(sy, float), alternative=alternative, ties="strict")
    assert got.method == "exact" and got.p_value == pytest.approx(more / len(null), abs=1e-12)
    assert got.p_value < exact(sx, sy, alternative).p_value


def _exact_tail_count(null, observed, alternative: str) -> int:
    """`bf_count` in exact arithmetic: with Fraction statistics the centre stays a Fraction, where
    bf_count's float centre (math.fsum) would blur the exact ties these tests plant."""
    center = sum(null) / len(null)
    if alternative == "greater":
        return sum(1 for v in null if v >= observed)
    if alternative == "less":
        return sum(1 for v in null if v <= observed)
    return sum(1 for v in null if abs(v - center) >= abs(observed - center))


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_ties_survive_floating_point_rounding(alternative):
    """Decimal scores whose real partition sums tie but whose float sums differ in the last bits.

    The reference counts in exact rational arithmetic; a comparison without tolerance would drop
    some of these ties depending on summation order.
    """
    text_x, text_y = ["0.1", "0.2", "0.7", "0.3"], ["0.4", "0.6", "0.3", "0.1"]
    fx, fy = [Fraction(t) for t in text_x], [Fraction(t) for t in text_y]
    s = fx + fy
    observed = sum(fx) - sum(fy)
    total = sum(s)
    null = []
    for chosen in itertools.combinations(range(8), 4):
        inside = sum(s[i] for i in chosen)
        null.append(2 * inside - total)
    k = _exact_tail_count(null, observed, alternative)
    got = exact([float(t) for t in text_x], [float(t) for t in text_y], alternative).p_value
    assert got == pytest.approx(k / len(null), abs=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_all_scores_equal_gives_p_one(alternative):
    assert exact([0.3] * 4, [0.3] * 4, alternative).p_value == 1.0
    assert sampled([0.3] * 10, [0.3] * 10, alternative, m=500).p_value == 1.0


@pytest.mark.parametrize(("n_x", "n_y"), [(4, 4), (5, 5), (6, 6), (4, 6)])
def test_exact_p_bounds_at_the_extreme(n_x, n_y):
    # X holds the largest scores: the observed partition is the unique most extreme one.
    sx, sy = np.arange(n_x) + 100.0, np.arange(n_y, dtype=float)
    floor = 1 / math.comb(n_x + n_y, n_x)
    assert exact(sx, sy, "greater").p_value == pytest.approx(floor, abs=1e-15)
    assert exact(sx, sy, "less").p_value == 1.0
    if n_x == n_y:
        # The mirror partition is as far from 0 on the other side.
        assert exact(sx, sy, "two-sided").p_value == pytest.approx(2 * floor, abs=1e-15)


# --------------------------------------------------------------------------------------------------
# Two-sided
# --------------------------------------------------------------------------------------------------


def test_two_sided_negative_effect_is_significant():
    # Y clearly above X: a strong negative effect.
    sx, sy = shifted_sets(7, 7, -2.5, seed=20)
    result = exact(sx, sy, "two-sided")
    assert result.statistic < 0
    assert result.p_value < 0.01
    # The peer bug compares |S_i| with the signed S: every partition passes and p is 1.
    null = bf_null(list(sx) + list(sy), 7)
    assert sum(1 for v in null if abs(v) >= result.statistic) / len(null) == 1.0


@pytest.mark.parametrize(("shift", "seed"), [(-1.0, 21), (0.0, 22), (1.2, 23)])
def test_two_sided_equal_sizes_is_absolute_tail(shift, seed):
    sx, sy = shifted_sets(6, 6, shift, seed)
    null = bf_null(list(sx) + list(sy), 6)
    observed = math.fsum(list(sx) + [-v for v in sy])
    expected = sum(1 for v in null if abs(v) >= abs(observed) - 1e-9) / len(null)
    two = exact(sx, sy, "two-sided").p_value
    assert two == pytest.approx(expected, abs=1e-12)
    # The null is symmetric for equal sizes, so both tails weigh the same.
    one = exact(sx, sy, "less" if observed < 0 else "greater").p_value
    assert two == pytest.approx(min(1.0, 2 * one), abs=1e-12)


def test_two_sided_sampled_negative_effect_is_small():
    sx, sy = shifted_sets(20, 20, -1.5, seed=24)
    result = sampled(sx, sy, "two-sided", m=5000, seed=3)
    assert result.p_value < 0.01


# --------------------------------------------------------------------------------------------------
# Sampled permutation test
# --------------------------------------------------------------------------------------------------


def test_sampled_is_reproducible_with_a_seed():
    sx, sy = shifted_sets(12, 12, 0.3, seed=30)
    a = sampled(sx, sy, m=3000, seed=99)
    b = sampled(sx, sy, m=3000, seed=99)
    assert a == b
    assert a.method == "sampled" and a.permutations == 3000 and a.seed == 99


def test_sampled_differs_with_another_seed():
    sx, sy = shifted_sets(12, 12, 0.3, seed=30)
    a = sampled(sx, sy, m=3000, seed=99)
    c = sampled(sx, sy, m=3000, seed=100)
    assert (a.p_value, a.null_mean, a.null_std) != (c.p_value, c.null_mean, c.null_std)


def test_sampled_without_seed_records_one_that_reproduces():
    sx, sy = shifted_sets(12, 12, 0.3, seed=31)
    first = stats.permutation_test(sx, sy, exact_limit=0, permutations=2000, seed=None)
    assert isinstance(first.seed, int)
    again = stats.permutation_test(sx, sy, exact_limit=0, permutations=2000, seed=first.seed)
    assert again == first


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize(("n_x", "n_y", "shift", "seed"), [(7, 7, 0.6, 40), (6, 8, -0.5, 41), (8, 8, 0.2, 42)])
def test_sampled_p_is_close_to_exact(alternative, n_x, n_y, shift, seed):
    sx, sy = shifted_sets(n_x, n_y, shift, seed)
    truth = bf_exact_p(sx, sy, alternative)
    m = 20_000
    got = sampled(sx, sy, alternative, m=m, seed=seed).p_value
    se = math.sqrt(max(truth * (1 - truth), 1 / m) / m)
    assert abs(got - truth) <= 4.5 * se + 1 / (m + 1)


@pytest.mark.parametrize(("n_x", "n_y"), [(10, 10), (4, 4)])
@pytest.mark.parametrize("m", [1, 50, 999])
def test_sampled_p_is_never_zero_nor_above_one(n_x, n_y, m):
    sx, sy = np.arange(n_x) + 100.0, np.arange(n_y, dtype=float)
    greater = sampled(sx, sy, "greater", m=m, seed=5)
    # No random partition beats the observed one: p is the floor 1/(m+1), not 0.
    assert greater.p_value >= 1 / (m + 1)
    assert 0 < greater.p_value <= 1
    less = sampled(sx, sy, "less", m=m, seed=5)
    assert less.p_value == 1.0  # every partition is below: (1 + m)/(1 + m), never above 1


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sampled_p_estimator(alternative):
    sx, sy = shifted_sets(9, 9, 0.4, seed=43)
    m, seed = 1000, 8
    result = sampled(sx, sy, alternative, m=m, seed=seed)
    # k counted here from the same seeded null statistics, with the test's definitions written out
    s = np.concatenate([sx, sy])
    total = float(s.sum())
    null = sampled_null(s, len(sx), m, seed, total)
    observed = float(np.sum(sx) - np.sum(sy))
    centre = (2 * len(sx) / len(s) - 1) * total
    tol = 1e-12 * max(1.0, float(np.abs(s).sum()))
    if alternative == "greater":
        k = sum(1 for v in null if v >= observed - tol)
    elif alternative == "less":
        k = sum(1 for v in null if v <= observed + tol)
    else:
        k = sum(1 for v in null if abs(v - centre) >= abs(observed - centre) - tol)
    assert 0 < k < m, "the example must sit inside the null distribution"
    assert result.p_value == pytest.approx((k + 1) / (m + 1), abs=1e-15)


def _subset_sums_from_sampler(s, n_x, m, seed):
    """Subset sums of the first set, recovered from the private sampler.

    `permutation_test` only returns a p-value and two moments; checking that the sampler draws
    uniformly among partitions needs the raw null statistics, which only `sampled_null` below exposes.
    """
    s = np.asarray(s, dtype=np.float64)
    total = float(s.sum())
    null = sampled_null(s, n_x, m, seed, total)
    assert null.shape == (m,)
    return np.rint((null + total) / 2.0).astype(np.int64)


def _with_replacement_subset_sums(s, n_x, m, seed):
    """The peer mistake: draw the words of X_i with replacement."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(s), size=(m, n_x))
    return np.asarray(s, dtype=np.int64)[idx].sum(axis=1)


def _uniformity(sums, s, n_x):
    """Share of draws that are not a partition, and the chi-square p against uniform partitions."""
    valid = {sum(c): c for c in itertools.combinations(s, n_x)}
    assert len(valid) == math.comb(len(s), n_x)  # powers of two: each subset has its own sum
    counts = {v: 0 for v in valid}
    invalid = 0
    for v in sums.tolist():
        if v in counts:
            counts[v] += 1
        else:
            invalid += 1
    observed = np.array(list(counts.values()), dtype=float)
    if invalid:
        return invalid / len(sums), 0.0, observed
    expected = np.full(len(observed), len(sums) / len(observed))
    return 0.0, float(scipy.stats.chisquare(observed, expected).pvalue), observed


@pytest.mark.parametrize(("n_total", "n_x"), [(6, 3), (7, 3), (6, 2), (8, 4)])
def test_sampler_draws_uniform_partitions(n_total, n_x):
    s = [2**i for i in range(n_total)]
    count = math.comb(n_total, n_x)
    m = 600 * count
    sums = _subset_sums_from_sampler(s, n_x, m, seed=12345)
    invalid, p_uniform, observed = _uniformity(sums, s, n_x)
    assert invalid == 0  # never a repeated word
    assert p_uniform > 1e-4
    # And no single partition is far off its share (a loose, assumption-free guard).
    assert np.max(np.abs(observed / m - 1 / count)) < 6 * math.sqrt((1 / count) / m)


@pytest.mark.parametrize(("n_total", "n_x"), [(6, 3), (7, 2)])
def test_rows_with_tied_keys_are_dropped_and_subsets_stay_uniform(monkeypatch, n_total, n_x):
    """Keys of two bits make most rows tie at their threshold: every row kept must still hold exactly
    n_x members, the count asked for must be met, and the subsets must stay uniform (a kept tie would
    put more than n_x words in X; a bias in which rows are dropped would show in the chi-square)."""

    def coarse(rng, out):
        out[...] = rng.integers(0, 4, size=out.shape) / 4.0

    monkeypatch.setattr(stats, "_draw_keys", coarse)
    m = 300 * math.comb(n_total, n_x)
    masks = np.concatenate([w.copy() for w in stats.subset_masks(n_total, n_x, m, seed=3)])
    assert masks.shape == (m, n_total)
    assert set(masks.sum(axis=1).tolist()) == {float(n_x)}
    s = [2**i for i in range(n_total)]
    sums = np.rint(masks @ np.array(s, dtype=float)).astype(np.int64)
    invalid, p_uniform, _ = _uniformity(sums, s, n_x)
    assert invalid == 0
    assert p_uniform > 1e-4


def test_uniformity_check_rejects_sampling_with_replacement():
    """The distribution check has the power to catch the peer bug it is meant for."""
    s = [2**i for i in range(6)]
    sums = _with_replacement_subset_sums(s, 3, 600 * 20, seed=12345)
    invalid, p_uniform, _ = _uniformity(sums, s, 3)
    assert invalid > 0.3
    assert p_uniform < 1e-4


def test_sampler_chunks_cover_every_row():
    # More permutations than one chunk holds: no row may be left unfilled or repeated across chunks.
    s = np.arange(40, dtype=np.float64)
    m = stats._CHUNK_ELEMENTS // len(s) * 2 + 17
    null = sampled_null(s, 20, m, 7, float(s.sum()))
    assert np.isfinite(null).all()
    lo, hi = 2 * sum(range(20)) - s.sum(), 2 * sum(range(20, 40)) - s.sum()
    assert null.min() >= lo and null.max() <= hi
    assert abs(null.mean()) < 5 * null.std() / math.sqrt(m)


def _first_x_of_tie_free_rows(seed, m, n_total, n_x):
    """The sampler's definition written out: float32 keys of one seeded stream, a row of n_total keys
    per permutation, each row's first n_x of a full sort; a row whose n_x-th smallest key equals its
    next one is skipped, and rows are drawn until m are kept."""
    rng = np.random.default_rng(seed)
    kept = []
    while len(kept) < m:
        for row in rng.random((m - len(kept), n_total), dtype=np.float32):  # the stream continues
            order = np.argsort(row, kind="stable")
            if row[order[n_x - 1]] != row[order[n_x]]:
                kept.append(order[:n_x])
    return np.array(kept)


@pytest.mark.parametrize(("n_x", "n_y", "m"), [(25, 25, 20_000), (9, 14, 7_001), (100, 100, 3_000), (300, 301, 400)])
def test_sampled_null_is_the_first_x_of_a_full_sort_of_the_seeded_keys(n_x, n_y, m):
    """The partition picks exactly the subsets a full argsort of the same seeded uniform keys picks,
    so a seed gives the same permutations (and p-values) as the sort-based definition."""
    rng = np.random.default_rng(n_x * 1000 + n_y)
    s = rng.normal(size=n_x + n_y)
    first_x = _first_x_of_tie_free_rows(99, m, n_x + n_y, n_x)
    brute = np.array([2.0 * math.fsum(s[row]) - math.fsum(s) for row in first_x])
    null = sampled_null(s, n_x, m, 99, float(s.sum()))
    assert np.allclose(null, brute, rtol=0, atol=1e-12)
    observed = float(s[:n_x].sum() - s[n_x:].sum())
    result = stats.permutation_test(s[:n_x], s[n_x:], permutations=m, exact_limit=0, seed=99)
    assert result.p_value == (1 + np.count_nonzero(brute >= observed - 1e-12 * np.abs(s).sum())) / (1 + m)


def test_sampled_null_moments_agree_with_exact():
    sx, sy = shifted_sets(7, 7, 0.3, seed=44)
    truth = exact(sx, sy)
    approx = sampled(sx, sy, m=50_000, seed=1)
    assert approx.null_mean == pytest.approx(truth.null_mean, abs=5 * truth.null_std / math.sqrt(50_000))
    assert approx.null_std == pytest.approx(truth.null_std, rel=0.02)


# --------------------------------------------------------------------------------------------------
# Parametric p
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("method", ["exact", "sampled"])
def test_parametric_p_matches_scipy_normal(alternative, method):
    sx, sy = shifted_sets(7, 7, 0.5, seed=50)
    if method == "exact":
        result = exact(sx, sy, alternative)
    else:
        result = sampled(sx, sy, alternative, m=4000, seed=2)
    dist = scipy.stats.norm(loc=result.null_mean, scale=result.null_std)
    upper, lower = dist.sf(result.statistic), dist.cdf(result.statistic)
    expected = {"greater": upper, "less": lower, "two-sided": min(1.0, 2 * min(upper, lower))}[alternative]
    assert result.parametric_p == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_normal_p_without_spread_is_nan():
    assert math.isnan(stats.normal_p(1.0, 0.0, 0.0, "greater"))


def test_normal_p_keeps_far_tail_digits():
    # 1 - cdf would lose everything this far out; the survival function keeps the digits.
    assert stats.normal_p(10.0, 0.0, 1.0, "greater") == pytest.approx(scipy.stats.norm.sf(10.0), rel=1e-9)
    assert stats.normal_p(-10.0, 0.0, 1.0, "less") == pytest.approx(scipy.stats.norm.cdf(-10.0), rel=1e-9)


# --------------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------------

# Scores on a grid of 1/8: exactly representable sums, so ties are exact and frequent.
grid_scores = st.lists(st.integers(-12, 12).map(lambda k: k / 8), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sx=grid_scores, sy=grid_scores, alternative=st.sampled_from(ALTERNATIVES))
def test_property_exact_p_equals_brute_force_on_grid(sx, sy, alternative):
    got = exact(sx, sy, alternative).p_value
    assert abs(got - bf_exact_p(sx, sy, alternative)) <= 1e-12
    assert 1 / math.comb(len(sx) + len(sy), len(sx)) <= got + 1e-15
    assert got <= 1.0


@settings(max_examples=40, deadline=None)
@given(
    n_x=st.integers(2, 6),
    n_y=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(-2, 2),
    alternative=st.sampled_from(ALTERNATIVES),
)
def test_property_exact_p_equals_brute_force_on_continuous_scores(n_x, n_y, seed, shift, alternative):
    sx, sy = shifted_sets(n_x, n_y, shift, seed)
    assert abs(exact(sx, sy, alternative).p_value - bf_exact_p(sx, sy, alternative)) <= 1e-12


@settings(max_examples=60, deadline=None)
@given(sx=grid_scores, sy=grid_scores)
def test_property_swapping_targets_swaps_tails(sx, sy):
    assert exact(sx, sy, "greater").p_value == pytest.approx(exact(sy, sx, "less").p_value, abs=1e-12)
    assert exact(sx, sy, "less").p_value == pytest.approx(exact(sy, sx, "greater").p_value, abs=1e-12)
    assert exact(sx, sy, "two-sided").p_value == pytest.approx(exact(sy, sx, "two-sided").p_value, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(sx=grid_scores, sy=grid_scores, seed=st.integers(0, 2**32 - 1), m=st.integers(1, 300))
def test_property_sampled_p_bounds(sx, sy, seed, m):
    for alternative in ALTERNATIVES:
        p = sampled(sx, sy, alternative, m=m, seed=seed).p_value
        assert 1 / (m + 1) <= p <= 1.0


# --------------------------------------------------------------------------------------------------
# Argument validation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("permutations", [0, -1, -100_000])
@pytest.mark.parametrize("exact_limit", [0, 100_000])
def test_non_positive_permutations_raise(permutations, exact_limit):
    with pytest.raises(ValueError, match="permutations"):
        stats.permutation_test(np.ones(4), np.zeros(4), permutations=permutations, exact_limit=exact_limit, seed=1)


@pytest.mark.parametrize("alternative", ["bigger", "two_sided", "", "Greater"])
def test_unknown_alternative_raises(alternative):
    with pytest.raises(ValueError, match="alternative"):
        stats.permutation_test(np.ones(4), np.zeros(4), alternative=alternative)


@pytest.mark.parametrize(("n_x", "n_y", "m"), [(10, 10, 20_000), (9, 14, 7_001)])
def test_sampled_null_moments_equal_those_of_the_drawn_permutations(n_x, n_y, m):
    """The running mean and sample std folded over chunks equal the plain moments of every drawn
    statistic: several chunks (a chunk holds 131072 // N permutations), so the between-chunk term and
    the n - 1 divisor both show at this tolerance."""
    rng = np.random.default_rng(7 + n_x)
    s = rng.normal(size=n_x + n_y) + np.linspace(0.0, 3.0, n_x + n_y)
    first_x = _first_x_of_tie_free_rows(5, m, n_x + n_y, n_x)
    brute = [2.0 * math.fsum(s[row]) - math.fsum(s) for row in first_x]
    mean = math.fsum(brute) / m
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in brute) / (m - 1))
    assert m > 131_072 // (n_x + n_y)  # more than one chunk
    result = stats.permutation_test(s[:n_x], s[n_x:], permutations=m, exact_limit=0, seed=5)
    assert result.null_mean == pytest.approx(mean, rel=1e-9, abs=1e-9)
    assert result.null_std == pytest.approx(sd, rel=1e-9)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_ties_survive_rounding_at_a_large_scale(alternative):
    """Large decimal scores: the float sums of tied partitions differ by ~1e-11, far above a fixed
    1e-12, so the tolerance has to grow with the size of the scores (the count is made in exact
    rational arithmetic)."""
    text_x, text_y = ["10000.1", "20000.2", "70000.7", "30000.3"], ["40000.4", "60000.6", "30000.3", "10000.1"]
    fx, fy = [Fraction(t) for t in text_x], [Fraction(t) for t in text_y]
    s = fx + fy
    observed, total = sum(fx) - sum(fy), sum(s)
    null = [2 * sum(s[i] for i in chosen) - total for chosen in itertools.combinations(range(8), 4)]
    k = _exact_tail_count(null, observed, alternative)
    got = exact([float(t) for t in text_x], [float(t) for t in text_y], alternative).p_value
    assert got == pytest.approx(k / len(null), abs=1e-12)


def test_exact_when_the_partitions_number_exactly_the_limit():
    sx, sy = shifted_sets(5, 5, 0.4, seed=3)
    at = stats.permutation_test(sx, sy, exact_limit=math.comb(10, 5))
    assert at.method == "exact" and at.permutations == 252
    assert stats.permutation_test(sx, sy, exact_limit=251, permutations=100, seed=1).method == "sampled"


def test_effect_size_with_a_spread_of_exactly_one_and_no_warning_without_spread():
    import warnings

    # Population std of [1, 1, -1, -1] is exactly 1: d = (1 - (-1)) / 1.
    assert stats.effect_size(np.array([1.0, 1.0]), np.array([-1.0, -1.0]), ddof=0) == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero is attempted
        assert math.isnan(stats.effect_size(np.array([0.3, 0.3]), np.array([0.3, 0.3])))


def test_null_spread_of_one_and_two_partitions():
    """The null's sample std over two partitions is |S_1 - S_2| / sqrt(2); over one it is 0 (no
    spread to speak of, and the parametric p is then undefined)."""
    a, b = 0.7, 0.2
    two = stats.permutation_test(np.array([a]), np.array([b]))  # partitions {a} and {b}: S = a - b, b - a
    assert two.method == "exact" and two.permutations == 2
    assert two.null_std == pytest.approx(abs(2 * (a - b)) / math.sqrt(2), rel=1e-12)
    one = stats.permutation_test(np.array([a, b]), np.array([]))
    assert one.permutations == 1 and one.null_std == 0.0 and math.isnan(one.parametric_p)
    # Sampled: one permutation has no spread; two have that of their two statistics.
    s = np.array([0.9, 0.1, 0.4])
    for m in (1, 2):
        drawn = [2.0 * math.fsum(s[row]) - math.fsum(s) for row in _first_x_of_tie_free_rows(1, m, 3, 1)]
        got = stats.permutation_test(s[:1], s[1:], exact_limit=0, permutations=m, seed=1)
        expected = 0.0 if m == 1 else abs(drawn[0] - drawn[1]) / math.sqrt(2)
        assert m == 1 or expected > 0.1  # the two draws differ for this seed
        assert got.null_std == pytest.approx(expected, abs=1e-12)


def test_a_missing_seed_is_drawn_from_the_whole_32_bit_range():
    sx, sy = shifted_sets(12, 12, 0.3, seed=31)
    seeds = [stats.permutation_test(sx, sy, exact_limit=0, permutations=1).seed for _ in range(24)]
    assert len(set(seeds)) == 24
    assert all(0 <= s < 2**32 for s in seeds) and max(seeds) >= 2**31


def test_no_spread_names_equal_and_non_finite_scores_and_passes_real_spread():
    same = stats.no_spread(np.array([0.3, 0.3]), np.array([0.3]), "word", "s(w)")
    assert same is not None and "every word has the same s(w) (+0.3)" in same
    assert stats.no_spread(np.array([]), np.array([]), "word", "s(w)") is not None
    bad = stats.no_spread(np.array([0.3, np.nan]), np.array([0.1]), "word", "s(w)")
    assert bad == "some s(w) values are not finite"
    assert stats.no_spread(np.array([0.3, 0.2]), np.array([0.1]), "word", "s(w)") is None
    # The tolerance is relative to the size of the scores, with a floor of 1e-12 for small ones.
    assert stats.no_spread(np.array([1e6, 1e6 + 1e-7]), np.array([1e6]), "word", "s(w)") is not None
    assert stats.no_spread(np.array([1e6, 1e6 + 1e-4]), np.array([1e6]), "word", "s(w)") is None
    assert stats.no_spread(np.array([1e-3, 1e-3 + 1e-14]), np.array([1e-3]), "word", "s(w)") is not None
    assert stats.no_spread(np.array([1e-3, 1e-3 + 1e-11]), np.array([1e-3]), "word", "s(w)") is None
