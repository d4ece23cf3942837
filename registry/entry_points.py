"""Plugin discovery and loading on stevedore, one plugin at a time, broken ones isolated.

The entry points of a group are listed from stevedore's entry-point cache (one JSON file per set of
installed distributions, rebuilt when one changes), so naming or finding a plugin reads no
distribution's metadata. A plugin is imported through a stevedore `DriverManager` when it is used:
a failure to import is reported by its failure callback with the plugin and its distribution named,
and never stops the others from loading; two distributions registering one name are refused by its
conflict resolver, naming both. Which distribution provides an entry point (stevedore's cache does
not say) is read from the installed metadata only when a listing or an error shows it.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Any

import attrs
from stevedore import DriverManager, NamedExtensionManager

from bias.core.data.kinds import KINDS_GROUP, share_kind_scan
from bias.core.did_you_mean import suggestions
from bias.core.errors import FAILURE, BiasError

GROUPS: dict[str, str] = {
    "embedders": "bias.embedders",
    "metrics": "bias.metrics",
    "wordsets": "bias.wordsets",
    "debiasers": "bias.debiasers",
}
FORMATS_GROUP = "bias.formats"  # importers of community word-set formats (internal group)
# Internal groups: not listed while they work. Kinds of word-set file are loaded by
# bias.core.data.kinds itself (the data model cannot depend on the registry); they are listed here
# to be described, and the list is shared with it.
INTERNAL: dict[str, str] = {"formats": FORMATS_GROUP, "kinds": KINDS_GROUP}
_ALIASES = {
    "embedder": "embedders",
    "metric": "metrics",
    "wordset": "wordsets",
    "debiaser": "debiasers",
}


def group_key(group: str) -> str:
    key = _ALIASES.get(group, group)
    if key not in GROUPS and key not in INTERNAL:
        raise BiasError(f"Unknown plugin group '{group}'.", f"Groups are: {', '.join(GROUPS)}.")
    return key


def _namespace(group: str) -> str:
    key = group_key(group)
    return INTERNAL[key] if key in INTERNAL else GROUPS[key]


# stevedore keeps the entry points it listed in `ENTRY_POINT_CACHE`, for the whole process and
# every namespace. The managers here keep theirs per `sys.path` instead, so that a distribution put
# on the path later (a plugin installed into a running session, or by a test) is seen.
_LISTED: dict[tuple[str, ...], dict[str, list[importlib.metadata.EntryPoint]]] = {}


class _PerPath:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        key = tuple(sys.path)
        if key not in _LISTED:
            _LISTED.clear()
            _LISTED[key] = {}
        self.ENTRY_POINT_CACHE = _LISTED[key]
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]


class _Lister(_PerPath, NamedExtensionManager):
    """A manager that loads nothing (no name is asked for): it lists a namespace."""


class _Driver(_PerPath, DriverManager):
    """The manager that loads one plugin by name."""


def refresh() -> None:
    """Forget the listed entry points, so that distributions installed since are seen."""
    _LISTED.clear()
    _DISTRIBUTIONS.clear()
    # stevedore also keeps, per process, the listing it read for each sys.path: a distribution
    # added to a folder already on the path is not seen until that is forgotten too.
    from stevedore import _cache

    _cache._c._internal.clear()


def _entry_points(namespace: str) -> list[importlib.metadata.EntryPoint]:
    first = not _LISTED.get(tuple(sys.path))
    listed = _Lister(namespace, names=(), on_missing_entrypoints_callback=None).list_entry_points()
    if first:  # the data model finds kinds of word-set file in the same listing
        share_kind_scan(listed if namespace == KINDS_GROUP else _entry_points(KINDS_GROUP))
    return listed


@attrs.frozen
class EntryPointInfo:
    """An entry point of a group; its distribution is read when first asked for."""

    group: str
    name: str
    value: str

    @property
    def distribution(self) -> str:
        return distribution_of(self)[0]

    @property
    def version(self) -> str:
        return distribution_of(self)[1]


def entry_points(group: str) -> list[EntryPointInfo]:
    """Every entry point of a group, sorted by name; nothing is imported."""
    key = group_key(group)
    found = {EntryPointInfo(key, ep.name, ep.value) for ep in _entry_points(_namespace(key))}
    return sorted(found, key=lambda info: (info.name, info.value))


# Which installed distribution declares each entry point: {sys.path: {(namespace, name, value):
# [(distribution, version), ...]}}, read from the metadata once per path, and only when asked.
_DISTRIBUTIONS: dict[tuple[str, ...], dict[tuple[str, str, str], list[tuple[str, str]]]] = {}


def distribution_of(info: EntryPointInfo) -> tuple[str, str]:
    """The name and version of the distribution that declares `info` ("?" where none is found)."""
    found = _declared_by().get((_namespace(info.group), info.name, info.value))
    return found[0] if found else ("?", "?")


def _declared_by() -> dict[tuple[str, str, str], list[tuple[str, str]]]:
    key = tuple(sys.path)
    if key not in _DISTRIBUTIONS:
        everything = importlib.metadata.entry_points()
        dists: dict[int, tuple[str, str]] = {}  # a distribution's METADATA is parsed once
        found: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        for namespace in (*GROUPS.values(), *INTERNAL.values()):
            for ep in everything.select(group=namespace):
                if ep.dist is None:
                    continue
                if id(ep.dist) not in dists:
                    dists[id(ep.dist)] = _name_and_version(ep.dist)
                declared = found.setdefault((namespace, ep.name, ep.value), [])
                if dists[id(ep.dist)] not in declared:
                    declared.append(dists[id(ep.dist)])
        _DISTRIBUTIONS.clear()
        _DISTRIBUTIONS[key] = found
    return _DISTRIBUTIONS[key]


def _name_and_version(dist: Any) -> tuple[str, str]:
    """A distribution's Name and Version, parsed from the header of its METADATA alone: the body
    after the first blank line is the long description (often a whole README), which
    `dist.metadata` would parse, and `dist.version` parse again. Where the header does not give
    both, `dist` is asked."""
    import email

    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    header = email.message_from_string(text.split("\n\n", 1)[0])
    name, version = header.get("Name"), header.get("Version")
    if not name or not version:
        return dist.metadata["Name"], dist.version
    return name, version


def duplicates(infos: list[EntryPointInfo]) -> dict[str, list[EntryPointInfo]]:
    """The names registered more than once in `infos`, with every registration."""
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

    def broken(manager: Any, ep: importlib.metadata.EntryPoint, exc: BaseException) -> None:
        info = EntryPointInfo(key, ep.name, ep.value)
        raise BiasError(
            f"Plugin '{name}' from {info.distribution} {info.version} is broken: "
            f"{type(exc).__name__}: {exc}",
            "Reinstall or fix that distribution; other plugins still work.",
            exit_code=FAILURE,
        ) from exc

    def conflict(namespace: str, _name: str, extensions: list[Any]) -> Any:
        found = [EntryPointInfo(key, e.entry_point.name, e.entry_point.value) for e in extensions]
        raise duplicate_error(key, name, found)

    infos = [info for info in entry_points(key) if info.name == name]
    if not infos:
        known = [info.name for info in entry_points(key)]
        raise BiasError(
            f"No {key[:-1]} named '{name}' is installed.",
            suggestions(name, known) or f"See `bias list {key}`.",
        )
    if len(infos) > 1:  # refused before either is imported; the conflict resolver would load both
        raise duplicate_error(key, name, infos)
    manager = _Driver(
        _namespace(key),
        name,
        on_load_failure_callback=broken,
        on_missing_entrypoints_callback=None,
        conflict_resolver=conflict,
    )
    return manager.driver
