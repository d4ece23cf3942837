"""The public base of metrics that measure an association test on word vectors.

A subclass only says what its arithmetic finds on the vectors of X, Y, A and B (`measure`); the base
looks the words up under the case policy, refuses a test that lost too many words, tabulates the
per-word figures and builds the Result, so every such metric behaves like the first-party ones:

    @attrs.define
    class MeanGap(AssociationMetric):
        name: ClassVar[str] = "mean-gap"
        summary: ClassVar[str] = "Difference of the mean cosines of X and Y to A."

        def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
            a = stats.unit_rows(sets.matrices["A"]).mean(axis=0) gap =
            float((stats.unit_rows(sets.matrices["X"]) @ a).mean() -
            (stats.unit_rows(sets.matrices["Y"]) @ a).mean()) return Measured(effect_size=gap,
            figures={"gap": gap})
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.association.lookup import (
    LOOKUP_CASES,
    UNCASED_HINT,
    case_param,
    lost_threshold_param,
    lost_word_refusal,
    same_under_case,
    set_vectors,
)
from bias.core.interfaces import Capability, Embedder, Measured, Metric
from bias.core.model import ASSOCIATION, OK, REFUSED, AssociationTest, Result


@attrs.frozen
class SetVectors:
    """The vectors of X, Y, A and B found in the model: float64 rows in the order of `words`."""

    matrices: dict[str, np.ndarray]
    words: dict[str, list[str]]


@attrs.define
class AssociationMetric(Metric):
    """A measure of an association test (targets X, Y; attributes A, B) on word vectors.

    Subclasses implement `measure` and leave `compute` alone: it is what gives every such metric the
    same lookup, lost-word refusal, per-word score table and Result. A per-word figure (a mapping of
    word to number) becomes a row of `figures["scores"]`, written as a CSV beside the results.
    """

    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    lost_threshold: float = lost_threshold_param()
    case: str = case_param("exact", LOOKUP_CASES, UNCASED_HINT)

    @abstractmethod
    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        """What the metric finds on the vectors (every set non-empty, every vector finite and
        non-zero)."""

    def compute(
        self, embedder: Embedder, data: AssociationTest, *, seed: int | None = None
    ) -> Result:
        data = same_under_case(data, self.case)
        matrices, sets, lost, approximated = set_vectors(embedder, data, self.case)
        base: dict[str, Any] = {
            "sizes": {key: len(ws) for key, ws in sets.items()},
            "lost": {k: v for k, v in lost.items() if v},
            "approximated": {k: v for k, v in approximated.items() if v},
        }
        originals = {key: len(wl.words) for key, wl in data.sets().items()}
        reason = lost_word_refusal(matrices, originals, lost, self.lost_threshold, sets)
        if reason:
            return self.make_result(
                embedder.spec, data, seed, status=REFUSED, reason=reason, **base
            )
        found = self.measure(SetVectors(matrices, sets), seed=seed)
        if not isinstance(found, Measured):
            raise TypeError(
                f"{type(self).__name__}.measure() returned {type(found).__name__}, not a Measured"
            )
        p_value, convention = found.p_and_convention()
        warnings = list(found.warnings)
        if base["approximated"]:
            n = sum(len(v) for v in base["approximated"].values())
            warnings.append(f"{n} word(s) had no vector of their own and were built from sub-words")
        return self.make_result(
            embedder.spec,
            data,
            seed,
            status=OK,
            effect_size=found.effect_size,
            p_value=p_value,
            figures={**found.figures, **per_word_table(found.figures, sets)},
            convention={**convention, "case": self.case},
            warnings=warnings,
            **base,
        )


def per_word_table(figures: dict[str, Any], sets: dict[str, list[str]]) -> dict[str, Any]:
    """Every per-word figure (a mapping word -> number) as one table under "scores", a row per word
    with its set and one column per figure; empty when there is no per-word figure."""
    per_word = {
        name: v
        for name, v in figures.items()
        if isinstance(v, dict) and v and all(isinstance(x, (int, float)) for x in v.values())
    }
    if not per_word:
        return {}
    set_of = {w: key for key in ("X", "Y", "A", "B") for w in sets.get(key, [])}
    rows: dict[str, dict[str, Any]] = {}
    for name, values in per_word.items():
        for word, value in values.items():
            rows.setdefault(word, {"set": set_of.get(word, ""), "item": word})[name] = float(value)
    return {"scores": list(rows.values())}
