"""AUL and AULA (Kaneko & Bollegala 2022): pair scores from the unmasked sentence.

Masking a token changes the input the model sees; AUL instead scores every token of the unmasked
sentence, log P(w_i | S), and averages over the tokens (special tokens excluded), so the score needs
one forward call per sentence. AULA weights each term by the attention the token receives (averaged
over layers, heads and queries). Pairs are compared as for CrowS-Pairs
(`bias.core.pair_metrics.metric`)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from bias.api import ValueKind
from bias.api.lm import PERCENT_OF_PAIRS
from bias.api import Capability, Measured, PairMetric, PairScores, PairSet, Refusal
from bias.api.lm import compare_pairs, lowercase_param


@attrs.define
class Aul(PairMetric):
    """All Unmasked Likelihood (Kaneko & Bollegala 2022): the percentage of pairs in which the more
    stereotyping sentence has the higher mean log P(w_i | S) over its tokens, S unmasked; 50 means
    no preference.

    The mean runs over the non-special tokens. On a causal LM the same comparison uses the mean of
    log P(w_i | w_<i) over every token, the first word scored after the model's BOS token (EOS where
    it has none), which is prepended when the tokenizer adds no start token (recorded as
    `causal_start`). Ties count as not biased and are reported; `figures["pairs"]` holds every
    pair's scores."""

    name: ClassVar[str] = "aul"
    summary: ClassVar[str] = (
        "All Unmasked Likelihood: % of pairs whose stereotyping sentence is more likely, "
        "unmasked (Kaneko & Bollegala 2022)."
    )
    value: ClassVar[ValueKind] = PERCENT_OF_PAIRS
    scoring: ClassVar[str] = "aul"

    lowercase: str = lowercase_param()

    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        return compare_pairs(data, scores, what="aul")


@attrs.define
class Aula(PairMetric):
    """AUL with attention (Kaneko & Bollegala 2022): each term log P(w_i | S) weighted by the
    attention w_i receives, a_i = the attention weights towards w_i averaged over layers, heads and
    the sentence's queries (a column mean of the attention matrices), then averaged over the
    non-special tokens.

    Attention *received* is used: averaging the attention a token gives (a row, which sums to 1)
    would weight every token alike. Models with sdpa or flash attention are switched to eager
    attention for the call, since only eager attention returns the weights. Masked LMs only."""

    name: ClassVar[str] = "aula"
    summary: ClassVar[str] = (
        "AUL weighted by attention: % of pairs whose stereotyping sentence is more likely "
        "(Kaneko & Bollegala 2022)."
    )
    value: ClassVar[ValueKind] = PERCENT_OF_PAIRS
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})
    requires_any: ClassVar[frozenset[Capability]] = frozenset()
    scoring: ClassVar[str] = "aula"

    lowercase: str = lowercase_param()

    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        return compare_pairs(data, scores, what="aula")
