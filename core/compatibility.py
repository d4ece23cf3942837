"""Whether a metric can run on a model: the capabilities it needs and the kind of data it takes.

Asked before any work starts (when a run is planned, and by the runner once a model says what it
really offers after loading), and by `bias list` to say what each metric needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bias.core.errors import BiasError

if TYPE_CHECKING:
    from bias.core.interfaces import Capability, Embedder, Metric


def missing_capabilities(
    metric: Metric | type[Metric], have: frozenset[Capability] | set[Capability]
) -> list[str]:
    """What a metric needs that `have` lacks: each of `requires`, and one of `requires_any`."""
    missing = [c.value for c in sorted(metric.requires, key=str) if c not in have]
    any_of = metric.requires_any
    if any_of and not any(c in have for c in any_of):
        missing.append(" or ".join(sorted(c.value for c in any_of)))
    return missing


def describe_needs(metric: Metric | type[Metric]) -> str:
    """What a metric needs, in words, as `bias list metrics` shows it."""
    parts = sorted(c.value for c in metric.requires)
    any_of = metric.requires_any
    if any_of:
        parts.append(" or ".join(sorted(c.value for c in any_of)))
    return ", ".join(parts)


def check_compatible(
    metric: Metric | type[Metric], embedder: Embedder | type[Embedder], data_kind: str
) -> None:
    """Refuse a mismatch before any work starts, naming what is missing."""
    missing = missing_capabilities(metric, embedder.capabilities)
    if missing:
        raise BiasError(
            f"Metric '{metric.name}' needs {', '.join(missing)}, which embedder '{embedder.name}' "
            "does not give.",
            "Choose a model type that offers it (see `bias list embedders`).",
        )
    if data_kind != metric.data_kind:
        raise BiasError(
            f"Metric '{metric.name}' needs {metric.data_kind} data, but the word set given is of "
            f"kind {data_kind}.",
            f"Pick a word set of kind {metric.data_kind} (see `bias list wordsets`).",
        )
