"""What the debiasers that erase a linearly encoded concept share (INLP, LEACE).

Both learn one linear (or affine) map from vectors labelled male (1) and female (0) and apply it to
every vector the model gives; they differ only in how the map is fitted and what they report. So the
parameters, the choice of level, the training data (list words of a static model, or the swapped
sentence pairs of a contextual one, fitted once per way encodings are taken) and the chunked update
of a static vocabulary live here once, and a method is a subclass with three hooks:

- `_fit_map(X, y)`: the fitted transformation and its report (the training rows are float64);
- `_headline(report)`: fields the record repeats at its top level from the default fit's report;
- `_block_map(fitted, dtype)`: how a block of the vocabulary matrix (of `dtype`) is changed.

The installed SEAT templates of the lists' language are attached to the lists by whoever loaded them
(`DebiasLists.templates`), so that no debiaser looks anything up itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, Self

import attrs
import numpy as np
from bias.core.data.debias_lists import DebiasLists, lists_of
from bias.core.models.debiasing import (
    CHUNK_ROWS,
    DebiasedEmbedder,
    FitOnLoad,
    PerEncoding,
    VectorTransform,
    check_dtype,
    labelled_words,
    timed,
    vocabulary_matrix,
)
from bias.core.errors import BiasError
from bias.core.interfaces import ON_THE_FLY, STATIC_VECTORS, Capability, Debiaser, Embedder
from bias.core.params import int_at_least, one_of, param
from bias.core.models.debiasing.counterfactual_sentences import (
    check_pairs,
    encode_pairs,
    read_corpus,
    sentence_pairs,
    template_sentences,
)

TRAINING = ("projection", "pairs")
LEVELS = ("auto", "words", "sentences")
DEFAULT_ENCODING = ("sentence", "mean", None)


def params_in_order(*names: str) -> Callable[[type, list[attrs.Attribute]], list[attrs.Attribute]]:
    """An attrs field transformer that lists the named fields first, in this order (a subclass's own
    parameters would otherwise all come after the shared ones, in `bias info` and in
    debias.json)."""

    def reorder(cls: type, fields: list[attrs.Attribute]) -> list[attrs.Attribute]:
        by_name = {f.name: f for f in fields}
        return [by_name[n] for n in names] + [f for f in fields if f.name not in names]

    return reorder


@attrs.define
class LinearErasure(FitOnLoad, Debiaser):
    """Fit a linear map that removes what predicts gender, then apply it to every vector."""

    # `requires` is declared by each method's own class: `bias list` reads it from the plugin's
    # source
    label: ClassVar[str]  # the method's name in messages: "INLP"
    methods_hint: ClassVar[str]  # what to use instead when the model fits neither level
    apply_timing: ClassVar[str]  # the timing key of the vocabulary update: "project_s"
    check_word_pairs: ClassVar[bool] = True  # refuse fewer than two list pairs for word encodings
    # a matrix for static vectors, a wrapped model for contextual ones (see `level`)
    produces: ClassVar[frozenset[str]] = frozenset({STATIC_VECTORS, ON_THE_FLY})

    training: str = param(
        "projection",
        "word-level training words: projection (most male/female by the direction pair) or "
        "pairs (the lists' pairs)",
        validator=one_of(TRAINING),
    )
    per_class: int = param(
        1000,
        "training words per class when training = projection (at most half the vocabulary)",
        validator=int_at_least(1),
    )
    level: str = param(
        "auto",
        "words (static vectors), sentences (encodings of sentence pairs), or auto",
        validator=one_of(LEVELS),
    )
    corpus: str | None = param(
        None, "sentence level: text file, one sentence per line (default: templates)"
    )
    limit: int | None = param(
        None,
        "debias only the first N words of the vocabulary (None: all)",
        validator=attrs.validators.optional(int_at_least(1)),
    )
    precision: str = param(
        "float32", "dtype of the debiased matrix: float32 or float64", validator=check_dtype
    )

    _state: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    # --- the hooks of a method
    # ---------------------------------------------------------------------

    def _fit_map(self, X: np.ndarray, y: np.ndarray) -> tuple[VectorTransform, dict[str, Any]]:
        raise NotImplementedError

    def _headline(self, report: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _block_map(
        self, fitted: VectorTransform, dtype: np.dtype
    ) -> Callable[[np.ndarray], np.ndarray]:
        raise NotImplementedError

    def _installed_templates(self, lists: DebiasLists) -> tuple[list[str], str]:
        """Sentences from the SEAT templates the lists were loaded with, else bare words (as
        Sent-Debias)."""
        return template_sentences(lists)

    # --- the shared machinery
    # ------------------------------------------------------------------------

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        if (
            Capability.VOCABULARY in embedder.capabilities
            or Capability.CONTEXTUAL in embedder.capabilities
        ):
            return None
        return (
            f"{cls.label} needs a static model with a vocabulary or a model that encodes "
            f"sentences; {embedder.spec} offers neither"
        )

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}

    def _level(self, embedder: Embedder) -> str:
        if self.level != "auto":
            return self.level
        return "words" if Capability.VOCABULARY in embedder.capabilities else "sentences"

    def fit(self, embedder: Embedder, lists: Any) -> Self:
        lists = lists_of(lists, self.label)
        reason = self.supports(embedder)
        if reason:
            raise BiasError(reason + ".", self.methods_hint)
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
            if Capability.VOCABULARY not in embedder.capabilities:
                raise BiasError(
                    f"{self.label} at word level needs a static model with a vocabulary; "
                    f"{embedder.spec} has none.",
                    "Use level = sentences.",
                )
            words, matrix = vocabulary_matrix(
                embedder, self.limit, lists.all_words(), self.precision
            )
            timed(info, "read_s", started)
            started = time.perf_counter()
            X, y, chosen = labelled_words(
                words, matrix, lists, self.training, self.per_class, self.label
            )
            fitted, report = self._fit_map(X, y)
            info.update(report, training_words={"male": chosen[0][:50], "female": chosen[1][:50]})
            info.update(self._headline(report))
            self._state.update(words=words, matrix=matrix, map=fitted)
        else:
            if Capability.CONTEXTUAL not in embedder.capabilities:
                raise BiasError(
                    f"{self.label} at sentence level needs a model that encodes sentences; "
                    f"{embedder.spec} does not.",
                    "Use level = words.",
                )
            sentences, origin = (
                (read_corpus(self.corpus), str(self.corpus))
                if self.corpus
                else self._installed_templates(lists)
            )
            pairs = sentence_pairs(sentences, lists)
            check_pairs(pairs, 2, origin)
            info.update(sentences_from=origin, sentence_pairs=len(pairs), fitted={})
            self._state["pairs"] = pairs
            embedder.load()
            self._state["fitted"] = {
                DEFAULT_ENCODING: self._fit_encodings(embedder, DEFAULT_ENCODING)
            }
            info.update(self._headline(info["fitted"][":".join(map(str, DEFAULT_ENCODING))]))
        timed(info, "fit_s", started)
        return self

    def _fit_encodings(self, embedder: Embedder, key: Hashable) -> VectorTransform:
        """The map for one way of taking vectors: ("words",) for word vectors of a contextual model
        (from the list pairs' vectors), else (sentence or span, pooling, layer)."""
        assert self._state is not None
        lists: DebiasLists = self._state["lists"]
        if key == ("words",):
            pairs = [(a, b) for a, b in (*lists.definitional, *lists.equalize)]
            found = embedder.word_vectors([w for p in pairs for w in p]).as_dict()
            pairs = [(a, b) for a, b in pairs if a in found and b in found]
            if self.check_word_pairs:
                check_pairs(pairs, 2, "the list pairs the model has")
            X = np.array([found[a] for a, _ in pairs] + [found[b] for _, b in pairs])
        else:
            pairs = self._state["pairs"]
            X = encode_pairs(embedder, pairs, key)  # type: ignore[arg-type]
        y = np.array([1] * len(pairs) + [0] * len(pairs))
        fitted, report = self._fit_map(np.asarray(X, dtype=np.float64), y)
        self._state["info"].setdefault("fitted", {})[":".join(map(str, key))] = report
        return fitted

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        if self._state is None:
            raise BiasError(
                f"{self.label} must be fitted before transform().",
                "Call fit(embedder, lists) first.",
            )
        state = self._state
        info = dict(state["info"])
        if state["level"] == "sentences":
            fitted = dict(state["fitted"]) if embedder is state["source"] else {}
            return DebiasedEmbedder(
                source=embedder,
                method=self.name,
                transform=PerEncoding(lambda key: self._fit_encodings(embedder, key), fitted),
                info=info,
            )
        started = time.perf_counter()
        transform: VectorTransform = state["map"]
        if embedder is state["source"] and state.get("matrix") is not None:
            words, matrix = state["words"], state["matrix"]
            state["matrix"] = None
        else:
            words, matrix = vocabulary_matrix(
                embedder, self.limit, state["lists"].all_words(), self.precision
            )
        change = self._block_map(transform, matrix.dtype)
        for first in range(0, matrix.shape[0], CHUNK_ROWS):
            block = matrix[first : first + CHUNK_ROWS]
            block[...] = change(block)
        info["timings"] = {**info.get("timings", {})}
        timed(info, self.apply_timing, started)
        info["vocabulary"] = len(words)
        return DebiasedEmbedder(
            source=embedder,
            method=self.name,
            transform=transform,
            vocab=tuple(words),
            matrix=matrix,
            info=info,
        )
