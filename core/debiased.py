"""The embedder a debiaser returns, and the writer of debiased static vectors.

It lives in core because every debiaser (first-party or third-party) returns one, and plugins import
core only.

A debiased model must be an ordinary Embedder so that every metric runs on it unchanged. It wraps the
original embedder (`source`, kept so that tests such as the clustering test can rank words in the
original space) and a transformation:

- static vectors (Hard-Debias, INLP on word vectors) hold the whole debiased vocabulary as one matrix,
  because equalisation moves particular rows and cannot be recomputed from a single vector; words
  outside that matrix (beyond a vocabulary limit, or fastText sub-word vectors) are transformed when
  they are looked up;
- contextual models (Sent-Debias, INLP on sentence encodings) are post-processed on the fly: every
  vector `encode()` and `word_vectors()` return goes through the transformation.

Used on the command line (`bias run --debias`), the wrapper fits its debiaser when it is first loaded,
so a run that fails on bad input earlier never pays for the fit.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.debias_lists import DebiasLists
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordVectors
from bias.core.static_vectors import static_encode, words_to_vectors

CHUNK_ROWS = 16_384  # rows per block of whole-vocabulary operations: temporaries stay ~20 MB at d=300
_KEEPS = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})  # LM scores are not debiased


# --- transformations -------------------------------------------------------------------------------


class VectorTransform(ABC):
    """How a fitted debiaser changes vectors that are not in a precomputed matrix."""

    @abstractmethod
    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        """Debiased word vectors (rows in the order of `words`)."""

    def encodings(self, vectors: np.ndarray, *, pooling: str, layer: Any, spans: bool) -> np.ndarray:
        """Debiased contextual vectors; by default the same as word vectors without exemptions."""
        return self.words(vectors, [""] * len(vectors))

    def describe(self) -> dict[str, Any]:
        return {}


def unit_rows_(matrix: np.ndarray, rows: slice | np.ndarray | None = None) -> int:
    """Scale rows to unit length in place, block by block (no full-size temporaries); zero rows stay
    zero. Returns how many rows were zero."""
    n = matrix.shape[0]
    zero = 0
    if rows is not None and not isinstance(rows, slice):
        block = matrix[rows]
        zero += _unit_block(block)
        matrix[rows] = block
        return zero
    start, stop = (0, n) if rows is None else (rows.start or 0, n if rows.stop is None else rows.stop)
    for first in range(start, stop, CHUNK_ROWS):
        zero += _unit_block(matrix[first : min(first + CHUNK_ROWS, stop)])
    return zero


def _unit_block(block: np.ndarray) -> int:
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    nonzero = norms > 0
    block[nonzero] /= norms[nonzero, None].astype(block.dtype)
    return int((~nonzero).sum())


def remove_subspace_(matrix: np.ndarray, basis: np.ndarray, keep: np.ndarray | None = None) -> None:
    """v <- v - sum_j (v.b_j) b_j for every row not marked in `keep`, in place and in blocks; `basis`
    has orthonormal rows."""
    basis = np.asarray(basis, dtype=matrix.dtype)
    for first in range(0, matrix.shape[0], CHUNK_ROWS):
        block = matrix[first : first + CHUNK_ROWS]
        coefficients = block @ basis.T
        if keep is not None:
            coefficients[keep[first : first + CHUNK_ROWS]] = 0
        block -= coefficients @ basis


@attrs.frozen
class SubspaceRemoval(VectorTransform):
    """Unit-normalise, remove the projection on a subspace, renormalise (Hard-Debias' neutralisation,
    Sent-Debias); words in `exempt` (gender-specific words) are only normalised."""

    basis: np.ndarray = attrs.field(eq=False)
    exempt: frozenset[str] = frozenset()

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        out = np.array(vectors, dtype=np.float64)
        unit_rows_(out)
        keep = np.array([w in self.exempt for w in words], dtype=bool) if self.exempt else None
        remove_subspace_(out, self.basis, keep)
        unit_rows_(out)
        return out

    def describe(self) -> dict[str, Any]:
        return {"transform": "subspace removal", "rank": int(self.basis.shape[0])}


@attrs.frozen
class LinearProjection(VectorTransform):
    """v <- v P for a (symmetric) projection matrix P (INLP)."""

    matrix: np.ndarray = attrs.field(eq=False)

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float64) @ self.matrix

    def describe(self) -> dict[str, Any]:
        rank = round(float(np.trace(self.matrix)))
        return {"transform": "linear projection", "removed_rank": int(self.matrix.shape[0]) - rank}


@attrs.define
class PerEncoding(VectorTransform):
    """A transformation fitted separately for each way vectors are taken.

    A bias subspace found in mean-pooled sentence vectors of the last layer says little about [CLS]
    vectors of layer 6 or about word encodings, so Sent-Debias and sentence-level INLP fit one per
    (pooling, layer, span or sentence) the metrics actually ask for, the first time they ask.
    """

    fit: Callable[[Hashable], VectorTransform]
    fitted: dict[Hashable, VectorTransform] = attrs.field(factory=dict)

    def get(self, key: Hashable) -> VectorTransform:
        if key not in self.fitted:
            self.fitted[key] = self.fit(key)
        return self.fitted[key]

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return self.get(("words",)).words(vectors, words)

    def encodings(self, vectors: np.ndarray, *, pooling: str, layer: Any, spans: bool) -> np.ndarray:
        return self.get(("span" if spans else "sentence", pooling, layer)).encodings(vectors, pooling=pooling, layer=layer, spans=spans)

    def describe(self) -> dict[str, Any]:
        return {"fitted_for": [list(map(str, key)) for key in self.fitted]}


# --- the embedder ----------------------------------------------------------------------------------


@attrs.define
class DebiasedEmbedder(Embedder):
    """A debiased view of `source`: a matrix of debiased vectors (static models) or a transformation
    applied on the fly (contextual models). Its `info` records what was done (method, parameters,
    lists, subspace, words neutralised and equalised, missing list words, timings)."""

    name: ClassVar[str] = "debiased"
    summary: ClassVar[str] = "A debiased model: the vectors of another embedder after Hard-Debias, INLP or Sent-Debias."

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
        """What the source gives, less language-model scores (see `offers`)."""
        return self.offers()

    @property
    def static(self) -> bool:
        return self.matrix is not None

    def offers(self) -> frozenset[Capability]:
        """Word vectors and encodings where the source gives them (a debiased matrix encodes text from
        its word vectors, as static models do). Language-model scores are never offered: debiasing
        vectors does not change them, and a metric must not measure the original model under the
        debiased name."""
        return frozenset(self.source.capabilities) & _KEEPS

    def available(self) -> frozenset[Capability]:
        self.load()
        return self.offers() & frozenset(self.source.available())

    def load(self) -> None:
        if self.pending is None:
            self.source.load()
            return
        self.source.load()
        fitted = self.pending(self.source)
        self.transform, self.vocab, self.matrix, self.info = fitted.transform, fitted.vocab, fitted.matrix, fitted.info
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
        dim = self.matrix.shape[1] if self.static else next(iter(rows.values())).shape[0] if rows else 0
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
            # A debiased vocabulary encodes text as static models do: from its (debiased) word vectors.
            assert self.matrix is not None
            return static_encode(self.spec, self.word_vectors, int(self.matrix.shape[1]), texts, spans, pooling, layer)
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
        return f"{self.source.fingerprint()}|debias={self.method}|{params}|lists={lists.get('name')}:{lists.get('file')}"

    def save(self, folder: Path, fmt: str = "word2vec") -> Path:
        """Write the debiased vectors into `folder` (see `write_vectors`); returns the file written."""
        return write_vectors(self, folder, fmt)

    def describe(self) -> dict[str, Any]:
        self.load()
        summary = {k: v for k, v in self.info.items() if k in ("method", "parameters", "lists", "explained_variance", "neutralised", "accuracy")}
        return {**self.source.describe(), "debiased": summary}


class FitOnLoad:
    """Mixin of the first-party debiasers: `wrap(embedder, lists)` returns the debiased model at once,
    fitting (and transforming) only when it is first loaded; what `bias run --debias` uses."""

    name: ClassVar[str]

    def wrap(self, embedder: Embedder, lists: Any) -> DebiasedEmbedder:
        def fit(source: Embedder) -> DebiasedEmbedder:
            return self.fit(source, lists).transform(source)  # type: ignore[attr-defined]

        return DebiasedEmbedder(source=embedder, method=self.name, pending=fit)


# --- what both the debiasers and the command line need --------------------------------------------


def has_vocabulary(embedder: Embedder) -> bool:
    """Whether the embedder's type lists a fixed vocabulary (static vectors)."""
    if isinstance(embedder, DebiasedEmbedder):
        return embedder.static or has_vocabulary(embedder.source)
    return type(embedder).all_vectors is not Embedder.all_vectors


def vocabulary_matrix(
    embedder: Embedder, limit: int | None, extra: Sequence[str] = (), dtype: str = "float32"
) -> tuple[list[str], np.ndarray]:
    """The first `limit` words of the vocabulary (all when None) and their vectors as one new,
    writable matrix of `dtype`, plus the words of `extra` the model has beyond the limit (list words
    must be debiased whatever the limit)."""
    embedder.load()
    found = embedder.all_vectors(limit)
    words, vectors = list(found.words), found.vectors
    matrix = np.array(vectors, dtype=dtype, copy=True)
    have = set(words)
    beyond = [w for w in dict.fromkeys(extra) if w not in have]
    if beyond:
        more = embedder.word_vectors(beyond)
        own = [i for i, w in enumerate(more.words) if w not in set(more.approximated)]
        if own:
            words.extend(more.words[i] for i in own)
            matrix = np.concatenate([matrix, np.asarray(more.vectors[own], dtype=dtype)])
    return words, matrix


def labelled_words(
    words: list[str], matrix: np.ndarray, lists: DebiasLists, training: str, per_class: int, method: str
) -> tuple[np.ndarray, np.ndarray, tuple[list[str], list[str]]]:
    """Training vectors of a static model labelled 1 (male) and 0 (female), for the debiasers that
    learn the concept from words (INLP, LEACE):

    - `training = "pairs"`: the words of the definitional and equalize pairs, labelled by their side;
    - `training = "projection"`: the `per_class` words most aligned with the lists' direction pair
      (he - she) by cosine are male, the `per_class` least aligned female; the pair itself is left out.

    Returns the float64 rows, the labels and the (male, female) words chosen.
    """
    index = {w: i for i, w in enumerate(words)}
    if training == "pairs":
        pairs = [(a, b) for a, b in (*lists.definitional, *lists.equalize) if a in index and b in index]
        male = list(dict.fromkeys(a for a, _ in pairs))
        female = list(dict.fromkeys(b for _, b in pairs if b not in male))
        if len(male) < 2 or len(female) < 2:
            raise BiasError(f"{method} found only {len(pairs)} list pairs in the model to train on.", "Use training = projection.")
    else:
        a, b = lists.ranking_pair
        if a not in index or b not in index:
            missing = [w for w in (a, b) if w not in index]
            raise BiasError(f"The direction pair ({a}, {b}) of {lists.name} is not in the model: {', '.join(missing)} missing.", "Use training = pairs, or lists whose direction pair the model has.")
        g = matrix[index[a]].astype(np.float64) - matrix[index[b]].astype(np.float64)
        g /= np.linalg.norm(g)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)).astype(np.float64)
        scores = np.empty(len(words))
        for first in range(0, len(words), CHUNK_ROWS):
            block = matrix[first : first + CHUNK_ROWS].astype(np.float64)
            scores[first : first + CHUNK_ROWS] = block @ g
        scores /= np.where(norms > 0, norms, 1.0)
        candidates = np.array([i for i in range(len(words)) if words[i] not in (a, b) and norms[i] > 0])
        k = min(per_class, len(candidates) // 2)
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        male = [words[i] for i in order[:k]]
        female = [words[i] for i in order[len(order) - k :]]
    rows = [index[w] for w in male] + [index[w] for w in female]
    X = matrix[rows].astype(np.float64)
    y = np.array([1] * len(male) + [0] * len(female))
    return X, y, (male, female)


def check_dtype(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value not in ("float32", "float64"):
        raise BiasError(f"{attribute.name} must be float32 or float64, not {value!r}.", "float32 halves the memory of a large vocabulary.")


def timed(info: dict[str, Any], key: str, started: float) -> None:
    info.setdefault("timings", {})[key] = round(time.perf_counter() - started, 4)


# --- writing debiased vectors ----------------------------------------------------------------------

FORMATS = {"word2vec": "vectors.bin", "text": "vectors.txt"}


def write_vectors(embedder: DebiasedEmbedder, folder: Path, fmt: str = "word2vec") -> Path:
    """Write the debiased vocabulary as a word2vec file (binary by default, or text) with gensim, so
    the result reads back with `word2vec:FOLDER/vectors.bin` like any other model."""
    if fmt not in FORMATS:
        raise BiasError(f"--format must be one of {', '.join(FORMATS)}, not '{fmt}'.")
    embedder.load()
    if not embedder.static:
        raise BiasError(
            f"{embedder.method} debiased {embedder.source.spec} on the fly; there is no vector matrix to write.",
            "Debiased vectors can be written for static models (hard, inlp, leace); use `bias run --debias` for contextual models.",
        )
    from gensim.models import KeyedVectors

    assert embedder.vocab is not None and embedder.matrix is not None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kv = KeyedVectors(vector_size=embedder.matrix.shape[1], count=0, dtype=np.float32)
    kv.add_vectors(list(embedder.vocab), embedder.matrix.astype(np.float32, copy=False))
    path = folder / FORMATS[fmt]
    kv.save_word2vec_format(str(path), binary=fmt == "word2vec")
    return path
