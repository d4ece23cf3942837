"""Items on two association axes, placed in quadrants, and the permutation null of FISE
(Charlesworth, Ghate, Caliskan & Banaji 2024): how strongly the items sit in their quadrants when
the group words of each axis are re-partitioned at the observed sizes.

An item's association on an axis is its mean cosine to the axis's first group minus its mean cosine
to the second. Quadrants are numbered 0: (+,+), 1: (-,+), 2: (-,-), 3: (+,-); a value of exactly 0
counts as the negative side. The strength of a set of items is their mean projection onto their own
quadrant's diagonal, mean_i (|x_i| + |y_i|) / sqrt(2). The metric that reads these is
`plugins/metrics/fise.py`.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

# Rows of permutations whose arithmetic is done at once, into buffers reused for every batch (a
# batch of draws is 2,000 rows; 1,000 rows measured fastest, by a few per cent, on a 2-core EPYC).
_ROWS = 1000


@attrs.frozen
class QuadrantNull:
    """Quadrant counts (partitions x 4) and strengths (one per partition) under re-partitioned
    group words; `method` is "exact" (every partition, `drawn` of them) or "sampled" (`drawn`
    random ones)."""

    counts: np.ndarray = attrs.field(eq=False)
    strengths: np.ndarray = attrs.field(eq=False)
    method: str
    drawn: int


def quadrant_null(
    cx: np.ndarray,
    cy: np.ndarray,
    nx1: int,
    ny1: int,
    *,
    mean_centre: bool,
    permutations: int,
    exact_limit: int,
    seed: int | None,
) -> QuadrantNull:
    """Counts and strengths of the items (rows of the cosines `cx`, `cy` with every group word of
    each axis, the first group's `nx1` / `ny1` words first) over every re-partition of both axes'
    words, or over `permutations` random ones when there are more than `exact_limit`."""
    nx, ny = cx.shape[1], cy.shape[1]
    total = math.comb(nx, nx1) * math.comb(ny, ny1)
    if total <= exact_limit:
        px = np.array(list(itertools.combinations(range(nx), nx1)))
        py = np.array(list(itertools.combinations(range(ny), ny1)))
        xs, ys = associations(cx, px), associations(cy, py)  # partitions x items
        if mean_centre:
            xs, ys = xs - xs.mean(axis=1, keepdims=True), ys - ys.mean(axis=1, keepdims=True)
        counts, strengths = [], []
        for xr in xs:
            xb = np.broadcast_to(xr, ys.shape)
            counts.append(quadrant_counts(xb, ys))
            strengths.append(strength(xb, ys))
        return QuadrantNull(np.concatenate(counts), np.concatenate(strengths), "exact", total)
    rng = np.random.default_rng(seed)
    out, strengths = [], []
    bx, by = np.empty((_ROWS, cx.shape[0])), np.empty((_ROWS, cy.shape[0]))
    # each partition a 0/1 row with a trailing 1, so one product with `_with_offset` gives the
    # associations; the buffers are reused for every batch (the trailing column stays 1)
    ax, ay = _with_offset(cx, nx1), _with_offset(cy, ny1)
    mxb, myb = np.ones((2000, nx + 1)), np.ones((2000, ny + 1))
    keys = {n: (np.empty((2000, n)), np.empty((2000, n))) for n in {nx, ny}}  # draws, scratch
    for start in range(0, permutations, 2000):
        m = min(2000, permutations - start)
        # the first nx1 of an argsort of uniform keys are the nx1 smallest keys: a partition finds
        # the same subset without sorting (the same draws, so the same p for a seed)
        kx, sx = (b[:m] for b in keys[nx])
        mx = smallest_mask(rng.random(out=kx), nx1, mxb, sx)
        ky, sy = (b[:m] for b in keys[ny])
        my = smallest_mask(rng.random(out=ky), ny1, myb, sy)
        # the arithmetic in rows of _ROWS, into the two buffers
        for a in range(0, m, _ROWS):
            rows = min(_ROWS, m - a)
            xs = np.matmul(mx[a : a + rows], ax.T, out=bx[:rows])
            ys = np.matmul(my[a : a + rows], ay.T, out=by[:rows])
            if mean_centre:
                xs -= xs.mean(axis=1, keepdims=True)
                ys -= ys.mean(axis=1, keepdims=True)
            out.append(quadrant_counts(xs, ys))
            strengths.append(strength(xs, ys, scratch=True))
    return QuadrantNull(np.concatenate(out), np.concatenate(strengths), "sampled", permutations)


def associations(cos: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For each partition (a row of indices of the first group), every item's mean cosine to the
    first group minus its mean cosine to the rest: partitions x items. The same product as the
    sampled null's (`_with_offset`), so an observed partition and its draw give the same numbers."""
    mask = np.zeros((first.shape[0], cos.shape[1] + 1), dtype=np.float64)
    np.put_along_axis(mask, first, 1.0, axis=1)
    mask[:, -1] = 1.0
    return mask @ _with_offset(cos, first.shape[1]).T


def _with_offset(cos: np.ndarray, k: int) -> np.ndarray:
    """The items' cosines scaled by 1/k + 1/(n - k), with -total/(n - k) as a last column: the
    product with a partition's 0/1 row (k ones) followed by a 1 is its association. The rest's sum
    is the row total less the first group's sum, so sum/k - (total - sum)/(n - k) = sum * (1/k +
    1/(n - k)) - total/(n - k): one product gives both groups' means."""
    n = cos.shape[1]
    return np.hstack([cos * (1 / k + 1 / (n - k)), -cos.sum(axis=1, keepdims=True) / (n - k)])


def smallest_mask(
    keys: np.ndarray, k: int, out: np.ndarray | None = None, scratch: np.ndarray | None = None
) -> np.ndarray:
    """1.0 where a key is among the k smallest of its row, else 0.0 (ties between float64 keys have
    probability ~n^2 / 2^53): the subset `argsort(keys)[:, :k]` picks, found in linear time. With
    `out` (at least as many rows and columns), written into its first rows and columns; its rows
    are returned, further columns untouched. `scratch` (the keys' shape) holds the partition."""
    if scratch is None:
        scratch = np.partition(keys, k - 1, axis=1)
    else:
        np.copyto(scratch, keys)
        scratch.partition(k - 1, axis=1)
    threshold = scratch[:, k - 1 : k]
    if out is None:
        return (keys <= threshold).astype(np.float64)
    rows, n = keys.shape
    np.less_equal(keys, threshold, out=out[:rows, :n])
    return out[:rows]


def quadrant_of(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """0: (+,+), 1: (-,+), 2: (-,-), 3: (+,-); exactly 0 counts as negative."""
    px, py = x > 0, y > 0
    return np.where(px & py, 0, np.where(~px & py, 1, np.where(~px & ~py, 2, 3)))


def quadrant_counts(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per row, the items in each quadrant (numbered as `quadrant_of`), from two sign masks."""
    px, py = x > 0, y > 0

    def count(mask: np.ndarray) -> np.ndarray:
        # a row sum of the bytes: count_nonzero(axis=1) copies first
        return mask.view(np.uint8).sum(axis=1, dtype=np.int32)

    both, right, up = count(px & py), count(px), count(py)
    # (+,+), (-,+) = up - (+,+), (-,-) = all - right - up + (+,+), (+,-) = right - (+,+)
    return np.stack([both, up - both, x.shape[1] - right - up + both, right - both], axis=1)


def strength(x: np.ndarray, y: np.ndarray, *, scratch: bool = False) -> np.ndarray:
    """Per row: the items' mean projection onto their own quadrant's diagonal. With `scratch`, x and
    y are not needed afterwards and are overwritten (no new arrays)."""
    if not scratch:
        return (np.abs(x) + np.abs(y)).mean(axis=1) / math.sqrt(2)
    ones = np.ones(x.shape[1])
    # row sums by a product with ones (a reduction along the short axis is several times slower)
    return (np.abs(x, out=x) @ ones + np.abs(y, out=y) @ ones) / (x.shape[1] * math.sqrt(2))
