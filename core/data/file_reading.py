"""Reading a data file as UTF-8 text, JSON or TOML: every kind of word set and every importer
reads through here, so they all fail alike, with a message naming the file and what to do.

JSON nested deeper than any data file of this tool (`MAX_DEPTH`), and TOML nested thousands deep,
are refused before they exhaust Python's recursion; `file_head` and `content_lines` read only the
start of a file, for a format's `sniff`.
"""

from __future__ import annotations

import contextlib
import io
import os
import tomllib  # in the standard library from Python 3.11, the oldest version this project supports
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bias.core.errors import DIGITS, BiasError, said_as_data
from bias.core.regular_files import open_regular, article


def read_text(
    path: str | Path,
    kind: str = "word-set file",
    *,
    limit: int | None = None,
    longest_line: int | None = 2**20,
) -> str:
    """A UTF-8 text file (a byte-order mark dropped), or a BiasError naming the file and what to do:
    every importer of the plain-text and CSV formats reads through here, so they fail alike.

    `limit` (default MAX_TEXT_FILE) bounds the file, MAX_LINES its lines and `longest_line` each
    line (None for a JSON document, which may be one line): every line, and every word or cell in
    it, becomes an object once read, so a file of short pieces costs up to 60 times its size."""
    try:
        with open_regular(path, limit=limit or MAX_TEXT_FILE, what=kind) as fh:
            raw = fh.read()
        if raw.count(b"\n") >= MAX_LINES:
            _too_much(path, kind, f"more than {MAX_LINES:,} lines")
        if longest_line and len(raw) > longest_line:
            if max(map(len, raw.split(b"\n"))) > longest_line:
                _too_much(path, kind, f"a line of more than {longest_line:,} bytes")
        return raw.decode("utf-8-sig")
    except FileNotFoundError:
        raise BiasError(
            f"{kind[0].upper() + kind[1:]} not found: {path}", "Check the path."
        ) from None
    except IsADirectoryError:
        raise BiasError(f"{path} is a folder, not a {kind}.") from None
    except UnicodeDecodeError as exc:
        raise BiasError(
            f"{path}: not UTF-8 text ({exc.reason}).", "Save the file as UTF-8."
        ) from None


def _too_much(path: str | Path, kind: str, what: str) -> None:
    raise BiasError(
        f"{path} has {what}, more than {article(kind)} {kind} may hold; nothing was read from it.",
        "Give the file of the test itself (the largest published ones have tens of thousands of "
        "lines of a few hundred bytes).",
    )


# A data file is read whole: bounded, so that a sparse file of gigabytes (a few kilobytes in an
# archive) is refused, not read, and so is one whose lines or words, each an object once read, would
# fill memory (50 MiB of two-letter lines took 3 GB, a 15 MiB TOML set of a million words 2.2 GB).
# The bounds are tens of times the largest published file of each kind.
MAX_TEXT_FILE = 4 * 2**20  # a WEAT file is kilobytes; CrowS-Pairs half a megabyte
MAX_DATASET_FILE = 32 * 2**20  # what a dataset's importer may ask for (BBQ's largest file: 16 MB)
MAX_JSON_FILE = 8 * 2**20  # a JSON document (StereoSet's dev set: a few megabytes)
MAX_LINES = 1_000_000
MAX_TOML_FILE = 4 * 2**20  # the largest TOML data file shipped is 40 KB

MAX_DEPTH = 64  # levels of nesting a data file may have; the formats read here need four at most


def parse_json(text: str, where: object) -> Any:
    """JSON of a data file, or a BiasError naming `where` and what is wrong: every importer that
    reads JSON goes through here, so a syntax error, a document nested thousands deep (which would
    exhaust Python's recursion) and one merely too deep to be data are refused alike."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BiasError(
            f"{where}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.",
            "Fix the syntax there.",
        ) from None
    except ValueError as exc:
        raise BiasError(f"{where}: {_unreadable('JSON', exc)}.", "Fix the value.") from None
    except RecursionError:
        value = None
        depth = MAX_DEPTH + 1
    else:
        depth = nesting(value)
    if depth > MAX_DEPTH:
        raise BiasError(
            f"{where}: JSON nested more than {MAX_DEPTH} levels deep; no data file of this tool "
            "is.",
            "Check that this is the file you meant.",
        )
    return value


def read_json(path: str | Path, kind: str = "word-set file") -> Any:
    """A UTF-8 JSON file through `read_text` and `parse_json` (within `parsed_once`, once)."""
    if not _ONCE:
        return _parsed(path, kind)
    status = os.stat(path)
    key = (str(path), status.st_ino, status.st_size, status.st_mtime_ns)
    if key not in _ONCE[-1]:
        try:
            _ONCE[-1][key] = (None, _parsed(path, kind))
        except (OSError, BiasError) as exc:
            _ONCE[-1][key] = (exc, None)
    failed, value = _ONCE[-1][key]
    if failed is not None:
        raise failed
    return value


def _parsed(path: str | Path, kind: str) -> Any:
    return parse_json(read_text(path, kind, limit=MAX_JSON_FILE, longest_line=None), path)


_ONCE: list[dict[tuple[Any, ...], tuple[BaseException | None, Any]]] = []


@contextlib.contextmanager
def parsed_once() -> Iterator[None]:
    """Within it, a JSON file is parsed once however many formats sniff it (five JSON formats each
    parsed and checked an 8 MiB file of 2.7M records: 62 s). What a format's `record` reads later,
    outside it, is parsed afresh, so nothing a sniff saw is shared with what a run may change."""
    _ONCE.append({})
    try:
        yield
    finally:
        _ONCE.pop()


def nesting(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack.extend((child, depth + 1) for child in item)
    return deepest


def file_head(path: str | Path, chars: int = 4096) -> str | None:
    """The first `chars` characters of a text file (undecodable bytes replaced), or None when it
    cannot be read: what a format's `sniff` looks at, without reading a large file whole."""
    try:
        with open_regular(path) as raw, io.TextIOWrapper(raw, "utf-8-sig", "replace") as fh:
            return fh.read(chars)
    except (OSError, BiasError):
        return None


def content_lines(path: str | Path, count: int = 20) -> list[str] | None:
    """The first `count` lines that are neither blank nor `#` comments (without their line ends), or
    None when the file cannot be read as UTF-8: what the line-based formats sniff."""
    lines: list[str] = []
    try:
        # a megabyte at most: the file may be one endless line
        with open_regular(path) as binary:
            head = binary.read(_SNIFFED)
        if len(head) == _SNIFFED:  # cut after its last whole line
            head = head[: head.rfind(b"\n") + 1]
        text = head.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        for raw in text.split("\n"):
            stripped = raw.strip()
            if stripped and not stripped.startswith("#"):
                lines.append(raw)
                if len(lines) >= count:
                    break
    except (OSError, UnicodeDecodeError, BiasError):
        return None
    return lines


_SNIFFED = 2**20


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file (a byte-order mark dropped) as a dict, or a BiasError naming the file."""
    try:
        with open_regular(path, limit=MAX_TOML_FILE, what="TOML file") as fh:
            raw = fh.read()
        # Editors on Windows often start UTF-8 files with a byte-order mark, which TOML forbids.
        data = tomllib.loads(raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
        huge = _huge_number(data)
        if huge is not None:
            raise BiasError(f"{path}: {huge}: {DIGITS}.", "Fix the value.")
        return data
    except FileNotFoundError:
        raise BiasError(f"File not found: {path}", "Check the path.") from None
    except IsADirectoryError:
        raise BiasError(f"{path} is a folder, not a TOML file.") from None
    except tomllib.TOMLDecodeError as exc:
        raise BiasError(f"{path}: malformed TOML: {exc}", "Fix the syntax at that line.") from exc
    except RecursionError:
        raise BiasError(
            f"{path}: TOML nested too deeply to read (thousands of levels).",
            "Check that this is the file you meant.",
        ) from None
    except UnicodeDecodeError as exc:
        raise BiasError(
            f"{path}: not UTF-8 text ({exc.reason}).", "Save the file as UTF-8."
        ) from exc
    except ValueError as exc:
        raise BiasError(f"{path}: {_unreadable('TOML', exc)}.", "Fix the value.") from None


_HUGE = 10**4300


def _huge_number(data: dict[str, Any]) -> str | None:
    """The field of the first integer of more than 4,300 digits: TOML reads one written in hex,
    octal or binary whatever its length, and Python then refuses to write it out in decimal
    (a message, a results line), a failure far from the file. Fields are named only once one is
    found (a file of a million numbers would make a million names)."""
    values: list[Any] = [data]
    while values:
        value = values.pop()
        if isinstance(value, int) and abs(value) >= _HUGE:
            break
        if isinstance(value, dict):
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
    else:
        return None
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        field, value = stack.pop()
        if isinstance(value, int) and abs(value) >= _HUGE:
            return field
        if isinstance(value, dict):
            stack.extend((f"{field}.{k}" if field else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{field}[{i}]", v) for i, v in enumerate(value))
    return None


def _unreadable(what: str, exc: ValueError) -> str:
    said = said_as_data(exc)
    return f"unreadable {what}: {said}" if said == DIGITS else f"unreadable {what} ({exc})"
