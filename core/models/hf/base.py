"""A Hugging Face model as an embedder holds it: its options, the model loaded once, what the loaded
head offers, batch limits and precision, and the provenance recorded with every result.

`HuggingFaceModel` is the base of the `hf` embedder (`bias.plugins.embedders.huggingface`), which
adds what the model computes: vectors, language-model scores and replies. The work itself is done by
the other modules of `bias.core.models.hf`; torch and transformers are imported inside them only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Contact, Embedder
from bias.core.models import encoding_cache
from bias.core.models.hf import batching, chat_template, loading, vectors
from bias.core.models.hf import fingerprint as files
from bias.core.models.hf.loading import HEADS, LoadedModel
from bias.core.models.hf.vectors import POOLINGS
from bias.core.params import int_at_least, one_of, param

DTYPES = ("float32", "tf32", "float16", "bfloat16", "float64")
REDUCED = ("tf32", "float16", "bfloat16")


_POSITIVE = int_at_least(1, "Or auto: 32 texts on a CPU, sized from the free memory on a GPU.")


def _batch_size(instance: Any, attribute: Any, value: Any) -> None:
    if value != "auto":
        _POSITIVE(instance, attribute, value)


@attrs.define
class HuggingFaceModel(Embedder):
    """A Hugging Face model given as a local folder, a `pkg:` location or a Hub id, with its options
    and, once loaded, the model itself (see the `hf` embedder for what is fetched and from where).
    `head` is the head asked for and is never changed; the head really loaded is `loaded.head`.
    """

    location: str = param(
        attrs.NOTHING, "local model folder, pkg:MODULE/path, or a Hugging Face Hub id"
    )
    word_pooling: str = param(
        "auto",
        "how a word's vector is taken from its sub-tokens: auto (mean for encoders, last for "
        "causal LMs), mean, first, last, or cls ([CLS] vector)",
        validator=one_of(
            ("auto", *POOLINGS),
            "mean averages the word's sub-tokens; first/last take one sub-token; cls takes the "
            "[CLS] vector.",
        ),
    )
    bos: str = param(
        "auto",
        "start token of a causal LM's input for vectors: auto (the tokenizer's own: Llama and OPT "
        "add one, GPT-2 none) or always (the model's BOS, else EOS, before every text when the "
        "tokenizer adds none)",
        validator=one_of(vectors.STARTS),
    )
    layer: str | int = param(
        -1,
        "hidden state used for vectors: -1 = last layer, 0 = embedding output, mean-last-4 = mean "
        "of the last four",
        converter=vectors.layer_value,
    )
    batch_size: int | str = param(
        "auto",
        "texts per forward pass, or auto: 32 on a CPU; on a GPU as many tokens as half its free "
        "memory holds (halved whenever it runs out); the size used is recorded",
        validator=_batch_size,
    )
    device: str = param(
        "auto", "torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps"
    )
    dtype: str = param(
        "float32",
        "precision: float32, tf32 (float32 weights, TF32 matrix products on a GPU), float16, "
        "bfloat16 or float64; with a reduced one, items whose verdict it could turn are rescored "
        "in float32 (recorded in the result)",
        validator=one_of(DTYPES),
    )
    max_length: int | None = param(
        None,
        "truncate texts to this many tokens (default: the model's limit)",
        validator=attrs.validators.optional(int_at_least(1)),
    )
    head: str = param(
        "auto",
        "which head to load: auto (from the config's architectures), masked, causal, or none "
        "(encoder only)",
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
        "folder of the encoding cache (default: $BIAS_CACHE_DIR/encodings or "
        "~/.cache/bias-framework/encodings)",
        guard="route",
    )
    chat: str = param(
        "auto",
        "put prompts in the tokenizer's chat template: auto (for generated replies, when the "
        "model has one), true (also to score answers inside the assistant's turn; refused without "
        "a template) or false (never)",
        validator=one_of(chat_template.CHAT_MODES),
    )
    system: str = param(
        "", "system prompt put before every conversation that has none (empty: none)"
    )

    _loaded: LoadedModel | None = attrs.field(init=False, default=None, repr=False)
    _cache: encoding_cache.EncodingCache | None = attrs.field(init=False, default=None, repr=False)
    _files_digest: str | None = attrs.field(init=False, default=None, repr=False)
    _limits: tuple[int, int, str] | None = attrs.field(init=False, default=None, repr=False)
    _twin: HuggingFaceModel | None = attrs.field(init=False, default=None, repr=False)
    _start: tuple[int | None, str] | None = attrs.field(init=False, default=None, repr=False)

    def check(self) -> None:
        """Before any work: the device, and the folder's files or the Hub id's reachability."""
        loading.check_source(self.location, self.device)

    def contacts(self) -> tuple[Contact, ...]:
        """A Hub id is looked up on the Hub, and downloaded unless the local cache has it (with the
        user's Hugging Face token, when one is set); a folder, or anything offline, sends
        nothing."""
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
        trusted: where fine-tuning (the probe's mode=finetune) starts, so it trains a fresh copy of
        the weights and never changes the model this embedder serves."""
        return self.loaded.folder, self.loaded.device, bool(self.trust_remote_code)

    def foreseen(self) -> frozenset[Capability] | None:
        """The head the config.json of a local folder (or of a Hub model already in the cache)
        names, as `available()` will find it after loading; None when there is no config to read."""
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

    # ------------------------------------------------------------------ precision and batches

    def precision(self) -> str:
        """The precision the scores are computed in: tf32 only on a GPU (a CPU has no TF32
        units)."""
        if self.dtype == "tf32" and self.loaded.device.type != "cuda":
            return "float32"
        return self.dtype

    def reduced_precision(self) -> tuple[str, HuggingFaceModel] | None:
        """The reduced precision, and the same model loaded again in float32 on the same device
        (once, when first asked for) for the items the reduced precision could have decided
        otherwise."""
        if self.precision() not in REDUCED:
            return None
        if self._twin is None:
            self._twin = attrs.evolve(self, dtype="float32")
        return self.precision(), self._twin

    def _start_token(self) -> tuple[int | None, str]:
        """What texts start with for vectors (`vectors.start_token`), found once per loaded model:
        it asks the tokenizer, with transformers' logging silenced, which costs more than a cached
        read."""
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
            f"The model {self.spec} was loaded with head '{loaded.head}' ({loaded.architecture}), "
            f"so it gives no {what}: that needs {needed}. weat, seat and ceat work with it.",
            "Use a checkpoint saved with its LM head (e.g. *ForMaskedLM), or --model-option "
            "head=masked if its files hold one.",
        )

    @property
    def resolved_word_pooling(self) -> str:
        """The word pooling used: as set, or for auto the word's last sub-token in a causal LM (the
        one that has seen the whole word) and the mean of its sub-tokens in an encoder."""
        if self.word_pooling != "auto":
            return self.word_pooling
        return "last" if self.loaded.causal else "mean"

    # ------------------------------------------------------------------ provenance

    def _files(self) -> str:
        """The digest of the model's files, computed once per loaded model."""
        if self._files_digest is None:
            self._files_digest = files.folder_digest(self.loaded.folder)
        return self._files_digest

    def fingerprint(self) -> str:
        """Changes with the model's files (config and tokenizer content, weight file sizes, times
        and partial hashes) and with every option that changes the numbers; the device is left out
        on purpose (see `bias.core.models.hf.fingerprint.cache_fingerprint`)."""
        loaded = self.loaded
        digest = hashlib.sha256(self._files().encode())
        options = (
            f"dtype={self.dtype};layer={self.layer};pooling={self.resolved_word_pooling};"
            f"max_length={loaded.token_limit};head={loaded.head}"
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
