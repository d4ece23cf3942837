"""Discovery of plugins through entry points, loading one at a time, broken ones isolated.

Names, providing distribution and version come from entry-point metadata alone; a plugin module is
imported (through stevedore) only when it is used or described. A plugin that fails to import is
reported with its reason and never stops the others from loading.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from typing import Any

import attrs

from bias.core.errors import FAILURE, BiasError

GROUPS: dict[str, str] = {
    "embedders": "bias.embedders",
    "metrics": "bias.metrics",
    "wordsets": "bias.wordsets",
    "debiasers": "bias.debiasers",
}
FORMATS_GROUP = "bias.formats"  # importers of community word-set formats (internal group)
_ALIASES = {"embedder": "embedders", "metric": "metrics", "wordset": "wordsets", "debiaser": "debiasers"}


def group_key(group: str) -> str:
    key = _ALIASES.get(group, group)
    if key not in GROUPS and key != "formats":
        raise BiasError(f"Unknown plugin group '{group}'.", f"Groups are: {', '.join(GROUPS)}.")
    return key


def _namespace(group: str) -> str:
    key = group_key(group)
    return FORMATS_GROUP if key == "formats" else GROUPS[key]


@attrs.frozen
class EntryPointInfo:
    group: str
    name: str
    value: str
    distribution: str
    version: str


def entry_points(group: str) -> list[EntryPointInfo]:
    """Metadata of every entry point in a group; nothing is imported."""
    out = []
    for ep in importlib.metadata.entry_points(group=_namespace(group)):
        dist = getattr(ep, "dist", None)
        out.append(
            EntryPointInfo(
                group=group_key(group),
                name=ep.name,
                value=ep.value,
                distribution=dist.metadata["Name"] if dist is not None else "?",
                version=dist.version if dist is not None else "?",
            )
        )
    return sorted(out, key=lambda e: (e.name, e.distribution))


def duplicates(infos: list[EntryPointInfo]) -> dict[str, list[EntryPointInfo]]:
    by_name: dict[str, list[EntryPointInfo]] = {}
    for info in infos:
        by_name.setdefault(info.name, []).append(info)
    return {name: found for name, found in by_name.items() if len(found) > 1}


def duplicate_error(group: str, name: str, found: list[EntryPointInfo]) -> BiasError:
    who = " and ".join(f"{e.distribution} {e.version} ({e.value})" for e in found)
    return BiasError(
        f"Two distributions register the {group[:-1]} '{name}': {who}.",
        "Uninstall one of them; plugin names must be unique.",
        exit_code=FAILURE,
    )


def suggestions(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    if not close:
        close = [c for c in candidates if name.lower() in c.lower()][:3]
    return f"Did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def load(group: str, name: str) -> Any:
    """Import the object an entry point names; errors say which plugin and distribution failed."""
    from stevedore import NamedExtensionManager

    key = group_key(group)
    infos = entry_points(key)
    found = [i for i in infos if i.name == name]
    if not found:
        hint = suggestions(name, [i.name for i in infos]) or f"See `bias list {key}`."
        raise BiasError(f"No {key[:-1]} named '{name}' is installed.", hint)
    if len(found) > 1:
        raise duplicate_error(key, name, found)
    failures: list[str] = []

    def on_failure(manager: Any, ep: Any, err: BaseException) -> None:
        failures.append(f"{type(err).__name__}: {err}")

    # stevedore memoises entry points per namespace for the life of the process; drop that memo so a
    # plugin installed after the first lookup (a notebook, a test) is seen, as our listing sees it.
    NamedExtensionManager.ENTRY_POINT_CACHE.pop(_namespace(key), None)
    manager = NamedExtensionManager(_namespace(key), names=[name], on_load_failure_callback=on_failure)
    if failures or name not in manager.names():
        reason = failures[0] if failures else "the entry point could not be loaded"
        raise BiasError(
            f"Plugin '{name}' from {found[0].distribution} {found[0].version} is broken: {reason}",
            "Reinstall or fix that distribution; other plugins still work.",
            exit_code=FAILURE,
        )
    return manager[name].plugin
