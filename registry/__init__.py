"""The plugin registry: find installed embedders, metrics, word sets and debiasers by name.

    from bias import registry
    registry.list_plugins("metrics")             # rows with name, summary, distribution, status
    registry.get("metric", "weat")               # the plugin class (imported on first use)
    registry.wordsets(language="en", bias_type="gender")
    test = registry.load_wordset("en/weat6")
    embedder = registry.build_embedder("word2vec:vectors.bin")
    metric = registry.build_metric("weat", permutations=10_000)

Everything is discovered through entry points with stevedore, first-party plugins included
(see docs/architecture.md, "Finding plugins: stevedore").
"""

from __future__ import annotations

from typing import Any

from bias.registry.catalogue import PluginInfo, list_plugins, wordset_rows
from bias.registry.entry_points import GROUPS, load

# Building plugins and reading word sets (`resolve`) is imported when first asked for: `bias list`
# needs none of it.
_RESOLVE = ("build_embedder", "build_metric", "load_wordset", "wordset_names")


def __getattr__(name: str) -> Any:
    if name in _RESOLVE:
        from bias.registry import resolve

        return getattr(resolve, name)
    raise AttributeError(f"module 'bias.registry' has no attribute {name!r}")


def get(group: str, name: str) -> Any:
    """The plugin object registered under `name` in `group` (e.g. "metric", "weat")."""
    return load(group, name)


def names(group: str) -> list[str]:
    """Names in a group, from entry-point metadata (word sets: from the installed packages)."""
    from bias.registry.entry_points import entry_points, group_key

    if group_key(group) == "wordsets":
        from bias.registry.resolve import wordset_names

        return wordset_names()
    return sorted({e.name for e in entry_points(group)})


def value_declaration(metric: str) -> dict[str, Any] | None:
    """How the metric registered as `metric` labels its number (meta["value"] of its results), for
    results written before results carried it; None when no such metric loads."""
    from bias.core.errors import BiasError
    from bias.core.values import ValueKind

    try:
        value = getattr(load("metrics", metric), "value", None)
    except BiasError:
        return None
    return value.declared() if isinstance(value, ValueKind) else None


def wordsets(language: str | None = None, bias_type: str | None = None) -> list[PluginInfo]:
    """Installed word sets, optionally for one language and one bias type."""
    return wordset_rows(language=language, bias_type=bias_type)


__all__ = [
    "GROUPS",
    "PluginInfo",
    "build_embedder",
    "build_metric",
    "get",
    "list_plugins",
    "load_wordset",
    "names",
    "value_declaration",
    "wordsets",
]
