"""What is installed: one row per plugin (and per word set), with its status.

Listing word sets reads their TOML headers; listing other plugins imports their (light) modules to
show the one-line summary and to find broken ones. Neither imports torch, gensim or fastText.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.wordsets import DataPackage, check_record, errors_of, meta_of, read_toml
from bias.registry import entry_points as eps

OK = "ok"
BROKEN = "broken"


@attrs.frozen
class PluginInfo:
    group: str
    name: str
    kind: str
    summary: str
    distribution: str
    version: str
    status: str = OK
    reason: str = ""
    language: str = ""
    bias_type: str = ""
    target: str = ""  # entry-point value, or the data file of a word set

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def kind_of(group: str, plugin: Any) -> str:
    if group == "embedders":
        return ", ".join(sorted(c.value for c in getattr(plugin, "capabilities", ())))
    if group == "metrics":
        from bias.core.interfaces import describe_needs

        return f"{getattr(plugin, 'data_kind', '?')} data; needs {describe_needs(plugin)}"
    if group == "debiasers":
        return "fit/transform"
    return ""


def list_plugins(group: str | None = None, language: str | None = None, bias_type: str | None = None) -> list[PluginInfo]:
    groups = [eps.group_key(group)] if group else list(eps.GROUPS)
    rows: list[PluginInfo] = []
    for key in groups:
        if key == "wordsets":
            rows.extend(wordset_rows(language=language, bias_type=bias_type))
            continue
        infos = eps.entry_points(key)
        dups = eps.duplicates(infos)
        for info in infos:
            rows.append(_plugin_row(key, info, dups))
    return rows


def _plugin_row(group: str, info: eps.EntryPointInfo, dups: dict[str, list[eps.EntryPointInfo]]) -> PluginInfo:
    base = dict(group=group, name=info.name, distribution=info.distribution, version=info.version, target=info.value)
    if info.name in dups:
        return PluginInfo(kind="", summary="", status=BROKEN, reason=eps.duplicate_error(group, info.name, dups[info.name]).message, **base)
    try:
        plugin = eps.load(group, info.name)
    except BiasError as exc:
        return PluginInfo(kind="", summary="", status=BROKEN, reason=exc.message.split(" is broken: ")[-1], **base)
    return PluginInfo(kind=kind_of(group, plugin), summary=getattr(plugin, "summary", ""), **base)


@attrs.frozen
class WordSetEntry:
    """Where a named word set lives: its package entry point and its file."""

    name: str
    path: Path
    language: str
    distribution: str
    version: str


def data_packages() -> list[tuple[eps.EntryPointInfo, DataPackage | None, str]]:
    """Every registered data package, or the reason it could not be loaded."""
    out = []
    for info in eps.entry_points("wordsets"):
        try:
            package = eps.load("wordsets", info.name)
        except BiasError as exc:
            out.append((info, None, exc.message.split(" is broken: ")[-1]))
            continue
        if not isinstance(package, DataPackage):
            out.append((info, None, f"entry point '{info.value}' is not a DataPackage"))
            continue
        out.append((info, package, ""))
    return out


def wordset_entries(language: str | None = None) -> dict[str, WordSetEntry]:
    entries: dict[str, WordSetEntry] = {}
    for info, package, _ in data_packages():
        if package is None or (language and package.language != language):
            continue
        for path in package.files():
            name = f"{package.language}/{path.stem}"
            if name in entries:
                raise BiasError(
                    f"Word set '{name}' is published twice: by {entries[name].distribution} and by {info.distribution}.",
                    "Uninstall one of them; word-set names must be unique.",
                )
            entries[name] = WordSetEntry(name, path, package.language, info.distribution, info.version)
    return entries


def wordset_rows(language: str | None = None, bias_type: str | None = None) -> list[PluginInfo]:
    rows = []
    for info, package, reason in data_packages():
        if package is None:
            if not language or info.name == language:
                rows.append(PluginInfo("wordsets", f"{info.name}/*", "", "", info.distribution, info.version, BROKEN, reason, info.name))
            continue
        if language and package.language != language:
            continue
        for path in package.files():
            name = f"{package.language}/{path.stem}"
            row = _wordset_row(name, path, info)
            if bias_type and row.bias_type != bias_type:
                continue
            rows.append(row)
    return rows


def _wordset_row(name: str, path: Path, info: eps.EntryPointInfo) -> PluginInfo:
    base = dict(group="wordsets", name=name, distribution=info.distribution, version=info.version, target=path.name)
    try:
        data = read_toml(path)
        meta = meta_of(data, path, name)
        errors = errors_of(check_record(data, str(path)))
    except BiasError as exc:
        return PluginInfo(kind="", summary="", status=BROKEN, reason=exc.message, language=name.split("/")[0], **base)
    return PluginInfo(
        kind=meta.kind,
        summary=meta.title or meta.description,
        status=BROKEN if errors else OK,
        reason=str(errors[0]) if errors else "",
        language=meta.language,
        bias_type=meta.bias_type,
        **base,
    )
