"""The four plugin interfaces: Embedder, Metric, WordSet providers (DataPackage) and Debiaser.

Plugins are attrs classes deriving from these bases. Their class attributes `name`, `summary` and
(for embedders and metrics) capabilities are read by `bias list` / `bias info`; their attrs fields
are their documented parameters (see `bias.core.params`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

if TYPE_CHECKING:  # annotations only: listing plugins must not import numpy
    import numpy as np

    from bias.core.generation import GenerationRequest, Generations, Sampling
    from bias.core.runs.budget import Cost

from bias.core.errors import BiasError
from bias.core.model import WordVectors

# Part of the interfaces: what a language model is asked and answers (the types of the LM methods),
# and what a remote model tells before anything is sent.
from bias.core.lm_requests import ChoiceRequest, ChoiceScores, MaskedRequest, Tokens, TokenScores
from bias.core.remote import Contact, Quote  # noqa: F401
from bias.core.capabilities import Capability
from bias.core.values import PLAIN_VALUE, ValueKind


class Embedder(ABC):
    """Turns words or sentences into vectors (or probabilities) for metrics.

    Built from a spec `NAME:LOCATION` (for example `word2vec:vectors.bin`); `location` is the first
    parameter of every embedder. Heavy libraries (torch, gensim, fastText) are imported inside
    methods, never at module import, so `bias list` stays fast.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    capabilities: ClassVar[frozenset[Capability]]
    # The libraries (import names) the embedder computes with: their versions are recorded with each
    # result, beside Python's, numpy's and the framework's (`bias.engine.runner.versions`).
    libraries: ClassVar[tuple[str, ...]] = ()
    # Whether LOCATION is a network address (a server's URL, as in completions:http://host:8000/v1),
    # not a file, a folder or a model id: an experiment file's address then needs the user's
    # confirmation (--allow location=URL), as a parameter declared with guard="route" does.
    location_is_address: ClassVar[bool] = False
    location: str

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.location}"

    def contacts(self) -> tuple[Contact, ...]:
        """Every address this model sends requests to, with the variable whose key goes along; `bias
        run` says them before anything is sent. Default: the location when it is an address, and
        every route parameter whose value is a URL (no key known); a model that sends a key says so
        by overriding this."""
        from bias.core.params import describe_params

        urls = [self.location] if self.location_is_address else []
        for p in describe_params(type(self)):
            value = getattr(self, p.name, None)
            if p.guard == "route" and isinstance(value, str) and "://" in value:
                urls.append(value)
        return tuple(Contact(url) for url in dict.fromkeys(urls))

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
        raise BiasError(
            f"Embedder '{self.name}' has no fixed vocabulary.",
            "Use a static embedding (fasttext, word2vec, glove, kv, vec).",
        )

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        """The first `limit` words of the vocabulary (all when None) and their vectors, as one
        matrix: what whole-vocabulary methods (Hard-Debias, the clustering test, analogies) work
        on."""
        raise BiasError(
            f"Embedder '{self.name}' has no fixed vocabulary.",
            "Use a static embedding (fasttext, word2vec, glove, kv, vec).",
        )

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
        """What the loaded model really offers; a Hugging Face folder without an MLM head, say,
        gives no masked-LM scores although the embedder type could. Checked by the runner after
        loading."""
        return self.capabilities

    # -- language-model scores (Capability.MASKED_LM / CAUSAL_LM): bias.core.models.hf.lm_scoring

    @property
    def uncased(self) -> bool | None:
        """Whether the model's tokenizer lowercases its input (pair metrics then lowercase sentences
        first, as CrowS-Pairs does for uncased models); None (the default) when the embedder cannot
        say, and the tokenizer is probed instead."""
        return None

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """The model's own tokenisation of each text: ids, character offsets and special-token
        flags."""
        raise BiasError(f"Embedder '{self.name}' has no language-model tokenizer.")

    @property
    def mask_token(self) -> str | None:
        """The mask token as text, for a metric that rebuilds a peer's text inputs with the mask
        written in them (bias-bench's StereoSet); None when the model has none."""
        return None

    def decode(self, ids: Sequence[int]) -> str:
        """The text the model's tokenizer gives back for these ids, as a peer that decodes pieces
        and tokenises the text again reads them."""
        raise BiasError(f"Embedder '{self.name}' has no language-model tokenizer.")

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        """For each request, log P(original token at each masked position | the sequence with all of
        the request's positions masked at once), float64. Batched by the embedder, never one call
        per mask."""
        raise BiasError(f"Embedder '{self.name}' gives no masked-LM probabilities.")

    def token_log_probs(
        self, sequences: Sequence[Sequence[int]], *, attention: bool = False, start: bool = True
    ) -> list[TokenScores]:
        """Per-token log-probabilities of unmasked sequences: log P(w_i | S) for a masked LM (AUL),
        log P(w_i | w_<i) for a causal LM, every token scored (a start token is put before the
        sequence when the tokenizer adds none; NaN at position 0 only when the model has no such
        token); with `attention`, the attention each token receives (mean over layers, heads and
        queries) for AULA. `start = False` puts no start token before a causal LM's sequence
        (position 0 is then NaN): the pass without BOS that bias-bench scores every token but the
        first from."""
        raise BiasError(f"Embedder '{self.name}' gives no language-model scores.")

    def choice_log_probs(self, requests: Sequence[ChoiceRequest]) -> list[ChoiceScores]:
        """For each request, log P(token | prompt, the continuation's earlier tokens) of every token
        of each continuation, float64 (a causal LM answering a multiple-choice question). By default
        one sequence per continuation through `tokenize` and `token_log_probs`; an embedder that can
        share the prompt's work between its continuations (the `hf` embedder's cached keys and
        values) overrides it with the same numbers."""
        from bias.core.models.choices import choice_log_probs_by_sequences

        return choice_log_probs_by_sequences(self, requests)

    def reduced_precision(self) -> tuple[str, Embedder] | None:
        """(bfloat16, float16 or tf32; the same model in float32) when the model computes in a
        reduced precision, else None: metrics rescore with the twin what it could have decided
        otherwise."""
        return None

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling | None = None
    ) -> list[Generations]:
        """For each request, `sampling.samples` replies, sample j drawn with seed + j
        (bias.core.generation)."""
        raise BiasError(
            f"Embedder '{self.name}' writes no text.", "Use a chat: model or a causal LM (hf)."
        )

    def check(self) -> None:
        """Cheap checks of the model's files and settings, made for every model before any work
        starts (a missing file, a folder without a tokenizer, an impossible device); raises
        BiasError."""
        location = getattr(self, "location", None)
        if isinstance(location, str) and location and not location.startswith("pkg:"):
            from pathlib import Path

            if not Path(location).expanduser().exists():
                raise BiasError(
                    f"Model file not found: {location}", "Check the path given with --model."
                )

    def fingerprint(self) -> str:
        """A string that changes whenever the model's numbers could change (for caches and
        manifests)."""
        return self.spec

    def describe(self) -> dict[str, Any]:
        """Facts about the loaded model worth recording with a result (dimension, vocabulary
        size)."""
        return {}

    def sent(self) -> dict[str, int] | None:
        """For a model behind a service: its counts of what it has sent so far (requests, texts or
        tokens); None for a model that sends nothing. The runner records each experiment's share
        (a count taken once when the model loaded said 0 for every run)."""
        return None

    def quote(self, texts: Sequence[str]) -> Quote | None:
        """What encoding `texts` would cost at a paid service, asked by the runner before the
        model's first experiment (with the texts its experiments will ask for), so a run can be
        stopped before any money is spent. None (the default): the model runs here and costs nothing
        to ask."""
        return None


WORDSET_INPUT = "wordset"
MODEL_INPUT = "model"


@attrs.frozen
class InputRequest:
    """A secondary input a metric needs beside its data (SEAT's template set, the clustering test's
    original model). The planner resolves every request before the run starts, so a missing one
    stops the run with its `hint` instead of refusing results half-way, and loads each model once
    per run.

    `kind` is WORDSET_INPUT (`name`: a word-set name or file, which must be of `data_kind`) or
    MODEL_INPUT (`name`: an embedder spec; None means "the original of the model measured": the
    source of a debiased model, the `source_model` of the debias.json beside it, or the model
    itself).
    """

    kind: str
    name: str | None = None
    data_kind: str | None = None
    hint: str = ""
    optional: bool = (
        False  # a word set that does not exist is passed as None instead of stopping the run
    )


@attrs.frozen
class ResolvedModel:
    """A model input as the planner found it: the loaded embedder and how it was found (for the
    result)."""

    embedder: Embedder
    how: str


@attrs.frozen
class Measured:
    """What a metric's own arithmetic found; the base classes turn it into a Result.

    `test` is the significance test behind the p-value, such as the `PermutationTest` that
    `permutation_test` returns (any object with `p_value` and `convention()`): the result then takes
    its p-value, where `p_value` is not given, and the convention keys it writes, among them how the
    p-value was computed in words (`p_value`) and the smallest p it can give (`p_floor`), which the
    reports print. The metric's own `convention` keys come on top."""

    effect_size: float | None
    p_value: float | None = None
    figures: dict[str, Any] = attrs.field(factory=dict)
    convention: dict[str, Any] = attrs.field(factory=dict)
    warnings: list[str] = attrs.field(factory=list)
    test: Any = None

    def p_and_convention(self) -> tuple[float | None, dict[str, Any]]:
        """The p-value and the convention as the result carries them (see `test`)."""
        if self.test is None:
            return self.p_value, dict(self.convention)
        p = self.p_value if self.p_value is not None else self.test.p_value
        return p, {**self.test.convention(), **self.convention}


class Metric(ABC):
    """Computes a bias measure from an embedder and one piece of test data.

    Metrics are pure: the same embedder, data, parameters and seed give the same Result. They know
    nothing of files or of other plugins; what they need beside their data they ask for in `inputs`,
    and the runner passes it, resolved and loaded, as `compute(..., inputs={name: value})` (a word
    set, or a `ResolvedModel`). Metrics whose `inputs` is empty are called without that keyword.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]]
    # At least one of these is needed too (pair metrics take a masked or a causal LM).
    requires_any: ClassVar[frozenset[Capability]] = frozenset()
    data_kind: ClassVar[str]
    # What the number (`effect_size`) is and how reports show it (label, unit, no-bias reference,
    # direction, ...): one declaration, which every result carries in meta["value"].
    value: ClassVar[ValueKind] = PLAIN_VALUE

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _read_old_value_attributes(cls)

    @abstractmethod
    def compute(self, embedder: Embedder, data: Any, *, seed: int | None = None) -> Any:
        """Return a `bias.core.model.Result` (the runner fills in the key and timings)."""

    def inputs(self, data: Any) -> dict[str, InputRequest]:
        """What this metric needs beside `data`, by the name `compute` receives it under (see
        InputRequest)."""
        return {}

    def unfit(self, embedder_type: type[Embedder]) -> str | None:
        """Why one of this metric's settings cannot work with a kind of model (cls pooling of static
        vectors), asked when the run is planned; None (the default) when nothing stands in the
        way."""
        return None

    def cost(self, data: Any) -> Cost | None:
        """What computing on `data` will cost (seconds, memory and the settings that make them), so
        the planner can refuse a run that would not finish before any work starts. None (the
        default) is unknown: the run is not checked. Build it with `bias.api.permutation_cost`,
        `bootstrap_cost` or `Cost` directly."""
        return None

    def make_result(self, model: str, data: Any, seed: int | None, **fields: Any) -> Any:
        """The one way to build a Result: the fields every result shares (model, word set, metric,
        parameters, seed, meta) plus `fields` (status, effect_size, p_value, figures, ...)."""
        from bias.core.model import Result

        return Result(**{**self.result_fields(model, data, seed), **fields})

    def params(self) -> dict[str, Any]:
        """The parameter values, defaults included: part of every result and of the experiment
        key."""
        return attrs.asdict(self) if attrs.has(type(self)) else {}

    def result_fields(
        self, model: str, data: Any, seed: int | None, **extra: Any
    ) -> dict[str, Any]:
        """The fields every Result of this metric shares (the runner fills in the key and
        timings)."""
        meta = data.meta
        return {
            "key": "",
            "model": model,
            "wordset": data.name,
            "metric": self.name,
            "params": self.params(),
            "seed": seed,
            "meta": {
                "bias_type": meta.bias_type,
                "language": meta.language,
                "expected_direction": meta.expected_direction,
                **({"title": meta.title} if meta.title else {}),
                **variant_meta(meta),
                "value": type(self).value.declared(self.params()),
            },
            **extra,
        }


# The flat class attributes metrics declared their number with before `value`, and the field of
# ValueKind each sets: read, with a DeprecationWarning, until the rule in CONTRIBUTING.md removes
# them.
OLD_VALUE_ATTRIBUTES = {
    "value_label": "label",
    "value_name": "name",
    "value_unit": "unit",
    "value_reference": "reference",
    "value_signed": "signed",
    "value_digits": "digits",
    "value_scale": "scale",
    "value_more_biased": "more_biased",
}


def _read_old_value_attributes(cls: type) -> None:
    """A metric written for the flat `value_*` attributes keeps its labels: they become its
    `value`."""
    old = {
        field: vars(cls)[attr] for attr, field in OLD_VALUE_ATTRIBUTES.items() if attr in vars(cls)
    }
    by_param = vars(cls).get("value_by_param")
    if (not old and by_param is None) or "value" in vars(cls):
        return
    import warnings

    warnings.warn(
        f"{cls.__module__}.{cls.__qualname__}: the value_* attributes are deprecated; declare "
        "`value: ClassVar[ValueKind] = ValueKind(label, name, ...)` instead (see CONTRIBUTING.md).",
        DeprecationWarning,
        stacklevel=3,
    )
    base = cls.value if "label" not in old else ValueKind(old["label"], reference=None)
    if isinstance(by_param, dict):
        old["by_param"] = {
            p: {
                v: {OLD_VALUE_ATTRIBUTES.get(a, a): x for a, x in chosen.items()}
                for v, chosen in by_value.items()
            }
            for p, by_value in by_param.items()
        }
    cls.value = attrs.evolve(base, **old)


def variant_meta(meta: Any) -> dict[str, str]:
    """The concept and descriptor of a word set that is a variant of a test, for its results'
    meta."""
    return {k: v for k in ("concept", "descriptor") if (v := getattr(meta, k, ""))}


STATIC_VECTORS = (
    "static-vectors"  # a debiased matrix over the model's vocabulary, which `bias debias` writes
)
ON_THE_FLY = (
    "on-the-fly"  # the model wrapped, its encodings changed as they are made (`bias run --debias`)
)


class Debiaser(ABC):
    """scikit-learn style mitigation: `fit(embedder, lists)` learns, `transform(embedder)` returns
    an Embedder, so every metric runs unchanged on the debiased model.

    `lists` are debiasing lists (`bias.core.data.debias_lists.DebiasLists`). A debiaser declares
    what its `transform` gives (`produces`: STATIC_VECTORS, which `bias debias` writes as a vector
    file, and/or ON_THE_FLY, a wrapped model), and may override the hooks below: `supports` (why it
    cannot debias a model, so a mismatch is refused before any work, naming the methods that fit)
    and `wrap` (the debiased model at once, fitted at its first load(), for `bias run --debias`)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    produces: ClassVar[frozenset[str]] = frozenset({STATIC_VECTORS})

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        """Why this method cannot debias `embedder`, None when it can. By default: the capabilities
        it `requires` that the embedder lacks."""
        missing = [c.value for c in sorted(cls.requires, key=str) if c not in embedder.capabilities]
        return (
            f"Debiaser '{cls.name}' needs {', '.join(missing)}, which {embedder.spec} does not give"
            if missing
            else None
        )

    def params(self) -> dict[str, Any]:
        """The parameter values, defaults included: recorded beside the debiased vectors."""
        return (
            {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}
            if attrs.has(type(self))
            else {}
        )

    def wrap(self, embedder: Embedder, lists: Any) -> Embedder:
        """The debiased model for `bias run --debias`. By default the model is loaded and fitted
        now; a debiaser that can defer the fit to the model's first load() overrides this."""
        embedder.load()
        return self.fit(embedder, lists).transform(embedder)

    @abstractmethod
    def fit(self, embedder: Embedder, lists: Any) -> Debiaser: ...

    @abstractmethod
    def transform(self, embedder: Embedder) -> Embedder: ...
