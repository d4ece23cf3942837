"""The stable API for plugin authors: everything a third-party metric, embedder, debiaser, data
kind, format importer or language package imports, in one place.

A plugin that imports only from `bias.api` (and `bias.testing` in its tests) keeps working when the
framework's modules are reorganised: these names are the promise, the modules behind them are not
(CONTRIBUTING.md, "The public API", says how a name may change). The sub-modules
(`bias.api.association`, `.lm`, `.static`, `.hf`, `.services`, `.debiasing`, `.decisions`, `.data`)
are provisional: the shared libraries the first-party plugins build on, usable by anyone but free to
change between minor versions.

The import statements below are the one list of names. Those under `if TYPE_CHECKING:` come from
modules that import numpy or scipy: they are imported on first use, so that importing bias.api (a
language package does, when `bias list` reads it) stays light; the registry reads the same
statements from this file's source to follow a plugin's base class without importing anything.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from bias.core.runs.budget import Cost, bootstrap_cost, permutation_cost
from bias.core.errors import FAILURE, USAGE, BiasError
from bias.core.interfaces import (
    MODEL_INPUT,
    ON_THE_FLY,
    STATIC_VECTORS,
    WORDSET_INPUT,
    Capability,
    Contact,
    Debiaser,
    Embedder,
    InputRequest,
    Measured,
    Metric,
    Quote,
    ResolvedModel,
)
from bias.core.lm_requests import ChoiceRequest, ChoiceScores, MaskedRequest, Tokens, TokenScores
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
from bias.core.params import at_most, between, int_at_least, one_of, param
from bias.core.values import ValueKind
from bias.core.data.importers import WordSetFormat
from bias.core.generation import GenerationRequest, Generations, Message, Reply, Sampling
from bias.core.data.kinds import DataKind
from bias.core.data.wordsets import DataPackage, Problem

# Data classes of the other kinds of word set, for metrics that take them.
from bias.core.data.analogies import Analogies
from bias.core.data.debias_lists import DebiasLists
from bias.core.data.lpbs_tests import LpbsTest
from bias.core.data.minimal_pairs import PairSet, SentencePair
from bias.core.data.templates import TemplateSet

if TYPE_CHECKING:
    # Base classes of the two common metric shapes: a metric over the looked-up vectors of X, Y,
    # A and B, and a metric over per-pair scores of a language model (a refusal is returned, not
    # raised).
    from bias.core.association import AssociationMetric, SetVectors
    from bias.core.pair_metrics.metric import PairMetric, Refusal
    from bias.core.pair_metrics.scoring import PairScores

    # Statistics to reuse rather than rewrite (signatures in CONTRIBUTING.md): the permutation test
    # of two groups of scores, Cohen's d, bootstrap intervals, the multiple-testing corrections and
    # the intervals of a proportion.
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
    from bias.core.statistics.bootstrap import (
        DEFAULT_RESAMPLES,
        Interval,
        association_ci,
        generator,
        interval,
    )
    from bias.core.statistics.multiple_testing import benjamini_hochberg, holm
    from bias.core.statistics.proportions import normal_interval, wilson_interval


def _lazy() -> dict[str, str]:
    """Name -> module of the imports under `if TYPE_CHECKING:` above, read from this file once."""
    if not _LAZY:
        tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
        blocks = [n for n in tree.body if isinstance(n, ast.If)]
        block = next(n for n in blocks if ast.unparse(n.test) == "TYPE_CHECKING")
        for node in block.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                _LAZY.update({alias.asname or alias.name: node.module for alias in node.names})
    return _LAZY


_LAZY: dict[str, str] = {}
_OWN = {"annotations", "ast", "importlib", "Path", "ModuleType", "TYPE_CHECKING", "Any"}


def __getattr__(name: str) -> Any:
    if name == "__all__":
        # Its sub-modules, once imported, are attributes of the package too: they are no names.
        public = (n for n, v in globals().items() if n[0] != "_" and n not in _OWN)
        public = (n for n in public if not isinstance(globals()[n], ModuleType))
        return sorted({*public, *_lazy()})
    module = _lazy().get(name)
    if module is None:
        raise AttributeError(f"module 'bias.api' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __getattr__("__all__")
