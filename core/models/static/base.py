"""What every static embedder shares: the lookup result, sentences from word vectors, the
whole-vocabulary methods and the file fingerprint.

A static model is a fixed vocabulary with one vector per word. `StaticEmbedder` turns a few hooks
(`dim`, `_vector`, `_words`, `_vectors`) into the full Embedder surface, so each file format only
says how it reads its file. Debiased static models encode text through `static_encode` too, exactly
as the source model would from its own vectors."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordVectors
from bias.core.specs import resolve_location

# What every static embedder offers; each plugin class repeats it, since `bias list` reads a
# plugin's declarations from its own source without importing it.
STATIC_CAPABILITIES = frozenset(
    {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
)


def unique(words: Iterable[str]) -> list[str]:
    """The words once each, in the order first given."""
    return list(dict.fromkeys(words))


def words_to_vectors(
    found: Sequence[str],
    rows: Sequence[np.ndarray],
    dim: int,
    lost: Sequence[str],
    approximated: Sequence[str] = (),
) -> WordVectors:
    """float64 rows in request order; an empty request still has the model's width."""
    matrix = np.array(rows, dtype=np.float64).reshape(len(rows), dim)
    return WordVectors(
        words=tuple(found), vectors=matrix, lost=tuple(lost), approximated=tuple(approximated)
    )


# --- sentences from static vectors ---------------------------------------------------------------

# A word is a run of Unicode letters, digits or underscores ("Zoë", "straße", "kız"); apostrophes
# and hyphens split words, as they do in the tokenisation most published vectors were trained on.
_WORD = re.compile(r"\w+", re.UNICODE)
STATIC_POOLINGS = ("mean", "first", "last")
_STATIC_LAYERS = (None, -1, 0, "-1", "0")


def text_words(text: str, span: tuple[int, int] | None = None) -> list[str]:
    """The words of `text` (of those overlapping the character span, when one is given), in
    order."""
    if span is None:
        return _WORD.findall(text)
    start, end = span
    return [m.group() for m in _WORD.finditer(text) if m.start() < end and m.end() > start]


def check_static_request(
    name: str,
    texts: Sequence[str],
    spans: Sequence[tuple[int, int] | None] | None,
    pooling: str,
    layer: Any,
) -> list[tuple[int, int] | None]:
    """Refuse what a static embedding cannot answer, before any lookup."""
    if pooling == "cls":
        raise BiasError(
            f"Pooling 'cls' needs a [CLS] token, which the static embedding '{name}' has not.",
            "Use mean, first or last.",
        )
    if pooling not in STATIC_POOLINGS:
        raise BiasError(f"pooling must be one of {', '.join(STATIC_POOLINGS)}, not {pooling!r}.")
    if layer not in _STATIC_LAYERS:
        raise BiasError(
            f"A static embedding ('{name}') has one layer; layer {layer!r} does not exist.",
            "Leave the layer unset (or -1).",
        )
    spans = [None] * len(texts) if spans is None else list(spans)
    if len(spans) != len(texts):
        raise BiasError(f"encode got {len(texts)} texts but {len(spans)} spans.")
    for text, span in zip(texts, spans):
        if not isinstance(text, str):
            raise BiasError(f"encode expects strings, got {type(text).__name__}: {text!r}.")
        if span is not None and not (len(span) == 2 and 0 <= span[0] < span[1] <= len(text)):
            raise BiasError(
                f"The span {tuple(span)} does not lie inside the text {text!r} "
                f"({len(text)} characters).",
                "A span is (start, end) in characters with 0 <= start < end <= the text's length.",
            )
    return spans


def static_encode(
    name: str,
    lookup: Callable[[Sequence[str]], WordVectors],
    dim: int,
    texts: Sequence[str],
    spans: Sequence[tuple[int, int] | None] | None,
    pooling: str,
    layer: Any,
) -> np.ndarray:
    """Sentence and span vectors from word vectors: the mean of the vectors of the words found (or
    the first / last word found). Each word is looked up as written, then lowercased; words with no
    vector are skipped, and a text (or span) none of whose words has one is refused by name, because
    a zero vector would silently enter every cosine.

    All words of all texts are looked up in one request, so a streamed file is scanned once.
    """
    texts = list(texts)
    spans = check_static_request(name, texts, spans, pooling, layer)
    words_of = [text_words(text, span) for text, span in zip(texts, spans)]
    forms = unique(w for words in words_of for w in words)
    found = lookup(unique([*forms, *(w.lower() for w in forms)]))
    approximated = set(found.approximated)
    index = {w: i for i, w in enumerate(found.words)}

    def best(word: str) -> int | None:
        lower = word.lower()
        # a word of its own first, a vector built from sub-words last
        for candidate in (
            word,
            lower,
        ):
            if candidate in index and candidate not in approximated:
                return index[candidate]
        for candidate in (word, lower):
            if candidate in index:
                return index[candidate]
        return None

    chosen = {w: best(w) for w in forms}
    out = np.empty((len(texts), dim), dtype=np.float64)
    for row, (text, span, words) in enumerate(zip(texts, spans, words_of)):
        rows = [chosen[w] for w in words if chosen[w] is not None]
        if not rows:
            what = f"The span {tuple(span)} of the text" if span is not None else "The text"
            raise BiasError(
                f"{what} {text!r} has no word with a vector in the {name} model "
                f"({', '.join(words) or 'no words at all'}).",
                "Check the text's language and case, or drop it from the word set.",
            )
        if pooling == "first":
            rows = rows[:1]
        elif pooling == "last":
            rows = rows[-1:]
        out[row] = found.vectors[rows].mean(axis=0)
    return out


# --- whole vocabularies and provenance -----------------------------------------------------------


def check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise BiasError(
            f"A vocabulary limit must be a whole number >= 0 (or none for all), not {limit!r}."
        )
    return limit


def read_only(matrix: np.ndarray) -> np.ndarray:
    """A view of `matrix` that cannot be written through: whole-vocabulary methods get the model's
    own array without a copy, and cannot change the model behind its back."""
    view = matrix.view()
    view.flags.writeable = False
    return view


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


# --- the base class
# --------------------------------------------------------------------------------


class StaticEmbedder(Embedder):
    """A vector file with a fixed vocabulary (word2vec, GloVe, fastText, `.vec`, gensim `.kv`).

    Subclasses are attrs classes with a `location` field, a `load()` that opens the file, and the
    hooks below; sentences, spans, vocabulary limits and the fingerprint are then handled here,
    once, so every static format answers them alike."""

    capabilities: ClassVar[frozenset[Capability]] = STATIC_CAPABILITIES

    @property
    @abstractmethod
    def dim(self) -> int:
        """The vector width (loads the model)."""

    def _vector(self, word: str) -> tuple[np.ndarray, bool] | None:
        """The word's vector and whether it was approximated (built from sub-words), or None when
        the model has none. Formats that look words up in bulk override `word_vectors` instead."""
        raise NotImplementedError

    @abstractmethod
    def _words(self, limit: int | None) -> list[str]:
        """The first `limit` words of the vocabulary in the file's order (all when None); loaded."""

    @abstractmethod
    def _vectors(self, limit: int | None) -> WordVectors:
        """The first `limit` words and their vectors as one matrix (all when None); loaded."""

    def _resolved(self) -> Path:
        return resolve_location(self.location)

    def _side_files(self) -> Iterable[Path]:
        """Files beside the model whose change changes its vectors (gensim's `.npy` arrays)."""
        return ()

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.load()
        found, rows, lost, approximated = [], [], [], []
        for word in unique(words):
            hit = self._vector(word)
            if hit is None:
                lost.append(word)
                continue
            vector, approximate = hit
            found.append(word)
            rows.append(vector)
            if approximate:
                approximated.append(word)
        return words_to_vectors(found, rows, self.dim, lost, approximated)

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """Mean of the vectors of the text's words (`text_words`), or of the words in the span; all
        the words of all the texts are looked up in one request."""
        self.load()
        return static_encode(self.name, self.word_vectors, self.dim, texts, spans, pooling, layer)

    def vocabulary(self, limit: int | None = None) -> list[str]:
        """The words in the file's order (most frequent first for word2vec, GloVe and fastText
        files)."""
        self.load()
        return self._words(check_limit(limit))

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        self.load()
        return self._vectors(check_limit(limit))

    def fingerprint(self) -> str:
        return file_fingerprint(self.name, self._resolved(), self._side_files())
