"""Association statistics of WEAT-style tests, vectorised in float64.

The per-word score s(w, A, B) is computed once for every target word; every partition of the
permutation test is then a sum over that fixed vector, so thousands of partitions are one gather and
one sum (exact enumeration reuses a cached table of partitions).

Conventions (see docs/methods.md):
- effect size d = (mean s(X) - mean s(Y)) / std s(X u Y), with `ddof` recorded (default 1);
- test statistic S = sum s(X) - sum s(Y);
- exact p = #{S_i >= S} / C(N, |X|) over all partitions, the observed one included (so p >= 1/C(N,
  |X|)); `ties = "strict"` counts #{S_i > S} instead, the paper's Pr[S_i > S], which can be 0;
- sampled p = (1 + #{S_i >= S}) / (1 + m) over m true random permutations drawn from a seeded
  generator;
- ties count by default (compared with a tolerance far below any real difference);
- two-sided compares distances from the null mean, which is 0 for equal set sizes.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator

import attrs
import numpy as np

ALTERNATIVES = ("greater", "less", "two-sided")
SIDES = {"greater": "one-sided (greater)", "less": "one-sided (less)", "two-sided": "two-sided"}
# S_i >= S (the observed partition counts), or S_i > S (Caliskan et al.'s definition)
TIES = (
    "counted",
    "strict",
)
_CHUNK_ELEMENTS = (
    131_072  # keys per chunk of sampled permutations: 1 MiB, so a chunk stays in the CPU cache
)


def fresh_seed() -> int:
    """A seed for a run given none: drawn from the system's entropy over the whole 32-bit range and
    recorded with the result, so that the run can be repeated exactly."""
    return int(np.random.SeedSequence().entropy % (2**32))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / norms


def association_scores(words: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) = mean cos(w, a) - mean cos(w, b) for every row w of `words` at once."""
    W = unit_rows(words)
    return W @ unit_rows(A).mean(axis=0) - W @ unit_rows(B).mean(axis=0)


def effect_size(sx: np.ndarray, sy: np.ndarray, ddof: int = 1) -> float:
    both = np.concatenate([sx, sy])
    std = both.std(ddof=ddof)
    if not np.isfinite(std) or std == 0.0:
        return float("nan")
    return float((sx.mean() - sy.mean()) / std)


def n_partitions(n_total: int, n_x: int) -> int:
    return math.comb(n_total, n_x)


@functools.lru_cache(maxsize=8)
def partition_table(n_total: int, n_x: int) -> np.ndarray:
    """Every choice of |X| indices out of N, one row each (built once per size, then reused)."""
    count = math.comb(n_total, n_x)
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n_total), n_x)),
        dtype=np.int32 if n_total < 2**31 else np.int64,
        count=count * n_x,
    )
    table = flat.reshape(count, n_x)
    table.setflags(write=False)
    return table


@attrs.frozen
class PermutationTest:
    """The outcome of a permutation test and how it was computed."""

    p_value: float
    statistic: float
    method: str  # "exact" or "sampled"
    permutations: int  # partitions evaluated (all of them when exact)
    alternative: str
    seed: int | None
    null_mean: float
    null_std: float
    parametric_p: float

    @property
    def p_floor(self) -> float | None:
        """The smallest p a sampled test can give, (0+1)/(m+1): a p there is a bound. None when
        exact."""
        return 1.0 / (self.permutations + 1) if self.method == "sampled" else None

    def describe(self, *details: str) -> str:
        """The test in words, as the note under a report's table says it; `details` (such as the
        effect size's "ddof=1") go between the test and its sidedness."""
        if self.method == "exact":
            what = f"exact test over {self.permutations:,} partitions"
        else:
            what = (
                f"sampled permutation test ({self.permutations:,} permutations, seed {self.seed})"
            )
        return ", ".join([what, *details, SIDES.get(self.alternative, self.alternative)])

    def convention(self, *details: str) -> dict[str, object]:
        """The keys a result records for this test: method, permutations, alternative, seed, the p
        estimator, and the two that reports read: `p_value` (`describe(*details)`) and, for a
        sampled test, `p_floor`."""
        return {
            "method": self.method,
            "permutations": self.permutations,
            "alternative": self.alternative,
            "seed": self.seed,
            "p_estimator": "k/C(N,|X|)" if self.method == "exact" else "(k+1)/(m+1)",
            "p_value": self.describe(*details),
            **({"p_floor": self.p_floor} if self.p_floor is not None else {}),
        }


def permutation_test(
    sx: np.ndarray,
    sy: np.ndarray,
    *,
    alternative: str = "greater",
    permutations: int = 100_000,
    exact_limit: int = 100_000,
    seed: int | None = None,
    ties: str = "counted",
) -> PermutationTest:
    """Permutation test of S = sum s(X) - sum s(Y) over partitions of X u Y into the observed sizes.

    Exact when C(N, |X|) <= exact_limit, otherwise `permutations` sampled partitions. The parametric
    p (a normal fitted to the null distribution) is returned beside the permutation p. `ties`:
    "counted" counts partitions at least as extreme as the observed one (which is among them when
    exact); "strict" only those more extreme (the paper's ">"; sampled p stays (k+1)/(m+1)).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, not {alternative!r}")
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, not {ties!r}")
    strict = ties == "strict"
    if permutations <= 0:
        raise ValueError("permutations must be positive")
    s = np.concatenate([np.asarray(sx, np.float64), np.asarray(sy, np.float64)])
    n_x, n_total = len(sx), len(s)
    total = float(s.sum())
    observed = float(np.sum(sx) - np.sum(sy))
    # Under the null E[S_i] = (2|X|/N - 1) * total: zero for equal sizes.
    center = (2.0 * n_x / n_total - 1.0) * total
    tol = 1e-12 * max(1.0, float(np.abs(s).sum()))

    count = n_partitions(n_total, n_x)
    if count <= exact_limit:
        null = 2.0 * s[partition_table(n_total, n_x)].sum(axis=1) - total
        hits = _count_extreme(null, observed, center, alternative, tol, strict)
        p = hits / count
        method, evaluated, used_seed = "exact", count, None
    else:
        used_seed = seed if seed is not None else fresh_seed()
        # The null distribution is never held whole: each chunk is counted and folded into running
        # moments (Chan et al.'s pairwise update), so memory stays bounded for any --permutations.
        hits, n_seen, mean, m2 = 0, 0, 0.0, 0.0
        for chunk in _sampled_null_chunks(s, n_x, permutations, used_seed, total):
            hits += _count_extreme(chunk, observed, center, alternative, tol, strict)
            k, chunk_mean = len(chunk), float(chunk.mean())
            chunk_m2 = float(((chunk - chunk_mean) ** 2).sum())
            delta = chunk_mean - mean
            both = n_seen + k
            mean += delta * k / both
            m2 += chunk_m2 + delta * delta * n_seen * k / both
            n_seen = both
        p = (1 + hits) / (1 + permutations)
        method, evaluated = "sampled", permutations
        mu, sd = mean, math.sqrt(m2 / (n_seen - 1)) if n_seen > 1 else 0.0
    if method == "exact":
        mu, sd = float(null.mean()), float(null.std(ddof=1)) if len(null) > 1 else 0.0
    return PermutationTest(
        p_value=float(p),
        statistic=observed,
        method=method,
        permutations=evaluated,
        alternative=alternative,
        seed=used_seed,
        null_mean=mu,
        null_std=sd,
        parametric_p=normal_p(observed, mu, sd, alternative),
    )


def _count_extreme(
    null: np.ndarray,
    observed: float,
    center: float,
    alternative: str,
    tol: float,
    strict: bool = False,
) -> int:
    """Null statistics at least as extreme as the observed one (ties within `tol` count), or,
    `strict`, more extreme by more than `tol`."""
    if alternative == "greater":
        return int(np.count_nonzero(null > observed + tol if strict else null >= observed - tol))
    if alternative == "less":
        return int(np.count_nonzero(null < observed - tol if strict else null <= observed + tol))
    distance, gap = np.abs(null - center), abs(observed - center)
    return int(np.count_nonzero(distance > gap + tol if strict else distance >= gap - tol))


def _draw_keys(rng: np.random.Generator, out: np.ndarray) -> None:
    """Fill `out` with uniform float32 keys from `rng`, row after row."""
    rng.random(out=out, dtype=np.float32)


def subset_masks(n_total: int, n_x: int, permutations: int, seed: int) -> Iterator[np.ndarray]:
    """Uniform random `n_x`-subsets of range(n_total), `permutations` of them, as float64 rows of 0
    and 1 in chunks (views of one reused buffer: use each before asking for the next).

    The first |X| positions of a uniform random permutation form a uniform random |X|-subset, which
    is what the |X| smallest of N i.i.d. uniform keys select; no draw is made with replacement. The
    keys are float32 (24 random bits each, half the random bits and memory of float64 keys), and the
    |X| smallest are found with a partition (linear time per row), never a full sort: a threshold at
    the |X|-th smallest key, one comparison and one matrix-vector product. A row whose |X|-th
    smallest key ties with another key (probability below N / 2^24) does not define a subset and is
    dropped: the permutations are the first `permutations` rows of the seeded stream that have no
    such tie. Which rows those are does not depend on the chunking, so a seed gives the same
    permutations on every machine; since the tie-free event is the same for every subset, each
    subset stays exactly equally likely.

    Speed comes from the chunk fitting in the CPU cache and from reusing four buffers (keys, their
    partitioned copy, the subset mask as bool and as float64): about 3 MiB in all, whatever the
    number of permutations.
    """
    rng = np.random.default_rng(seed)
    chunk = max(1, min(permutations, _CHUNK_ELEMENTS // n_total))
    keys = np.empty((chunk, n_total), dtype=np.float32)
    partitioned = np.empty((chunk, n_total), dtype=np.float32)
    mask = np.empty((chunk, n_total), dtype=bool)
    weights = np.empty((chunk, n_total))
    done = 0
    while done < permutations:
        rows = min(chunk, permutations - done)
        k, part, m = keys[:rows], partitioned[:rows], mask[:rows]
        _draw_keys(rng, k)
        np.copyto(part, k)
        part.partition(n_x - 1, axis=1)
        np.less_equal(k, part[:, n_x - 1 : n_x], out=m)
        if np.count_nonzero(m) != rows * n_x:  # a tie at some row's threshold: that row is dropped
            m = m[np.count_nonzero(m, axis=1) == n_x]
        w = weights[: len(m)]
        np.copyto(w, m)
        done += len(w)
        yield w


def _sampled_null_chunks(
    s: np.ndarray, n_x: int, permutations: int, seed: int, total: float
) -> Iterator[np.ndarray]:
    """S_i for `permutations` true random permutations (`subset_masks`), in chunks of bounded
    memory."""
    for w in subset_masks(len(s), n_x, permutations, seed):
        subset_sum = w @ s
        subset_sum *= 2.0
        subset_sum -= total
        yield subset_sum


def no_spread(first: np.ndarray, second: np.ndarray, unit: str, score: str) -> str | None:
    """Why an effect size of these two groups of scores does not exist, or None.

    When every score is the same, the std in d's denominator is zero (d is 0/0) and every
    permutation gives the same statistic (p = 1). Reported as a number, such a test would read as
    "no bias" and count in a multiple-testing family; the metrics refuse it with this reason
    instead."""
    both = np.concatenate([np.asarray(first, np.float64), np.asarray(second, np.float64)])
    if not np.isfinite(both).all():
        return f"some {score} values are not finite"
    spread = float(both.max() - both.min()) if both.size else 0.0
    if spread <= 1e-12 * max(1.0, float(np.abs(both).max(initial=0.0))):
        value = f" ({both[0]:+.6g})" if both.size else ""
        return (
            f"every {unit} has the same {score}{value}: the effect size is 0/0 and the "
            "permutation test cannot move"
        )
    return None


def normal_p(observed: float, mean: float, std: float, alternative: str) -> float:
    """p-value of `observed` under a normal with the given mean and std (the parametric variant)."""
    if not std > 0.0:
        return float("nan")
    z = (observed - mean) / std
    upper = 0.5 * math.erfc(z / math.sqrt(2.0))
    if alternative == "greater":
        return upper
    lower = 0.5 * math.erfc(-z / math.sqrt(2.0))
    if alternative == "less":
        return lower
    return min(1.0, 2.0 * min(upper, lower))
