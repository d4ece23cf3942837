"""Text vector files (`.vec`, word2vec text, GloVe) read by streaming, keeping only the rows asked
for.

The `.vec` files published with fastText hold millions of rows, gigabytes as text, while a bias test
needs a few dozen words. Scanning the file for those words keeps memory proportional to the request.
Rows found and words known to be absent are remembered, so a word costs at most one scan over the
lifetime of the embedder, and a request with several new words scans once for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, ClassVar

import attrs
import numpy as np
from bias.api import BiasError, Capability, WordVectors
from bias.api.static import (
    HEADERLESS_TEXT,
    WORD2VEC_TEXT,
    FileFormat,
    StaticEmbedder,
    existing_file,
    open_vectors_file,
    sniff_format,
    unique,
    words_to_vectors,
    wrong_format,
)


def _key(word: str) -> bytes | None:
    """The word as it appears at the start of a row; words are compared as bytes so rows of words
    nobody asked for are never decoded."""
    try:
        return word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None


@attrs.define
class StreamedTextEmbedder(StaticEmbedder):
    """word2vec/fastText text vectors, with or without a header line, plain or gzip-compressed."""

    name: ClassVar[str] = "vec"
    summary: ClassVar[str] = (
        "word2vec/fastText .vec text vectors, streamed: only the rows of requested words are kept."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
    )

    location: str = attrs.field(
        metadata={"help": "path of the .vec text file (header line optional, .gz accepted)"}
    )
    _path: Path | None = attrs.field(default=None, init=False, repr=False)
    _format: FileFormat | None = attrs.field(default=None, init=False, repr=False)
    _rows: dict[str, np.ndarray] = attrs.field(factory=dict, init=False, repr=False)
    _absent: set[str] = attrs.field(factory=set, init=False, repr=False)
    _scans: int = attrs.field(default=0, init=False, repr=False)
    _rows_in_file: int | None = attrs.field(default=None, init=False, repr=False)

    def load(self) -> None:
        """Only the format is checked here; rows are read when words are asked for."""
        if self._format is not None:
            return
        path = existing_file(self._resolved())
        found = sniff_format(path)
        if found.kind not in (WORD2VEC_TEXT, HEADERLESS_TEXT):
            raise wrong_format(path, self.name, found, "a .vec text file")
        self._path, self._format = path, found
        if found.count is not None:
            self._check_row_count()

    def _check_row_count(self) -> None:
        """The header's row count against the file's rows, counted by newlines (fast; no parsing):
        word2vec reads the same file, and one file must not give two answers."""
        assert self._format is not None and self._format.count is not None
        rows, last = 0, b"\n"
        with self._open() as handle:
            handle.readline()
            for block in iter(lambda: handle.read(1 << 24), b""):
                rows += block.count(b"\n")
                last = block[-1:]
        rows += last != b"\n"
        if rows != self._format.count:
            with self._open() as handle:  # blank lines are not rows: count exactly before refusing
                handle.readline()
                rows = sum(1 for line in handle if line.strip())
        announced, dim = self._format.count, self._format.dim
        if rows != announced:
            raise BiasError(
                f"Cannot read {self._path} with {self.name}: its header line (line 1: "
                f'"{announced} {dim}") announces {announced} '
                f"rows, but the file holds {rows} (lines 2 to {rows + 1}).",
                f'Correct the header to "{rows} {dim}", or restore the missing rows.',
            )
        self._rows_in_file = rows

    @property
    def dim(self) -> int:
        self.load()
        assert self._format is not None and self._format.dim is not None
        return self._format.dim

    def _open(self) -> IO[bytes]:
        assert self._path is not None and self._format is not None
        return open_vectors_file(self._path, self._format.compressed)

    def _scan(self, wanted: set[str]) -> None:
        """One pass over the file for all of `wanted`, stopping as soon as every one is found."""
        assert self._path is not None and self._format is not None
        dim = self.dim
        targets = {_key(word): word for word in wanted}
        self._scans += 1
        rows_seen = 0
        complete = True
        try:
            with self._open() as handle:
                if self._format.count is not None:
                    handle.readline()
                line_no = 1 if self._format.count is not None else 0
                for line in handle:
                    line_no += 1
                    if not line.strip():
                        continue
                    rows_seen += 1
                    key, _, rest = line.partition(b" ")
                    word = targets.pop(key, None)
                    if word is None:
                        continue
                    self._rows[word] = self._parse(rest, line_no, dim)
                    if not targets:
                        complete = False
                        break
        except (OSError, EOFError) as error:
            raise BiasError(
                f"Cannot read {self._path} with {self.name}: {error}.",
                "The file may be truncated or damaged.",
            ) from error
        announced = self._format.count
        if complete and announced is not None and rows_seen != announced:
            raise BiasError(
                f"Cannot read {self._path} with {self.name}: its header line (line 1: "
                f'"{announced} {dim}") announces {announced} '
                f"rows, but the file holds {rows_seen} (lines 2 to {rows_seen + 1}).",
                f'Correct the header to "{rows_seen} {dim}", or restore the missing rows.',
            )
        self._absent.update(targets.values())
        if complete:
            self._rows_in_file = rows_seen

    def _parse(self, rest: bytes, line_no: int, dim: int) -> np.ndarray:
        parts = rest.split()
        try:
            vector = np.array(parts, dtype=np.float64)
        except ValueError:
            vector = None
        if vector is None or vector.shape != (dim,):
            raise BiasError(
                f"Cannot read {self._path} with {self.name}: line {line_no} does not hold "
                f"{dim} numbers after the word.",
                "Rows must all have the width of the first row (or of the header line); "
                "the file may be damaged.",
            )
        return vector

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.load()
        requested = unique(words)
        new = {w for w in requested if w not in self._rows and w not in self._absent}
        impossible = {
            w for w in new if not w or any(c.isspace() for c in w) or _key(w) is None
        }  # no row holds them
        self._absent.update(impossible)
        new -= impossible
        if new:
            self._scan(new)
        found = [w for w in requested if w in self._rows]
        lost = [w for w in requested if w not in self._rows]
        return words_to_vectors(found, [self._rows[w] for w in found], self.dim, lost)

    def _rows_of_file(self, limit: int | None) -> Any:
        """(word, unparsed numbers, line number) of the file's rows in order, the first `limit` of
        them (all when None); only the rows wanted are ever parsed."""
        assert self._format is not None
        with self._open() as handle:
            if self._format.count is not None:
                handle.readline()
            line_no = 1 if self._format.count is not None else 0
            taken = 0
            for line in handle:
                line_no += 1
                if limit is not None and taken >= limit:
                    return
                if not line.strip():
                    continue
                key, _, rest = line.partition(b" ")
                taken += 1
                yield key.decode("utf-8", "replace"), rest, line_no

    def _words(self, limit: int | None) -> list[str]:
        """The words in the file's order, read by streaming (only the words are kept)."""
        return [word for word, _, _ in self._rows_of_file(limit)]

    def _vectors(self, limit: int | None) -> WordVectors:
        """The first `limit` rows as one float32 matrix. The rows are counted first (one cheap pass)
        so the matrix is allocated once: memory is about one copy of the vectors, never a list of
        rows plus the matrix."""
        count = sum(1 for _ in self._rows_of_file(limit))
        matrix = np.empty((count, self.dim), dtype=np.float32)
        words = []
        for i, (word, rest, line_no) in enumerate(self._rows_of_file(limit)):
            if i >= count:
                break
            matrix[i] = self._parse(rest, line_no, self.dim)
            words.append(word)
        return WordVectors(tuple(words), matrix[: len(words)])

    def describe(self) -> dict[str, Any]:
        self.load()
        assert self._format is not None
        vocab = self._format.count if self._format.count is not None else self._rows_in_file
        return {
            "dim": self.dim,
            "vocab_size": vocab,
            "format": self._format.kind,
            "compressed": self._format.compressed,
            "streamed": True,
            "path": str(self._path),
        }
