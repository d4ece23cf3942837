"""Static word vectors read through gensim: word2vec (binary or text), GloVe text and gensim `.kv` files.

File formats are recognised from their bytes, never from the extension: people rename `.bin` to
`.txt` and back, and a wrong guess makes gensim fail deep inside a parser with a message about struct
sizes or broadcasting. `sniff_format` looks at the first bytes once, so a file given to the wrong
loader is refused with the name of the loader that would read it. The other static embedders share
it for the same reason.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordVectors
from bias.core.params import param
from bias.core.specs import resolve_location
from bias.core.static_vectors import (  # noqa: F401  (re-exported: other static embedders import them from here)
    STATIC_POOLINGS,
    check_static_request,
    static_encode,
    text_words,
    unique,
    words_to_vectors,
)

# --- recognising a file from its bytes ------------------------------------------------------------

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
        "Use word2vec: for word2vec files (loads it whole), or vec: to stream only the words needed.",
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
    with open(path, "rb") as raw:
        head = raw.read(_SNIFF_BYTES)
    if not head.startswith(_GZIP_MAGIC):
        return head, False
    try:
        with gzip.open(path, "rb") as unzipped:
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


def sniff_format(path: Path) -> FileFormat:
    """Classify a vector file from its first megabyte (decompressed, if it is gzip)."""
    try:
        head, compressed = _read_head(path)
    except OSError as error:
        raise BiasError(f"Cannot read model file {path}: {error.strerror or error}.", "Check that the file is readable.") from error
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
            return FileFormat(UNKNOWN, f"its header line announces {dim}-dimensional vectors", compressed=compressed)
        if dim > 100_000:  # no embedding is this wide: the header line itself is damaged
            return FileFormat(
                UNKNOWN, f"its header line (line 1: \"{count} {dim}\") announces {dim:,}-dimensional vectors, which no model has; "
                "the header is damaged", compressed=compressed,
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
                f"its header line announces {dim}-dimensional vectors but its first row has {len(row[1])} numbers",
                **fields,
            )
        if not rest:
            return FileFormat(UNKNOWN, "its header line is followed by no vectors", **fields)
        return FileFormat(UNKNOWN, "its header line is followed by neither text nor binary word vectors", **fields)
    if end >= 0 or len(head) < _SNIFF_BYTES:
        row = _text_row(first)
        if row is not None:
            return FileFormat(HEADERLESS_TEXT, _SUGGESTIONS[HEADERLESS_TEXT][0], dim=len(row[1]), compressed=compressed)
    return FileFormat(UNKNOWN, "its first bytes are neither a header line nor a row of numbers", compressed=compressed)


def wrong_format(path: Path, loader: str, found: FileFormat, expected: str) -> BiasError:
    """The refusal for a file some other loader should read, naming that loader when there is one."""
    if found.kind in _SUGGESTIONS:
        return BiasError(f"Cannot load {path} with {loader}: it is {found.detail}, not {expected}.", _SUGGESTIONS[found.kind][1])
    return BiasError(
        f"Cannot load {path} with {loader}: {found.detail}; {loader}: reads {expected}.",
        "Check that the file is complete and of the format the loader reads (see `bias list embedders`).",
    )


def existing_file(path: Path) -> Path:
    if not path.exists():
        raise BiasError(f"Model file not found: {path}", "Check the path given with --model.")
    if path.is_dir():
        raise BiasError(f"Model path {path} is a folder, not a file.", "Give the vector file itself with --model.")
    return path


def file_fingerprint(name: str, path: Path, extra: Iterable[Path] = ()) -> str:
    """Name, absolute path, size and modification time of the file (and of any side files)."""
    parts = [name]
    for p in (path, *extra):
        try:
            st = p.stat()
        except OSError:
            parts.append(f"{p}:missing")
            continue
        parts.append(f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def read_only(matrix: np.ndarray) -> np.ndarray:
    """A view of `matrix` that cannot be written through: whole-vocabulary methods get the model's own
    array without a copy, and cannot change the model behind its back."""
    view = matrix.view()
    view.flags.writeable = False
    return view


# --- gensim-backed embedders ----------------------------------------------------------------------


def _gensim_failure(path: Path, loader: str, expected: str, error: BaseException) -> BiasError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return BiasError(
        f"Cannot load {path} with {loader}: the file is not a valid {expected} ({reason}).",
        "The file may be damaged or truncated, or of another format (see `bias list embedders`).",
    )


@attrs.define
class _GensimStatic(Embedder):
    """Shared lookup for embedders whose whole vocabulary sits in a gensim KeyedVectors."""

    location: str = attrs.field(metadata={"help": "path of the vector file"})
    _kv: Any = attrs.field(default=None, init=False, repr=False)
    _path: Path | None = attrs.field(default=None, init=False, repr=False)
    _format: str = attrs.field(default="", init=False, repr=False)

    def _resolved(self) -> Path:
        return resolve_location(self.location)

    def load(self) -> None:
        if self._kv is not None:
            return
        path = existing_file(self._resolved())
        kv = self._open(path)
        if len(kv.index_to_key) == 0:
            raise BiasError(f"Cannot load {path} with {self.name}: it holds no vectors.", "Check that the file is complete.")
        self._kv, self._path = kv, path

    def _open(self, path: Path) -> Any:
        raise NotImplementedError

    def _approximate(self, word: str) -> np.ndarray | None:
        return None

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.load()
        kv = self._kv
        found, rows, lost, approximated = [], [], [], []
        for word in unique(words):
            index = kv.key_to_index.get(word)
            if index is not None:
                found.append(word)
                rows.append(kv.vectors[index])
                continue
            vector = self._approximate(word)
            if vector is None:
                lost.append(word)
            else:
                found.append(word)
                rows.append(vector)
                approximated.append(word)
        return words_to_vectors(found, rows, kv.vector_size, lost, approximated)

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """Mean of the vectors of the text's words (`text_words`), or of the words in the span."""
        self.load()
        return static_encode(self.name, self.word_vectors, int(self._kv.vector_size), texts, spans, pooling, layer)

    def vocabulary(self, limit: int | None = None) -> list[str]:
        """The words in the file's order (most frequent first for word2vec, GloVe and fastText files)."""
        self.load()
        return list(self._kv.index_to_key[: check_limit(limit)])

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        """The first `limit` words and their vectors as gensim holds them: float32, a read-only view of
        the loaded matrix (no copy)."""
        self.load()
        n = check_limit(limit)
        words = tuple(self._kv.index_to_key[:n])
        return WordVectors(words, read_only(self._kv.vectors[: len(words)]))

    def fingerprint(self) -> str:
        return file_fingerprint(self.name, self._resolved())

    def describe(self) -> dict[str, Any]:
        self.load()
        return {
            "dim": int(self._kv.vector_size),
            "vocab_size": len(self._kv.index_to_key),
            "format": self._format,
            "path": str(self._path),
        }


def check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise BiasError(f"A vocabulary limit must be a whole number >= 0 (or none for all), not {limit!r}.")
    return limit


def _check_header_fits(path: Path, found: FileFormat, loader: str, limit: int = 0) -> None:
    """A header promising more rows than the file can hold would make gensim allocate for all of them
    before failing; refuse it from the file size instead."""
    if found.compressed or found.count is None or found.dim is None:
        return
    per_row = 4 * found.dim + 2 if found.kind == WORD2VEC_BINARY else 2 * found.dim + 2
    available = path.stat().st_size - found.header_bytes
    if min(found.count, limit or found.count) * per_row > available:
        raise BiasError(
            f"Cannot load {path} with {loader}: its header announces {found.count} vectors of dimension "
            f"{found.dim}, more than the file's {available} bytes can hold.",
            "The file is truncated, or its header does not match the rows.",
        )


def check_text_rows(path: Path, found: FileFormat, loader: str, limit: int = 0) -> None:
    """One pass over a text vector file: every row holds a word and `dim` numbers, and a header's row
    count is the number of rows. A header announcing fewer rows would make gensim stop early and
    silently drop the rest; a short row would fail deep inside numpy without its line number."""
    dim = found.dim
    opener = gzip.open if found.compressed else open
    rows = 0
    header = found.count is not None
    with opener(path, "rb") as handle:
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
                    f"Cannot load {path} with {loader}: line {line_no} holds {width} numbers after its word, but {where} "
                    f"says vectors have {dim}.",
                    "Every row must hold a word and the same number of values; the file may be damaged or cut.",
                )
    if header and rows != found.count:
        raise BiasError(
            f"Cannot load {path} with {loader}: its header line (line 1: \"{found.count} {dim}\") announces {found.count} "
            f"rows, but the file holds {rows} (lines 2 to {rows + 1}).",
            f"Correct the header to \"{rows} {dim}\", or restore the missing rows.",
        )


def check_binary_rest(path: Path, found: FileFormat, kv: Any, loader: str) -> None:
    """A binary word2vec file with bytes left after the rows its header announces holds more vectors
    than the header says; reading only the announced ones would silently drop the others."""
    if found.compressed or found.count is None or found.dim is None or len(kv.index_to_key) != found.count:
        return
    used = found.header_bytes + sum(len(w.encode("utf-8", "replace")) + 1 + 4 * found.dim for w in kv.index_to_key)
    left = path.stat().st_size - used
    if left > found.count + 4 * found.dim:  # one newline per row is allowed; a whole further row is not
        raise BiasError(
            f"Cannot load {path} with {loader}: its header line announces {found.count} vectors of dimension {found.dim}, "
            f"but {left:,} bytes follow the last of them (more rows than the header says).",
            "Correct the header's row count, or write the file again.",
        )


@attrs.define
class Word2VecEmbedder(_GensimStatic):
    """Reads both word2vec layouts; binary or text is decided from the bytes after the header, so a
    misnamed file still loads and a file of another format is refused with the loader to use."""

    name: ClassVar[str] = "word2vec"
    summary: ClassVar[str] = "word2vec vectors (binary or text, detected from the file), read whole with gensim."
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})

    limit: int = param(0, "read only the first N vectors of the file (0: all)", validator=attrs.validators.ge(0))
    unicode_errors: str = param(
        "strict",
        "how to decode words that are not valid UTF-8: strict, replace or ignore (word2vec.c may cut words mid-character)",
        validator=attrs.validators.in_(("strict", "replace", "ignore")),
    )

    def _open(self, path: Path) -> Any:
        found = sniff_format(path)
        if found.kind not in (WORD2VEC_BINARY, WORD2VEC_TEXT):
            raise wrong_format(path, self.name, found, "a word2vec file")
        if found.compressed and path.suffix != ".gz":
            raise BiasError(f"Cannot load {path} with {self.name}: it is gzip-compressed but not named .gz.", "Rename it to end in .gz, or use vec: which reads it as it is.")
        _check_header_fits(path, found, self.name, self.limit)
        binary = found.kind == WORD2VEC_BINARY
        if not binary:
            check_text_rows(path, found, self.name, self.limit)
        from gensim.models import KeyedVectors

        try:
            kv = KeyedVectors.load_word2vec_format(str(path), binary=binary, limit=self.limit or None, unicode_errors=self.unicode_errors)
        except Exception as error:  # gensim raises ValueError, EOFError, UnicodeDecodeError, struct.error...
            raise _gensim_failure(path, self.name, "word2vec " + ("binary" if binary else "text") + " file", error) from error
        if binary and not self.limit:
            check_binary_rest(path, found, kv, self.name)
        self._format = found.kind
        return kv


@attrs.define
class GloveEmbedder(_GensimStatic):
    """GloVe's own text layout has no header line; a file with one is word2vec text and is sent there,
    since reading its header as a one-dimensional word would fail on the next row anyway."""

    name: ClassVar[str] = "glove"
    summary: ClassVar[str] = "GloVe vectors (text rows without a header line), read whole with gensim."
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})

    limit: int = param(0, "read only the first N vectors of the file (0: all)", validator=attrs.validators.ge(0))

    def _open(self, path: Path) -> Any:
        found = sniff_format(path)
        if found.kind != HEADERLESS_TEXT:
            raise wrong_format(path, self.name, found, "a GloVe text file")
        if found.compressed and path.suffix != ".gz":
            raise BiasError(f"Cannot load {path} with {self.name}: it is gzip-compressed but not named .gz.", "Rename it to end in .gz, or use vec: which reads it as it is.")
        check_text_rows(path, found, self.name, self.limit)
        from gensim.models import KeyedVectors

        try:
            kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True, limit=self.limit or None)
        except Exception as error:
            raise _gensim_failure(path, self.name, "GloVe text file", error) from error
        self._format = found.kind
        return kv


@attrs.define
class KeyedVectorsEmbedder(_GensimStatic):
    """gensim's own `.save()` files are pickles: opening one runs whatever code it was made to run, so
    they load only when the user says they trust the file. A full Word2Vec/FastText model is accepted
    too (its `.wv` is used); a FastText model's sub-word vectors stand in for unknown words."""

    name: ClassVar[str] = "kv"
    summary: ClassVar[str] = "gensim KeyedVectors or model saved with .save() (.kv/.model; a pickle, needs --allow-pickle)."
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})

    allow_pickle: bool = param(False, "load the file although it is a pickle, which can run code: only for files you trust")
    mmap: bool = param(False, "memory-map the arrays saved beside the file (.npy) instead of reading them into memory")

    def _open(self, path: Path) -> Any:
        found = sniff_format(path)  # reads bytes only; nothing is unpickled before the user allows it
        if found.kind != PICKLE:
            raise wrong_format(path, self.name, found, "a gensim .kv/.model file")
        if not self.allow_pickle:
            raise BiasError(
                f"Refusing to load {path} with kv: gensim .kv/.model files are pickles, and loading one can run arbitrary code.",
                "Pass --allow-pickle only for files you trust.",
            )
        from gensim.models import KeyedVectors
        from gensim.models.fasttext import FastTextKeyedVectors

        try:
            loaded = KeyedVectors.load(str(path), mmap="r" if self.mmap else None)
        except FileNotFoundError as error:
            raise BiasError(
                f"Cannot load {path} with kv: a file saved beside it is missing ({Path(str(error.filename or error)).name}).",
                "gensim saves large arrays as separate .npy files next to the .kv/.model file; copy them along.",
            ) from error
        except Exception as error:
            raise _gensim_failure(path, self.name, "gensim .kv/.model file", error) from error
        kv = getattr(loaded, "wv", loaded)
        if not isinstance(kv, KeyedVectors):
            raise BiasError(
                f"Cannot load {path} with kv: it holds a {type(loaded).__name__}, not gensim word vectors.",
                "Give a file written by KeyedVectors.save() or by a Word2Vec/FastText model's save().",
            )
        self._format = "fasttext-kv" if isinstance(kv, FastTextKeyedVectors) else "kv"
        return kv

    def _approximate(self, word: str) -> np.ndarray | None:
        kv = self._kv
        if self._format != "fasttext-kv" or not word or getattr(kv, "bucket", 0) == 0:
            return None
        vector = np.asarray(kv.get_vector(word), dtype=np.float64)
        if not np.isfinite(vector).all() or not vector.any():
            return None
        return vector

    def fingerprint(self) -> str:
        path = self._resolved()
        sidecars = sorted(path.parent.glob(path.name + ".*.npy")) if path.parent.exists() else []
        return file_fingerprint(self.name, path, sidecars)


__all__ = [
    "static_encode",
    "check_limit",
    "text_words",
    "read_only",
    "GloveEmbedder",
    "KeyedVectorsEmbedder",
    "Word2VecEmbedder",
    "FileFormat",
    "sniff_format",
    "wrong_format",
    "file_fingerprint",
]
