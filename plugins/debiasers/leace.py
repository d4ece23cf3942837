"""LEACE, LEAst-squares Concept Erasure (Belrose et al. 2023, "LEACE: Perfect linear concept erasure
in closed form").

Where INLP removes classifier directions one at a time and Hard-Debias removes principal directions of
pairs, LEACE solves the erasure in closed form: among all affine maps r(x) after which the vectors
have zero cross-covariance with the concept Z (male / female), it is the one that moves them least in
least squares (for every inner product at once). Zero cross-covariance is exactly what it takes for
no linear classifier to beat a constant predictor (for any convex loss); for two classes it means the
class means coincide.

With mu the mean of the training vectors X, Sigma their covariance, W = Sigma^(-1/2) the whitening
matrix (pseudo-inverse square root on the span of the data), W^+ its pseudo-inverse and P the
orthogonal projection onto the span of W Sigma_XZ (the whitened cross-covariance):

    r(x) = x - W^+ P W (x - mu)

For a binary concept with cross-covariance vector delta this is the oblique projection
x - delta delta^T Sigma^+ (x - mu) / (delta^T Sigma^+ delta).

Training data, from the same lists as INLP:
- word vectors: `training = "projection"` (the `per_class` words most and least aligned with the
  lists' direction pair) or `training = "pairs"` (the words of the definitional and equalize pairs);
- sentence encodings (a contextual model): the all-male and all-female versions of the sentence pairs
  Sent-Debias builds (from `corpus`, else templates), fitted separately for each way encodings are
  taken and applied on the fly; word encodings of a contextual model use the list pairs' vectors.

The eraser is affine and applied to every vector the model gives, words of the lists included.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.debias_lists import DebiasLists, lists_of
from bias.core.debiased import (
    CHUNK_ROWS,
    DebiasedEmbedder,
    FitOnLoad,
    PerEncoding,
    VectorTransform,
    check_dtype,
    has_vocabulary,
    labelled_words,
    timed,
    vocabulary_matrix,
)
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Debiaser, Embedder
from bias.core.params import int_at_least, one_of, param
from bias.core.sentence_pairs import check_pairs, read_corpus, sentence_pairs, template_sentences

TRAINING = ("projection", "pairs")
LEVELS = ("auto", "words", "sentences")
RELATIVE_TOLERANCE = 1e-10  # eigenvalues (and singular values) below this share of the largest count as zero


@attrs.frozen
class LeaceEraser(VectorTransform):
    """r(x) = x - ((x - mean) @ down.T) @ up.T, the low-rank form of x - W^+ P W (x - mean):
    `down` = U^T W (rank x d) and `up` = W^+ U (d x rank), U an orthonormal basis of the span of the
    whitened cross-covariance."""

    mean: np.ndarray = attrs.field(eq=False)
    down: np.ndarray = attrs.field(eq=False)
    up: np.ndarray = attrs.field(eq=False)

    @property
    def rank(self) -> int:
        return int(self.down.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        X = np.asarray(vectors, dtype=np.float64)
        return X - ((X - self.mean) @ self.down.T) @ self.up.T

    def words(self, vectors: np.ndarray, words: Sequence[str]) -> np.ndarray:
        return self.apply(vectors)

    def matrix(self) -> np.ndarray:
        """The d x d map W^+ P W (for checks and small models)."""
        return self.up @ self.down

    def describe(self) -> dict[str, Any]:
        return {"transform": "LEACE affine erasure", "erased_rank": self.rank}


def one_hot(labels: np.ndarray) -> np.ndarray:
    """Z for a label vector: one column per class but the last (the columns of a full one-hot
    encoding sum to one, so the last adds nothing to the span of the cross-covariance)."""
    classes = np.unique(labels)
    return (np.asarray(labels)[:, None] == classes[None, :-1]).astype(np.float64)


def fit_leace(X: np.ndarray, labels: np.ndarray) -> LeaceEraser:
    """The LEACE eraser of the concept `labels` (two or more classes) from the rows of X."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or len(X) != len(labels):
        raise BiasError(f"LEACE needs one label per training vector; got {len(labels)} labels for {len(X)} vectors.")
    if len(np.unique(labels)) < 2:
        raise BiasError("LEACE needs training vectors of both classes (male and female); only one was found.")
    n = len(X)
    mean = X.mean(axis=0)
    centred = X - mean
    Z = one_hot(labels)
    sigma = centred.T @ centred / n
    cross = centred.T @ (Z - Z.mean(axis=0)) / n  # d x (classes - 1)
    values, vectors = np.linalg.eigh(sigma)
    kept = values > max(values.max(), 0.0) * RELATIVE_TOLERANCE
    if not kept.any():
        raise BiasError("LEACE's training vectors are all identical; there is nothing to erase from.")
    V, lam = vectors[:, kept], values[kept]
    whiten = (V / np.sqrt(lam)) @ V.T
    unwhiten = (V * np.sqrt(lam)) @ V.T
    U, singular, _ = np.linalg.svd(whiten @ cross, full_matrices=False)
    rank = int((singular > singular.max() * RELATIVE_TOLERANCE).sum()) if singular.size and singular.max() > 0 else 0
    U = U[:, :rank]
    return LeaceEraser(mean=mean, down=U.T @ whiten, up=unwhiten @ U)


def class_mean_gap(X: np.ndarray, labels: np.ndarray) -> float:
    """Largest absolute coordinate of the difference between the two class means (0 after erasure)."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    return float(np.abs(X[labels == classes[0]].mean(axis=0) - X[labels == classes[-1]].mean(axis=0)).max())


def installed_templates(lists: DebiasLists) -> tuple[list[str], str]:
    """Sentences from the language's installed SEAT templates, else bare words (as Sent-Debias)."""
    from bias.registry import load_wordset, names

    return template_sentences(lists, lambda name: name in names("wordsets"), load_wordset)


@attrs.define
class Leace(FitOnLoad, Debiaser):
    """Erase the linearly encoded gender concept in closed form, moving the vectors least."""

    name: ClassVar[str] = "leace"
    summary: ClassVar[str] = "LEACE: closed-form least-squares linear concept erasure; no linear classifier beats chance (Belrose et al. 2023)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    training: str = param(
        "projection", "word-level training words: projection (most male/female by the direction pair) or pairs (the lists' pairs)",
        validator=one_of(TRAINING),
    )
    per_class: int = param(1000, "training words per class when training = projection (at most half the vocabulary)", validator=int_at_least(1))
    level: str = param("auto", "words (static vectors), sentences (encodings of sentence pairs), or auto", validator=one_of(LEVELS))
    corpus: str | None = param(None, "sentence level: text file, one sentence per line (default: templates)")
    limit: int | None = param(None, "debias only the first N words of the vocabulary (None: all)", validator=attrs.validators.optional(int_at_least(1)))
    precision: str = param("float32", "dtype of the debiased matrix: float32 or float64", validator=check_dtype)

    _state: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        if has_vocabulary(embedder) or Capability.CONTEXTUAL in embedder.capabilities:
            return None
        return f"LEACE needs a static model with a vocabulary or a model that encodes sentences; {embedder.spec} offers neither"

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}

    def _level(self, embedder: Embedder) -> str:
        if self.level != "auto":
            return self.level
        return "words" if has_vocabulary(embedder) else "sentences"

    def fit(self, embedder: Embedder, lists: Any) -> Leace:
        lists = lists_of(lists, "LEACE")
        reason = self.supports(embedder)
        if reason:
            raise BiasError(reason + ".", "Methods: hard, inlp and leace for static vectors; sent, inlp and leace for contextual models.")
        level = self._level(embedder)
        info: dict[str, Any] = {
            "method": self.name,
            "parameters": self.params(),
            "level": level,
            "lists": {"name": lists.name, "file": lists.meta.path},
        }
        self._state = {"lists": lists, "info": info, "source": embedder, "level": level}
        started = time.perf_counter()
        if level == "words":
            if not has_vocabulary(embedder):
                raise BiasError(f"LEACE at word level needs a static model with a vocabulary; {embedder.spec} has none.", "Use level = sentences.")
            words, matrix = vocabulary_matrix(embedder, self.limit, lists.all_words(), self.precision)
            timed(info, "read_s", started)
            started = time.perf_counter()
            X, y, chosen = labelled_words(words, matrix, lists, self.training, self.per_class, "LEACE")
            eraser = fit_leace(X, y)
            info.update(self._report(eraser, X, y), training_words={"male": chosen[0][:50], "female": chosen[1][:50]})
            self._state.update(words=words, matrix=matrix, eraser=eraser)
        else:
            if Capability.CONTEXTUAL not in embedder.capabilities:
                raise BiasError(f"LEACE at sentence level needs a model that encodes sentences; {embedder.spec} does not.", "Use level = words.")
            sentences, origin = (read_corpus(self.corpus), str(self.corpus)) if self.corpus else installed_templates(lists)
            pairs = sentence_pairs(sentences, lists)
            check_pairs(pairs, 2, origin)
            info.update(sentences_from=origin, sentence_pairs=len(pairs), fitted={})
            self._state["pairs"] = pairs
            embedder.load()
            default = ("sentence", "mean", None)
            self._state["fitted"] = {default: self._fit_encodings(embedder, default)}
        timed(info, "fit_s", started)
        return self

    @staticmethod
    def _report(eraser: LeaceEraser, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        erased = eraser.apply(X)
        return {
            "erased_rank": eraser.rank,
            "training_vectors": len(y),
            "class_mean_gap_before": class_mean_gap(X, y),
            "class_mean_gap_after": class_mean_gap(erased, y),
            "mean_squared_change": float(np.mean(np.sum((erased - X) ** 2, axis=1))),
        }

    def _fit_encodings(self, embedder: Embedder, key: Hashable) -> LeaceEraser:
        assert self._state is not None
        lists: DebiasLists = self._state["lists"]
        if key == ("words",):
            pairs = [(a, b) for a, b in (*lists.definitional, *lists.equalize)]
            found = embedder.word_vectors([w for p in pairs for w in p]).as_dict()
            pairs = [(a, b) for a, b in pairs if a in found and b in found]
            check_pairs(pairs, 2, "the list pairs the model has")
            X = np.array([found[a] for a, _ in pairs] + [found[b] for _, b in pairs])
        else:
            level, pooling, layer = key  # type: ignore[misc]
            pairs = self._state["pairs"]
            kwargs: dict[str, Any] = {"pooling": pooling}
            if layer is not None:
                kwargs["layer"] = layer
            texts = [p.male.text for p in pairs] + [p.female.text for p in pairs]
            spans = [p.male.span for p in pairs] + [p.female.span for p in pairs] if level == "span" else None
            X = embedder.encode(texts, spans, **kwargs)
        y = np.array([1] * len(pairs) + [0] * len(pairs))
        eraser = fit_leace(X, y)
        self._state["info"].setdefault("fitted", {})[":".join(map(str, key))] = self._report(eraser, np.asarray(X, dtype=np.float64), y)
        return eraser

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        if self._state is None:
            raise BiasError("LEACE must be fitted before transform().", "Call fit(embedder, lists) first.")
        state = self._state
        info = dict(state["info"])
        if state["level"] == "sentences":
            fitted = dict(state["fitted"]) if embedder is state["source"] else {}
            return DebiasedEmbedder(source=embedder, method=self.name, transform=PerEncoding(lambda key: self._fit_encodings(embedder, key), fitted), info=info)
        started = time.perf_counter()
        eraser: LeaceEraser = state["eraser"]
        if embedder is state["source"] and state.get("matrix") is not None:
            words, matrix = state["words"], state["matrix"]
            state["matrix"] = None
        else:
            words, matrix = vocabulary_matrix(embedder, self.limit, state["lists"].all_words(), self.precision)
        for first in range(0, matrix.shape[0], CHUNK_ROWS):
            block = matrix[first : first + CHUNK_ROWS]
            block[...] = eraser.apply(block)
        info["timings"] = {**info.get("timings", {})}
        timed(info, "erase_s", started)
        info["vocabulary"] = len(words)
        return DebiasedEmbedder(source=embedder, method=self.name, transform=eraser, vocab=tuple(words), matrix=matrix, info=info)
