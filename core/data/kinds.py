"""Kinds of word-set file, found through the entry-point group `bias.kinds`.

A kind says how a house-format record (`kind = "..."`) is checked and built. The first-party kinds
are registered in the framework's own pyproject exactly as a third party registers one, so a new
kind of test data needs no change here. The data model cannot depend on the registry, so the entry
points are read here (or taken from the registry's one scan of every group, see `share_kind_scan`).
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from bias.core.errors import BiasError

if TYPE_CHECKING:
    from bias.core.data.wordsets import Problem


@attrs.frozen
class DataKind:
    """How one kind of house-format record is checked and built.

    A kind is whatever the entry point of group `bias.kinds` names, as long as it offers
    `check(data, file) -> list[Problem]` and `build(data, name, path)` (raising BiasError on errors;
    the object built has `.meta`): a module with those two functions, or an instance of this class.
    """

    check: Callable[[dict[str, Any], str], list[Problem]]
    build: Callable[[dict[str, Any], str, str], Any]


KINDS_GROUP = "bias.kinds"
# One scan of the installed kinds per sys.path (a distribution installed since then is seen).
_KINDS: dict[tuple[str, ...], dict[str, list[importlib.metadata.EntryPoint]]] = {}
_LOADED: dict[str, Any] = {}


def _kind_entry_points() -> dict[str, list[importlib.metadata.EntryPoint]]:
    key = tuple(sys.path)
    if key not in _KINDS:
        found: dict[str, list[importlib.metadata.EntryPoint]] = {}
        for ep in importlib.metadata.entry_points(group=KINDS_GROUP):
            found.setdefault(ep.name, []).append(ep)
        _KINDS.clear()
        _LOADED.clear()
        _KINDS[key] = found
    return _KINDS[key]


def share_kind_scan(entry_points: Iterable[importlib.metadata.EntryPoint]) -> None:
    """Take the `bias.kinds` entry points from a scan done elsewhere (the registry reads every group
    in one pass), so that the installed distributions are read once per process."""
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for ep in entry_points:
        found.setdefault(ep.name, []).append(ep)
    _KINDS.clear()
    _LOADED.clear()
    _KINDS[tuple(sys.path)] = found


def known_kinds() -> list[str]:
    """Every installed kind of word set, first-party and third-party alike (entry-point names
    only)."""
    return sorted(_kind_entry_points())


def kind_handler(kind: Any, file: str) -> Any:
    """The object that checks and builds records of `kind`, imported on first use."""
    found = _kind_entry_points().get(kind) if isinstance(kind, str) else None
    if not found:
        raise BiasError(
            f"{file}: '{kind}' is not a word-set kind.", f"Use one of: {', '.join(known_kinds())}."
        )
    if len({ep.value for ep in found}) > 1:
        who = " and ".join(f"{_distribution(ep)} ({ep.value})" for ep in found)
        raise BiasError(
            f"Two distributions register the word-set kind '{kind}': {who}.",
            "Uninstall one of them.",
        )
    if kind not in _LOADED:
        try:
            _LOADED[kind] = found[0].load()
        except Exception as exc:  # a third party's broken import is reported, never raised as is
            raise BiasError(
                f"The word-set kind '{kind}' from {_distribution(found[0])} is broken: "
                f"{type(exc).__name__}: {exc}",
                "Reinstall or fix that distribution.",
            ) from exc
    return _LOADED[kind]


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return (
        f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an unknown distribution"
    )
