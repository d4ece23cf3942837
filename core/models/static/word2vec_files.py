"""Reading word2vec files (binary and text) and GloVe text files whole, without gensim.

Importing gensim costs about three quarters of a CPU second (it pulls in scipy.stats and more), more
than a whole WEAT run on a small file; these formats are simple enough to read here. The reading
follows word2vec.c's layout as gensim's `load_word2vec_format` reads it, with the same numbers
(float32 values) and the same conventions: `limit` keeps the first rows, a word listed twice keeps
its first vector (with a warning), a binary row's word is the bytes up to its space with the
previous row's newline left out, and a header that promises more rows than the file holds is an
error. Text rows are split on any whitespace and blank lines are skipped, as the format checks that
run before (`bias.core.models.static.formats.check_text_rows`) count them."""

from __future__ import annotations

import gzip
import logging
import os
from pathlib import Path
from typing import IO

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.models.static.formats import MAX_DIM
from bias.core.regular_files import BoundedLines, open_regular

log = logging.getLogger(__name__)

_CHUNK = 1 << 20  # bytes read at a time from a binary file


@attrs.define
class WordTable:
    """Words and their vectors, by row: the part of gensim's KeyedVectors the static embedders
    use."""

    index_to_key: list[str]
    key_to_index: dict[str, int]
    vectors: np.ndarray  # float32, one row per word

    @property
    def vector_size(self) -> int:
        return int(self.vectors.shape[1])


MAX_ROW_BYTES = 2**20  # a row of 300 numbers as text is 3 KB; 4,096 of them about 50 KB


def open_vectors_file(path: Path, compressed: bool | None = None) -> IO[bytes]:
    """A vectors file (gzip when `compressed`, by default when it ends in .gz) read as bytes, each
    line at most MAX_ROW_BYTES: a row of gigabytes (a sparse file, or 19 MB of gzip) would be held
    whole."""
    gz = path.suffix == ".gz" if compressed is None else compressed
    raw = open_regular(path, what="vectors file")  # a pipe refused; a memory error names it
    if not gz:
        return BoundedLines(raw, path, MAX_ROW_BYTES, "vectors file", None)  # type: ignore[return-value]
    unpacked = gzip.GzipFile(fileobj=raw, mode="rb")
    return BoundedLines(unpacked, path, MAX_ROW_BYTES, "vectors file", raw)  # type: ignore[return-value]


def _header(handle: IO[bytes]) -> tuple[int, int]:
    parts = handle.readline().split()
    if len(parts) != 2:
        raise ValueError("the first line is not a header 'COUNT DIM'")
    return int(parts[0]), int(parts[1])


class _Rows:
    """Collects rows in file order; a repeated word keeps its first vector."""

    def __init__(self, count: int, dim: int) -> None:
        self.vectors = np.empty((count, dim), dtype=np.float32)
        self.words: list[str] = []
        self.index: dict[str, int] = {}
        self.repeated: list[str] = []

    def add(self, word: str, values: np.ndarray) -> None:
        if word in self.index:
            self.repeated.append(word)
            return
        self.index[word] = len(self.words)
        self.vectors[len(self.words)] = values
        self.words.append(word)

    def table(self, path: Path) -> WordTable:
        if self.repeated:
            log.warning(
                "%s lists %d word(s) more than once (e.g. %r); the first vector of each is kept.",
                path,
                len(self.repeated),
                self.repeated[0],
            )
        return WordTable(self.words, self.index, self.vectors[: len(self.words)])


def read_word2vec(
    path: Path, *, binary: bool, limit: int | None = None, unicode_errors: str = "strict"
) -> WordTable:
    """A word2vec file with its header line, binary or text."""
    with open_vectors_file(path) as handle:
        count, dim = _header(handle)
        if limit:
            count = min(count, limit)
        _check_claim(path, count, dim)
        rows = _Rows(count, dim)
        if binary:
            _binary_rows(handle, rows, count, dim, unicode_errors, path)
        else:
            _text_rows(handle, rows, count, dim, unicode_errors)
    return rows.table(path)


def _check_claim(path: Path, count: int, dim: int) -> None:
    """A header that claims more vectors than the machine's memory holds is refused as the input
    it is (it ended as a memory failure, exit 1); a smaller false claim fails when rows run out."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if count * dim * 4 > memory:
        raise BiasError(
            f"{path}: its header claims {count:,} vectors of {dim:,} numbers "
            f"({count * dim * 4:,} bytes), more than this machine's memory.",
            "Check that this is the file you meant.",
        )


def read_glove(path: Path, *, limit: int | None = None) -> WordTable:
    """A GloVe text file: rows only, the width read from the first row."""
    with open_vectors_file(path) as handle:
        first = next((line for line in handle if line.strip()), b"")
        dim = len(first.split()) - 1
    if dim > MAX_DIM:  # as a header's width is bounded (sniff_format)
        raise BiasError(
            f"{path}: its first row has {dim:,} numbers, which no model has.",
            "Check that this is the file you meant.",
        )
    with open_vectors_file(path) as handle:
        count = sum(1 for line in handle if line.strip())
    if limit:
        count = min(count, limit)
    rows = _Rows(count, dim)
    with open_vectors_file(path) as handle:
        _text_rows(handle, rows, count, dim, "strict")
    return rows.table(path)


def _text_rows(handle: IO[bytes], rows: _Rows, count: int, dim: int, unicode_errors: str) -> None:
    read = 0
    for line_no, line in enumerate(handle, start=1):
        if read == count:
            return
        parts = line.split()
        if not parts:
            continue
        if len(parts) != dim + 1:
            raise ValueError(f"invalid vector on line {line_no} (is this really the text format?)")
        rows.add(parts[0].decode("utf-8", unicode_errors), np.array(parts[1:], dtype=np.float64))
        read += 1
    if read < count:
        raise EOFError("unexpected end of input; is count incorrect or file otherwise damaged?")


def _binary_rows(
    handle: IO[bytes], rows: _Rows, count: int, dim: int, unicode_errors: str, path: Path
) -> None:
    width = 4 * dim
    buffer, at, read = b"", 0, 0
    while read < count:
        space = buffer.find(b" ", at)
        if space < 0 and len(buffer) - at > MAX_ROW_BYTES:  # a "word" of gigabytes (sparse)
            raise BiasError(
                f"{path} has a word of more than {MAX_ROW_BYTES:,} bytes at row {read + 1}; no "
                "row of a vectors file is that long.",
                "Check that this is the file you meant.",
            )
        if space < 0 or len(buffer) < space + 1 + width:
            more = handle.read(_CHUNK)
            if not more:
                raise EOFError(
                    "unexpected end of input; is count incorrect or file otherwise damaged?"
                )
            buffer, at = buffer[at:] + more, 0
            continue
        word = buffer[at:space].decode("utf-8", unicode_errors).lstrip("\n")
        rows.add(word, np.frombuffer(buffer, dtype="<f4", count=dim, offset=space + 1))
        at = space + 1 + width
        read += 1
