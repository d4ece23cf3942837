"""Vectors from a loaded Hugging Face model: each row is the mean of one hidden layer (or a mean of
layers) over a set of token positions, so sentence vectors, span vectors and word encodings share
one batched code path.

Positions come from `bias.core.models.hf.spans`; batches, padding and the out-of-memory handling
from `bias.core.models.hf.batching`. torch and transformers are imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.models import encoding_cache
from bias.core.data.record_bounds import MAX_TEXT_CHARS
from bias.core.errors import BiasError
from bias.core.models.hf import early_exit, spans as span_math
from bias.core.models.hf.batching import (
    check_ids_fit,
    in_length_batches,
    memory_guard,
    right_pad,
)
from bias.core.models.hf.loading import LoadedModel, quiet_transformers
from bias.core.lm_requests import Tokens

log = logging.getLogger(__name__)

POOLINGS = ("mean", "first", "last", "cls")
# Named layer choices: how many of the last hidden states are averaged.
LAYER_MEANS = {"mean-last-4": 4}

Tokenized = tuple[
    list[int], list[tuple[int, int]], list[int]
]  # ids, character offsets, special-token flags


def layer_value(value: Any) -> int | str:
    """An int layer index or a named mean of layers; numbers given as CLI text become ints."""
    if isinstance(value, bool):
        raise BiasError(
            f"layer must be a whole number or one of {', '.join(LAYER_MEANS)}, not {value!r}."
        )
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


def check_layer(layer: int | str, num_states: int | None) -> None:
    """Refuse a layer the model does not have, before any forward pass (unknown depth: no check)."""
    n = num_states
    if isinstance(layer, str):
        wanted = LAYER_MEANS[layer]
        if n is not None and n < wanted:
            raise BiasError(
                f"Layer '{layer}' needs {wanted} hidden states, but this model has {n} (0 "
                "= embeddings).",
                "Use a single layer, e.g. -1.",
            )
        return
    if n is not None and not -n <= layer < n:
        raise BiasError(
            f"Layer {layer} does not exist: this model has {n} hidden states (0 = "
            f"embeddings, {n - 1} = last layer).",
            f"Use a layer from {-n} to {n - 1}; -1 is the last layer.",
        )


@attrs.frozen
class PooledInput:
    """The model input of one row (a tokenised text, cut to the model's window if needed) and the
    token positions whose vectors are averaged into that row."""

    inputs: dict[str, list[int]]
    positions: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.inputs["input_ids"])


def check_texts(
    texts: Sequence[Any], spans: Sequence[tuple[int, int] | None] | None = None
) -> None:
    """Every text a string, every span a (start, end) pair of character offsets inside its text."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise BiasError(f"encode expects strings, got {type(text).__name__}: {text!r}.")
        span = spans[i] if spans is not None else None
        if span is not None:
            if len(span) != 2 or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in span
            ):
                raise BiasError(
                    f"The span {span!r} of the text {text!r} is not a pair of character "
                    "offsets (start, end)."
                )
            start, end = span
            if not (0 <= start < end <= len(text)):
                raise BiasError(
                    f"The span {tuple(span)} does not lie inside the text {text!r} "
                    f"({len(text)} characters).",
                    "A span is (start, end) in characters with 0 <= start < end <= the "
                    "text's length.",
                )


def checked_spans(
    texts: Sequence[Any], spans: Sequence[Any] | None
) -> list[tuple[int, int] | None]:
    """One checked (start, end) of plain ints, or None (the whole text), per text; numpy ints
    become ints so that they key the encoding cache alike."""
    if spans is None:
        spans = [None] * len(texts)
    spans = [None if s is None else tuple(s) for s in spans]
    if len(spans) != len(texts):
        raise BiasError(f"encode got {len(texts)} texts but {len(spans)} spans.")
    check_texts(texts, spans)
    return [None if s is None else (int(s[0]), int(s[1])) for s in spans]


def check_pooling(loaded: LoadedModel, pooling: str, spec: str) -> None:
    """ "cls" needs a [CLS]-like first token that has seen the sentence: not in a causal LM."""
    if pooling != "cls":
        return
    if loaded.causal:
        raise BiasError(
            f"Pooling 'cls' does not apply to the causal language model {spec}: its first "
            "token has seen "
            "nothing of the sentence.",
            "Use last (the sentence vector of a causal LM), mean or first.",
        )
    if loaded.tokenizer.cls_token_id is None:
        raise BiasError(
            "Pooling 'cls' needs a [CLS]-like first token, which this model's tokenizer "
            "does not add.",
            "Use mean, first or last.",
        )


def tokenized(tokenizer: Any, texts: Sequence[str]) -> Iterator[Tokenized]:
    """ids, offsets and special-token flags of each text, with special tokens and uncut.

    A generator, so that callers cut each text to the model's window before the next chunk is
    tokenized: 2,560 corpus contexts of 64 KiB held uncut took 2.3 GB and aborted the tokenizer."""
    for chunk in _chunks(texts):
        with quiet_transformers():
            encoded = tokenizer(
                chunk,
                add_special_tokens=True,
                truncation=False,
                padding=False,
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
        for i in range(len(chunk)):
            yield (
                list(encoded["input_ids"][i]),
                [tuple(o) for o in encoded["offset_mapping"][i]],
                list(encoded["special_tokens_mask"][i]),
            )


# Texts given to the tokenizer in one call, and their characters: its Rust code does not return to
# Python (where Ctrl-C is seen) until the whole list is done (20 s for a million words), and holds
# every token's offsets meanwhile (corpus lines of a megabyte each took 2 GB, then aborted).
TOKENIZED_AT_ONCE = 4096
CHARACTERS_AT_ONCE = 2**18  # Ctrl-C waited 2.6 s on one call of 4 MiB, 2.3-2.5 s on 1 MiB


def check_length(text: str) -> None:
    """A text longer than one tokenizer call may take is refused: the tokenizer holds every token's
    offsets of a text at once (one template of 3.8 MB aborted it at 2 GB) and Ctrl-C waits for it,
    and no model reads more than a few thousand characters of it. Bounds where texts are read
    name the file; this one catches any way in."""
    if len(text) > MAX_TEXT_CHARS:
        raise BiasError(
            f"A text to encode has {len(text):,} characters, more than the "
            f"{MAX_TEXT_CHARS:,} a text may have: {text[:40]!r}...",
            "Check the file it comes from (a template, a word list, a text column).",
        )


def _chunks(texts: Sequence[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    held = 0
    for text in texts:
        check_length(text)
        if chunk and (len(chunk) >= TOKENIZED_AT_ONCE or held + len(text) > CHARACTERS_AT_ONCE):
            yield chunk
            chunk, held = [], 0
        chunk.append(text)
        held += len(text)
    if chunk:
        yield chunk


def only_unknown(tokenizer: Any, words: Sequence[str]) -> set[str]:
    """The words whose every token is the tokenizer's unknown token."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or not words:
        return set()
    words = list(words)
    ids: list[Any] = []
    for chunk in _chunks(words):
        with quiet_transformers():
            ids.extend(tokenizer(chunk, add_special_tokens=False)["input_ids"])
    return {w for w, row in zip(words, ids) if row and all(i == unk for i in row)}


def _warn_truncated(cut: int, total: int, limit: int | None) -> None:
    """Said in the experiment's result (bias.core.experiment_log): a score of cut texts is not the
    score of the texts, and a report must say so."""
    if cut:
        from bias.core.experiment_log import log as experiment_log

        experiment_log.warning(
            "%d of %d texts are longer than the model's limit of %d tokens; each was cut "
            "to a window of that size "
            "(around its span where one was given).",
            cut,
            total,
            limit,
        )


_MARK = np.zeros(1)  # the row stored beside a cut text's row: its key is the mark


def _cut_mark(key: str) -> str:
    return encoding_cache.row_key(key, "cut to the window")


def _marks(cache: encoding_cache.EncodingCache | None, keys: list[str]) -> set[str]:
    """The cut marks the cache holds for `keys`' rows."""
    if cache is None or not keys:
        return set()
    return set(cache.get([_cut_mark(k) for k in keys]))


def tokens(loaded: LoadedModel, texts: Sequence[str]) -> list[Tokens]:
    """Each text's ids, trimmed character ranges ((0, 0) for special tokens) and special-token
    flags, cut to the model's window (special tokens kept) with one warning per call."""
    out: list[Tokens] = []
    cut = 0
    for text, (ids, offsets, special) in zip(texts, tokenized(loaded.tokenizer, texts)):
        kept = span_math.window(
            len(ids), special, None, loaded.token_limit, causal=loaded.causal, text=text
        )
        if kept is not None:
            cut += 1
            ids, offsets, special = ([seq[i] for i in kept] for seq in (ids, offsets, special))
        ranges = tuple(
            (0, 0) if s else span_math.trimmed(text, a, b) for (a, b), s in zip(offsets, special)
        )
        out.append(Tokens(tuple(int(i) for i in ids), ranges, tuple(bool(s) for s in special)))
    _warn_truncated(cut, len(texts), loaded.token_limit)
    return out


def _model_inputs(tokenizer: Any, ids: Sequence[int]) -> dict[str, list[int]]:
    """What the model takes for one already-tokenised sequence (a single segment)."""
    inputs = {"input_ids": list(ids), "attention_mask": [1] * len(ids)}
    if "token_type_ids" in tokenizer.model_input_names:
        inputs["token_type_ids"] = [0] * len(ids)
    return inputs


def prepare(
    loaded: LoadedModel,
    texts: Sequence[str],
    spans: Sequence[tuple[int, int] | None],
    pooling: str,
    *,
    start: int | None = None,
) -> tuple[list[PooledInput | None], list[int]]:
    """Tokenise, pick the positions to average and cut texts to the model's window; None where the
    span covers no token; and the indices of the texts that were cut. `start`, a token id, is put
    before every text as a special token (the start token of a causal LM whose tokenizer adds none,
    see `start_token`)."""
    tokenizer = loaded.tokenizer
    out: list[PooledInput | None] = []
    cut: list[int] = []
    for text, span, (ids, offsets, special) in zip(texts, spans, tokenized(tokenizer, texts)):
        if start is not None:
            ids, offsets, special = [start, *ids], [(0, 0), *offsets], [1, *special]
        positions = span_math.positions(
            text, span, pooling, ids, offsets, special, tokenizer.cls_token_id, causal=loaded.causal
        )
        if not positions:
            out.append(None)
            continue
        # The window must hold the span's tokens (all of them, whatever the pooling), or the one
        # token a whole-text first/last pooling reads.
        if span is not None:
            anchor: list[int] | None = span_math.inside(text, span, offsets, special)
        else:
            anchor = positions if pooling in ("first", "last") else None
        kept = span_math.window(
            len(ids), special, anchor, loaded.token_limit, causal=loaded.causal, text=text
        )
        if kept is not None:
            cut.append(len(out))
            index = {old: new for new, old in enumerate(kept)}
            ids = [ids[i] for i in kept]
            if pooling == "mean" and span is None:
                kept_special = [special[i] for i in kept]
                own = [i for i, s in enumerate(kept_special) if not s] if loaded.causal else []
                positions = own or list(range(len(ids)))
            else:
                positions = [index[p] for p in positions]
        out.append(PooledInput(_model_inputs(tokenizer, ids), tuple(positions)))
    return out, cut


STARTS = ("auto", "always")


def start_token(loaded: LoadedModel, bos: str) -> tuple[int | None, str]:
    """The token id to put before every text for vectors (None: nothing added), and in words what
    the model's input starts with, for the result's convention.

    "auto" keeps the model's own convention: a tokenizer that adds a start token (Llama, OPT, Gemma,
    ...) adds it, one that adds none (GPT-2, BLOOM, Qwen) gets none. "always" puts the model's BOS
    token (else its EOS token, GPT-2's <|endoftext|>) before the text of a causal LM whose tokenizer
    adds none, as bias-bench and lm-evaluation-harness condition GPT-2 on <|endoftext|>.
    """
    tokenizer = loaded.tokenizer
    with quiet_transformers():
        with_specials = list(tokenizer("a", add_special_tokens=True)["input_ids"])
        without = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    if without and len(with_specials) > len(without) and with_specials[0] != without[0]:
        first = tokenizer.convert_ids_to_tokens(with_specials[0])
        return None, f"the tokenizer's own start token {first!r}"
    if not loaded.causal or bos != "always":
        return None, "no start token (the tokenizer adds none)"
    for name in ("bos_token", "eos_token"):
        token_id = getattr(tokenizer, f"{name}_id", None)
        if token_id is not None:
            return int(token_id), f"{getattr(tokenizer, name)!r} prepended (bos=always)"
    return None, "no start token (the model has neither BOS nor EOS)"


def hidden_states(loaded: LoadedModel, inputs: dict[str, Any], layer: int | str) -> Any:
    """The chosen hidden state, from the encoder without its head (a masked-LM head's vocabulary
    projection would cost more than the encoder of a small model and is not needed for vectors);
    a layer below the last without running the layers above it (`early_exit`)."""
    import torch

    def every_state(given: dict[str, Any]) -> Any:
        outputs = loaded.encoder(**given, output_hidden_states=True, return_dict=True)
        found = getattr(outputs, "hidden_states", None)
        if found is None:
            raise BiasError(
                f"The model in '{loaded.folder}' returns no hidden states, so it cannot give "
                "vectors."
            )
        return found

    if isinstance(layer, int):
        stopped = early_exit.stopped_state(loaded, inputs, layer, every_state)
        if stopped is not None:
            return stopped
    states = every_state(inputs)
    if isinstance(layer, str):
        wanted = LAYER_MEANS[layer]
        if len(states) < wanted:
            raise BiasError(
                f"Layer '{layer}' needs {wanted} hidden states, but this model has {len(states)}."
            )
        return torch.stack([s.to(torch.float64) for s in states[-wanted:]]).mean(dim=0)
    if not -len(states) <= layer < len(states):
        n = len(states)
        raise BiasError(
            f"Layer {layer} does not exist: this model has {n} hidden states (0 = embeddings)."
        )
    return states[layer]


def pooled_rows(
    loaded: LoadedModel,
    items: Sequence[PooledInput],
    layer: int | str,
    batch_size: int,
    states_of: Callable[[dict[str, Any], int | str], Any],
    max_tokens: int | None = None,
) -> np.ndarray:
    """Forward in length-sorted batches (little padding), then rows back in request order; each row
    the float64 mean of `states_of(inputs, layer)` over the item's positions."""
    import torch

    if not items:
        return np.zeros(
            (0, getattr(loaded.model.config, "hidden_size", None) or 0), dtype=np.float64
        )
    check_ids_fit(
        loaded.model,
        loaded.tokenizer,
        np.fromiter(
            itertools.chain.from_iterable(item.inputs["input_ids"] for item in items),
            dtype=np.int64,
        ),
    )
    result: dict[str, np.ndarray] = {}

    def encode(rows: list[int]) -> None:
        batch = [items[i] for i in rows]
        states = states_of(
            right_pad(
                [item.inputs for item in batch], loaded.tokenizer, loaded.device, loaded.model
            ),
            layer,
        )
        weights = torch.zeros(states.shape[:2], dtype=torch.float64, device=states.device)
        for b, item in enumerate(batch):
            index = torch.tensor(item.positions, device=states.device)
            weights[b, index] = 1.0 / len(item.positions)
        pooled = torch.einsum("bs,bsh->bh", weights, states.to(torch.float64)).cpu().numpy()
        if "out" not in result:
            result["out"] = np.empty((len(items), pooled.shape[1]), dtype=np.float64)
        result["out"][rows] = pooled

    with torch.inference_mode(), memory_guard(loaded.device, batch_size):
        in_length_batches(
            [item.length for item in items], batch_size, encode, max_tokens=max_tokens
        )
    return result["out"]


def cached_rows(
    loaded: LoadedModel,
    cache: encoding_cache.EncodingCache | None,
    texts: Sequence[str],
    spans: Sequence[tuple[int, int] | None],
    pooling: str,
    layer: int | str,
    compute: Callable[[Sequence[PooledInput], int | str], np.ndarray],
    *,
    start: int | None = None,
) -> tuple[np.ndarray, list[int]]:
    """Rows for every request, from the cache where it has them and from `compute` otherwise (new
    rows go into the cache); also the indices of requests that cover no token (their rows are
    zeros). A prepended start token is part of each row's key (rows without one keep their keys)."""
    extra = () if start is None else (f"start={start}",)
    keys = [
        encoding_cache.row_key(text, span, pooling, layer, *extra)
        for text, span in zip(texts, spans)
    ]
    found, missing = encoding_cache.lookup(cache, keys)
    empty_keys: set[str] = set()
    # Texts cut to the window are said whether their rows were computed now or found in the cache
    # (a rerun's report must say it as the first run's did): a cut row is stored with a mark.
    marked = _marks(cache, list(found))
    cut_keys = {k for k in found if _cut_mark(k) in marked}
    if missing:
        prepared, cut_now = prepare(
            loaded, [texts[i] for i in missing], [spans[i] for i in missing], pooling, start=start
        )
        cut_keys |= {keys[missing[j]] for j in cut_now}
        computed = [(keys[i], item) for i, item in zip(missing, prepared) if item is not None]
        empty_keys = {keys[i] for i, item in zip(missing, prepared) if item is None}
        rows = compute([item for _, item in computed], layer)
        new = {key: rows[j] for j, (key, _) in enumerate(computed)}
        if cache is not None and new:
            marks = {_cut_mark(key): _MARK for key in new if key in cut_keys}
            cache.put({**new, **marks})
        found.update(new)
    _warn_truncated(sum(key in cut_keys for key in keys), len(texts), loaded.token_limit)
    dim = (
        next(iter(found.values())).shape[0]
        if found
        else int(getattr(loaded.model.config, "hidden_size", 0) or 0)
    )
    out = np.zeros((len(texts), dim), dtype=np.float64)
    empty = []
    for i, key in enumerate(keys):
        if key in empty_keys:
            empty.append(i)
        else:
            out[i] = found[key]
    return out, empty
