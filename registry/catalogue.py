"""What is installed: one row per plugin (and per word set), with its status.

Listing word sets reads only the header of each file (the metadata above its first table); listing
other plugins reads their declared summary and needs from the source (`static_summary`) and imports
a plugin only when that is not possible. Neither imports torch, gensim or fastText. Within
`listing_cache.remembered()` (as `bias list` runs it) both answers come from a cache of what the
last listing read, for files that have not changed since."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.data.kinds import known_kinds
from bias.core.data.wordsets import REQUIRED_META, DataPackage, check_meta, errors_of, meta_of
from bias.core.data.file_reading import read_toml
from bias.registry import entry_points as eps
from bias.registry import listing_cache

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
        from bias.core.capabilities import Capability

        caps = set(getattr(plugin, "capabilities", ()))
        # A fixed vocabulary marks static vectors: they answer sentence requests with the mean of
        # their word vectors, which is not a contextual encoding.
        static = Capability.VOCABULARY in caps
        names = (
            ["static word vectors" if static else "word vectors"]
            if Capability.WORD_VECTORS in caps
            else []
        )
        if Capability.CONTEXTUAL in caps:
            names.append("sentence vectors (mean)" if static else "contextual")
        shown = caps - {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
        names += [c.value for c in sorted(shown, key=lambda c: c.value)]
        return ", ".join(names)
    if group == "metrics":
        from bias.core.compatibility import describe_needs

        return f"{getattr(plugin, 'data_kind', '?')} data; needs {describe_needs(plugin)}"
    if group == "debiasers":
        return "fit/transform"
    return ""


def list_plugins(
    group: str | None = None,
    language: str | None = None,
    bias_type: str | None = None,
    *,
    origins: bool = True,
) -> list[PluginInfo]:
    """Every installed plugin of `group` (all groups when None) as a row. `origins=False` leaves
    each row's distribution and version empty: reading them scans every installed distribution's
    metadata, a tenth of `bias list`'s time, and the short listing does not show them."""
    groups = [eps.group_key(group)] if group else list(eps.GROUPS)
    rows: list[PluginInfo] = []
    for key in groups:
        if key == "wordsets":
            rows.extend(wordset_rows(language=language, bias_type=bias_type, origins=origins))
            continue
        infos = eps.entry_points(key)
        dups = eps.duplicates(infos)
        for info in infos:
            rows.append(_plugin_row(key, info, dups, origins))
    if group is None:
        # Word-set format importers are internal and not listed while they work; a broken one is
        # listed, so the files it should read are not silently left without an importer.
        infos = eps.entry_points("formats")
        dups = eps.duplicates(infos)
        rows.extend(
            r
            for r in (_plugin_row("formats", info, dups, origins) for info in infos)
            if r.status == BROKEN
        )
    return rows


# What the static reading must have found to describe a plugin without importing it.
_NEEDED = {"embedders": ("capabilities",), "metrics": ("requires", "data_kind")}


def _plugin_row(
    group: str,
    info: eps.EntryPointInfo,
    dups: dict[str, list[eps.EntryPointInfo]],
    origins: bool = True,
) -> PluginInfo:
    base = dict(group=group, name=info.name, target=info.value, **_origin_of(info, origins))
    if info.name in dups:
        return PluginInfo(
            kind="",
            summary="",
            status=BROKEN,
            reason=eps.duplicate_error(group, info.name, dups[info.name]).message,
            **base,
        )
    declared = listing_cache.declared(info.value)
    if declared is not None and all(k in declared for k in _NEEDED.get(group, ())):
        plugin: Any = SimpleNamespace(**declared)
        return PluginInfo(kind=kind_of(group, plugin), summary=plugin.summary, **base)
    try:
        plugin = eps.load(group, info.name)
    except BiasError as exc:
        return PluginInfo(
            kind="", summary="", status=BROKEN, reason=exc.message.split(" is broken: ")[-1], **base
        )
    return PluginInfo(kind=kind_of(group, plugin), summary=getattr(plugin, "summary", ""), **base)


@attrs.frozen
class WordSetEntry:
    """Where a named word set lives: its package entry point and its file (the distribution that
    publishes it is read only when asked for)."""

    name: str
    path: Path
    language: str
    entry_point: eps.EntryPointInfo

    @property
    def distribution(self) -> str:
        return self.entry_point.distribution

    @property
    def version(self) -> str:
        return self.entry_point.version


def data_packages() -> list[tuple[eps.EntryPointInfo, DataPackage | None, str]]:
    """Every registered data package, or the reason it could not be loaded."""
    out = []
    for info in eps.entry_points("wordsets"):
        try:
            package = listing_cache.package(
                info.value, lambda name=info.name: eps.load("wordsets", name)
            )
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
                    f"Word set '{name}' is published twice: by "
                    f"{entries[name].distribution} and by {info.distribution}.",
                    "Uninstall one of them; word-set names must be unique.",
                )
            entries[name] = WordSetEntry(name, path, package.language, info)
    return entries


def installed_languages() -> list[str]:
    """The language codes of the installed language packages (what `--language` takes)."""
    return sorted(
        {
            package.language if package is not None else info.name
            for info, package, _ in data_packages()
        }
    )


def check_language(language: str) -> None:
    """`--language` names an installed language by its code; 'dutch' or a typo is said, with the
    codes."""
    from bias.core.did_you_mean import suggestions

    codes = installed_languages()
    if language not in codes:
        raise BiasError(
            f"'{language}' is not the code of an installed language (--language takes a "
            "code such as nl).",
            suggestions(language, codes) or f"Installed: {', '.join(codes) or 'none'}.",
        )


def wordset_rows(
    language: str | None = None, bias_type: str | None = None, *, origins: bool = True
) -> list[PluginInfo]:
    rows = []
    for info, package, reason in data_packages():
        if package is None:
            if not language or info.name == language:
                rows.append(
                    PluginInfo(
                        "wordsets",
                        f"{info.name}/*",
                        "",
                        "",
                        info.distribution,
                        info.version,
                        BROKEN,
                        reason,
                        info.name,
                    )
                )
            continue
        if language and package.language != language:
            continue
        for path in package.files():
            name = f"{package.language}/{path.stem}"
            row = _wordset_row(name, path, info, origins)
            if bias_type and row.bias_type != bias_type:
                continue
            rows.append(row)
    return rows


# The fields a listing shows or checks; long prose (notes, and the description when there is a
# title) is not parsed to list a word set.
LISTED_FIELDS = ("format", "kind", "language", "bias_type", "title", "source", "licence")


def read_header(path: Path) -> dict[str, Any]:
    """The listed metadata of a house-format file: its top-level fields above the first table,
    parsed without the (possibly long) word lists and prose. Falls back to the whole file where the
    cut is not clean (a value that spans lines in an unexpected way) or the metadata is not all
    there."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = []
            for line in fh:
                if line.startswith("["):
                    break
                lines.append(line)
        header = _listed_fields(lines)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        header = None
    if header is None or not all(key in header for key in REQUIRED_META):
        return read_toml(path)
    return header


def _listed_fields(lines: list[str]) -> dict[str, Any]:
    """tomllib on the lines that set a listed field at top level (lines inside a multi-line string
    are skipped); the description only when there is no title, since the listing shows one of
    them."""
    wanted = set(LISTED_FIELDS)
    if not any(line.startswith("title") and line[5:].lstrip().startswith("=") for line in lines):
        wanted.add("description")
    kept, in_string = [], False
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line else ""
        opens = line.count('"""') + line.count("'''")
        if not in_string and key in wanted:
            if opens % 2:  # a multi-line value of a listed field: let the full parse read it
                return {}
            kept.append(line)
        if opens % 2:
            in_string = not in_string
    if in_string:  # the header was cut inside a multi-line string: a line of it started with "["
        return {}
    return tomllib.loads("".join(kept))


def _origin_of(info: eps.EntryPointInfo, origins: bool) -> dict[str, str]:
    """The distribution and version a row names (empty when not asked for)."""
    if not origins:
        return {"distribution": "", "version": ""}
    return {"distribution": info.distribution, "version": info.version}


def _wordset_row(
    name: str, path: Path, info: eps.EntryPointInfo, origins: bool = True
) -> PluginInfo:
    base = dict(group="wordsets", name=name, target=path.name, **_origin_of(info, origins))
    try:
        data = listing_cache.header(path, read_header, (*LISTED_FIELDS, "description"))
        meta = meta_of(data, path, name)
        errors = errors_of(check_meta(data, str(path), known=data))
        if not errors and meta.kind not in known_kinds():
            errors = [f"{path}: kind: '{meta.kind}' is not a word-set kind"]
    except BiasError as exc:
        return PluginInfo(
            kind="",
            summary="",
            status=BROKEN,
            reason=exc.message,
            language=name.split("/")[0],
            **base,
        )
    return PluginInfo(
        kind=meta.kind,
        summary=meta.title or meta.description,
        status=BROKEN if errors else OK,
        reason=str(errors[0]) if errors else "",
        language=meta.language,
        bias_type=meta.bias_type,
        **base,
    )
