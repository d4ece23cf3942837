"""The StereoSet-style score (SSS) on sentence pairs: how likely each sentence makes its own
modified (group) tokens (scoring and comparison in `bias.core.pair_metrics.scoring` and
`bias.core.pair_metrics.metric`)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from bias.api import ValueKind
from bias.api.lm import PERCENT_OF_PAIRS
from bias.api import Capability, Measured, PairMetric, PairScores, PairSet, Refusal, one_of, param
from bias.api.lm import SSS_MASKING, compare_pairs, lowercase_param


@attrs.define
class StereoSetScore(PairMetric):
    """StereoSet-style score (SSS) on sentence pairs: the percentage of pairs in which the more
    stereotyping sentence gives its own modified (group) tokens the higher mean log-probability.

    score(S) = mean over the modified tokens m of S of log P(m | S with m masked). `masking = each`
    masks one modified token at a time (the diagonal); `joint` masks them all at once, conditioning
    on the unmodified tokens only, as in the StereoSet likelihood. Either way each token is scored
    at its own position: one reference averaged the whole |M| x |M| matrix of every masked position
    against every modified token, which this avoids. A pair whose sentence has no modified token
    (the other only adds words) is skipped and reported. Masked LMs only."""

    name: ClassVar[str] = "sss"
    summary: ClassVar[str] = (
        "StereoSet-style score: % of pairs whose stereotyping sentence's group tokens are "
        "more likely."
    )
    value: ClassVar[ValueKind] = attrs.evolve(
        PERCENT_OF_PAIRS, name="% of pairs preferring the stereotype (group tokens)"
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})
    requires_any: ClassVar[frozenset[Capability]] = frozenset()
    scoring: ClassVar[str] = "sss"

    masking: str = param(
        "each",
        "each (mask the modified tokens one at a time) or joint (all at once)",
        validator=one_of(SSS_MASKING),
    )
    lowercase: str = lowercase_param()

    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        return compare_pairs(data, scores, what="sss")
