"""Recognising a static vector file from its bytes, and checking that its rows match its header.

File formats are recognised from their bytes, never from the extension: people rename `.bin` to
`.txt` and back, and a wrong guess makes gensim fail deep inside a parser with a message about
struct sizes or broadcasting. `sniff_format` looks at the first bytes once, so a file given to the
wrong loader is refused with the name of the loader that would read it. Every static embedder uses
it for the same reason."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from bias.core.errors import BiasError

FASTTEXT_BIN = "fasttext-bin"
WORD2VEC_BINARY = "word2vec-binary"
WORD2VEC_TEXT = "word2vec-text"  # a header line "COUNT DIM", then one text row per word (also .vec)
HEADERLESS_TEXT = "headerless-text"  # rows only (GloVe, or a .vec written without header)
PICKLE = "pickle"
EMPTY = "empty"
UNKNOWN = "unknown"

FASTTEXT_MAGIC = 793712314  # first int32 of every fastText .bin / .ftz
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 1 << 20
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r"

_SUGGESTIONS: dict[str, tuple[str, str]] = {
    FASTTEXT_BIN: ("a fastText .bin model", "Use fasttext: for fastText .bin files."),
    WORD2VEC_BINARY: ("a word2vec binary file", "Use word2vec: for word2vec files."),
    WORD2VEC_TEXT: (
        "a word2vec/fastText text file with a header line",
        "Use word2vec: for word2vec files (loads it whole), or vec: to stream only the "
        "words needed.",
    ),
    HEADERLESS_TEXT: (
        "a text file of vectors without a header line (GloVe layout)",
        "Use glove: for GloVe files, or vec: to stream only the words needed.",
    ),
    PICKLE: (
        "a Python pickle (a gensim model saved with .save())",
        "Use kv: for gensim .kv/.model files, adding --allow-pickle only for files you trust.",
    ),
}


@attrs.frozen
class FileFormat:
    """What the first bytes of a file say about it."""

    kind: str
    detail: str
    dim: int | None = None
    count: int | None = None  # from a header line, when there is one
    compressed: bool = False
    header_bytes: int = 0  # length of the header line, newline included


def _read_head(path: Path) -> tuple[bytes, bool]:
    # through the one opener of vectors files (open_regular under it): a named pipe (a shared
    # model's tarball keeps one) blocked open() waiting for a writer, beyond the reach of Ctrl-C
    from bias.core.models.static.word2vec_files import open_vectors_file

    with open_vectors_file(path, compressed=False) as raw:
        head = raw.read(_SNIFF_BYTES)
    if not head.startswith(_GZIP_MAGIC):
        return head, False
    try:
        with open_vectors_file(path, compressed=True) as unzipped:
            return unzipped.read(_SNIFF_BYTES), True
    except (OSError, EOFError):
        return b"", True


def _parse_floats(parts: Sequence[bytes]) -> list[float] | None:
    try:
        return [float(p) for p in parts]
    except ValueError:
        return None


def _text_row(line: bytes) -> tuple[bytes, list[float]] | None:
    """(word, values) if `line` reads as one text row of a vector file."""
    parts = line.split()
    if len(parts) < 2:
        return None
    values = _parse_floats(parts[1:])
    return None if values is None else (parts[0], values)


def _looks_binary_row(rest: bytes, dim: int) -> bool:
    """A word, a space, then `dim` little-endian float32 values of a plausible size."""
    space = rest.find(b" ", 0, 1000)
    if space <= 0:
        return False
    raw = rest[space + 1 : space + 1 + 4 * dim]
    if len(raw) < 4 * dim:
        return False
    if not raw.translate(None, _TEXT_BYTES):  # nothing but text: a text row of another width
        return False
    values = np.frombuffer(raw, dtype="<f4")
    return bool(np.isfinite(values).all() and np.abs(values).max(initial=0.0) < 1e6)


MAX_DIM = 100_000  # numbers in a vector; the widest published embeddings have a few thousand


def sniff_format(path: Path) -> FileFormat:
    """Classify a vector file from its first megabyte (decompressed, if it is gzip)."""
    try:
        head, compressed = _read_head(path)
    except OSError as error:
        raise BiasError(
            f"Cannot read model file {path}: {error.strerror or error}.",
            "Check that the file is readable.",
        ) from error
    if compressed and not head:
        return FileFormat(UNKNOWN, "it is a damaged gzip file", compressed=True)
    if not head:
        return FileFormat(EMPTY, "the file is empty")
    if len(head) >= 8 and struct.unpack("<i", head[:4])[0] == FASTTEXT_MAGIC:
        return FileFormat(FASTTEXT_BIN, _SUGGESTIONS[FASTTEXT_BIN][0], compressed=compressed)
    if head[0] == 0x80 and len(head) > 1 and 2 <= head[1] <= 5:
        return FileFormat(PICKLE, _SUGGESTIONS[PICKLE][0], compressed=compressed)

    end = head.find(b"\n")
    first = head if end < 0 else head[:end]
    parts = first.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        count, dim = int(parts[0]), int(parts[1])
        rest = head[end + 1 :] if end >= 0 else b""
        if dim <= 0:
            return FileFormat(
                UNKNOWN,
                f"its header line announces {dim}-dimensional vectors",
                compressed=compressed,
            )
        if dim > MAX_DIM:  # no embedding is this wide: the header line itself is damaged
            return FileFormat(
                UNKNOWN,
                f'its header line (line 1: "{count} {dim}") announces {dim:,}-dimensional '
                "vectors, which no model has; "
                "the header is damaged",
                compressed=compressed,
            )
        row_end = rest.find(b"\n")
        row = _text_row(rest if row_end < 0 else rest[:row_end])
        fields = dict(dim=dim, count=count, compressed=compressed, header_bytes=end + 1)
        if row is not None and len(row[1]) == dim:
            return FileFormat(WORD2VEC_TEXT, _SUGGESTIONS[WORD2VEC_TEXT][0], **fields)
        if _looks_binary_row(rest, dim):
            return FileFormat(WORD2VEC_BINARY, _SUGGESTIONS[WORD2VEC_BINARY][0], **fields)
        if row is not None:
            return FileFormat(
                UNKNOWN,
                f"its header line announces {dim}-dimensional vectors but its first row "
                f"has {len(row[1])} numbers",
                **fields,
            )
        if not rest:
            return FileFormat(UNKNOWN, "its header line is followed by no vectors", **fields)
        return FileFormat(
            UNKNOWN, "its header line is followed by neither text nor binary word vectors", **fields
        )
    if end >= 0 or len(head) < _SNIFF_BYTES:
        row = _text_row(first)
        if row is not None and len(row[1]) > MAX_DIM:  # as a header's width is bounded
            return FileFormat(
                UNKNOWN,
                f"its first row has {len(row[1]):,} numbers, which no model has",
                compressed=compressed,
            )
        if row is not None:
            return FileFormat(
                HEADERLESS_TEXT,
                _SUGGESTIONS[HEADERLESS_TEXT][0],
                dim=len(row[1]),
                compressed=compressed,
            )
    return FileFormat(
        UNKNOWN,
        "its first bytes are neither a header line nor a row of numbers",
        compressed=compressed,
    )


def wrong_format(path: Path, loader: str, found: FileFormat, expected: str) -> BiasError:
    """The refusal for a file some other loader should read, naming that loader when there is
    one."""
    if found.kind in _SUGGESTIONS:
        return BiasError(
            f"Cannot load {path} with {loader}: it is {found.detail}, not {expected}.",
            _SUGGESTIONS[found.kind][1],
        )
    return BiasError(
        f"Cannot load {path} with {loader}: {found.detail}; {loader}: reads {expected}.",
        "Check that the file is complete and of the format the loader reads (see `bias "
        "list embedders`).",
    )


def existing_file(path: Path) -> Path:
    if not path.exists():
        raise BiasError(f"Model file not found: {path}", "Check the path given with --model.")
    if path.is_dir():
        raise BiasError(
            f"Model path {path} is a folder, not a file.",
            "Give the vector file itself with --model.",
        )
    return path


# --- rows against the header
# -----------------------------------------------------------------------


def check_header_fits(path: Path, found: FileFormat, loader: str, limit: int = 0) -> None:
    """A header promising more rows than the file can hold would make gensim allocate for all of
    them before failing; refuse it from the file size instead."""
    if found.compressed or found.count is None or found.dim is None:
        return
    per_row = 4 * found.dim + 2 if found.kind == WORD2VEC_BINARY else 2 * found.dim + 2
    available = path.stat().st_size - found.header_bytes
    if min(found.count, limit or found.count) * per_row > available:
        raise BiasError(
            f"Cannot load {path} with {loader}: its header announces {found.count} vectors "
            "of dimension "
            f"{found.dim}, more than the file's {available} bytes can hold.",
            "The file is truncated, or its header does not match the rows.",
        )


def check_text_rows(path: Path, found: FileFormat, loader: str, limit: int = 0) -> None:
    """One pass over a text vector file: every row holds a word and `dim` numbers, and a header's
    row count is the number of rows. A header announcing fewer rows would make gensim stop early and
    silently drop the rest; a short row would fail deep inside numpy without its line number."""
    from bias.core.models.static.word2vec_files import open_vectors_file

    dim = found.dim
    rows = 0
    header = found.count is not None
    with open_vectors_file(path, found.compressed) as handle:
        if header:
            handle.readline()
        for line_no, line in enumerate(handle, start=2 if header else 1):
            if not line.strip():
                continue
            rows += 1
            if limit and rows > limit:
                return
            width = len(line.split()) - 1
            if width != dim:
                where = "the header line" if header else "the first row"
                raise BiasError(
                    f"Cannot load {path} with {loader}: line {line_no} holds {width} "
                    f"numbers after its word, but {where} "
                    f"says vectors have {dim}.",
                    "Every row must hold a word and the same number of values; the file "
                    "may be damaged or cut.",
                )
    if header and rows != found.count:
        raise BiasError(
            f'Cannot load {path} with {loader}: its header line (line 1: "{found.count} '
            f'{dim}") announces {found.count} '
            f"rows, but the file holds {rows} (lines 2 to {rows + 1}).",
            f'Correct the header to "{rows} {dim}", or restore the missing rows.',
        )


def check_binary_rest(path: Path, found: FileFormat, kv: Any, loader: str) -> None:
    """A binary word2vec file with bytes left after the rows its header announces holds more vectors
    than the header says; reading only the announced ones would silently drop the others."""
    if (
        found.compressed
        or found.count is None
        or found.dim is None
        or len(kv.index_to_key) != found.count
    ):
        return
    used = found.header_bytes + sum(
        len(w.encode("utf-8", "replace")) + 1 + 4 * found.dim for w in kv.index_to_key
    )
    left = path.stat().st_size - used
    # one newline per row is allowed; a whole further row is not
    if left > found.count + 4 * found.dim:
        raise BiasError(
            f"Cannot load {path} with {loader}: its header line announces {found.count} "
            f"vectors of dimension {found.dim}, "
            f"but {left:,} bytes follow the last of them (more rows than the header says).",
            "Correct the header's row count, or write the file again.",
        )
