"""Discovery of plugins through entry points, loading one at a time, broken ones isolated.

Names, providing distribution and version come from entry-point metadata alone, read once per process
(again only when `sys.path` changes, or after `refresh()`); a plugin module is imported only when it
is used or described. A plugin that fails to import is reported with its reason and never stops the
others from loading.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Any

import attrs

from bias.core.did_you_mean import suggestions
from bias.core.errors import FAILURE, BiasError
from bias.core.data.kinds import KINDS_GROUP, share_kind_scan

GROUPS: dict[str, str] = {
    "embedders": "bias.embedders",
    "metrics": "bias.metrics",
    "wordsets": "bias.wordsets",
    "debiasers": "bias.debiasers",
}
FORMATS_GROUP = "bias.formats"  # importers of community word-set formats (internal group)
# Internal groups: not listed while they work. Kinds of word-set file are loaded by bias.core.data.wordsets
# itself (the data model cannot depend on the registry); they are scanned here to be described.
INTERNAL: dict[str, str] = {"formats": FORMATS_GROUP, "kinds": KINDS_GROUP}
_ALIASES = {"embedder": "embedders", "metric": "metrics", "wordset": "wordsets", "debiaser": "debiasers"}


def group_key(group: str) -> str:
    key = _ALIASES.get(group, group)
    if key not in GROUPS and key not in INTERNAL:
        raise BiasError(f"Unknown plugin group '{group}'.", f"Groups are: {', '.join(GROUPS)}.")
    return key


def _namespace(group: str) -> str:
    key = group_key(group)
    return INTERNAL[key] if key in INTERNAL else GROUPS[key]


@attrs.frozen
class EntryPointInfo:
    group: str
    name: str
    value: str
    distribution: str
    version: str


# One scan of the installed distributions per process and sys.path: {namespace: [(info, entry point)]}.
_SCANS: dict[tuple[str, ...], dict[str, list[tuple[EntryPointInfo, Any]]]] = {}


def refresh() -> None:
    """Forget the scanned entry points, so that distributions installed since are seen."""
    _SCANS.clear()


def _scan() -> dict[str, list[tuple[EntryPointInfo, Any]]]:
    key = tuple(sys.path)
    found = _SCANS.get(key)
    if found is not None:
        return found
    everything = importlib.metadata.entry_points()
    dists: dict[int, tuple[str, str]] = {}  # a distribution's METADATA is parsed once, not per entry point
    found = {}
    for namespace in (*GROUPS.values(), *INTERNAL.values()):
        rows = []
        for ep in everything.select(group=namespace):
            dist = getattr(ep, "dist", None)
            if dist is None:
                name, version = "?", "?"
            else:
                if id(dist) not in dists:
                    dists[id(dist)] = _name_and_version(dist)
                name, version = dists[id(dist)]
            group = next(k for k, v in {**GROUPS, **INTERNAL}.items() if v == namespace)
            rows.append((EntryPointInfo(group=group, name=ep.name, value=ep.value, distribution=name, version=version), ep))
        found[namespace] = sorted(rows, key=lambda row: (row[0].name, row[0].distribution))
    _SCANS.clear()
    _SCANS[key] = found
    share_kind_scan(ep for _, ep in found[KINDS_GROUP])
    return found


def _name_and_version(dist: Any) -> tuple[str, str]:
    """A distribution's Name and Version, parsed from the header of its METADATA alone: the body after
    the first blank line is the long description (often a whole README), which `dist.metadata` would
    parse, and `dist.version` parse again. Where the header does not give both, `dist` is asked."""
    import email

    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    header = email.message_from_string(text.split("\n\n", 1)[0])
    name, version = header.get("Name"), header.get("Version")
    if not name or not version:
        return dist.metadata["Name"], dist.version
    return name, version


def entry_points(group: str) -> list[EntryPointInfo]:
    """Metadata of every entry point in a group; nothing is imported."""
    return [info for info, _ in _scan()[_namespace(group)]]


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


def load(group: str, name: str) -> Any:
    """Import the object an entry point names; errors say which plugin and distribution failed."""
    key = group_key(group)
    infos = entry_points(key)
    found = [i for i in infos if i.name == name]
    if not found:
        hint = suggestions(name, [i.name for i in infos]) or f"See `bias list {key}`."
        raise BiasError(f"No {key[:-1]} named '{name}' is installed.", hint)
    if len(found) > 1:
        raise duplicate_error(key, name, found)
    ep = next(ep for info, ep in _scan()[_namespace(key)] if info == found[0])
    try:
        return ep.load()
    except Exception as exc:  # any failure of a third party's import is reported, never raised as is
        raise BiasError(
            f"Plugin '{name}' from {found[0].distribution} {found[0].version} is broken: {type(exc).__name__}: {exc}",
            "Reinstall or fix that distribution; other plugins still work.",
            exit_code=FAILURE,
        ) from exc
