"""The association-test library: what every metric on targets X, Y and attributes A, B shares.

- `lookup`: the case vocabulary, word lookup and the lost-word threshold and refusal;
- `conventions`: the WEAT statistics on one matrix per set and the conventions WEAT and SEAT share;
- `metric`: `AssociationMetric`, the public base of a measure on word vectors, and `SetVectors`;
- `contexts`: contextual vectors of stimuli (SEAT's sentences, CEAT's contexts).
"""

from bias.core.association.conventions import (
    EFFECT_SIZE_D,
    AssociationConventions,
    association_result,
)
from bias.core.association.lookup import (
    CASES,
    DUPLICATES,
    LOOKUP_CASES,
    UNCASED_HINT,
    case_param,
    duplicates_param,
    lookup,
    lost_threshold_param,
    lost_word_refusal,
    set_vectors,
    too_many_lost,
)
from bias.core.association.metric import AssociationMetric, SetVectors, per_word_table

__all__ = [
    "CASES",
    "DUPLICATES",
    "EFFECT_SIZE_D",
    "LOOKUP_CASES",
    "UNCASED_HINT",
    "AssociationConventions",
    "AssociationMetric",
    "SetVectors",
    "association_result",
    "case_param",
    "duplicates_param",
    "lookup",
    "lost_threshold_param",
    "lost_word_refusal",
    "per_word_table",
    "set_vectors",
    "too_many_lost",
]
