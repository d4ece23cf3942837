"""The language-model scores behind every LM metric (LPBS, CrowS-Pairs, SSS, AUL/AULA, KLS/JSS).

The `hf` embedder delegates `masked_log_probs` and `token_log_probs` here, with its loaded model,
tokenizer and device. Each call turns what a metric asks for into one description of rows to run and
tokens to read, built with numpy on the host, and hands it to the batched loop of
`bias.core.models.hf.scoring_plan` (length-sorted batches padded on the right with an attention
mask, so models without a pad token work too; the output head only at the positions read; float64
log-softmax; everything on the device at once):

- a pseudo-log-likelihood that masks one token at a time becomes one *row* per masked variant, all
  variants of all sentences sharing the batches, never one forward call per mask; requests that give
  the model the same input share one row;
- attention received per token (AULA) is the attention matrix averaged over layers, heads and the
  sequence's real (non-padding) queries: a column mean, i.e. how much attention the token
  *receives*.

torch is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bias.core.errors import BiasError
from bias.core.lm_requests import MaskedRequest, TokenScores
from bias.core.models.hf.batching import (
    check_ids_fit,
    memory_guard,
    pad_id,
    padded_rows,
    token_limit,
)
from bias.core.models.hf.scoring_plan import offsets, runs, score_reads


def is_uncased(tokenizer: Any) -> bool:
    """Whether the tokenizer lowercases its input (an uncased model): its `do_lower_case` flag, else
    the saved init arguments, else what the fast tokenizer's normalizer does to a capital letter."""
    flag = getattr(tokenizer, "do_lower_case", None)
    if isinstance(flag, bool):
        return flag
    flag = (getattr(tokenizer, "init_kwargs", None) or {}).get("do_lower_case")
    if isinstance(flag, bool):
        return flag
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is not None:
        try:
            return normalizer.normalize_str("AEZ") == "aez"
        except Exception:  # pragma: no cover - exotic normalizers
            return False
    return False


def mask_id(tokenizer: Any) -> int:
    found = getattr(tokenizer, "mask_token_id", None)
    if found is None:
        raise BiasError(
            f"The tokenizer ({type(tokenizer).__name__}) has no mask token, so masked-LM "
            "scores cannot be computed.",
            "Use a masked language model (BERT, RoBERTa, ...) saved with its tokenizer, or "
            "a causal-LM metric.",
        )
    return int(found)


def _check_lengths(
    lengths: np.ndarray, limit: int | None, numbers: np.ndarray | None = None
) -> None:
    """Refuse sequences longer than the model's limit; `numbers` gives each length's place among the
    caller's requests (where several requests share one sequence), else its own index."""
    if limit is None:
        return
    too_long = np.flatnonzero(np.asarray(lengths) > limit)
    if len(too_long):
        first = int(too_long[0])
        raise BiasError(
            f"{len(too_long)} sequence(s) are longer than the model's limit of {limit} tokens "
            f"(the first, number {first if numbers is None else int(numbers[first])}, has "
            f"{int(lengths[first])} tokens with its special tokens).",
            "Shorten those sentences or use a model with a longer context.",
        )


def masked_log_probs(
    model: Any,
    tokenizer: Any,
    device: Any,
    requests: Sequence[MaskedRequest],
    batch_size: int,
    *,
    max_tokens: int | None = None,
) -> list[np.ndarray]:
    """For each request, log P(original token at each position | all the request's positions
    masked).

    One float64 array per request, in the order of `request.positions`. Requests of every sentence
    are mixed into length-sorted batches; a request with no positions gets an empty array without a
    model call."""
    import torch

    requests = list(requests)
    # each request's fields read once; the passes below run in C (map, zip), not per request in
    # Python (a pseudo-log-likelihood run has one request per token)
    positions = [r.positions for r in requests]
    texts = [r.ids for r in requests]
    counts = np.fromiter(map(len, positions), dtype=np.int64, count=len(requests))
    if not counts.any():
        return [np.zeros(0, dtype=np.float64) for _ in requests]
    # the requests' sentences (many requests mask one sentence in turn, sharing its tuple of ids),
    # padded once each; equal sentences held in different objects are merged with the rows below
    objects = np.fromiter(map(id, texts), dtype=np.uint64, count=len(requests))
    _, first, of_request = np.unique(objects, return_index=True, return_inverse=True)
    ids, lengths = padded_rows([texts[k] for k in first.tolist()], pad_id(tokenizer, model))
    of_request = of_request.reshape(-1)
    ids, lengths = ids[of_request], lengths[of_request]
    owner, rank = runs(counts)
    where = np.fromiter(
        itertools.chain.from_iterable(positions),
        dtype=np.int64,
        count=len(owner),
    )
    bad = (where < 0) | (where >= lengths[owner])
    if bad.any():
        k = int(np.argmax(bad))
        raise BiasError(
            f"Masked request {owner[k]} asks for position {where[k]} of a sequence of "
            f"{lengths[owner[k]]} tokens."
        )
    tokens = ids[owner, where]
    masked = ids.copy()
    masked[owner, where] = mask_id(tokenizer)
    check_ids_fit(model, tokenizer, ids, masked[owner, where])
    # Requests that differ only in the tokens under their masks give the model the same input: one
    # row serves them all (LPBS's `one-mask` policy reads each sub-token of a word at one mask this
    # way).
    listed = np.full((len(requests), int(counts.max())), -1, dtype=np.int64)
    listed[owner, rank] = where
    live = np.flatnonzero(counts)
    row_of, rows = _distinct_rows(np.concatenate([masked, lengths[:, None], listed], axis=1)[live])
    rows = live[rows]  # the first request of each distinct row
    _check_lengths(lengths[rows], token_limit(model, tokenizer), rows)
    gather_start = offsets(counts[rows])
    gather_seq, gather_rank = runs(counts[rows])
    gather_pos = listed[rows[gather_seq], gather_rank]
    # each read: the gathered row of its request's row at the same place among the positions
    read_row = gather_start[:-1][row_of[np.searchsorted(live, owner)]] + rank
    with torch.inference_mode(), memory_guard(device, batch_size):
        picked = score_reads(
            model,
            device,
            masked[rows],
            lengths[rows],
            gather_seq,
            gather_pos,
            read_row,
            tokens,
            batch_size,
            max_tokens=max_tokens,
        )
    if (counts == counts[0]).all():  # one position each (a pseudo-log-likelihood): rows in C
        return list(picked.reshape(len(requests), int(counts[0])))
    bounds = offsets(counts).tolist()
    return [picked[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of an int64 matrix, the number of its distinct value (in order of first
    appearance), and the index of each distinct row's first appearance.

    Rows are told apart by a 64-bit hash (a product with fixed odd multipliers, wrapping); rows that
    share a hash are then compared whole, and only if two different rows collided (about one chance
    in 2^64 / n^2) are they sorted out one by one."""
    multipliers = (
        np.random.default_rng(0).integers(1, 2**62, size=matrix.shape[1], dtype=np.int64) | 1
    )
    with np.errstate(over="ignore"):
        hashes = matrix @ multipliers  # wraps modulo 2^64, as the sum of products would
    _, first, number = np.unique(hashes, return_index=True, return_inverse=True)
    number = number.reshape(-1)
    if not np.array_equal(matrix, matrix[first[number]]):  # a collision: the exact way
        seen: dict[bytes, int] = {}
        number = np.fromiter(
            (seen.setdefault(row.tobytes(), len(seen)) for row in matrix),
            dtype=np.int64,
            count=len(matrix),
        )
        first = np.unique(number, return_index=True)[1]
        return number, first
    # numbered by first appearance, as the exact way numbers them
    by_appearance = np.argsort(first, kind="stable")
    renumber = np.empty_like(by_appearance)
    renumber[by_appearance] = np.arange(len(by_appearance))
    return renumber[number], first[by_appearance]


@contextlib.contextmanager
def _eager_attention(model: Any, wanted: bool) -> Iterator[None]:
    """sdpa and flash attention return no attention weights; switch to eager for the call, then
    back."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    switch = wanted and current not in (None, "eager") and hasattr(model, "set_attn_implementation")
    if switch:
        try:
            model.set_attn_implementation("eager")
        except Exception as exc:
            raise BiasError(
                f"The model's attention ({current}) gives no attention weights, and it "
                f"cannot switch to eager attention: {exc}",
                "AULA needs attention weights; use AUL instead.",
            ) from exc
    try:
        yield
    finally:
        if switch:
            model.set_attn_implementation(current)


def causal_start(tokenizer: Any) -> tuple[int | None, str]:
    """The token a causal LM's sequences are conditioned on before their first word, and how it was
    chosen.

    GPT-2-style tokenizers add no special token, so without a start token the first word of a
    sentence has no context and would never be scored ("He likes ..." vs "She likes ..." would
    differ in nothing scored). As bias-bench and lm-evaluation-harness do, the model's BOS token
    (else its EOS token) is prepended when the tokenizer adds no start token of its own; the first
    word is then scored as log P(w_1 | BOS). Returns (None, reason) when nothing is to be prepended.
    """
    probe = "a"
    try:
        with_specials = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
        without = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    except Exception:  # pragma: no cover - tokenizers that cannot be called on a plain string
        with_specials, without = [], []
    if with_specials and without and with_specials[: len(without)] != without:
        return None, "the tokenizer's own start token (not scored); every word after it is scored"
    for name in ("bos_token", "eos_token"):
        token_id = getattr(tokenizer, f"{name}_id", None)
        if token_id is not None:
            token = getattr(tokenizer, name, None)
            return (
                int(token_id),
                f"{name[:3]} token {token!r} prepended, so the first word is scored as log "
                f"P(w_1 | {name[:3].upper()})",
            )
    return None, "no start token exists, so the first token has no context and is not scored"


def token_log_probs(
    model: Any,
    tokenizer: Any,
    device: Any,
    sequences: Sequence[Sequence[int]],
    batch_size: int,
    *,
    causal: bool,
    attention: bool,
    start: bool = True,
    max_tokens: int | None = None,
) -> list[TokenScores]:
    """Per-token log-probabilities of unmasked sequences, float64, one value per token (specials
    included).

    Masked LM: log P(w_i | S), the whole sentence visible (AUL). Causal LM: log P(w_i | w_<i), with
    the start token of `causal_start` put before the sequence (and not returned) so that position 0
    is scored too; NaN at position 0 only when the model has no start token, or when `start` is
    False (no start token prepended: the pass without BOS of bias-bench's convention). With
    `attention`, also the attention each token receives: the attention weights averaged over layers,
    heads and the real queries (padding excluded).

    The output head runs on the scored positions only (never on padding, nor on a causal row's last
    position, which predicts nothing asked for): the hidden states are gathered first.
    """
    import torch

    sequences = [list(s) for s in sequences]
    first, context = causal_start(tokenizer) if causal else (None, "")
    if causal and not start:
        first, context = None, "no start token prepended (the first token is not scored)"
    lead = 0 if first is None else 1
    live = [i for i, s in enumerate(sequences) if s]
    rows = [([first] if lead else []) + sequences[i] for i in live]
    ids, lengths = padded_rows(rows, pad_id(tokenizer, model))
    check_ids_fit(model, tokenizer, ids)
    _check_lengths(lengths, token_limit(model, tokenizer))
    # where the logits are read, and the token each of them scores: a causal row's position j is
    # predicted at j - 1 (its prepended start token is context only), a masked LM's at j itself
    shift = 1 if causal else 0
    counts = np.maximum(lengths - shift, 0)
    seq, pos = runs(counts)
    received: dict[int, np.ndarray] = {}

    def keep_attention(members: np.ndarray, output: Any) -> None:
        layers = output.attentions
        if not layers:
            raise BiasError(
                f"The model ({type(model).__name__}) returned no attention weights.",
                "AULA needs attention weights; use AUL instead.",
            )
        # mean over layers and heads -> (batch, query, key), one layer at a time to bound memory;
        # then the mean over each row's real queries (its start token and padding left out)
        mean = sum(a.to(torch.float64).mean(dim=1) for a in layers) / len(layers)
        widths = torch.as_tensor(lengths[members], device=mean.device)
        query = torch.arange(mean.shape[1], device=mean.device)
        real = ((query[None, :] >= lead) & (query[None, :] < widths[:, None])).to(torch.float64)
        columns = (
            (torch.einsum("bq,bqk->bk", real, mean) / real.sum(dim=1, keepdim=True)).cpu().numpy()
        )
        for b, k in enumerate(members):
            received[int(k)] = columns[b, lead : int(lengths[k])].astype(np.float64)

    picked = np.zeros(0, dtype=np.float64)
    if live:
        with (
            torch.inference_mode(),
            memory_guard(device, batch_size),
            _eager_attention(model, attention),
        ):
            picked = score_reads(
                model,
                device,
                ids,
                lengths,
                seq,
                pos,
                np.arange(len(seq)),
                ids[seq, pos + shift],
                batch_size,
                attention=attention,
                on_batch=keep_attention if attention else None,
                max_tokens=max_tokens,
            )
    out = [
        TokenScores(
            np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64) if attention else None
        )
        for _ in sequences
    ]
    starts = offsets(counts)
    for k, i in enumerate(live):
        values = np.full(int(lengths[k]), np.nan, dtype=np.float64)
        values[shift:] = picked[starts[k] : starts[k + 1]]
        out[i] = TokenScores(values[lead:], received.get(k), context)
    return out
