"""WEAT, the Word Embedding Association Test (Caliskan, Bryson & Narayanan 2017, Science
356:183-186).

s(w, A, B) is computed once per target word; the effect size and the permutation test are then
vectorised over that vector (`bias.core.association.association_result`, which SEAT runs on sentence
vectors).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from bias.api import ValueKind
from bias.api.association import EFFECT_SIZE_D
from bias.api import ASSOCIATION, AssociationTest, Capability, Embedder, Result
from bias.api.association import (
    LOOKUP_CASES,
    UNCASED_HINT,
    AssociationConventions,
    association_result,
    case_param,
    set_vectors,
)


@attrs.define
class Weat(AssociationConventions):
    """Effect size d = (mean s(X) - mean s(Y)) / std s(X u Y) and a permutation p-value of
    S = sum s(X) - sum s(Y). A positive d means X is closer to A and Y to B.

    The p-value is exact (all partitions) when C(|X|+|Y|, |X|) <= exact_limit, else sampled from
    true random permutations with p = (k+1)/(m+1). A set losing more than `lost_threshold` of its
    words to the model's vocabulary refuses the test rather than report a number built on what is
    left."""

    name: ClassVar[str] = "weat"
    summary: ClassVar[str] = (
        "Word Embedding Association Test: effect size d and permutation p (Caliskan et al. 2017)."
    )
    value: ClassVar[ValueKind] = EFFECT_SIZE_D
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    case: str = case_param("exact", LOOKUP_CASES, UNCASED_HINT)

    def compute(
        self, embedder: Embedder, data: AssociationTest, *, seed: int | None = None
    ) -> Result:
        data = self.stimuli(data)
        matrices, sets, lost, approximated = set_vectors(embedder, data, self.case)
        return association_result(
            self,
            matrices,
            data,
            model=embedder.spec,
            seed=seed,
            lost=lost,
            approximated=approximated,
            words=sets,
        )
