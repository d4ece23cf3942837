"""The embedder a debiaser returns, and the writer of debiased static vectors.

It lives in core because every debiaser (first-party or third-party) returns one, and plugins import
core only.

A debiased model must be an ordinary Embedder so that every metric runs on it unchanged. It wraps
the original embedder (`source`, kept so that tests such as the clustering test can rank words in
the original space) and a transformation:

- static vectors (Hard-Debias, INLP on word vectors) hold the whole debiased vocabulary as one
  matrix, because equalisation moves particular rows and cannot be recomputed from a single vector;
  words outside that matrix (beyond a vocabulary limit, or fastText sub-word vectors) are
  transformed when they are looked up;
- contextual models (Sent-Debias, INLP on sentence encodings) are post-processed on the fly: every
  vector `encode()` and `word_vectors()` return goes through the transformation.

Used on the command line (`bias run --debias`), the wrapper fits its debiaser when it is first
loaded, so a run that fails on bad input earlier never pays for the fit."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Contact, Embedder, Quote
from bias.core.model import WordVectors
from bias.core.models.static.base import static_encode, words_to_vectors
from bias.core.models.debiasing.transforms import VectorTransform

# What a debiased model keeps of its source's capabilities: language-model scores are not debiased.
_KEEPS = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY})


@attrs.define
class DebiasedEmbedder(Embedder):
    """A debiased view of `source`: a matrix of debiased vectors (static models) or a transformation
    applied on the fly (contextual models). Its `info` records what was done (method, parameters,
    lists, subspace, words neutralised and equalised, missing list words, timings)."""

    name: ClassVar[str] = "debiased"
    summary: ClassVar[str] = (
        "A debiased model: the vectors of another embedder after Hard-Debias, INLP or Sent-Debias."
    )

    source: Embedder
    method: str
    transform: VectorTransform | None = None
    vocab: tuple[str, ...] | None = attrs.field(default=None, repr=False)
    matrix: np.ndarray | None = attrs.field(default=None, repr=False, eq=False)
    info: dict[str, Any] = attrs.field(factory=dict, repr=False)
    # set when the wrapper fits on first load (bias run --debias): called with the loaded source
    pending: Callable[[Embedder], DebiasedEmbedder] | None = attrs.field(default=None, repr=False)
    _index: dict[str, int] | None = attrs.field(default=None, init=False, repr=False)

    @property
    def location(self) -> str:  # type: ignore[override]
        return self.source.location

    @property
    def spec(self) -> str:
        return f"{self.source.spec}+{self.method}"

    @property
    def capabilities(self) -> frozenset[Capability]:  # type: ignore[override]
        """Word vectors, encodings and the vocabulary where the source gives them (a debiased matrix
        encodes text from its word vectors, as static models do). Language-model scores are never
        offered: debiasing vectors does not change them, and a metric must not measure the original
        model under the debiased name."""
        return frozenset(self.source.capabilities) & _KEEPS

    @property
    def static(self) -> bool:
        return self.matrix is not None

    def check(self) -> None:
        """The source's own checks: a debiased view has no file of its own (a service model has
        none)."""
        self.source.check()

    def contacts(self) -> tuple[Contact, ...]:
        """The source's: a debiased view sends what its source sends."""
        return self.source.contacts()

    def foreseen(self) -> frozenset[Capability] | None:
        found = self.source.foreseen()
        return None if found is None else frozenset(found) & _KEEPS

    def quote(self, texts: Sequence[str]) -> Quote | None:
        """A paid source's price for the metrics' texts, asked before the fit sends anything; the
        words of the debiasing lists, sent once when it is fitted, come on top and are said to."""
        quote = self.source.quote(texts)
        if quote is None or self.pending is None:
            return quote
        return attrs.evolve(
            quote, on_top="the debiasing lists' words, sent once for the fit, come on top"
        )

    def available(self) -> frozenset[Capability]:
        self.load()
        return self.capabilities & frozenset(self.source.available())

    def load(self) -> None:
        if self.pending is None:
            self.source.load()
            return
        self.source.load()
        fitted = self.pending(self.source)
        self.transform, self.vocab, self.matrix, self.info = (
            fitted.transform,
            fitted.vocab,
            fitted.matrix,
            fitted.info,
        )
        self.pending = None
        self._index = None

    def _lookup(self) -> dict[str, int]:
        if self._index is None:
            self._index = {w: i for i, w in enumerate(self.vocab or ())}
        return self._index

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.load()
        requested = list(dict.fromkeys(words))
        index = self._lookup() if self.static else {}
        inside = {w: index[w] for w in requested if w in index}
        outside = [w for w in requested if w not in index]
        rows: dict[str, np.ndarray] = {}
        lost: tuple[str, ...] = ()
        approximated: tuple[str, ...] = ()
        if inside:
            assert self.matrix is not None
            picked = self.matrix[list(inside.values())].astype(np.float64)
            rows.update(zip(inside, picked))
        if outside:
            found = self.source.word_vectors(outside)
            lost, approximated = found.lost, found.approximated
            if found.words:
                assert self.transform is not None
                rows.update(zip(found.words, self.transform.words(found.vectors, found.words)))
        kept = [w for w in requested if w in rows]
        dim = (
            self.matrix.shape[1]
            if self.static
            else next(iter(rows.values())).shape[0]
            if rows
            else 0
        )
        return words_to_vectors(kept, [rows[w] for w in kept], dim, lost, approximated)

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        self.load()
        if self.static:
            # A debiased vocabulary encodes text as static models do: from its (debiased) word
            # vectors.
            assert self.matrix is not None
            return static_encode(
                self.spec,
                self.word_vectors,
                int(self.matrix.shape[1]),
                texts,
                spans,
                pooling,
                layer,
            )
        assert self.transform is not None
        kwargs: dict[str, Any] = {"pooling": pooling}
        if layer is not None:
            kwargs["layer"] = layer
        vectors = self.source.encode(texts, spans, **kwargs)
        has_spans = spans is not None and any(s is not None for s in spans)
        return self.transform.encodings(vectors, pooling=pooling, layer=layer, spans=has_spans)

    def vocabulary(self, limit: int | None = None) -> list[str]:
        self.load()
        if not self.static:
            return self.source.vocabulary(limit)
        assert self.vocab is not None
        return list(self.vocab[:limit])

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        """The debiased matrix (its own dtype, float32 unless asked otherwise; no copy)."""
        self.load()
        if not self.static:
            found = self.source.all_vectors(limit)
            assert self.transform is not None
            return WordVectors(found.words, self.transform.words(found.vectors, found.words))
        assert self.vocab is not None and self.matrix is not None
        return WordVectors(tuple(self.vocab[:limit]), self.matrix[:limit])

    def fingerprint(self) -> str:
        self.load()
        params = json.dumps(self.info.get("parameters", {}), sort_keys=True, default=str)
        lists = self.info.get("lists", {})
        named = f"lists={lists.get('name')}:{lists.get('file')}"
        return f"{self.source.fingerprint()}|debias={self.method}|{params}|{named}"

    def save(self, folder: Path, fmt: str = "word2vec") -> Path:
        """Write the debiased vectors into `folder` (see `write_vectors`); returns the file
        written."""
        return write_vectors(self, folder, fmt)

    def sent(self) -> dict[str, int] | None:
        return self.source.sent()

    def describe(self) -> dict[str, Any]:
        self.load()
        summary = {
            k: v
            for k, v in self.info.items()
            if k
            in ("method", "parameters", "lists", "explained_variance", "neutralised", "accuracy")
        }
        return {**self.source.describe(), "debiased": summary}


# --- writing debiased vectors
# ----------------------------------------------------------------------

FORMATS = {"word2vec": "vectors.bin", "text": "vectors.txt"}


def write_vectors(embedder: Embedder, folder: Path, fmt: str = "word2vec") -> Path:
    """Write the debiased vocabulary (`all_vectors()` of an embedder with a vocabulary: a
    DebiasedEmbedder's matrix, or a third-party debiaser's own embedder) as a word2vec file (binary
    by default, or text) with gensim, so the result reads back with `word2vec:FOLDER/vectors.bin`
    like any other model."""
    if fmt not in FORMATS:
        raise BiasError(f"--format must be one of {', '.join(FORMATS)}, not '{fmt}'.")
    embedder.load()
    if not isinstance(embedder, DebiasedEmbedder):
        found = embedder.all_vectors()
        return _write_matrix(list(found.words), np.asarray(found.vectors), folder, fmt)
    if not embedder.static:
        raise BiasError(
            f"{embedder.method} debiased {embedder.source.spec} on the fly; there is no "
            "vector matrix to write.",
            "Debiased vectors can be written for static models; use `bias run --debias` "
            "for contextual models.",
        )
    assert embedder.vocab is not None and embedder.matrix is not None
    return _write_matrix(list(embedder.vocab), embedder.matrix, folder, fmt)


def _write_matrix(words: list[str], matrix: np.ndarray, folder: Path, fmt: str) -> Path:
    from gensim.models import KeyedVectors

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kv = KeyedVectors(vector_size=matrix.shape[1], count=0, dtype=np.float32)
    kv.add_vectors(words, matrix.astype(np.float32, copy=False))
    # descending counts keep the vocabulary's order (gensim writes by count, and warns when there is
    # none)
    kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
    kv.expandos["count"][:] = np.arange(len(words), 0, -1)
    path = folder / FORMATS[fmt]
    from bias.core.runs.folder import open_in_run

    with open_in_run(folder, FORMATS[fmt], "wb"):
        pass  # refuses a link planted in place of the file; gensim then writes the plain file
    kv.save_word2vec_format(str(path), binary=fmt == "word2vec")
    return path
