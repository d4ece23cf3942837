"""Building blocks of metrics on association tests (targets X, Y; attributes A, B): word lookup
under a case policy, the lost-word refusal, the WEAT conventions and result, contextual encodings
of the words in templates or corpus contexts, and `quadrants` (items on two axes placed in
quadrants, and FISE's null over re-partitioned group words).

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.association import (
    EFFECT_SIZE_D,
    AssociationConventions,
    LOOKUP_CASES,
    UNCASED_HINT,
    association_result,
    case_param,
    duplicates_param,
    lookup,
    lost_threshold_param,
    set_vectors,
    too_many_lost,
)
from bias.core.association.contexts import (
    LEVELS,
    check_layer,
    check_pooling,
    encode_contexts,
    given_templates,
    resolve_pooling,
    template_request,
    vector_conventions,
)
from bias.core.data.corpus import Context, Contexts, corpus_contexts, window
from bias.core.data.templates import Sentence, sentence_sets
from bias.core.statistics import quadrants

__all__ = [
    "association_result",
    "AssociationConventions",
    "EFFECT_SIZE_D",
    "case_param",
    "duplicates_param",
    "check_layer",
    "check_pooling",
    "Context",
    "Contexts",
    "corpus_contexts",
    "encode_contexts",
    "given_templates",
    "LEVELS",
    "lookup",
    "LOOKUP_CASES",
    "lost_threshold_param",
    "quadrants",
    "resolve_pooling",
    "Sentence",
    "sentence_sets",
    "set_vectors",
    "template_request",
    "too_many_lost",
    "UNCASED_HINT",
    "vector_conventions",
    "window",
]
