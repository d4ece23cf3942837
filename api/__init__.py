"""The public API for plugin authors: everything a third-party metric, embedder, debiaser, data kind or
language package imports, in one place.

A plugin that imports only from `bias.api` (and `bias.testing` in its tests) keeps working when the
framework's modules are reorganised: these names are the promise, the modules behind them are not.
The first-party plugins and language packages import from here only (a test checks it). Beside the
names below, the sub-modules group the shared libraries of one kind of plugin: `bias.api.association`,
`bias.api.lm`, `bias.api.static`, `bias.api.hf`, `bias.api.services`, `bias.api.debiasing` and `bias.api.data`.
See CONTRIBUTING.md for complete examples and the list of names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bias.core.runs.budget import Cost, bootstrap_cost, permutation_cost
from bias.core.errors import FAILURE, USAGE, BiasError
from bias.core.interfaces import (
    MODEL_INPUT,
    ON_THE_FLY,
    STATIC_VECTORS,
    WORDSET_INPUT,
    Capability,
    ChoiceRequest,
    ChoiceScores,
    Debiaser,
    Embedder,
    InputRequest,
    MaskedRequest,
    Measured,
    Metric,
    Quote,
    ResolvedModel,
    Tokens,
    TokenScores,
    WordSetFormat,
)
from bias.core.model import (
    ANALOGIES,
    ASSOCIATION,
    BIAS_TYPES,
    DEBIAS_LISTS,
    FAILED,
    LPBS,
    OK,
    PAIRS,
    REFUSED,
    TEMPLATES,
    AssociationTest,
    Result,
    WordList,
    WordSetMeta,
    WordVectors,
)
from bias.core.params import between, int_at_least, one_of, param
from bias.core.generation import GenerationRequest, Generations, Message, Reply, Sampling
from bias.core.data.kinds import DataKind
from bias.core.data.wordsets import DataPackage, Problem

# Data classes of the other kinds of word set, for metrics that take them.
from bias.core.data.analogies import Analogies
from bias.core.data.debias_lists import DebiasLists
from bias.core.data.lpbs_tests import LpbsTest
from bias.core.data.minimal_pairs import PairSet, SentencePair
from bias.core.data.templates import TemplateSet

# Names whose modules import numpy or scipy are loaded on first use, so that importing bias.api (a
# language package does, when `bias list` reads it) stays light. The table is a plain literal: the
# registry reads it from this file's source, as it reads the imports above, to follow a plugin's base
# class without importing anything.
_LAZY = {
    # Base classes of the two common metric shapes: a metric over the looked-up vectors of X, Y, A and
    # B, and a metric over per-pair scores of a language model (a refusal is returned, not raised).
    "AssociationMetric": "bias.core.association",
    "SetVectors": "bias.core.association",
    "PairScores": "bias.core.pair_metrics.scoring",
    "PairMetric": "bias.core.pair_metrics.metric",
    "Refusal": "bias.core.pair_metrics.metric",
    # Statistics to reuse rather than rewrite (signatures in CONTRIBUTING.md): the permutation test of
    # two groups of scores, Cohen's d, bootstrap intervals and the multiple-testing corrections.
    "ALTERNATIVES": "bias.core.statistics.association",
    "PermutationTest": "bias.core.statistics.association",
    "association_scores": "bias.core.statistics.association",
    "effect_size": "bias.core.statistics.association",
    "fresh_seed": "bias.core.statistics.association",
    "n_partitions": "bias.core.statistics.association",
    "no_spread": "bias.core.statistics.association",
    "normal_p": "bias.core.statistics.association",
    "permutation_test": "bias.core.statistics.association",
    "unit_rows": "bias.core.statistics.association",
    "DEFAULT_RESAMPLES": "bias.core.statistics.bootstrap",
    "Interval": "bias.core.statistics.bootstrap",
    "association_ci": "bias.core.statistics.bootstrap",
    "generator": "bias.core.statistics.bootstrap",
    "interval": "bias.core.statistics.bootstrap",
    "benjamini_hochberg": "bias.core.statistics.multiple_testing",
    "holm": "bias.core.statistics.multiple_testing",
}

if TYPE_CHECKING:  # what the table above gives, for type checkers and editors
    from bias.core.association import AssociationMetric, SetVectors
    from bias.core.statistics.bootstrap import DEFAULT_RESAMPLES, Interval, association_ci, generator, interval
    from bias.core.pair_metrics.scoring import PairScores
    from bias.core.statistics.multiple_testing import benjamini_hochberg, holm
    from bias.core.pair_metrics.metric import PairMetric, Refusal
    from bias.core.statistics.association import (
        ALTERNATIVES,
        PermutationTest,
        association_scores,
        effect_size,
        fresh_seed,
        n_partitions,
        no_spread,
        normal_p,
        permutation_test,
        unit_rows,
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bias.api' has no attribute '{name}'")


__all__ = [
    "ALTERNATIVES",
    "ANALOGIES",
    "ASSOCIATION",
    "BIAS_TYPES",
    "DEBIAS_LISTS",
    "DEFAULT_RESAMPLES",
    "FAILED",
    "FAILURE",
    "LPBS",
    "MODEL_INPUT",
    "OK",
    "ON_THE_FLY",
    "PAIRS",
    "REFUSED",
    "STATIC_VECTORS",
    "TEMPLATES",
    "USAGE",
    "WORDSET_INPUT",
    "Analogies",
    "AssociationMetric",
    "AssociationTest",
    "BiasError",
    "Capability",
    "ChoiceRequest",
    "ChoiceScores",
    "Cost",
    "DataKind",
    "DataPackage",
    "DebiasLists",
    "Debiaser",
    "Embedder",
    "GenerationRequest",
    "Generations",
    "InputRequest",
    "Interval",
    "LpbsTest",
    "MaskedRequest",
    "Measured",
    "Message",
    "Metric",
    "PairMetric",
    "PairScores",
    "PairSet",
    "PermutationTest",
    "Problem",
    "Quote",
    "Refusal",
    "Reply",
    "ResolvedModel",
    "Result",
    "Sampling",
    "SentencePair",
    "SetVectors",
    "TemplateSet",
    "TokenScores",
    "Tokens",
    "WordList",
    "WordSetFormat",
    "WordSetMeta",
    "WordVectors",
    "association_ci",
    "association_scores",
    "benjamini_hochberg",
    "between",
    "bootstrap_cost",
    "effect_size",
    "generator",
    "holm",
    "int_at_least",
    "interval",
    "n_partitions",
    "no_spread",
    "normal_p",
    "one_of",
    "param",
    "permutation_cost",
    "permutation_test",
    "fresh_seed",
    "unit_rows",
]
