"""Building blocks of BBQ by generation and of the BBQ conventions: the `bbq-prompts` data kind
(prompt variants and reading rules of a language), the reading of a reply, the scores, the peers'
presets, the Result built from answers read off a model, and the scores and intervals of the
answers a model picks by log-likelihood (`Chosen`).

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.bbq.answering import GENERATE, LOGLIK, answer_result
from bias.core.bbq.answers import CHUNK_ELEMENTS
from bias.core.bbq.chosen import HEADLINE_KEYS, HEADLINE_LABELS, Chosen, pick, prediction_row
from bias.core.bbq.conventions import PRESETS, SCORERS, QuestionFacts, reader
from bias.core.bbq.extraction import ANSWERED, REFUSED, UNPARSED, Coded, read_reply
from bias.core.bbq.prompts import BBQ_PROMPTS, BbqPrompts, PromptVariant, ReadingRules
from bias.core.bbq.scores import bias_scores, counted_scores, stratified_weights

__all__ = [
    "ANSWERED",
    "BBQ_PROMPTS",
    "BbqPrompts",
    "CHUNK_ELEMENTS",
    "Chosen",
    "Coded",
    "GENERATE",
    "HEADLINE_KEYS",
    "HEADLINE_LABELS",
    "LOGLIK",
    "PRESETS",
    "PromptVariant",
    "QuestionFacts",
    "REFUSED",
    "ReadingRules",
    "SCORERS",
    "UNPARSED",
    "answer_result",
    "bias_scores",
    "counted_scores",
    "pick",
    "prediction_row",
    "read_reply",
    "reader",
    "stratified_weights",
]
