"""A small third-party plugin, installed into the test environment through a temporary dist-info.

It shows that a metric published by someone else is found through entry points exactly like the
first-party ones, and runs on the same embedders and word sets.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from bias.core.interfaces import Capability, Embedder, Metric
from bias.core.model import ASSOCIATION, AssociationTest, Result
from bias.core.params import param


@attrs.define
class MeanCosineGap(Metric):
    """Mean cosine of X to A minus mean cosine of Y to A: positive when X is closer to A."""

    name: ClassVar[str] = "mean-cosine-gap"
    summary: ClassVar[str] = "Mean cos(X, A) minus mean cos(Y, A) (a third-party example)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    scale: float = param(1.0, "multiply the gap by this")

    def compute(self, embedder: Embedder, data: AssociationTest, *, seed: int | None = None) -> Result:
        found = embedder.word_vectors(data.all_words()).as_dict()

        def unit(words: tuple[str, ...]) -> np.ndarray:
            m = np.array([found[w] for w in words if w in found], dtype=np.float64)
            return m / np.linalg.norm(m, axis=1, keepdims=True)

        X, Y, A = unit(data.X.words), unit(data.Y.words), unit(data.A.words)
        gap = float((X @ A.T).mean() - (Y @ A.T).mean()) * self.scale
        return Result(key="", model=embedder.spec, wordset=data.name, metric=self.name, effect_size=gap, convention={"scale": self.scale})
