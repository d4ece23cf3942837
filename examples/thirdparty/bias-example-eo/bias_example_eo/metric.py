"""The centroid gap: how much closer the centre of X lies to the centre of A than to that of B,
minus the same for Y. A cheap, permutation-free cousin of the WEAT effect size, as an example of a
metric written against the public API."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from bias.api import AssociationMetric, Measured, SetVectors, ValueKind, param


def _centre(rows: np.ndarray) -> np.ndarray:
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    centre = unit.mean(axis=0)
    return centre / np.linalg.norm(centre)


@attrs.define
class CentroidGap(AssociationMetric):
    """(cos(x, a) - cos(x, b)) - (cos(y, a) - cos(y, b)) for the unit centroids x, y, a, b of the
    sets.

    Positive when X is closer to A and Y to B, as a positive WEAT effect; 0 when the targets are
    placed alike. Lost words, the case policy and the Result are handled by AssociationMetric.
    """

    name: ClassVar[str] = "centroid-gap"
    summary: ClassVar[str] = (
        "Cosine gap between set centroids: (x.a - x.b) - (y.a - y.b) (example plugin)."
    )
    # What the number is: its label, what it is, 0 as no bias (the default reference), 3 decimals.
    value: ClassVar[ValueKind] = ValueKind("gap", "centroid cosine gap", digits=3)

    scale: float = param(1.0, "multiply the gap by this (e.g. 100 for hundredths)")

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        x, y, a, b = (_centre(sets.matrices[k]) for k in ("X", "Y", "A", "B"))
        gap = float((x @ a - x @ b) - (y @ a - y @ b)) * self.scale
        return Measured(effect_size=gap, figures={"x_to_a": float(x @ a), "y_to_a": float(y @ a)})
