"""INLP, Iterative Nullspace Projection (Ravfogel et al. 2020, "Null It Out").

A linear classifier is trained to predict the protected attribute (male vs female) from the vectors;
its weight direction is removed by projecting on its nullspace, and the next classifier is trained on
the projected vectors, for a set number of iterations. The final projection P = I - Q Q^T (Q an
orthonormal basis of every weight direction found) is applied to every vector: v <- v P.

Training data:
- word vectors, `training = "projection"` (the paper's setting for GloVe): the `per_class` words most
  aligned with the lists' direction pair (he - she) by cosine in the original space are "male", the
  `per_class` least aligned "female"; the direction words themselves are left out;
- word vectors, `training = "pairs"`: the words of the definitional and equalize pairs, labelled by
  their side of the pair (no ranking involved; useful for small vocabularies);
- sentence encodings (a contextual model): the all-male and all-female versions of the sentence
  pairs Sent-Debias builds (from `corpus`, else templates), labelled by version; fitted separately
  for each way encodings are taken and applied on the fly.

Each classifier is trained on a seeded 70/30 split and its held-out accuracy recorded, so the result
shows linear predictability falling towards chance (0.5 for balanced classes). The paper ran 35
iterations on 300-d GloVe; the default here is 10, a parameter.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Hashable
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.debias_lists import DebiasLists, lists_of
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Debiaser, Embedder
from bias.core.params import int_at_least, one_of, param
from bias.plugins.debiasers.sent import (
    check_pairs,
    read_corpus,
    sentence_pairs,
    template_sentences,
)
from bias.core.debiased import (
    CHUNK_ROWS,
    DebiasedEmbedder,
    FitOnLoad,
    LinearProjection,
    PerEncoding,
    check_dtype,
    has_vocabulary,
    timed,
    labelled_words,
    vocabulary_matrix,
)

CLASSIFIERS = ("svm", "logistic")
TRAINING = ("projection", "pairs")
LEVELS = ("auto", "words", "sentences")
DEV_SHARE = 0.3


def make_classifier(kind: str, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    if kind == "svm":  # the paper's choice, without intercept so the weight is a pure direction
        return LinearSVC(fit_intercept=False, dual="auto", max_iter=5000, random_state=seed)
    return LogisticRegression(fit_intercept=False, max_iter=2000, random_state=seed)


def split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    dev = max(1, round(n * DEV_SHARE))
    return order[dev:], order[:dev]


def nullspace_projection(directions: list[np.ndarray], dim: int) -> np.ndarray:
    """P = I - Q Q^T, with Q an orthonormal basis of the span of every direction."""
    if not directions:
        return np.eye(dim)
    stacked = np.array(directions, dtype=np.float64)
    _, singular, vt = np.linalg.svd(stacked, full_matrices=False)
    rank = int((singular > singular[0] * 1e-10).sum()) if singular.size and singular[0] > 0 else 0
    basis = vt[:rank]
    return np.eye(dim) - basis.T @ basis


def inlp(X: np.ndarray, y: np.ndarray, *, iterations: int, classifier: str, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
    """The projection and, per iteration, the held-out accuracy of the classifier trained then."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        raise BiasError("INLP needs training vectors of both classes (male and female); only one was found.")
    train, dev = split(len(y), seed)
    if len(np.unique(y[train])) < 2:
        raise BiasError(f"INLP has too few training vectors ({len(y)}) to hold both classes in its training split.")
    dim = X.shape[1]
    directions: list[np.ndarray] = []
    P = np.eye(dim)
    accuracies = []
    not_converged = 0
    from sklearn.exceptions import ConvergenceWarning

    for i in range(iterations):
        projected = X @ P
        clf = make_classifier(classifier, seed + i)
        with warnings.catch_warnings(record=True) as caught:
            # only convergence warnings are expected (nearly separable data); they are counted and
            # reported, and every other warning is passed on
            warnings.simplefilter("always")
            clf.fit(projected[train], y[train])
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                not_converged += 1
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        accuracies.append(float(clf.score(projected[dev], y[dev])))
        w = np.asarray(clf.coef_, dtype=np.float64).reshape(-1, dim)
        norms = np.linalg.norm(w, axis=1)
        if not (norms > 1e-12).any():
            break  # nothing left to remove
        directions.extend(w[norms > 1e-12] / norms[norms > 1e-12, None])
        P = nullspace_projection(directions, dim)
    if not_converged:
        logging.getLogger(__name__).warning(
            "INLP: %d of %d classifiers stopped before converging (recorded as classifiers_not_converged); "
            "their directions are still removed.", not_converged, len(accuracies),
        )
    majority = float(max(np.mean(y[dev] == c) for c in np.unique(y)))
    return P, {
        "accuracy_per_iteration": accuracies,
        "majority_baseline": majority,
        "removed_rank": round(dim - np.trace(P)),
        "training_vectors": len(y),
        "classifiers_not_converged": not_converged,
    }


@attrs.define
class Inlp(FitOnLoad, Debiaser):
    """Project out, one classifier at a time, every linear direction that predicts gender."""

    name: ClassVar[str] = "inlp"
    summary: ClassVar[str] = "INLP: iterative nullspace projection of linear gender classifiers (Ravfogel et al. 2020)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    iterations: int = param(10, "classifiers trained and projected out (the paper used 35 on 300-d GloVe)", validator=int_at_least(1))
    classifier: str = param("svm", "linear classifier: svm (LinearSVC, as in the paper) or logistic", validator=one_of(CLASSIFIERS))
    training: str = param(
        "projection", "word-level training words: projection (most male/female by the direction pair) or pairs (the lists' pairs)",
        validator=one_of(TRAINING),
    )
    per_class: int = param(1000, "training words per class when training = projection (at most half the vocabulary)", validator=int_at_least(1))
    level: str = param("auto", "words (static vectors), sentences (encodings of sentence pairs), or auto", validator=one_of(LEVELS))
    corpus: str | None = param(None, "sentence level: text file, one sentence per line (default: templates)")
    limit: int | None = param(None, "debias only the first N words of the vocabulary (None: all)", validator=attrs.validators.optional(int_at_least(1)))
    seed: int = param(0, "seed of the data split and the classifiers", validator=int_at_least(0))
    precision: str = param("float32", "dtype of the debiased matrix: float32 or float64", validator=check_dtype)

    _state: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        if has_vocabulary(embedder) or Capability.CONTEXTUAL in embedder.capabilities:
            return None
        return f"INLP needs a static model with a vocabulary or a model that encodes sentences; {embedder.spec} offers neither"

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}

    def _level(self, embedder: Embedder) -> str:
        if self.level != "auto":
            return self.level
        return "words" if has_vocabulary(embedder) else "sentences"

    def fit(self, embedder: Embedder, lists: Any) -> Inlp:
        lists = lists_of(lists, "INLP")
        reason = self.supports(embedder)
        if reason:
            raise BiasError(reason + ".", "Methods: hard and inlp for static vectors, sent and inlp for contextual models.")
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
                raise BiasError(f"INLP at word level needs a static model with a vocabulary; {embedder.spec} has none.", "Use level = sentences.")
            words, matrix = vocabulary_matrix(embedder, self.limit, lists.all_words(), self.precision)
            timed(info, "read_s", started)
            started = time.perf_counter()
            X, y, chosen = self._word_training(words, matrix, lists)
            P, report = inlp(X, y, iterations=self.iterations, classifier=self.classifier, seed=self.seed)
            info.update(report, training_words={"male": chosen[0][:50], "female": chosen[1][:50]})
            info["accuracy"] = report["accuracy_per_iteration"]
            self._state.update(words=words, matrix=matrix, projection=P)
        else:
            if Capability.CONTEXTUAL not in embedder.capabilities:
                raise BiasError(f"INLP at sentence level needs a model that encodes sentences; {embedder.spec} does not.", "Use level = words.")
            sentences, origin = (read_corpus(self.corpus), str(self.corpus)) if self.corpus else template_sentences(lists)
            pairs = sentence_pairs(sentences, lists)
            check_pairs(pairs, 2, origin)
            info.update(sentences_from=origin, sentence_pairs=len(pairs), fitted={})
            self._state["pairs"] = pairs
            embedder.load()
            default = ("sentence", "mean", None)
            self._state["fitted"] = {default: self._fit_encodings(embedder, default)}
            info["accuracy"] = info["fitted"]["sentence:mean:None"]["accuracy_per_iteration"]
        timed(info, "fit_s", started)
        return self

    def _word_training(self, words: list[str], matrix: np.ndarray, lists: DebiasLists) -> tuple[np.ndarray, np.ndarray, tuple[list[str], list[str]]]:
        return labelled_words(words, matrix, lists, self.training, self.per_class, "INLP")

    def _fit_encodings(self, embedder: Embedder, key: Hashable) -> LinearProjection:
        assert self._state is not None
        lists: DebiasLists = self._state["lists"]
        if key == ("words",):
            pairs = [(a, b) for a, b in (*lists.definitional, *lists.equalize)]
            found = embedder.word_vectors([w for p in pairs for w in p]).as_dict()
            pairs = [(a, b) for a, b in pairs if a in found and b in found]
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
        P, report = inlp(X, y, iterations=self.iterations, classifier=self.classifier, seed=self.seed)
        self._state["info"].setdefault("fitted", {})[":".join(map(str, key))] = report
        return LinearProjection(P)

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        if self._state is None:
            raise BiasError("INLP must be fitted before transform().", "Call fit(embedder, lists) first.")
        state = self._state
        info = dict(state["info"])
        if state["level"] == "sentences":
            fitted = dict(state["fitted"]) if embedder is state["source"] else {}
            return DebiasedEmbedder(source=embedder, method=self.name, transform=PerEncoding(lambda key: self._fit_encodings(embedder, key), fitted), info=info)
        started = time.perf_counter()
        P = state["projection"]
        if embedder is state["source"] and state.get("matrix") is not None:
            words, matrix = state["words"], state["matrix"]
            state["matrix"] = None
        else:
            words, matrix = vocabulary_matrix(embedder, self.limit, state["lists"].all_words(), self.precision)
        projection = P.astype(matrix.dtype)
        for first in range(0, matrix.shape[0], CHUNK_ROWS):
            block = matrix[first : first + CHUNK_ROWS]
            block[...] = block @ projection
        info["timings"] = {**info.get("timings", {})}
        timed(info, "project_s", started)
        info["vocabulary"] = len(words)
        return DebiasedEmbedder(source=embedder, method=self.name, transform=LinearProjection(P), vocab=tuple(words), matrix=matrix, info=info)
