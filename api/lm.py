"""Building blocks of metrics on language-model scores: the scoring modes, pair comparison and its
refusals, StereoSet's masked-LM inputs, the constants of the pair and LPBS data kinds,
LPBS's arithmetic on its sentences (the stimuli scored, slots, masked inputs and scores), and the
float32 settling of verdicts that a reduced precision could turn (`settle`, `settle_choices`).

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.pair_metrics.alignment import is_truncated
from bias.core.pair_metrics.scoring import (
    CAUSAL,
    CAUSAL_CONTEXTS,
    CAUSAL_STARTS,
    LIKELIHOODS,
    MASKED,
    SSS_MASKING,
    causal_sentence_scores,
    computed_once,
    lm_mode,
)
from bias.core.data.lpbs_tests import ATTRIBUTES, TARGETS
from bias.core.pair_metrics.lpbs_scores import (
    LpbsItem,
    LpbsScores,
    entries,
    group_scores,
    listed,
    multi_token_words,
    number,
    one_slot_each,
    paired_scores,
    refusal,
    requests,
    set_scores,
    slot_positions,
    stimuli,
    template_summary,
)
from bias.core.pair_metrics.stereoset_inputs import MASKED_INPUTS as STEREOSET_INPUTS
from bias.core.pair_metrics.stereoset_inputs import masked_requests as stereoset_requests
from bias.core.pair_metrics.metric import (
    PERCENT_OF_PAIRS,
    compare_pairs,
    lowercase_param,
    skipped_warnings,
)
from bias.core.data.minimal_pairs import DIRECTIONS
from bias.core.precision import settle, settle_choices

__all__ = [
    "ATTRIBUTES",
    "CAUSAL",
    "CAUSAL_CONTEXTS",
    "CAUSAL_STARTS",
    "causal_sentence_scores",
    "compare_pairs",
    "computed_once",
    "DIRECTIONS",
    "entries",
    "group_scores",
    "is_truncated",
    "listed",
    "LIKELIHOODS",
    "lm_mode",
    "lowercase_param",
    "LpbsItem",
    "LpbsScores",
    "multi_token_words",
    "number",
    "one_slot_each",
    "paired_scores",
    "refusal",
    "requests",
    "set_scores",
    "slot_positions",
    "stimuli",
    "template_summary",
    "MASKED",
    "settle",
    "settle_choices",
    "PERCENT_OF_PAIRS",
    "skipped_warnings",
    "SSS_MASKING",
    "STEREOSET_INPUTS",
    "stereoset_requests",
    "TARGETS",
]
