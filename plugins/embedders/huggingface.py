"""Hugging Face models (BERT, RoBERTa, MiniLM, GPT-2, ...) as word, contextual and language-model embedders.

Word vectors are "word encodings": each word is fed alone between the tokenizer's own special tokens
(`[CLS] word [SEP]`) and its sub-token vectors are pooled, which is how WEAT is applied to contextual
models. Decoder LLMs (GPT-2, OPT, BLOOM, Llama, Qwen, ...) keep their own conventions: a word is its
last sub-token (the one that has seen the whole word), a sentence its last token (`bos` says whether a
start token is put before texts whose tokenizer adds none). Sentence and span vectors follow docs/methods.md (seat): a span is found through the fast
tokenizer's character offsets (`bias.core.models.hf.spans`).

The model is loaded with its head (masked-LM, causal-LM, or none, read from the config's
`architectures`), so one embedder serves vector metrics (from the hidden states) and scoring metrics
(from the head, see `bias.core.models.hf.lm_scoring`). Encodings are cached on disk
(`bias.core.models.encoding_cache`), so a second run of the same experiment does not run the model again.
This class only holds the options and the loaded model; the work is done in `bias.core.models.hf`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import (
    BiasError,
    Capability,
    Contact,
    ChoiceRequest,
    ChoiceScores,
    Embedder,
    GenerationRequest,
    Generations,
    MaskedRequest,
    Sampling,
    TokenScores,
    Tokens,
    WordVectors,
    int_at_least,
    one_of,
    param,
)
from bias.api.hf import (
    HEADS,
    POOLINGS,
    LoadedModel,
    PooledInput,
    batching,
    chat_template,
    choice_scoring,
    files,
    generation,
    lm_scoring,
    loading,
    vectors,
)
from bias.api.static import encoding_cache

DTYPES = ("float32", "tf32", "float16", "bfloat16", "float64")
REDUCED = ("tf32", "float16", "bfloat16")


_POSITIVE = int_at_least(1, "Or auto: 32 texts on a CPU, sized from the free memory on a GPU.")


def _batch_size(instance: Any, attribute: Any, value: Any) -> None:
    if value != "auto":
        _POSITIVE(instance, attribute, value)


@attrs.define
class HuggingFaceEmbedder(Embedder):
    """Any Hugging Face model given as a local folder, a `pkg:` location or a Hub id.

    Every row is a mean over a set of token positions of one hidden layer (or a mean of layers), so
    sentence vectors, span vectors and word encodings share one batched code path. Text is never
    lowercased here: the model's own tokenizer decides, so cased models stay cased.

    `head` is the head asked for (auto, masked, causal, none) and is never changed; the head really
    loaded (masked, causal or none) is the loaded model's, which `available()` reports to the runner.

    What is fetched, and from where: a local folder or `pkg:` location is read from disk and nothing is
    downloaded. A Hub id (`hf:org/name`) is looked up in the local Hugging Face cache first; only when
    it is missing there, and HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are not set, are config.json, the
    tokenizer files and the weights (safetensors preferred) downloaded from https://huggingface.co (or
    $HF_ENDPOINT) into that cache. An unreachable Hub is reported within two seconds. The manifest
    records the revision (the snapshot's commit) and the SHA-256 of every file of a Hub model. Model
    code from the Hub runs only with --trust-remote-code on the command line.
    """

    name: ClassVar[str] = "hf"
    summary: ClassVar[str] = (
        "Hugging Face model (BERT, RoBERTa, MiniLM, GPT-2, ...): word encodings, sentence and span vectors, "
        "masked- or causal-LM scores."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.WORD_VECTORS,
            Capability.CONTEXTUAL,
            Capability.MASKED_LM,
            Capability.CAUSAL_LM,
            Capability.GENERATION,
        }
    )
    libraries: ClassVar[tuple[str, ...]] = ("torch", "transformers")

    location: str = param(
        attrs.NOTHING, "local model folder, pkg:MODULE/path, or a Hugging Face Hub id"
    )
    word_pooling: str = param(
        "auto",
        "how a word's vector is taken from its sub-tokens: auto (mean for encoders, last for causal LMs), mean, first, last, or cls ([CLS] vector)",
        validator=one_of(
            ("auto", *POOLINGS),
            "mean averages the word's sub-tokens; first/last take one sub-token; cls takes the [CLS] vector.",
        ),
    )
    bos: str = param(
        "auto",
        "start token of a causal LM's input for vectors: auto (the tokenizer's own: Llama and OPT add one, GPT-2 none) "
        "or always (the model's BOS, else EOS, before every text when the tokenizer adds none)",
        validator=one_of(vectors.STARTS),
    )
    layer: str | int = param(
        -1,
        "hidden state used for vectors: -1 = last layer, 0 = embedding output, mean-last-4 = mean of the last four",
        converter=vectors.layer_value,
    )
    batch_size: int | str = param(
        "auto",
        "texts per forward pass, or auto: 32 on a CPU; on a GPU as many tokens as half its free memory holds "
        "(halved whenever it runs out); the size used is recorded",
        validator=_batch_size,
    )
    device: str = param(
        "auto", "torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps"
    )
    dtype: str = param(
        "float32",
        "precision: float32, tf32 (float32 weights, TF32 matrix products on a GPU), float16, bfloat16 or float64; "
        "with a reduced one, items whose verdict it could turn are rescored in float32 (recorded in the result)",
        validator=one_of(DTYPES),
    )
    max_length: int | None = param(
        None,
        "truncate texts to this many tokens (default: the model's limit)",
        validator=attrs.validators.optional(int_at_least(1)),
    )
    head: str = param(
        "auto",
        "which head to load: auto (from the config's architectures), masked, causal, or none (encoder only)",
        validator=one_of(
            HEADS,
            "auto reads the head from config.json; none loads the bare encoder (vectors only).",
        ),
    )
    trust_remote_code: bool = param(
        False,
        "run the model's own Python code from its folder or the Hub (only for models you trust)",
        guard="code",
    )
    cache: bool = param(
        True, "keep encodings on disk so a repeated run does not run the model again"
    )
    cache_dir: str | None = param(
        None,
        "folder of the encoding cache (default: $BIAS_CACHE_DIR/encodings or ~/.cache/bias-framework/encodings)",
        guard="route",
    )
    chat: str = param(
        "auto",
        "put prompts in the tokenizer's chat template: auto (for generated replies, when the model has one), "
        "true (also to score answers inside the assistant's turn; refused without a template) or false (never)",
        validator=one_of(chat_template.CHAT_MODES),
    )
    system: str = param(
        "", "system prompt put before every conversation that has none (empty: none)"
    )

    _loaded: LoadedModel | None = attrs.field(init=False, default=None, repr=False)
    _cache: encoding_cache.EncodingCache | None = attrs.field(init=False, default=None, repr=False)
    _files_digest: str | None = attrs.field(init=False, default=None, repr=False)
    _limits: tuple[int, int, str] | None = attrs.field(init=False, default=None, repr=False)
    _twin: HuggingFaceEmbedder | None = attrs.field(init=False, default=None, repr=False)
    _start: tuple[int | None, str] | None = attrs.field(init=False, default=None, repr=False)

    def check(self) -> None:
        """Before any work: the device, and the folder's files or the Hub id's reachability."""
        loading.check_source(self.location, self.device)

    def contacts(self) -> tuple[Contact, ...]:
        """A Hub id is looked up on the Hub, and downloaded unless the local cache has it (with the
        user's Hugging Face token, when one is set); a folder, or anything offline, sends nothing."""
        try:
            folder, repo_id = loading.resolve_source(self.location)
        except BiasError:
            return ()  # refused by check(), with its reason
        if folder is not None or loading.offline():
            return ()
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
        return (
            Contact(f"{endpoint}/{repo_id}", "HF_TOKEN" if os.environ.get("HF_TOKEN") else None),
        )

    def load(self) -> None:
        if self._loaded is not None:
            return
        loaded = loading.load(
            self.location,
            device=self.device,
            head=self.head,
            dtype=self.dtype,
            max_length=self.max_length,
            trust_remote_code=self.trust_remote_code,
        )
        vectors.check_layer(self.layer, loaded.num_states)
        self._loaded = loaded
        if self.cache:
            folder_of_cache = (
                Path(self.cache_dir).expanduser()
                if self.cache_dir
                else encoding_cache.default_cache_dir()
            )
            self._cache = encoding_cache.EncodingCache(
                folder_of_cache,
                files.cache_fingerprint(self._files(), self.dtype, loaded.token_limit),
            )

    @property
    def loaded(self) -> LoadedModel:
        """The loaded model (loaded on first use)."""
        self.load()
        assert self._loaded is not None
        return self._loaded

    def finetune_source(self) -> tuple[Path, Any, bool]:
        """The local folder the model was loaded from, its torch device and whether remote code is
        trusted: where fine-tuning (the probe's mode=finetune) starts, so it trains a fresh copy of the
        weights and never changes the model this embedder serves."""
        return self.loaded.folder, self.loaded.device, bool(self.trust_remote_code)

    def foreseen(self) -> frozenset[Capability] | None:
        """The head the config.json of a local folder (or of a Hub model already in the cache) names,
        as `available()` will find it after loading; None when there is no config to read."""
        head = loading.head_from_files(self.location, self.head)
        if head is None:
            return None
        causal = {Capability.CAUSAL_LM, Capability.GENERATION}
        return frozenset(
            {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
            | (
                {Capability.MASKED_LM}
                if head == "masked"
                else causal
                if head == "causal"
                else set()
            )
        )

    def available(self) -> frozenset[Capability]:
        offered = {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
        if self.loaded.head == "masked":
            offered.add(Capability.MASKED_LM)
        elif self.loaded.head == "causal":
            offered |= {Capability.CAUSAL_LM, Capability.GENERATION}
        return frozenset(offered)

    @property
    def uncased(self) -> bool:
        """Whether the model's tokenizer lowercases its input: pair metrics then lowercase sentences
        first, as CrowS-Pairs does for uncased models."""
        return lm_scoring.is_uncased(self.loaded.tokenizer)

    # ------------------------------------------------------------------ language-model scores

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """Ids with the special tokens the model expects, the character range of each token (whitespace
        a byte-level or SentencePiece token carries before its word is left out; (0, 0) for special
        tokens), and special-token flags. Texts longer than the model's limit are cut to it (keeping the
        special tokens) with one warning per call, as in `encode`."""
        loaded = self.loaded
        texts = list(texts)
        vectors.check_texts(texts)
        return vectors.tokens(loaded, texts)

    @property
    def mask_token(self) -> str | None:
        return getattr(self.loaded.tokenizer, "mask_token", None)

    def decode(self, ids: Sequence[int]) -> str:
        """The tokenizer's own decoding, with its defaults (special tokens kept)."""
        with loading.quiet_transformers():
            return self.loaded.tokenizer.decode(list(ids))

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        loaded = self._need_head("masked", "masked-LM probabilities")
        rows, tokens, _ = self._batch_limits()
        with loading.matmul_precision(self.dtype, loaded.device):
            return lm_scoring.masked_log_probs(
                loaded.model, loaded.tokenizer, loaded.device, requests, rows, max_tokens=tokens
            )

    def token_log_probs(
        self, sequences: Sequence[Sequence[int]], *, attention: bool = False, start: bool = True
    ) -> list[TokenScores]:
        loaded = self._need_head(None, "token log-probabilities")
        rows, tokens, _ = self._batch_limits()
        with loading.matmul_precision(self.dtype, loaded.device):
            return lm_scoring.token_log_probs(
                loaded.model,
                loaded.tokenizer,
                loaded.device,
                sequences,
                rows,
                causal=loaded.head == "causal",
                attention=attention,
                start=start,
                max_tokens=tokens,
            )

    def choice_log_probs(self, requests: Sequence[ChoiceRequest]) -> list[ChoiceScores]:
        """Each question's prompt read once, its answers after it in the same row (see
        `bias.api.hf.choice_scoring`); the same numbers as one sequence per answer."""
        loaded = self._need_head("causal", "answer log-likelihoods")
        requests, how = self._in_template(requests)
        rows, tokens, _ = self._batch_limits()
        with loading.matmul_precision(self.dtype, loaded.device):
            found = choice_scoring.packed_choice_log_probs(
                loaded.model,
                loaded.tokenizer,
                self,
                loaded.device,
                requests,
                rows,
                max_tokens=tokens,
            )
        found = found if found is not None else super().choice_log_probs(requests)
        return [attrs.evolve(f, context=f"{f.context}; {how}") for f in found] if how else found

    def _in_template(self, requests: Sequence[ChoiceRequest]) -> tuple[list[ChoiceRequest], str]:
        """With chat = true, each prompt as the user's turn in the chat template, so the answers are
        scored inside the assistant's turn (and how, for the result); else the requests as given."""
        if self.chat != "true" or not chat_template.uses_template(
            self.loaded.tokenizer, self.chat, self.spec
        ):
            return list(requests), ""
        out, how = [], ""
        for r in requests:
            text, how = chat_template.templated(
                self.loaded.tokenizer, GenerationRequest.of(r.prompt, self.system or None)
            )
            out.append(
                attrs.evolve(r, prompt=chat_template.strip_start(self.loaded.tokenizer, text)[0])
            )
        return (
            out,
            f"each prompt put as the user's turn through {how}, the answers scored inside the assistant's turn",
        )

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling | None = None
    ) -> list[Generations]:
        """Replies written by the model (see `bias.api.hf.generation`), in its chat template when it
        has one (chat = auto or true), sample j drawn with seed + j. batch_size = auto writes 32
        replies at a time on any device: the token budget of scoring does not count the growing
        key-value cache of generation."""
        loaded = self._need_head("causal", "generated replies")
        asked = [
            (GenerationRequest.of(r) if isinstance(r, str) else r).with_system(self.system or None)
            for r in requests
        ]
        template = chat_template.uses_template(loaded.tokenizer, self.chat, self.spec)
        resolved = (sampling or Sampling()).over(Sampling())
        rows = batching.CPU_BATCH if self.batch_size == "auto" else int(self.batch_size)
        with loading.matmul_precision(self.dtype, loaded.device):
            return generation.generate(loaded, asked, resolved, template, rows)

    # ------------------------------------------------------------------ precision and batches

    def precision(self) -> str:
        """The precision the scores are computed in: tf32 only on a GPU (a CPU has no TF32 units)."""
        if self.dtype == "tf32" and self.loaded.device.type != "cuda":
            return "float32"
        return self.dtype

    def reduced_precision(self) -> tuple[str, HuggingFaceEmbedder] | None:
        """The reduced precision, and the same model loaded again in float32 on the same device (once,
        when first asked for) for the items the reduced precision could have decided otherwise."""
        if self.precision() not in REDUCED:
            return None
        if self._twin is None:
            self._twin = attrs.evolve(self, dtype="float32")
        return self.precision(), self._twin

    def _start_token(self) -> tuple[int | None, str]:
        """What texts start with for vectors (`vectors.start_token`), found once per loaded model: it
        asks the tokenizer, with transformers' logging silenced, which costs more than a cached read."""
        if self._start is None:
            self._start = vectors.start_token(self.loaded, self.bos)
        return self._start

    def _batch_limits(self) -> tuple[int, int, str]:
        """(rows, tokens) of a batch, and how they were chosen; resolved once per loaded model."""
        if self._limits is None:
            loaded = self.loaded
            self._limits = batching.batch_limits(self.batch_size, loaded.model, loaded.device)
        return self._limits

    def _need_head(self, wanted: str | None, what: str) -> LoadedModel:
        """Refuse before any work when the loaded model has not the head a score needs."""
        loaded = self.loaded
        if (wanted is None and loaded.head in ("masked", "causal")) or loaded.head == wanted:
            return loaded
        needed = f"a {wanted}-LM head" if wanted else "a masked- or causal-LM head"
        raise BiasError(
            f"The model {self.spec} was loaded with head '{loaded.head}' ({loaded.architecture}), so it gives no {what}: "
            f"that needs {needed}. weat, seat and ceat work with it.",
            "Use a checkpoint saved with its LM head (e.g. *ForMaskedLM), or --model-option head=masked if its files hold one.",
        )

    # ------------------------------------------------------------------ encoding

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """One float64 row per text: the whole text (span None) or the character span [start, end).

        Whole text: "cls" is the first token's vector (encoders only); "mean" averages every token the
        attention mask keeps, special tokens included (the sent-bias convention); "first"/"last" take
        the text's own first/last sub-token, so "last" is the last real token, the sentence vector of a
        causal LM. Span: the sub-tokens whose characters overlap the span, special tokens excluded,
        pooled by mean/first/last; "cls" still takes the [CLS] vector (of the sentence that contains the
        span). Special tokens always stay in the model's input. `layer` None is the embedder's own
        setting. A text longer than the model's limit is cut to a window of tokens that keeps the span
        (and the special tokens), with one warning per call.
        """
        loaded = self.loaded
        if pooling not in POOLINGS:
            raise BiasError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}.")
        layer = self.layer if layer is None else vectors.layer_value(layer)
        vectors.check_layer(layer, loaded.num_states)
        texts = list(texts)
        spans = vectors.checked_spans(texts, spans)
        vectors.check_pooling(loaded, pooling, self.spec)
        rows, empty = self._rows(texts, spans, pooling, layer)
        if empty:
            i = empty[0]
            what = f"The span {spans[i]} of the text" if spans[i] is not None else "The text"
            raise BiasError(
                f"{what} {texts[i]!r} covers no token of the model (empty, or only spaces).",
                "Check the text and the span's character offsets.",
            )
        return rows

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Word encodings: each word alone between the tokenizer's special tokens, its sub-tokens pooled.

        A word with at least one known piece gets a vector; a word the model sees only as unknown
        tokens ([UNK]: every such word would share one vector) is lost, as are words that tokenise to
        nothing (empty or blank strings).
        """
        loaded = self.loaded
        unique = list(dict.fromkeys(words))
        candidates = [w for w in unique if isinstance(w, str) and w.strip()]
        unknown = vectors.only_unknown(loaded.tokenizer, candidates)
        candidates = [w for w in candidates if w not in unknown]
        spans: list[tuple[int, int] | None] = [(0, len(w)) for w in candidates]
        pooling = self.resolved_word_pooling
        vectors.check_pooling(loaded, pooling, self.spec)
        rows, empty = self._rows(candidates, spans, pooling, self.layer)
        dropped = set(empty)
        kept = [w for i, w in enumerate(candidates) if i not in dropped]
        found = set(kept)
        lost = tuple(w for w in unique if w not in found)
        return WordVectors(
            tuple(kept),
            rows[[i for i in range(len(candidates)) if i not in dropped]],
            lost=lost,
            approximated=(),
        )

    @property
    def resolved_word_pooling(self) -> str:
        """The word pooling used: as set, or for auto the word's last sub-token in a causal LM (the one
        that has seen the whole word) and the mean of its sub-tokens in an encoder."""
        if self.word_pooling != "auto":
            return self.word_pooling
        return "last" if self.loaded.causal else "mean"

    def _rows(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None],
        pooling: str,
        layer: int | str,
    ) -> tuple[np.ndarray, list[int]]:
        start, _ = self._start_token()
        return vectors.cached_rows(
            self.loaded, self._cache, texts, spans, pooling, layer, self._run, start=start
        )

    def _run(self, items: Sequence[PooledInput], layer: int | str) -> np.ndarray:
        rows, tokens, _ = self._batch_limits()
        with loading.matmul_precision(self.dtype, self.loaded.device):
            return vectors.pooled_rows(
                self.loaded, items, layer, rows, self._hidden_states, max_tokens=tokens
            )

    def _hidden_states(self, inputs: dict[str, Any], layer: int | str) -> Any:
        return vectors.hidden_states(self.loaded, inputs, layer)

    # ------------------------------------------------------------------ provenance

    def _files(self) -> str:
        """The digest of the model's files, computed once per loaded model."""
        if self._files_digest is None:
            self._files_digest = files.folder_digest(self.loaded.folder)
        return self._files_digest

    def fingerprint(self) -> str:
        """Changes with the model's files (config and tokenizer content, weight file sizes, times and
        partial hashes) and with every option that changes the numbers; the device is left out on
        purpose (see `bias.core.models.hf.fingerprint.cache_fingerprint`)."""
        loaded = self.loaded
        digest = hashlib.sha256(self._files().encode())
        options = (
            f"dtype={self.dtype};layer={self.layer};pooling={self.resolved_word_pooling};max_length={loaded.token_limit};"
            f"head={loaded.head}"
            + (f";bos={self.bos}" if self.bos != "auto" else "")
            + (f";chat={self.chat}" if self.chat != "auto" else "")
            + (f";system={self.system}" if self.system else "")
        )
        digest.update(options.encode())
        return f"{self.spec}#{digest.hexdigest()[:20]}"

    def describe(self) -> dict[str, Any]:
        loaded = self.loaded
        config = loaded.model.config
        return {
            "model_type": getattr(config, "model_type", None),
            "architecture": loaded.architecture,
            "head": loaded.head,
            "hidden_size": getattr(config, "hidden_size", None),
            "layers": getattr(config, "num_hidden_layers", None),
            "vocab_size": getattr(config, "vocab_size", None),
            "tokenizer": type(loaded.tokenizer).__name__,
            "device": str(loaded.device),
            "dtype": self.dtype,
            "precision": self.precision(),
            "batch_size": self._batch_limits()[2],
            "layer": self.layer,
            "word_pooling": self.resolved_word_pooling,
            "causal": loaded.causal,
            "start_token": self._start_token()[1],
            "max_length": loaded.token_limit,
            "cache": str(self._cache.path) if self._cache is not None else None,
            "chat_template": chat_template.has_template(loaded.tokenizer),
            "chat": self.chat,
            **({"system": self.system} if self.system else {}),
            **files.hub_provenance(loaded.folder),
        }
