"""fastText `.bin` models read through the fastText library itself.

The library, not a re-implementation, builds the vectors, so a word missing from the vocabulary gets
exactly the sub-word vector fastText users get. Such words are used but reported as approximated:
a bias score built on character n-grams is not the same claim as one built on learned word vectors.
"""

from __future__ import annotations

import contextlib
import io
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import BiasError, Capability, WordVectors
from bias.api.static import (
    FASTTEXT_BIN,
    StaticEmbedder,
    check_static_request,
    existing_file,
    sniff_format,
    static_encode,
    text_words,
    wrong_format,
)

_MAX_VERSION = 12  # the newest .bin layout fastText writes
# magic, version, Args (12 int32 + a double), Dictionary counts
_HEADER = struct.Struct("<2i12id3i2q")
_SUPERVISED = 3  # fastText's model_name::sup


def layout_problem(path: Path) -> str | None:
    """Why the file cannot be a complete fastText model, or None.

    The fastText library trusts the file: a truncated `.bin` makes it loop forever reading the
    dictionary, or fill the matrices with whatever memory held. The header announces the size of the
    output matrix, which is the last thing in the file, so its position can be checked from the file
    size before the library sees the file. (Models whose output matrix is quantized do not have this
    layout and are refused.)
    """
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return "the file ends inside its header"
        fields = _HEADER.unpack(head)
        version, dim, bucket, model = fields[1], fields[2], fields[10], fields[9]
        entries, nwords, nlabels = fields[15], fields[16], fields[17]
        if not 0 < version <= _MAX_VERSION:
            return f"it declares fastText format version {version}, which this fastText cannot read"
        if dim <= 0 or bucket < 0 or nwords < 0 or nlabels < 0 or entries != nwords + nlabels:
            return "its header holds impossible sizes"
        rows = nlabels if model == _SUPERVISED else nwords
        tail = 1 + 16 + 4 * rows * dim  # quantised flag, (rows, dim) as int64, float32 values
        start = size - tail
        if start < _HEADER.size + 10 * entries:  # every dictionary entry takes at least 10 bytes
            return f"the file ({size} bytes) is smaller than the model its header announces"
        handle.seek(start)
        quantised, out_rows, out_dim = struct.unpack("<?2q", handle.read(17))
    if quantised or (out_rows, out_dim) != (rows, dim):
        return (
            f"the file ({size} bytes) does not end with the {rows} x {dim} output matrix its "
            "header announces"
        )
    return None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Swallow the warning some fastText releases print on every load: on a terminal it reads like a
    problem with the run, and it is about the library's Python API, not the model."""
    with contextlib.redirect_stderr(io.StringIO()):
        yield


def _askable(word: str) -> bool:
    """fastText splits text on whitespace, so no word of its own holds any, and the library cannot
    take a string that is not valid UTF-8: such words get no vector rather than an invented one."""
    if not word or any(c.isspace() for c in word):
        return False
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@attrs.define
class FastTextEmbedder(StaticEmbedder):
    """A fastText `.bin` (or `.ftz`): vectors for every word, from sub-words when it is unknown."""

    name: ClassVar[str] = "fasttext"
    summary: ClassVar[str] = (
        "fastText .bin model (official library); unknown words get sub-word vectors and "
        "are reported."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
    )
    libraries: ClassVar[tuple[str, ...]] = ("fasttext",)

    location: str = attrs.field(metadata={"help": "path of the fastText .bin file"})
    _model: Any = attrs.field(default=None, init=False, repr=False)
    _path: Path | None = attrs.field(default=None, init=False, repr=False)
    _vocab_size: int | None = attrs.field(default=None, init=False, repr=False)

    def load(self) -> None:
        if self._model is not None:
            return
        path = existing_file(self._resolved())
        found = sniff_format(path)
        if found.kind == FASTTEXT_BIN and found.compressed:
            raise BiasError(
                f"Cannot load {path} with {self.name}: it is a gzip-compressed fastText model.",
                "Decompress it first (gunzip); fastText reads .bin files as they are.",
            )
        if found.kind != FASTTEXT_BIN:
            raise wrong_format(path, self.name, found, "a fastText .bin model")
        problem = layout_problem(path)
        if problem:
            raise BiasError(
                f"Cannot load {path} with {self.name}: {problem}.",
                "The file is probably truncated or damaged; download or copy it again.",
            )
        import fasttext

        try:
            with _quiet_stderr():
                model = fasttext.load_model(str(path))
        except (
            Exception
        ) as error:  # the C++ side raises ValueError/RuntimeError/MemoryError on damaged files
            reason = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
            raise BiasError(
                f"Cannot load {path} with {self.name}: the fastText library could not read "
                f"it ({reason}).",
                "The file may be truncated or damaged; fastText .bin files are read whole.",
            ) from error
        self._model, self._path = model, path

    @property
    def dim(self) -> int:
        self.load()
        return int(self._model.get_dimension())

    def _vector(self, word: str) -> tuple[np.ndarray, bool] | None:
        if not _askable(word):
            return None
        model = self._model
        vector = np.asarray(model.get_word_vector(word), dtype=np.float64)
        if model.get_word_id(word) >= 0:
            return vector, False
        if word and np.isfinite(vector).all() and vector.any():
            return vector, True
        return None  # no known n-gram: fastText answers with zeros, which is no vector at all

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """Whole texts with mean pooling: fastText's own sentence vector (`get_sentence_vector`, the
        mean of the unit-normalised vectors of the whitespace-separated words), which is what
        fastText users compare. Spans, and first/last pooling, use the word vectors of the words
        (`text_words`)."""
        self.load()
        texts = list(texts)
        spans = check_static_request(self.name, texts, spans, pooling, layer)
        model = self._model
        dim = model.get_dimension()
        out = np.empty((len(texts), dim), dtype=np.float64)
        by_words = [i for i, span in enumerate(spans) if pooling != "mean" or span is not None]
        if by_words:
            out[by_words] = static_encode(
                self.name,
                self.word_vectors,
                dim,
                [texts[i] for i in by_words],
                [spans[i] for i in by_words],
                pooling,
                layer,
            )
        chosen = set(by_words)
        for row, text in enumerate(texts):
            if row in chosen:
                continue
            words = [w for w in text.split() if _askable(w)]
            # one line: no newlines
            vector = np.asarray(model.get_sentence_vector(" ".join(words)), dtype=np.float64)
            if not text_words(text) or not vector.any():
                raise BiasError(
                    f"The text {text!r} has no word with a vector in the fastText model.",
                    "Check the text's language, or drop it from the word set.",
                )
            out[row] = vector
        return out

    def _words(self, limit: int | None) -> list[str]:
        """The model's words in the order of its dictionary (most frequent first)."""
        return list(self._model.get_words(on_unicode_error="replace")[:limit])

    def _vectors(self, limit: int | None) -> WordVectors:
        """The words and their fastText vectors (each the mean of its word and n-gram rows, as
        `get_word_vector` gives it), built into one float32 matrix: one copy of the rows asked
        for."""
        model = self._model
        words = self._words(limit)
        matrix = np.empty((len(words), model.get_dimension()), dtype=np.float32)
        for i, word in enumerate(words):
            matrix[i] = model.get_word_vector(word)
        return WordVectors(tuple(words), matrix)

    def describe(self) -> dict[str, Any]:
        self.load()
        if self._vocab_size is None:
            self._vocab_size = len(self._model.get_words())
        return {
            "dim": int(self._model.get_dimension()),
            "vocab_size": self._vocab_size,
            "format": FASTTEXT_BIN,
            "path": str(self._path),
        }
