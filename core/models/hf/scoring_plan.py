"""The batched loop under every language-model score: sequences in, log-probabilities of chosen
tokens at chosen positions out (`score_reads`).

What the loop needs is described once, on the host, as numpy arrays: the padded token ids of every
sequence; the gathered rows (a sequence and a position each, whose hidden state goes through the
output head); and the reads (a gathered row and the token whose log-probability is read there).
Sequences are sorted by length and cut into batches; everything goes to the device once, each batch
takes slices of it, and the log-probabilities stay on the device until the last batch. Inside the
loop the host only slices and launches: no Python list is built per row, no device value is read
back (a GPU's queue stays full), and a batch that runs out of memory is halved and redone.

For the classes in `SPLIT_HEADS` the output head runs on the gathered rows only, never at every
position (a vocabulary projection at every position of a bert-base batch costs a fifth of its
forward); any other class gives full logits, which are gathered the same way. Log-probabilities are
`log_softmax` of the logits cast to float64, read at the token. A sequence may carry its own
position ids and segments (`score_reads(..., positions=, segments=)`): several continuations of one
prompt then share the prompt's tokens in one row, each continuation seeing the prompt and itself
only (see `bias.core.models.hf.choice_scoring`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from bias.core.models.hf.batching import TOKENS_PER_ROW, in_batches, on_device

# LM classes whose forward is `head(base(...)[0])`: for these the head (BERT's transform and the
# vocabulary projection) is applied to the gathered rows only. Any other class takes the generic
# path (full logits), which gives the same numbers.
SPLIT_HEADS = {
    "GPT2LMHeadModel": ("transformer", "lm_head"),
    "BertForMaskedLM": ("bert", "cls"),
    "RobertaForMaskedLM": ("roberta", "lm_head"),
    "XLMRobertaForMaskedLM": ("roberta", "lm_head"),
    "CamembertForMaskedLM": ("roberta", "lm_head"),
    "LlamaForCausalLM": ("model", "lm_head"),
    "MistralForCausalLM": ("model", "lm_head"),
    "Qwen2ForCausalLM": ("model", "lm_head"),
}

# Rows taken through the output head and the float64 log-softmax at a time: as many as keep a
# block's logits within HEAD_ELEMENTS (128 rows of BERT's 30,522-word vocabulary, 83 of GPT-2's
# 50,257). A sentence batch of 700 scored tokens with GPT-2's vocabulary is a 140 MB float32 block
# and a 280 MB float64 copy: written once and read once, their memory traffic and page faults cost
# more than the arithmetic. In blocks both stay small and are reused (a quarter of the head's time
# saved on a GPT-2-sized model, the same numbers).
HEAD_ELEMENTS = 1 << 22
HEAD_ROWS = 128
# On a CPU half that (41 rows of GPT-2's vocabulary, 7% slower on the head alone): its float64
# blocks come from the process's heap, and with BBQ's short batches they set the memory peak.
CPU_HEAD_ELEMENTS = 1 << 21


def split_head(model: Any) -> tuple[Any, Any] | None:
    """(base, head) of a model in `SPLIT_HEADS`, else None."""
    names = SPLIT_HEADS.get(type(model).__name__)
    if names is None:
        return None
    base, head = getattr(model, names[0], None), getattr(model, names[1], None)
    return (base, head) if base is not None and head is not None else None


def offsets(counts: np.ndarray) -> np.ndarray:
    """Where each of consecutive runs of `counts` begins, and the total at the end."""
    return np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts, dtype=np.int64)])


def runs(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs of `counts` elements laid end to end: each element's run and its place in the
    run."""
    counts = np.asarray(counts, dtype=np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return owner, np.arange(len(owner), dtype=np.int64) - np.repeat(offsets(counts)[:-1], counts)


def length_sorted(lengths: np.ndarray) -> np.ndarray:
    """Sequence indices longest first, ties in their own order (`batching.length_order`)."""
    return np.lexsort((np.arange(len(lengths)), -np.asarray(lengths)))


def score_reads(
    model: Any,
    device: Any,
    ids: np.ndarray,
    lengths: np.ndarray,
    gather_seq: np.ndarray,
    gather_pos: np.ndarray,
    read_row: np.ndarray,
    read_token: np.ndarray,
    batch_size: int,
    *,
    positions: np.ndarray | None = None,
    segments: np.ndarray | None = None,
    attention: bool = False,
    on_batch: Callable[[np.ndarray, Any], None] | None = None,
    max_tokens: int | None = None,
) -> np.ndarray:
    """log P(read_token[k] | the hidden state of gathered row read_row[k]) for every read k,
    float64, in the order given.

    `ids` holds one padded row per sequence (its first `lengths[i]` tokens real); gathered row j is
    position `gather_pos[j]` of sequence `gather_seq[j]`. `positions` (position ids) and `segments`
    (-1 padding, 0 shared, s > 0 a part that sees the shared tokens and itself only) are optional
    matrices shaped like `ids`. `on_batch(sequences, output)` sees each batch's model output with
    the indices of its sequences (AULA reads the attention weights there). A batch holds at most
    `batch_size` sequences and `max_tokens` tokens (default batch_size x TOKENS_PER_ROW: a decoder's
    activations grow with a batch's tokens, not its rows; 32 BBQ questions of ~200 tokens through
    GPT-2 took 1.4 GB at once, where 2,048 tokens take a third of that and run no slower)."""
    import torch

    order = length_sorted(lengths)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    gather_order = np.lexsort((np.arange(len(gather_seq)), rank[gather_seq]))
    gather_rank = np.empty_like(gather_order)
    gather_rank[gather_order] = np.arange(len(gather_order))
    sorted_rows = gather_rank[read_row]
    read_order = np.lexsort((np.arange(len(sorted_rows)), sorted_rows))
    lengths = np.asarray(lengths)[order]
    gather_start = offsets(np.bincount(rank[gather_seq], minlength=len(order))).tolist()
    read_rows_sorted = sorted_rows[read_order]
    # reads of gathered rows 0..j-1: the reads of any run of rows are one slice
    reads_before = np.searchsorted(read_rows_sorted, np.arange(len(gather_seq) + 1)).tolist()
    widths = lengths.tolist()

    on = lambda array: on_device(array, device)  # noqa: E731
    ids_t = on(ids[order])
    width = ids.shape[1]
    attention_mask = on((np.arange(width)[None, :] < lengths[:, None]).astype(np.int64))
    position_t = on(positions[order]) if positions is not None else None
    segment_t = on(segments[order]) if segments is not None else None
    seq_t = on(rank[gather_seq][gather_order])
    pos_t = on(np.asarray(gather_pos)[gather_order])
    row_t = on(read_rows_sorted)
    token_t = on(np.asarray(read_token)[read_order])[:, None]
    # the common case, one read per gathered row and in order: a gather along the vocabulary
    one_each = len(read_rows_sorted) == len(gather_seq) and bool(
        (read_rows_sorted == np.arange(len(gather_seq))).all()
    )
    picked = torch.empty(len(read_row), dtype=torch.float64, device=ids_t.device)
    split = split_head(model)
    dtype = next(model.parameters()).dtype if segments is not None else None
    # no key-value cache: a decoder would otherwise keep every layer's keys and values of the batch
    # (GPT-2 at 32 x 200 tokens: 460 MB) for a continuation that never comes
    vocabulary = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    elements = HEAD_ELEMENTS if ids_t.device.type == "cuda" else CPU_HEAD_ELEMENTS
    block_rows = max(16, min(HEAD_ROWS, elements // vocabulary)) if vocabulary else HEAD_ROWS
    forward = split[0] if split is not None else model
    no_cache = (
        {"use_cache": False} if "use_cache" in inspect.signature(forward.forward).parameters else {}
    )

    def score(start: int, end: int) -> None:
        n, g0, g1 = widths[start], gather_start[start], gather_start[end]
        inputs: dict[str, Any] = {"input_ids": ids_t[start:end, :n]}
        if segment_t is not None:
            inputs["attention_mask"] = _segment_mask(segment_t[start:end, :n], dtype)
        else:
            inputs["attention_mask"] = attention_mask[start:end, :n]
        if position_t is not None:
            inputs["position_ids"] = position_t[start:end, :n]
        if attention:
            inputs["output_attentions"] = True
        inputs.update(no_cache)
        where = (seq_t[g0:g1] - start, pos_t[g0:g1])
        if split is not None:
            output = split[0](**inputs, return_dict=True)
            rows, head = output[0][where], split[1]
        else:
            output = model(**inputs, return_dict=True)
            rows, head = output.logits[where], None
        if on_batch is not None:
            on_batch(order[start:end], output)
        for first in range(g0, g1, block_rows):
            last = min(first + block_rows, g1)
            lo, hi = reads_before[first], reads_before[last]
            if lo == hi:
                continue
            block = rows[first - g0 : last - g0]
            log_probs = torch.log_softmax(
                (block if head is None else head(block)).to(torch.float64), dim=-1
            )
            if one_each:
                torch.gather(log_probs, 1, token_t[lo:hi], out=picked[lo:hi, None])
            else:
                picked[lo:hi] = log_probs[row_t[lo:hi] - first, token_t[lo:hi, 0]]

    in_batches(
        len(order),
        batch_size,
        score,
        widths=widths,
        max_tokens=max_tokens or batch_size * TOKENS_PER_ROW,
    )
    out = np.empty(len(read_row), dtype=np.float64)
    out[read_order] = picked.cpu().numpy()
    return out


def _segment_mask(segments: Any, dtype: Any) -> Any:
    """The additive 4D attention mask of rows whose tokens belong to segments: a token sees the
    earlier tokens of segment 0 (the shared prompt) and of its own segment, never padding (-1) nor
    another segment. Padding rows see the shared tokens, so that no softmax row is empty."""
    import torch

    n = segments.shape[1]
    key, query = segments[:, None, :], segments[:, :, None]
    causal = torch.ones((n, n), dtype=torch.bool, device=segments.device).tril()
    seen = (key >= 0) & ((key == 0) | (key == query)) & causal
    mask = torch.zeros(seen.shape, dtype=dtype, device=segments.device)
    mask.masked_fill_(~seen, torch.finfo(dtype).min)
    return mask[:, None]
