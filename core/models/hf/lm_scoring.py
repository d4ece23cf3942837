"""The batched scoring engine behind every language-model metric (LPBS, CrowS-Pairs, SSS, AUL/AULA, KLS/JSS).

The `hf` embedder delegates `masked_log_probs` and `token_log_probs` here, with its loaded model,
tokenizer and device. Everything a metric asks for is turned into as few forward calls as possible:

- requests are sorted by length and cut into batches of similar length, padded by hand on the right
  with an attention mask (so models without a pad token work too), then put back in request order,
  all through `bias.core.models.hf.batching`, as the embedder's vectors are;
- the host's work is done once per call, before the first forward, as numpy arrays: the padded
  inputs of every batch, where each batch's hidden states are gathered and which token each
  log-probability reads; they go to the device once, each batch takes slices of them, and the
  log-probabilities stay on the device until the last batch, so the loop never waits on the host
  and the host never waits on the device (a GPU's queue stays full);
- a pseudo-log-likelihood that masks one token at a time becomes one *row* per masked variant, all
  variants of all sentences sharing the batches, never one forward call per mask;
- log-probabilities are the logits cast to float64 less their log-sum-exp (max-subtracted, no
  underflow: `log_softmax` read at one token), only at the positions asked for; for BERT- and RoBERTa-family masked LMs and GPT-2 the
  output head is applied to those positions only (hidden states gathered first), which saves the
  vocabulary projection of every other position, padding included;
- attention received per token (AULA) is the attention matrix averaged over layers, heads and the
  sequence's real (non-padding) queries: a column mean, i.e. how much attention the token *receives*.

torch is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.models.hf.batching import in_batches, length_order, memory_guard, on_device, pad_id, padded_rows, token_limit
from bias.core.interfaces import MaskedRequest, TokenScores

# LM classes whose forward is `head(base(...)[0])`: for these the head (BERT's transform and the
# vocabulary projection) is applied to the scored positions only. With a 30,522-token vocabulary the
# head at every position costs as much as a fifth of a bert-base forward. Any other class takes the
# generic path (full logits), which gives the same numbers.
_SPLIT_HEADS = {
    "GPT2LMHeadModel": ("transformer", "lm_head"),
    "BertForMaskedLM": ("bert", "cls"),
    "RobertaForMaskedLM": ("roberta", "lm_head"),
    "XLMRobertaForMaskedLM": ("roberta", "lm_head"),
    "CamembertForMaskedLM": ("roberta", "lm_head"),
}


def is_uncased(tokenizer: Any) -> bool:
    """Whether the tokenizer lowercases its input (an uncased model): its `do_lower_case` flag, else the
    saved init arguments, else what the fast tokenizer's normalizer does to a capital letter."""
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
            f"The tokenizer ({type(tokenizer).__name__}) has no mask token, so masked-LM scores cannot be computed.",
            "Use a masked language model (BERT, RoBERTa, ...) saved with its tokenizer, or a causal-LM metric.",
        )
    return int(found)


def _check_lengths(lengths: Sequence[int], limit: int | None, numbers: Sequence[int] | None = None) -> None:
    """Refuse sequences longer than the model's limit; `numbers` gives each length's place among the
    caller's requests (where several requests share one sequence), else its own index."""
    if limit is None:
        return
    too_long = [i for i, n in enumerate(lengths) if n > limit]
    if too_long:
        first = too_long[0]
        raise BiasError(
            f"{len(too_long)} sequence(s) are longer than the model's limit of {limit} tokens "
            f"(the first, number {first if numbers is None else numbers[first]}, has {lengths[first]} tokens with its special tokens).",
            "Shorten those sentences or use a model with a longer context.",
        )


def _split_head(model: Any) -> tuple[Any, Any] | None:
    names = _SPLIT_HEADS.get(type(model).__name__)
    if names is None:
        return None
    base, head = getattr(model, names[0], None), getattr(model, names[1], None)
    return (base, head) if base is not None and head is not None else None


# Rows taken through the output head and the float64 log-sum-exp at a time. A sentence batch of 700
# scored tokens with GPT-2's 50,257-word vocabulary is a 140 MB float32 block and a 280 MB float64
# copy: written once and read once, their memory traffic and page faults cost more than the
# arithmetic. In blocks of 128 rows both stay small and are reused (a quarter of the head's time saved
# on a GPT-2-sized model, the same numbers).
_HEAD_ROWS = 128


@attrs.frozen
class _Plan:
    """Everything the batches of one call need, in length order (longest first), built on the host
    once: the padded inputs; the gathered rows (a sequence and a position each, whose hidden state
    goes through the head); and the reads (a gathered row and the token whose log-probability is
    taken there). `*_start[k]` is where sequence k's gathered rows and reads begin."""

    ids: np.ndarray
    lengths: np.ndarray
    gather_seq: np.ndarray
    gather_pos: np.ndarray
    gather_start: np.ndarray
    read_row: np.ndarray
    read_token: np.ndarray
    read_start: np.ndarray


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts, dtype=np.int64)])


def _plan(sequences: Sequence[Sequence[int]], fill: int, gathers: Sequence[Sequence[int]], reads: Sequence[tuple[Sequence[int], Sequence[int]]]) -> _Plan:
    """A `_Plan` of sequences already in length order: `gathers[k]` the positions gathered from
    sequence k, `reads[k]` the (row within k's gathered rows, token) pairs read from them."""
    ids, lengths = padded_rows(sequences, fill)
    n_gather = np.fromiter(map(len, gathers), dtype=np.int64, count=len(gathers))
    gather_start = _offsets(n_gather)
    n_read = np.fromiter((len(rows) for rows, _ in reads), dtype=np.int64, count=len(reads))
    read_start = _offsets(n_read)
    chain = itertools.chain.from_iterable
    read_row = np.fromiter(chain(rows for rows, _ in reads), dtype=np.int64, count=int(read_start[-1]))
    read_row += np.repeat(gather_start[:-1], n_read)
    return _Plan(
        ids=ids,
        lengths=lengths,
        gather_seq=np.repeat(np.arange(len(sequences), dtype=np.int64), n_gather),
        gather_pos=np.fromiter(chain(gathers), dtype=np.int64, count=int(gather_start[-1])),
        gather_start=gather_start,
        read_row=read_row,
        read_token=np.fromiter(chain(tokens for _, tokens in reads), dtype=np.int64, count=int(read_start[-1])),
        read_start=read_start,
    )


def _run(model: Any, device: Any, plan: _Plan, batch_size: int, *, attention: bool = False, on_batch: Any = None) -> np.ndarray:
    """The log-probability of every read of `plan`, float64, in plan order.

    Inputs and indices go to the device once; each batch is slices of them, its head blocks and their
    reads are found by `np.searchsorted` on the host arrays (no device value is ever read back inside
    the loop), and the results are written into one device tensor brought back at the end.
    `on_batch(start, end, output)` sees each batch's model output (AULA's attention weights)."""
    import torch

    split = _split_head(model)
    ids = on_device(plan.ids, device)
    positions = np.arange(plan.ids.shape[1], dtype=np.int64)
    attention_mask = on_device((positions[None, :] < plan.lengths[:, None]).astype(np.int64), device)
    gather_seq, gather_pos = on_device(plan.gather_seq, device), on_device(plan.gather_pos, device)
    read_row, read_token = on_device(plan.read_row, device), on_device(plan.read_token, device)
    picked = torch.empty(len(plan.read_row), dtype=torch.float64, device=ids.device)

    def score(start: int, end: int) -> None:
        width = int(plan.lengths[start])
        g0, g1 = int(plan.gather_start[start]), int(plan.gather_start[end])
        r0, r1 = int(plan.read_start[start]), int(plan.read_start[end])
        inputs = {"input_ids": ids[start:end, :width], "attention_mask": attention_mask[start:end, :width]}
        where = (gather_seq[g0:g1] - start, gather_pos[g0:g1])
        extra = {"output_attentions": True} if attention else {}
        if split is not None:
            base, head = split
            output = base(**inputs, return_dict=True, **extra)
            rows = output[0][where]
        else:
            head = None
            output = model(**inputs, return_dict=True, **extra)
            rows = output.logits[where]
        if on_batch is not None:
            on_batch(start, end, output)
        # reads of this batch, by head block of _HEAD_ROWS gathered rows (reads are in row order)
        bounds = np.searchsorted(plan.read_row[r0:r1], np.arange(g0, g1 + _HEAD_ROWS, _HEAD_ROWS), side="left") + r0
        for k, first in enumerate(range(g0, g1, _HEAD_ROWS)):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if lo == hi:
                continue
            block = rows[first - g0 : first - g0 + _HEAD_ROWS]
            logits = (block if head is None else head(block)).to(torch.float64)
            at = read_row[lo:hi] - first
            picked[lo:hi] = logits[at, read_token[lo:hi]] - torch.logsumexp(logits, dim=-1)[at]

    in_batches(len(plan.lengths), batch_size, score)
    return picked.cpu().numpy()


def masked_log_probs(
    model: Any, tokenizer: Any, device: Any, requests: Sequence[MaskedRequest], batch_size: int
) -> list[np.ndarray]:
    """For each request, log P(original token at each position | all the request's positions masked).

    One float64 array per request, in the order of `request.positions`. Requests of every sentence are
    mixed into length-sorted batches; a request with no positions gets an empty array without a model call.
    """
    import torch

    requests = list(requests)
    out: list[np.ndarray] = [np.zeros(0, dtype=np.float64) for _ in requests]
    live = [i for i, r in enumerate(requests) if len(r.positions)]
    if not live:
        return out
    mask = mask_id(tokenizer)
    for i in live:
        n = len(requests[i].ids)
        bad = [p for p in requests[i].positions if not 0 <= p < n]
        if bad:
            raise BiasError(f"Masked request {i} asks for position {bad[0]} of a sequence of {n} tokens.")
    # Requests that differ only in the tokens under their masks give the model the same input: one row
    # serves them all (LPBS's `one-mask` policy reads each sub-token of a word at one mask this way).
    rows: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
    for i in live:
        ids, positions = list(requests[i].ids), requests[i].positions
        for p in positions:
            ids[p] = mask
        rows.setdefault((tuple(ids), tuple(positions)), []).append(i)
    keys = list(rows)
    _check_lengths([len(k[0]) for k in keys], token_limit(model, tokenizer), [rows[k][0] for k in keys])
    keys = [keys[k] for k in length_order([len(k[0]) for k in keys])]
    reads, spans = [], []
    for ids, positions in keys:
        own = range(len(positions))
        readers = rows[(ids, positions)]
        reads.append(([r for _ in readers for r in own], [requests[i].ids[p] for i in readers for p in positions]))
        spans.extend((i, len(positions)) for i in readers)
    plan = _plan([k[0] for k in keys], pad_id(tokenizer), [k[1] for k in keys], reads)
    with torch.inference_mode(), memory_guard(device, batch_size):
        picked = _run(model, device, plan, batch_size)
    at = 0
    for i, n in spans:
        out[i] = picked[at : at + n]
        at += n
    return out


@contextlib.contextmanager
def _eager_attention(model: Any, wanted: bool) -> Iterator[None]:
    """sdpa and flash attention return no attention weights; switch to eager for the call, then back."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    switch = wanted and current not in (None, "eager") and hasattr(model, "set_attn_implementation")
    if switch:
        try:
            model.set_attn_implementation("eager")
        except Exception as exc:
            raise BiasError(
                f"The model's attention ({current}) gives no attention weights, and it cannot switch to eager attention: {exc}",
                "AULA needs attention weights; use AUL instead.",
            ) from exc
    try:
        yield
    finally:
        if switch:
            model.set_attn_implementation(current)


def causal_start(tokenizer: Any) -> tuple[int | None, str]:
    """The token a causal LM's sequences are conditioned on before their first word, and how it was chosen.

    GPT-2-style tokenizers add no special token, so without a start token the first word of a sentence
    has no context and would never be scored ("He likes ..." vs "She likes ..." would differ in nothing
    scored). As bias-bench and lm-evaluation-harness do, the model's BOS token (else its EOS token) is
    prepended when the tokenizer adds no start token of its own; the first word is then scored as
    log P(w_1 | BOS). Returns (None, reason) when nothing is to be prepended.
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
            return int(token_id), f"{name[:3]} token {token!r} prepended, so the first word is scored as log P(w_1 | {name[:3].upper()})"
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
) -> list[TokenScores]:
    """Per-token log-probabilities of unmasked sequences, float64, one value per token (specials included).

    Masked LM: log P(w_i | S), the whole sentence visible (AUL). Causal LM: log P(w_i | w_<i), with the
    start token of `causal_start` put before the sequence (and not returned) so that position 0 is
    scored too; NaN at position 0 only when the model has no start token, or when `start` is False
    (no start token prepended: the pass without BOS of bias-bench's convention). With `attention`, also the attention each token receives: the
    attention weights averaged over layers, heads and the real queries (padding excluded).

    The output head runs on the scored positions only (never on padding, nor on a causal row's last
    position, which predicts nothing asked for): the hidden states are gathered first.
    """
    import torch

    sequences = [list(s) for s in sequences]
    out: list[TokenScores | None] = [None] * len(sequences)
    for i, s in enumerate(sequences):
        if not s:
            out[i] = TokenScores(np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64) if attention else None)
    live = [i for i, s in enumerate(sequences) if s]
    first, context = causal_start(tokenizer) if causal else (None, "")
    if causal and not start:
        first, context = None, "no start token prepended (the first token is not scored)"
    lead = 0 if first is None else 1
    rows = [([first] if lead else []) + s for s in sequences]
    _check_lengths([len(rows[i]) for i in live], token_limit(model, tokenizer))
    order = [live[k] for k in length_order([len(rows[i]) for i in live])]
    # where the logits are read, and the token each of them scores: a causal row's position j is
    # predicted at j - 1 (its prepended start token is context only), a masked LM's at j itself
    shift = 1 if causal else 0
    counts = [max(len(rows[i]) - shift, 0) for i in order]
    plan = _plan(
        [rows[i] for i in order], pad_id(tokenizer), [range(n) for n in counts],
        [(range(n), rows[i][shift : shift + n]) for i, n in zip(order, counts)],
    )
    received: dict[int, np.ndarray] = {}

    def keep_attention(start: int, end: int, output: Any) -> None:
        layers = output.attentions
        if not layers:
            raise BiasError(
                f"The model ({type(model).__name__}) returned no attention weights.",
                "AULA needs attention weights; use AUL instead.",
            )
        # mean over layers and heads -> (batch, query, key), one layer at a time to bound memory; then
        # the mean over each row's real queries (its start token and padding left out)
        mean = sum(a.to(torch.float64).mean(dim=1) for a in layers) / len(layers)
        widths = torch.as_tensor(plan.lengths[start:end], device=mean.device)
        query = torch.arange(mean.shape[1], device=mean.device)
        real = ((query[None, :] >= lead) & (query[None, :] < widths[:, None])).to(torch.float64)
        columns = (torch.einsum("bq,bqk->bk", real, mean) / real.sum(dim=1, keepdim=True)).cpu().numpy()
        for b in range(end - start):
            received[start + b] = columns[b, lead : int(plan.lengths[start + b])].astype(np.float64)

    with torch.inference_mode(), memory_guard(device, batch_size), _eager_attention(model, attention):
        picked = _run(model, device, plan, batch_size, attention=attention, on_batch=keep_attention if attention else None)
    for k, i in enumerate(order):
        values = np.full(len(rows[i]), np.nan, dtype=np.float64)
        values[shift:] = picked[plan.read_start[k] : plan.read_start[k + 1]]
        out[i] = TokenScores(values[lead:], received.get(k), context)
    return [s for s in out if s is not None]
