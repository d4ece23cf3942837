"""Word vectors and sentence vectors from static embeddings: shared by the static embedders and by
debiased static models (which encode text from their debiased word vectors exactly as the source
model would from its own)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from bias.core.errors import BiasError
from bias.core.model import WordVectors


def unique(words: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(words))


def words_to_vectors(
    found: Sequence[str], rows: Sequence[np.ndarray], dim: int, lost: Sequence[str], approximated: Sequence[str] = ()
) -> WordVectors:
    """float64 rows in request order; an empty request still has the model's width."""
    matrix = np.array(rows, dtype=np.float64).reshape(len(rows), dim)
    return WordVectors(words=tuple(found), vectors=matrix, lost=tuple(lost), approximated=tuple(approximated))


# --- sentences from static vectors ---------------------------------------------------------------

# A word is a run of Unicode letters, digits or underscores ("Zoë", "straße", "kız"); apostrophes and
# hyphens split words, as they do in the tokenisation most published vectors were trained on.
_WORD = re.compile(r"\w+", re.UNICODE)
STATIC_POOLINGS = ("mean", "first", "last")
_STATIC_LAYERS = (None, -1, 0, "-1", "0")


def text_words(text: str, span: tuple[int, int] | None = None) -> list[str]:
    """The words of `text` (of those overlapping the character span, when one is given), in order."""
    if span is None:
        return _WORD.findall(text)
    start, end = span
    return [m.group() for m in _WORD.finditer(text) if m.start() < end and m.end() > start]


def check_static_request(
    name: str, texts: Sequence[str], spans: Sequence[tuple[int, int] | None] | None, pooling: str, layer: Any
) -> list[tuple[int, int] | None]:
    """Refuse what a static embedding cannot answer, before any lookup."""
    if pooling == "cls":
        raise BiasError(f"Pooling 'cls' needs a [CLS] token, which the static embedding '{name}' has not.", "Use mean, first or last.")
    if pooling not in STATIC_POOLINGS:
        raise BiasError(f"pooling must be one of {', '.join(STATIC_POOLINGS)}, not {pooling!r}.")
    if layer not in _STATIC_LAYERS:
        raise BiasError(f"A static embedding ('{name}') has one layer; layer {layer!r} does not exist.", "Leave the layer unset (or -1).")
    spans = [None] * len(texts) if spans is None else list(spans)
    if len(spans) != len(texts):
        raise BiasError(f"encode got {len(texts)} texts but {len(spans)} spans.")
    for text, span in zip(texts, spans):
        if not isinstance(text, str):
            raise BiasError(f"encode expects strings, got {type(text).__name__}: {text!r}.")
        if span is not None and not (len(span) == 2 and 0 <= span[0] < span[1] <= len(text)):
            raise BiasError(
                f"The span {tuple(span)} does not lie inside the text {text!r} ({len(text)} characters).",
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
    """Sentence and span vectors from word vectors: the mean of the vectors of the words found (or the
    first / last word found). Each word is looked up as written, then lowercased; words with no
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
        for candidate in (word, lower):  # a word of its own first, a vector built from sub-words last
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
                f"{what} {text!r} has no word with a vector in the {name} model ({', '.join(words) or 'no words at all'}).",
                "Check the text's language and case, or drop it from the word set.",
            )
        if pooling == "first":
            rows = rows[:1]
        elif pooling == "last":
            rows = rows[-1:]
        out[row] = found.vectors[rows].mean(axis=0)
    return out
