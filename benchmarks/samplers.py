"""Exact-size samplers for the permutation-test bound of run_all.py: the cheapest we can write in numpy.

Each function draws `permutations` uniform random n_x-subsets of the N scores `s` (exactly n_x
members, each subset equally likely) and computes every subset's sum, the least a permutation test
needs; it returns nothing. The bound of a permutation row is the fastest of them in the same run, so
the row says how close the project's sampler (with its counting and moments) comes to the cheapest
sampler we could write, not to a replay of its own steps.

- float64 keys: N uniform float64 keys per row, the n_x smallest found by a partition, one
  matrix-vector product, into buffers reused for every chunk (what the project drew before its keys
  became float32);
- float32 keys: the same with float32 keys (24 random bits each) and no check for ties at the
  threshold (the project skips such rows, so this one is a little cheaper than it may be);
- Fisher-Yates: n_x steps of a partial shuffle of each row's scores, one bounded 8- or 16-bit draw
  per step and row, the drawn score summed;
- argpartition: float32 keys, the indices of the n_x smallest gathered and summed.

`random_bits` only draws ceil(log2 C(N, n_x)) random bits per permutation, what a subset needs at the
least; turning them into a subset (unranking) is not done, so it is a floor no sampler reaches.
Compiled samplers (numba: Floyd's algorithm with a multiply-shift bounded draw) were measured at
about 0.45x of the float64 keys by the performance review of 2026-11-28; the project has no compiler
among its dependencies, so they are not part of the bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

CHUNK_ELEMENTS = 131_072  # keys per chunk, as the project's sampler: 1 MiB of float64, cache-sized


def _chunks(n: int, permutations: int) -> list[int]:
    rows = max(1, min(permutations, CHUNK_ELEMENTS // n))
    return [min(rows, permutations - start) for start in range(0, permutations, rows)]


def _keys(s: np.ndarray, n_x: int, permutations: int, seed: int, kind: type) -> None:
    """Keys of `kind` in cache-sized chunks, into buffers reused for every chunk."""
    rng, n = np.random.default_rng(seed), len(s)
    chunks = _chunks(n, permutations)
    keys, part = np.empty((chunks[0], n), dtype=kind), np.empty((chunks[0], n), dtype=kind)
    mask, weights = np.empty((chunks[0], n), dtype=bool), np.empty((chunks[0], n))
    for rows in chunks:
        k, p, m, w = keys[:rows], part[:rows], mask[:rows], weights[:rows]
        rng.random(out=k, dtype=kind)
        np.copyto(p, k)
        p.partition(n_x - 1, axis=1)
        np.less_equal(k, p[:, n_x - 1 : n_x], out=m)
        np.copyto(w, m)
        w @ s


def float64_keys(s: np.ndarray, n_x: int, permutations: int, seed: int) -> None:
    _keys(s, n_x, permutations, seed, np.float64)


def float32_keys(s: np.ndarray, n_x: int, permutations: int, seed: int) -> None:
    _keys(s, n_x, permutations, seed, np.float32)


def fisher_yates(s: np.ndarray, n_x: int, permutations: int, seed: int) -> None:
    rng, n = np.random.default_rng(seed), len(s)
    kind = np.uint8 if n <= 256 else np.uint16
    for rows in _chunks(n, permutations):
        values = np.tile(s, rows)
        base = np.arange(rows) * n
        total = np.zeros(rows)
        for i in range(n_x):
            at = base + i + rng.integers(0, n - i, size=rows, dtype=kind)
            total += values[at]
            values[at] = values[base + i]


def argpartition(s: np.ndarray, n_x: int, permutations: int, seed: int) -> None:
    rng, n = np.random.default_rng(seed), len(s)
    for rows in _chunks(n, permutations):
        keys = rng.random((rows, n), dtype=np.float32)
        s[np.argpartition(keys, n_x - 1, axis=1)[:, :n_x]].sum(axis=1)


SAMPLERS: dict[str, Callable[[np.ndarray, int, int, int], None]] = {
    "float64 keys": float64_keys,
    "float32 keys": float32_keys,
    "Fisher-Yates": fisher_yates,
    "argpartition": argpartition,
}


def random_bits(n_total: int, n_x: int, permutations: int, seed: int) -> None:
    """Only the random bits the subsets need (no subset is made): the floor below every sampler."""
    words = math.ceil(math.log2(math.comb(n_total, n_x)) / 64)
    np.random.default_rng(seed).bit_generator.random_raw(permutations * words)
