"""The four plugin interfaces: Embedder, Metric, WordSet providers (DataPackage) and Debiaser.

Plugins are attrs classes deriving from these bases. Their class attributes `name`, `summary` and
(for embedders and metrics) capabilities are read by `bias list` / `bias info`; their attrs fields are
their documented parameters (see `bias.core.params`).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

if TYPE_CHECKING:  # annotations only: listing plugins must not import numpy
    import numpy as np

    from bias.core.runs.budget import Cost

from bias.core.errors import BiasError
from bias.core.model import WordVectors


class Capability(str, enum.Enum):
    """What an embedder can give; metrics declare which they need, checked before a run starts."""

    WORD_VECTORS = "word-vectors"  # one vector per word (static lookup or a word encoding)
    CONTEXTUAL = "contextual"  # sentence vectors and vectors of a span inside a sentence
    MASKED_LM = "masked-lm"  # log-probabilities of masked tokens
    CAUSAL_LM = "causal-lm"  # sequence log-likelihoods
    # A fixed list of words with one vector each (static vectors, and debiased ones): `vocabulary()` and
    # `all_vectors()` answer. Whole-vocabulary methods (Hard-Debias, clustering, analogies) need it.
    VOCABULARY = "vocabulary"

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
    # The libraries (import names) the embedder computes with: their versions are recorded with each
    # result, beside Python's, numpy's and the framework's (`bias.engine.runner.versions`).
    libraries: ClassVar[tuple[str, ...]] = ()
    location: str

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.location}"

    @property
    def static(self) -> bool:
        """Whether a word's vector is one row of a fixed table, whatever its context: sentences are
        then encoded from word vectors (their mean), never through [CLS] or a last token. Default:
        the embedder declares a fixed vocabulary. A wrapper whose nature depends on what it wraps (a
        model debiased on load) answers for itself."""
        return Capability.VOCABULARY in self.capabilities

    def load(self) -> None:  # noqa: B027  (an optional hook: most embedders open their file here)
        """Open the model. Called once before the first request; errors here are user errors."""

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Vectors for `words`; words without a vector are listed in `lost`, never raised."""
        raise BiasError(f"Embedder '{self.name}' gives no word vectors.")

    def vocabulary(self, limit: int | None = None) -> list[str]:
        """The model's words, most frequent first where the file says so (embedders that declare
        Capability.VOCABULARY only)."""
        raise BiasError(f"Embedder '{self.name}' has no fixed vocabulary.", "Use a static embedding (fasttext, word2vec, glove, kv, vec).")

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        """The first `limit` words of the vocabulary (all when None) and their vectors, as one matrix:
        what whole-vocabulary methods (Hard-Debias, the clustering test, analogies) work on."""
        raise BiasError(f"Embedder '{self.name}' has no fixed vocabulary.", "Use a static embedding (fasttext, word2vec, glove, kv, vec).")

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """Contextual vectors: one row per text, of the whole text or of the character span given.

        `pooling` is cls, mean, first or last (of the whole text, or of the span's sub-tokens when a
        span is given); `layer` is an index (-1 last), "mean-last-4", or None for the embedder's own
        setting. Static embedders answer too: the mean of the words' vectors (fastText: its sentence
        vector), and the span's word vector.
        """
        raise BiasError(f"Embedder '{self.name}' gives no contextual encodings.")

    def foreseen(self) -> frozenset[Capability] | None:
        """What the model will offer, read from its files without loading it (a Hugging Face
        folder's config.json names its head), or None when only loading can tell: a run then refuses
        a metric the model cannot serve before the weights load, not after."""
        return None

    def available(self) -> frozenset[Capability]:
        """What the loaded model really offers; a Hugging Face folder without an MLM head, say, gives
        no masked-LM scores although the embedder type could. Checked by the runner after loading."""
        return self.capabilities

    # -- language-model scores (Capability.MASKED_LM / CAUSAL_LM); see bias.core.models.hf.lm_scoring

    @property
    def uncased(self) -> bool | None:
        """Whether the model's tokenizer lowercases its input (pair metrics then lowercase sentences
        first, as CrowS-Pairs does for uncased models); None (the default) when the embedder cannot
        say, and the tokenizer is probed instead."""
        return None

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """The model's own tokenisation of each text: ids, character offsets and special-token flags."""
        raise BiasError(f"Embedder '{self.name}' has no language-model tokenizer.")

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        """For each request, log P(original token at each masked position | the sequence with all of
        the request's positions masked at once), float64. Batched by the embedder, never one call per mask."""
        raise BiasError(f"Embedder '{self.name}' gives no masked-LM probabilities.")

    def token_log_probs(
        self, sequences: Sequence[Sequence[int]], *, attention: bool = False, start: bool = True
    ) -> list[TokenScores]:
        """Per-token log-probabilities of unmasked sequences: log P(w_i | S) for a masked LM (AUL),
        log P(w_i | w_<i) for a causal LM, every token scored (a start token is put before the
        sequence when the tokenizer adds none; NaN at position 0 only when the model has no such token); with `attention`, the attention each
        token receives (mean over layers, heads and queries) for AULA. `start = False` puts no start
        token before a causal LM's sequence (position 0 is then NaN): the pass without BOS that
        bias-bench scores every token but the first from."""
        raise BiasError(f"Embedder '{self.name}' gives no language-model scores.")

    def choice_log_probs(self, requests: Sequence[ChoiceRequest]) -> list[ChoiceScores]:
        """For each request, log P(token | prompt, the continuation's earlier tokens) of every token of
        each continuation, float64 (a causal LM answering a multiple-choice question). By default one
        sequence per continuation through `tokenize` and `token_log_probs`; an embedder that can share
        the prompt's work between its continuations (the `hf` embedder's cached keys and values)
        overrides it with the same numbers."""
        from bias.core.models.choices import choice_log_probs_by_sequences

        return choice_log_probs_by_sequences(self, requests)

    def check(self) -> None:
        """Cheap checks of the model's files and settings, made for every model before any work starts
        (a missing file, a folder without a tokenizer, an impossible device); raises BiasError."""
        location = getattr(self, "location", None)
        if isinstance(location, str) and location and not location.startswith("pkg:"):
            from pathlib import Path

            if not Path(location).expanduser().exists():
                raise BiasError(f"Model file not found: {location}", "Check the path given with --model.")

    def fingerprint(self) -> str:
        """A string that changes whenever the model's numbers could change (for caches and manifests)."""
        return self.spec

    def describe(self) -> dict[str, Any]:
        """Facts about the loaded model worth recording with a result (dimension, vocabulary size)."""
        return {}

    def quote(self, texts: Sequence[str]) -> Quote | None:
        """What encoding `texts` would cost at a paid service, asked by the runner before the model's
        first experiment (with the texts its experiments will ask for), so a run can be stopped before
        any money is spent. None (the default): the model runs here and costs nothing to ask."""
        return None


@attrs.frozen
class Quote:
    """What a paid embedder would send for a run: the texts not cached yet, about how many tokens they
    are, how many were found in the cache, and the price in US dollars (None when not known)."""

    texts: int
    tokens: int
    cached: int = 0
    usd: float | None = None
    basis: str = ""  # how the price was found ("$0.02 per million tokens")

    def line(self, model: str) -> str:
        if self.usd is None:
            cost = f"not estimated ({self.basis})"
        else:
            cost = f"about ${self.usd:.2f}" if self.usd >= 0.01 else f"about ${self.usd:.6f}"
            cost += f" ({self.basis})" if self.basis else ""
        return (f"{model}: will send {self.texts:,} text(s), about {self.tokens:,} tokens ({self.cached:,} already cached); "
                f"cost {cost}.")


@attrs.frozen
class Tokens:
    """A text as the model sees it."""

    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]  # character span of each token in the text; (0, 0) for specials
    special: tuple[bool, ...]


@attrs.frozen
class MaskedRequest:
    """Token ids with `positions` to be replaced by the mask token at the same time."""

    ids: tuple[int, ...]
    positions: tuple[int, ...]


@attrs.frozen
class TokenScores:
    log_probs: np.ndarray = attrs.field(eq=False)  # float64, one per token; NaN where undefined
    attention: np.ndarray | None = attrs.field(default=None, eq=False)
    # Causal LMs: what the first token was conditioned on (e.g. "bos token '<s>' prepended"), for the
    # result's convention; empty for masked LMs.
    context: str = ""


@attrs.frozen
class ChoiceRequest:
    """A prompt and the continuations to score after it (the answers of a multiple-choice question).
    The text scored is `prompt + continuation`, so a continuation carries its own leading space."""

    prompt: str
    continuations: tuple[str, ...]


@attrs.frozen
class ChoiceScores:
    """Per continuation, the log-probability of each of its tokens after the prompt (float64)."""

    log_probs: tuple[np.ndarray, ...] = attrs.field(eq=False)
    # What the prompt was conditioned on (the start token put before it), for the result's convention.
    context: str = ""
    # Continuations whose tokens were cut from the whole text because the prompt's tokens were not a
    # prefix of it (a tokenizer merging across the boundary); their scores are still of those tokens.
    retokenized: int = 0


WORDSET_INPUT = "wordset"
MODEL_INPUT = "model"


@attrs.frozen
class InputRequest:
    """A secondary input a metric needs beside its data (SEAT's template set, the clustering test's
    original model). The planner resolves every request before the run starts, so a missing one stops
    the run with its `hint` instead of refusing results half-way, and loads each model once per run.

    `kind` is WORDSET_INPUT (`name`: a word-set name or file, which must be of `data_kind`) or
    MODEL_INPUT (`name`: an embedder spec; None means "the original of the model measured": the source
    of a debiased model, the `source_model` of the debias.json beside it, or the model itself).
    """

    kind: str
    name: str | None = None
    data_kind: str | None = None
    hint: str = ""


@attrs.frozen
class ResolvedModel:
    """A model input as the planner found it: the loaded embedder and how it was found (for the result)."""

    embedder: Embedder
    how: str


@attrs.frozen
class Measured:
    """What a metric's own arithmetic found; the base classes turn it into a Result."""

    effect_size: float | None
    p_value: float | None = None
    figures: dict[str, Any] = attrs.field(factory=dict)
    convention: dict[str, Any] = attrs.field(factory=dict)
    warnings: list[str] = attrs.field(factory=list)


class Metric(ABC):
    """Computes a bias measure from an embedder and one piece of test data.

    Metrics are pure: the same embedder, data, parameters and seed give the same Result. They know
    nothing of files or of other plugins; what they need beside their data they ask for in `inputs`,
    and the runner passes it, resolved and loaded, as `compute(..., inputs={name: value})` (a word set,
    or a `ResolvedModel`). Metrics whose `inputs` is empty are called without that keyword.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]]
    # At least one of these is needed too (pair metrics take a masked or a causal LM).
    requires_any: ClassVar[frozenset[Capability]] = frozenset()
    data_kind: ClassVar[str]
    # How reports label the number (`effect_size`): a short label ("d", "%", "accuracy"), what it is,
    # its unit ("%" or ""), the value a model without bias gives (None: no such value), whether its
    # sign says which way the bias goes, the decimals shown, and the scale it shares with other
    # metrics (values on one scale may share a robustness curve; "" is the label's own scale).
    # Results carry the declaration in meta["value"], so reports, which read results only, use it.
    value_label: ClassVar[str] = "value"
    value_name: ClassVar[str] = ""  # "": the label says it
    value_unit: ClassVar[str] = ""
    value_reference: ClassVar[float | None] = None
    value_signed: ClassVar[bool] = True
    value_digits: ClassVar[int] = 2
    value_scale: ClassVar[str] = ""
    # Which way of the value is more bias, so that methods on different scales can be compared
    # (`bias report --agreement`): "higher", "lower" (a JSS of 100 is no bias) or "none" (the number
    # says nothing about how biased the model is). "" derives it: "higher" where the metric declares
    # a no-bias `value_reference`, else "none".
    value_more_biased: ClassVar[str] = ""
    # What changes in that declaration with a parameter's value, where a parameter chooses which number
    # the value is: {parameter: {value: {"value_scale": ..., ...}}} (bbq's `headline` puts s_AMB and
    # s_DIS on scales of their own, so a robustness curve does not mix them).
    value_by_param: ClassVar[dict[str, dict[Any, dict[str, Any]]]] = {}

    @abstractmethod
    def compute(self, embedder: Embedder, data: Any, *, seed: int | None = None) -> Any:
        """Return a `bias.core.model.Result` (the runner fills in the key and timings)."""

    def inputs(self, data: Any) -> dict[str, InputRequest]:
        """What this metric needs beside `data`, by the name `compute` receives it under (see InputRequest)."""
        return {}

    def unfit(self, embedder_type: type[Embedder]) -> str | None:
        """Why one of this metric's settings cannot work with a kind of model (cls pooling of static
        vectors), asked when the run is planned; None (the default) when nothing stands in the way."""
        return None

    def cost(self, data: Any) -> Cost | None:
        """What computing on `data` will cost (seconds, memory and the settings that make them), so the
        planner can refuse a run that would not finish before any work starts. None (the default) is
        unknown: the run is not checked. Build it with `bias.api.permutation_cost`, `bootstrap_cost`
        or `Cost` directly."""
        return None

    def make_result(self, model: str, data: Any, seed: int | None, **fields: Any) -> Any:
        """The one way to build a Result: the fields every result shares (model, word set, metric,
        parameters, seed, meta) plus `fields` (status, effect_size, p_value, figures, ...)."""
        from bias.core.model import Result

        return Result(**{**self.result_fields(model, data, seed), **fields})

    def params(self) -> dict[str, Any]:
        """The parameter values, defaults included: part of every result and of the experiment key."""
        return attrs.asdict(self) if attrs.has(type(self)) else {}

    def result_fields(self, model: str, data: Any, seed: int | None, **extra: Any) -> dict[str, Any]:
        """The fields every Result of this metric shares (the runner fills in the key and timings)."""
        meta = data.meta
        return {
            "key": "",
            "model": model,
            "wordset": data.name,
            "metric": self.name,
            "params": self.params(),
            "seed": seed,
            "meta": {"bias_type": meta.bias_type, "language": meta.language, "expected_direction": meta.expected_direction,
                     **({"title": meta.title} if meta.title else {}), **variant_meta(meta), **value_meta(type(self), self.params())},
            **extra,
        }


def value_meta(metric_class: type, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a metric declares about its number (label, unit, ...) with the parameters `params`, so that
    reports, which read results only, label every metric's value from its results."""
    from bias.core.reports.values import declared_value

    return {"value": declared_value(metric_class, params)}


def variant_meta(meta: Any) -> dict[str, str]:
    """The concept and descriptor of a word set that is a variant of a test, for its results' meta."""
    return {k: v for k in ("concept", "descriptor") if (v := getattr(meta, k, ""))}


STATIC_VECTORS = "static-vectors"  # a debiased matrix over the model's vocabulary, which `bias debias` writes
ON_THE_FLY = "on-the-fly"  # the model wrapped, its encodings changed as they are made (`bias run --debias`)


class Debiaser(ABC):
    """scikit-learn style mitigation: `fit(embedder, lists)` learns, `transform(embedder)` returns an
    Embedder, so every metric runs unchanged on the debiased model.

    `lists` are debiasing lists (`bias.core.data.debias_lists.DebiasLists`). A debiaser declares what its
    `transform` gives (`produces`: STATIC_VECTORS, which `bias debias` writes as a vector file, and/or
    ON_THE_FLY, a wrapped model), and may override the hooks below: `supports` (why it cannot debias
    a model, so a mismatch is refused before any work, naming the methods that fit) and `wrap` (the
    debiased model at once, fitted at its first load(), for `bias run --debias`)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    produces: ClassVar[frozenset[str]] = frozenset({STATIC_VECTORS})

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        """Why this method cannot debias `embedder`, None when it can. By default: the capabilities it
        `requires` that the embedder lacks."""
        missing = [c.value for c in sorted(cls.requires, key=str) if c not in embedder.capabilities]
        return f"Debiaser '{cls.name}' needs {', '.join(missing)}, which {embedder.spec} does not give" if missing else None

    def params(self) -> dict[str, Any]:
        """The parameter values, defaults included: recorded beside the debiased vectors."""
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init} if attrs.has(type(self)) else {}

    def wrap(self, embedder: Embedder, lists: Any) -> Embedder:
        """The debiased model for `bias run --debias`. By default the model is loaded and fitted now;
        a debiaser that can defer the fit to the model's first load() overrides this."""
        embedder.load()
        return self.fit(embedder, lists).transform(embedder)

    @abstractmethod
    def fit(self, embedder: Embedder, lists: Any) -> Debiaser: ...

    @abstractmethod
    def transform(self, embedder: Embedder) -> Embedder: ...


def missing_capabilities(metric: Metric | type[Metric], have: frozenset[Capability] | set[Capability]) -> list[str]:
    """What a metric needs that `have` lacks: each of `requires`, and one of `requires_any`."""
    missing = [c.value for c in sorted(metric.requires, key=str) if c not in have]
    any_of = metric.requires_any
    if any_of and not any(c in have for c in any_of):
        missing.append(" or ".join(sorted(c.value for c in any_of)))
    return missing


def describe_needs(metric: Metric | type[Metric]) -> str:
    parts = sorted(c.value for c in metric.requires)
    any_of = metric.requires_any
    if any_of:
        parts.append(" or ".join(sorted(c.value for c in any_of)))
    return ", ".join(parts)


def check_compatible(metric: Metric | type[Metric], embedder: Embedder | type[Embedder], data_kind: str) -> None:
    """Refuse a mismatch before any work starts, naming what is missing."""
    missing = missing_capabilities(metric, embedder.capabilities)
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
    """An importer of a community word-set format (WEAT .txt, SEAT JSON, CrowS-Pairs CSV, ...).

    Registered under the entry-point group `bias.formats` and chosen by file suffix (and, where two
    formats share a suffix, by `sniff`); in a datasets folder of the BIAS Detection Framework
    (`<lang>/<KIND>/<file>`) only the importers whose `folders` name that KIND are asked, so a file the
    framework keeps beside its tests (a vocabulary CSV, a templates.txt) is not mistaken for a test. An importer only turns its file into the record the house
    format describes (`kind`, `language`, ..., and the kind's contents); checking and building are
    shared, so an imported file is validated exactly like a TOML one.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    kind: ClassVar[str] = "association"
    folders: ClassVar[tuple[str, ...]] = ()  # the framework's KIND folders holding this format (WEAT, SEAT, ...)

    @abstractmethod
    def record(self, path: Any) -> dict[str, Any]:
        """The file as a house-format record; raise BiasError naming the file (and line) if unreadable."""

    def sniff(self, path: Any) -> bool:
        """Whether the file looks like this format (only asked when several formats share a suffix)."""
        return True

    def load(self, path: Any) -> Any:
        from pathlib import Path

        from bias.core.data.wordsets import build_record

        return build_record(self.record(path), Path(path).stem, str(path))

    def validate(self, path: Any) -> list[Any]:
        from bias.core.data.wordsets import Problem, check_record

        try:
            return check_record(self.record(path), str(path))
        except BiasError as exc:
            return [Problem(str(path), "", exc.message)]
