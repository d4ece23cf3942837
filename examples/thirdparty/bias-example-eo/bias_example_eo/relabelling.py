"""The centroid gap with a p-value of its own: how often relabelling the target words at random
gives a gap at least as large. Its parameter `permutations` is its own (the number of relabellings
drawn), as any third party may name a parameter: the framework reads no parameter by name, and
learns what the metric costs from `cost`."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from bias.api import (
    AssociationMetric,
    AssociationTest,
    Cost,
    Measured,
    SetVectors,
    ValueKind,
    int_at_least,
    param,
)


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def gap(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """(x.a - x.b) - (y.a - y.b) for the normalised centroids of unit vectors."""
    centres = [
        c / np.linalg.norm(c)
        for c in (x.mean(axis=0), y.mean(axis=0), a.mean(axis=0), b.mean(axis=0))
    ]
    cx, cy, ca, cb = centres
    return float((cx @ ca - cx @ cb) - (cy @ ca - cy @ cb))


@attrs.define
class RelabelledGap(AssociationMetric):
    """The centroid gap of X and Y towards A rather than B, with p = (k + 1) / (permutations + 1), k
    the relabellings of X u Y (drawn with the seed) whose gap is at least the observed one."""

    name: ClassVar[str] = "relabelled-gap"
    summary: ClassVar[str] = (
        "Centroid gap with a relabelling p-value (example plugin with a parameter named "
        "permutations)."
    )
    # Its own label: reports write "gap*=+0.123" and the footer says what it is.
    value: ClassVar[ValueKind] = ValueKind("gap*", "centroid gap, relabelling test", digits=3)

    permutations: int = param(
        500, "relabellings of the target words drawn for the p-value", validator=int_at_least(1)
    )

    def cost(self, data: AssociationTest) -> Cost:
        """Each relabelling recomputes two centroids of |X| + |Y| vectors (300 numbers each,
        say)."""
        n = len(data.X.words) + len(data.Y.words)
        return Cost.of_elements(
            self.permutations * n * 300,
            self.permutations * 8,
            f"permutations = {self.permutations:,}",
        )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        x, y, a, b = (_unit(sets.matrices[k]) for k in ("X", "Y", "A", "B"))
        observed = gap(x, y, a, b)
        pooled, n_x = np.vstack([x, y]), len(x)
        rng = np.random.default_rng(seed)
        at_least = 0
        for _ in range(self.permutations):
            order = rng.permutation(len(pooled))
            at_least += gap(pooled[order[:n_x]], pooled[order[n_x:]], a, b) >= observed
        p = (at_least + 1) / (self.permutations + 1)
        return Measured(
            effect_size=observed,
            p_value=float(p),
            convention={
                "method": "relabelling",
                "relabellings": self.permutations,
                # The two keys reports print: how p was computed, and the smallest p it can give.
                "p_value": f"relabelling test ({self.permutations:,} relabellings, seed {seed}), "
                "one-sided (greater)",
                "p_floor": 1.0 / (self.permutations + 1),
            },
        )
