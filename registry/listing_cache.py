"""What `bias list` read last time, kept on disk so that the next listing reads only what changed.

A listing parses an outline of every plugin module (`static_summary`) and the header of every
word-set file: with a few hundred of them, a good part of the command's time. Both answers follow
from files alone, so each is kept in one JSON file per Python environment under the cache folder
(`listing/` below `bias.core.cache_dir.cache_root()`) with the path, modification time, change time
and size of every file it was read from (and, for a plugin, the file its module resolves to and
whether each top-level import it checked is installed). A language package is kept too (its
language, word-set folder and description), while the module file its entry point names is
unchanged and the folder exists: importing the packages would import `bias.api`. An entry is used
only while all of these are unchanged; otherwise the file is read again and the entry replaced.
The whole cache is dropped when the code that reads (this module, `static_summary`, `catalogue`)
changes. A cache file that cannot be read or is malformed is ignored and rewritten; writing goes to
a temporary file in the same folder, renamed into place, and a failure to write never fails the
listing.

Only a caller that opens the cache (`with remembered():`, as `bias list` does) uses it; library
calls read the files as before."""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FORMAT = 2
# the reading the entries depend on
_CODE = (
    "catalogue.py",
    "static_summary.py",
    "listing_cache.py",
)
_OPEN: list[_Cache] = []


def cache_file() -> Path:
    """`<cache root>/listing/listing-<environment>.json`: one file per Python environment, so that
    environments sharing a home folder do not overwrite each other's entries."""
    from bias.core.cache_dir import cache_root

    # hashlib costs more to import
    environment = f"{zlib.crc32(os.path.realpath(sys.prefix).encode('utf-8', 'surrogatepass')):08x}"
    return cache_root() / "listing" / f"listing-{environment}.json"


@contextmanager
def remembered() -> Iterator[None]:
    """While open, plugin descriptions and word-set headers come from the cache where they are still
    valid; what had to be read is written back on the way out. Nested use shares the outer one."""
    if _OPEN:
        yield
        return
    try:
        path: Path | None = cache_file()
    except (OSError, RuntimeError):  # no home folder to put it in: list without a cache
        path = None
    cache = _Cache(path)
    _OPEN.append(cache)
    try:
        yield
    finally:
        _OPEN.pop()
        cache.save()


def header(
    path: Path, read: Callable[[Path], dict[str, Any]], fields: Sequence[str]
) -> dict[str, Any]:
    """`read(path)`, from the cache when the file is unchanged. Only headers made of `fields` alone
    are kept (a reader that fell back to the whole file is not worth keeping) and only when JSON
    gives them back equal (TOML dates would not)."""
    if not _OPEN:
        return read(path)
    cache = _OPEN[-1]
    key = str(path)
    signature = _signature(key)
    entry = cache.headers.get(key)
    if (
        signature is not None
        and isinstance(entry, list)
        and len(entry) == 2
        and entry[0] == signature
        and isinstance(entry[1], dict)
    ):
        cache.used.add(("headers", key))
        return dict(entry[1])
    found = read(path)
    if signature is not None and set(found) <= set(fields) and _same_in_json(found):
        cache.store("headers", key, [signature, found])
    return found


def declared(value: str) -> dict[str, Any] | None:
    """`static_summary.describe(value)`, from the cache when every file it was read from is
    unchanged and every import it checked is still installed (or still missing)."""
    from bias.registry import static_summary

    if not _OPEN or static_summary.already_imported(value):
        return static_summary.describe(value)
    cache = _OPEN[-1]
    entry = cache.plugins.get(value)
    if isinstance(entry, dict):
        try:
            if _still_valid(entry, value, static_summary):
                cache.used.add(("plugins", value))
                return _decode(entry["declared"])
        except (KeyError, TypeError, ValueError, AttributeError, ImportError):
            pass  # a malformed entry is read again
    found, files, names = static_summary.describe_with_sources(value)
    signatures = [[name, _signature(name)] for name in files]
    encoded = _encode(found)
    if encoded is not _UNKNOWN and all(s is not None for _, s in signatures):
        origin = _origin(value, static_summary)
        cache.store(
            "plugins",
            value,
            {"origin": origin, "files": signatures, "imports": names, "declared": encoded},
        )
    return found


def package(value: str, load: Callable[[], Any]) -> Any:
    """`load()`, the data package an entry point names; from the cache, without importing the
    package (and `bias.api` with it), while the module file it resolves to is unchanged and its
    word-set folder is still there. Only a `DataPackage` is kept."""
    from bias.core.data.wordsets import DataPackage
    from bias.registry import static_summary

    if not _OPEN:
        return load()
    cache = _OPEN[-1]
    module = value.partition(":")[0].strip()
    entry = cache.packages.get(value)
    try:
        if (
            isinstance(entry, dict)
            and module not in sys.modules
            and _origin(value, static_summary) == entry["origin"]
            and _signature(entry["origin"]) == entry["signature"]
            and os.path.isdir(entry["root"])
        ):
            cache.used.add(("packages", value))
            return DataPackage(
                language=str(entry["language"]),
                root=Path(entry["root"]),
                description=str(entry["description"]),
            )
    except (KeyError, TypeError, ValueError):
        pass  # a malformed entry is read again
    found = load()
    origin = _origin(value, static_summary)
    signature = _signature(origin) if origin else None
    if isinstance(found, DataPackage) and signature is not None:
        cache.store(
            "packages",
            value,
            {
                "origin": origin,
                "signature": signature,
                "language": found.language,
                "root": str(found.root),
                "description": found.description,
            },
        )
    return found


MAX_CACHE = 16 * 2**20  # the listing of a few hundred plugins and packages takes kilobytes


class _Cache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.code = [[name, _signature(str(Path(__file__).with_name(name)))] for name in _CODE]
        self.plugins: dict[str, Any] = {}
        self.headers: dict[str, Any] = {}
        self.packages: dict[str, Any] = {}
        self.used: set[tuple[str, str]] = set()
        self.installed: dict[str, bool] = {}
        self.changed = False
        loaded = self._load()
        if loaded is not None:
            self.plugins, self.headers, self.packages = loaded

    def _load(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
        if self.path is None:
            return None
        from bias.core.errors import BiasError
        from bias.core.regular_files import open_regular

        try:
            with open_regular(self.path, limit=MAX_CACHE, follow_links=False) as fh:
                data = json.load(fh)
        except (OSError, ValueError, RecursionError, BiasError):
            # missing, unreadable, not JSON, nested past reading, a pipe or too large: start afresh
            return None
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or data.get("code") != self.code
        ):
            return None
        sections = data.get("plugins"), data.get("headers"), data.get("packages")
        if not all(isinstance(section, dict) for section in sections):
            return None
        return sections  # type: ignore[return-value]

    def store(self, section: str, key: str, entry: Any) -> None:
        getattr(self, section)[key] = entry
        self.used.add((section, key))
        self.changed = True

    def save(self) -> None:
        """Write the entries back when something was read; entries of files that are gone are
        dropped."""
        if self.path is None or not self.changed:
            return
        for section in ("plugins", "headers", "packages"):
            entries = getattr(self, section)
            for key in [k for k in entries if (section, k) not in self.used]:
                if section == "headers" and _signature(key) is None:
                    del entries[key]
                elif section == "plugins" and not _files_exist(entries[key]):
                    del entries[key]
                elif section == "packages":
                    del entries[key]  # an entry point no longer installed
        data = {
            "format": FORMAT,
            "code": self.code,
            "plugins": self.plugins,
            "headers": self.headers,
            "packages": self.packages,
        }
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:  # a read-only or full disk: the next listing reads the files again
            try:
                temporary.unlink()
            except OSError:
                pass


_UNKNOWN = object()


def _signature(path: str) -> list[int] | None:
    """What tells a changed file: modification and change times in nanoseconds, and size."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size]


def _origin(value: str, static_summary: Any) -> str | None:
    try:
        return static_summary.origin(value.partition(":")[0].strip())
    except (ImportError, ValueError, OSError):
        return None


def _still_valid(entry: dict[str, Any], value: str, static_summary: Any) -> bool:
    if _origin(value, static_summary) != entry["origin"]:
        return False
    if not all(_signature(name) == signature for name, signature in entry["files"]):
        return False
    return all(
        _installed(name, static_summary) == found for name, found in entry["imports"].items()
    )


def _installed(name: str, static_summary: Any) -> bool:
    """static_summary.installed, asked once per name while the cache is open."""
    known = _OPEN[-1].installed
    if name not in known:
        known[name] = static_summary.installed(name)
    return known[name]


def _files_exist(entry: Any) -> bool:
    try:
        return all(_signature(name) is not None for name, _ in entry["files"])
    except (KeyError, TypeError, ValueError):
        return False


def _same_in_json(value: Any) -> bool:
    try:
        return bool(json.loads(json.dumps(value, ensure_ascii=False)) == value)
    except (TypeError, ValueError):
        return False


def _encode(found: dict[str, Any] | None) -> Any:
    """Declarations as JSON: text as is, a frozenset of capabilities as {"capabilities":
    [names]}."""
    if found is None:
        return None
    from bias.core.capabilities import Capability

    out: dict[str, Any] = {}
    for key, value in found.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, frozenset) and all(
            isinstance(member, Capability) for member in value
        ):
            out[key] = {"capabilities": sorted(member.name for member in value)}
        else:
            return _UNKNOWN
    return out


def _decode(encoded: Any) -> dict[str, Any] | None:
    if encoded is None:
        return None
    from bias.core.capabilities import Capability

    out: dict[str, Any] = {}
    for key, value in encoded.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, dict) and isinstance(value.get("capabilities"), list):
            out[key] = frozenset(Capability[name] for name in value["capabilities"])
        else:
            raise ValueError(f"unreadable declaration {key}")
    return out
