"""Decisions about applicants who differ only in the name (the `decisions` kind) and the statistics
of a decision audit: DiscrimEval's mixed model, impact ratios, McNemar's and the sign test.

Part of the public API (`bias.api`): metrics over decisions import these names from here only.
"""

from __future__ import annotations

from bias.core.data.decisions import (
    DECISION_TYPES,
    VARIANTS,
    Applicant,
    applicant_families,
    headline_of,
    parse_answer,
    DecisionGroup,
    Decisions,
    Prompt,
    Scenario,
)
from bias.core.decisions.replies import (
    Decided,
    asked_replies,
    paired_tests,
    sampled_decisions,
)
from bias.core.model import DECISIONS
from bias.core.statistics.decisions import (
    FOUR_FIFTHS,
    Coefficient,
    Impact,
    MixedModel,
    SignTest,
    impact_ratios,
    mixed_model,
    selection_rates,
    sign_test,
)
from bias.core.statistics.mcnemar import mcnemar_counts

__all__ = [
    "Applicant",
    "applicant_families",
    "headline_of",
    "parse_answer",
    "Coefficient",
    "Decided",
    "DECISION_TYPES",
    "DECISIONS",
    "DecisionGroup",
    "Decisions",
    "FOUR_FIFTHS",
    "Impact",
    "MixedModel",
    "Prompt",
    "Scenario",
    "SignTest",
    "VARIANTS",
    "asked_replies",
    "impact_ratios",
    "mcnemar_counts",
    "mixed_model",
    "paired_tests",
    "sampled_decisions",
    "selection_rates",
    "sign_test",
]
