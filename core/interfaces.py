"""The four plugin interfaces: Embedder, Metric, WordSet providers (DataPackage) and Debiaser.

Plugins are attrs classes deriving from these bases. Their class attributes `name`, `summary` and
(for embedders and metrics) capabilities are read by `bias list` / `bias info`; their attrs fields are
their documented parameters (see `bias.core.params`).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.model import WordVectors


class Capability(str, enum.Enum):
    """What an embedder can give; metrics declare which they need, checked before a run starts."""

    WORD_VECTORS = "word-vectors"  # one vector per word (static lookup or a word encoding)
    CONTEXTUAL = "contextual"  # sentence vectors and vectors of a span inside a sentence
    MASKED_LM = "masked-lm"  # log-probabilities of masked tokens
    CAUSAL_LM = "causal-lm"  # sequence log-likelihoods

    def __str__(self) -> str:
        return self.value


class Embedder(ABC):
    """Turns words or sentences into vectors (or probabilities) for metrics.

    Built from a spec `NAME:LOCATION` (for example `word2vec:vectors.bin`); `location` is the first
    parameter of every embedder. Heavy libraries (torch, gensim, fastText) are imported inside methods,
    never at module import, so `bias list` stays fast.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    capabilities: ClassVar[frozenset[Capability]]
    location: str

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.location}"

    def load(self) -> None:
        """Open the model. Called once before the first request; errors here are user errors."""

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Vectors for `words`; words without a vector are listed in `lost`, never raised."""
        raise BiasError(f"Embedder '{self.name}' gives no word vectors.")

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int = -1,
    ) -> np.ndarray:
        """Contextual vectors: one row per text, of the whole text or of the character span given."""
        raise BiasError(f"Embedder '{self.name}' gives no contextual encodings.")

    def fingerprint(self) -> str:
        """A string that changes whenever the model's numbers could change (for caches and manifests)."""
        return self.spec

    def describe(self) -> dict[str, Any]:
        """Facts about the loaded model worth recording with a result (dimension, vocabulary size)."""
        return {}


class Metric(ABC):
    """Computes a bias measure from an embedder and one piece of test data.

    Metrics are pure: the same embedder, data, parameters and seed give the same Result. They know
    nothing of files; the runner writes what they return.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]]
    data_kind: ClassVar[str]

    @abstractmethod
    def compute(self, embedder: Embedder, data: Any, *, seed: int | None = None) -> Any:
        """Return a `bias.core.model.Result` (the runner fills in the key and timings)."""

    def params(self) -> dict[str, Any]:
        """The parameter values, defaults included: part of every result and of the experiment key."""
        return attrs.asdict(self) if attrs.has(type(self)) else {}


class Debiaser(ABC):
    """scikit-learn style mitigation: `fit(embedder, lists)` learns, `transform(embedder)` returns an
    Embedder, so every metric runs unchanged on the debiased model."""

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    @abstractmethod
    def fit(self, embedder: Embedder, lists: Any) -> Debiaser: ...

    @abstractmethod
    def transform(self, embedder: Embedder) -> Embedder: ...


def check_compatible(metric: Metric | type[Metric], embedder: Embedder | type[Embedder], data_kind: str) -> None:
    """Refuse a mismatch before any work starts, naming what is missing."""
    missing = [c.value for c in metric.requires if c not in embedder.capabilities]
    if missing:
        raise BiasError(
            f"Metric '{metric.name}' needs {', '.join(missing)}, which embedder '{embedder.name}' does not give.",
            "Choose a model type that offers it (see `bias list embedders`).",
        )
    if data_kind != metric.data_kind:
        raise BiasError(
            f"Metric '{metric.name}' needs {metric.data_kind} data, but the word set given is of kind {data_kind}.",
            f"Pick a word set of kind {metric.data_kind} (see `bias list wordsets`).",
        )


class WordSetFormat(ABC):
    """An importer of a community word-set format (WEAT .txt, SEAT JSON, ...), chosen by file suffix.

    Registered under the entry-point group `bias.formats`. An importer only turns its file into the
    record the house format describes (`kind`, `language`, ..., `sets`); checking and building the
    test is shared, so an imported file is validated exactly like a TOML one.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def record(self, path: Any) -> dict[str, Any]:
        """The file as a house-format record; raise BiasError naming the file (and line) if unreadable."""

    def load(self, path: Any) -> Any:
        from pathlib import Path

        from bias.core.wordsets import association_from_record

        return association_from_record(self.record(path), Path(path).stem, str(path))

    def validate(self, path: Any) -> list[Any]:
        from bias.core.wordsets import Problem, check_association

        try:
            return check_association(self.record(path), str(path))
        except BiasError as exc:
            return [Problem(str(path), "", exc.message)]
