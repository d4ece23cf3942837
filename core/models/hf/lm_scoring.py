"""The batched scoring engine behind every language-model metric (LPBS, CrowS-Pairs, SSS, AUL/AULA, KLS/JSS).

The `hf` embedder delegates `masked_log_probs` and `token_log_probs` here, with its loaded model,
tokenizer and device. Everything a metric asks for is turned into as few forward calls as possible:

- requests are sorted by length and cut into batches of similar length, padded by hand on the right
  with an attention mask (so models without a pad token work too), then put back in request order,
  all through `bias.core.models.hf.batching`, as the embedder's vectors are;
- a pseudo-log-likelihood that masks one token at a time becomes one *row* per masked variant, all
  variants of all sentences sharing the batches, never one forward call per mask;
- log-probabilities are taken with `log_softmax` on logits cast to float64 (max-subtracted, no
  underflow), only at the positions asked for; for BERT- and RoBERTa-family masked LMs and GPT-2 the
  output head is applied to those positions only (hidden states gathered first), which saves the
  vocabulary projection of every other position, padding included;
- attention received per token (AULA) is the attention matrix averaged over layers, heads and the
  sequence's real (non-padding) queries: a column mean, i.e. how much attention the token *receives*.

torch is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bias.core.errors import BiasError
from bias.core.models.hf.batching import id_rows, in_length_batches, memory_guard, right_pad, token_limit
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


# Rows taken through the output head and the float64 log-softmax at a time. A sentence batch of 700
# scored tokens with GPT-2's 50,257-word vocabulary is a 140 MB float32 block and a 280 MB float64
# copy: written once and read once, their memory traffic and page faults cost more than the
# arithmetic. In blocks of 128 rows both stay small and are reused (a quarter of the head's time saved
# on a GPT-2-sized model, the same numbers).
_HEAD_ROWS = 128


def _picked_log_probs(rows: Any, head: Any | None, read_row: Any, read_token: Any) -> np.ndarray:
    """log_softmax (float64) of the logits of each row (`head(rows)`, or the rows themselves when they
    are logits already), read at (read_row[k], read_token[k]) for every k, as a float64 array."""
    import torch

    picked = torch.empty(len(read_row), dtype=torch.float64, device=rows.device)
    for start in range(0, rows.shape[0], _HEAD_ROWS):
        block = rows[start : start + _HEAD_ROWS]
        logits = block if head is None else head(block)
        log_probs = torch.log_softmax(logits.to(torch.float64), dim=-1)
        inside = (read_row >= start) & (read_row < start + block.shape[0])
        picked[inside] = log_probs[read_row[inside] - start, read_token[inside]]
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
    split = _split_head(model)

    def score(batch: list[int]) -> None:
        members = [keys[k] for k in batch]
        inputs = right_pad(id_rows([ids for ids, _ in members]), tokenizer, device)
        masked, attention = inputs["input_ids"], inputs["attention_mask"]
        rows_b, rows_p = [], []
        for b, (_, positions) in enumerate(members):
            rows_b.extend([b] * len(positions))
            rows_p.extend(positions)
        index_b = torch.as_tensor(rows_b, dtype=torch.long, device=masked.device)
        index_p = torch.as_tensor(rows_p, dtype=torch.long, device=masked.device)
        if split is not None:
            base, head = split
            rows_in = base(input_ids=masked, attention_mask=attention, return_dict=True)[0][index_b, index_p]
        else:
            head, rows_in = None, model(input_ids=masked, attention_mask=attention, return_dict=True).logits[index_b, index_p]
        read_row, read_token, spans = [], [], []
        start = 0
        for key in members:
            positions = key[1]
            for i in rows[key]:
                read_row.extend(range(start, start + len(positions)))
                read_token.extend(requests[i].ids[p] for p in positions)
                spans.append((i, len(positions)))
            start += len(positions)
        picked = _picked_log_probs(
            rows_in, head,
            torch.as_tensor(read_row, dtype=torch.long, device=rows_in.device),
            torch.as_tensor(read_token, dtype=torch.long, device=rows_in.device),
        )
        at = 0
        for i, n in spans:
            out[i] = picked[at : at + n].copy()
            at += n

    with torch.inference_mode(), memory_guard(device, batch_size):
        in_length_batches([len(k[0]) for k in keys], batch_size, score)
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
    split = _split_head(model)

    def score(batch: list[int]) -> None:
        members = [live[k] for k in batch]
        inputs = right_pad(id_rows([rows[i] for i in members]), tokenizer, device)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        # where the logits are read, and the token each of them scores: a causal row's position j is
        # predicted at j - 1 (its prepended start token is context only), a masked LM's at j itself
        shift = 1 if causal else 0
        rows_b: list[int] = []
        rows_p: list[int] = []
        for b, i in enumerate(members):
            read = max(len(rows[i]) - shift, 0)
            rows_b.extend([b] * read)
            rows_p.extend(range(read))
        index_b = torch.as_tensor(rows_b, dtype=torch.long, device=ids.device)
        index_p = torch.as_tensor(rows_p, dtype=torch.long, device=ids.device)
        if split is not None:
            base, head = split
            output = base(input_ids=ids, attention_mask=mask, output_attentions=attention, return_dict=True)
            rows_in = output[0][index_b, index_p]
        else:
            output = model(input_ids=ids, attention_mask=mask, output_attentions=attention, return_dict=True)
            head, rows_in = None, output.logits[index_b, index_p]
        picked = np.zeros(0, dtype=np.float64)
        if rows_b:
            targets = ids[index_b, index_p + shift]
            picked = _picked_log_probs(rows_in, head, torch.arange(len(rows_b), device=targets.device), targets)
        received = None
        if attention:
            layers = output.attentions
            if not layers:
                raise BiasError(
                    f"The model ({type(model).__name__}) returned no attention weights.",
                    "AULA needs attention weights; use AUL instead.",
                )
            # mean over layers and heads -> (batch, query, key), one layer at a time to bound memory;
            # the real queries of each row are averaged below
            received = sum(a.to(torch.float64).mean(dim=1) for a in layers) / len(layers)
        first = 0
        for b, i in enumerate(members):
            width = len(rows[i])
            read = max(width - shift, 0)
            values = np.full(width, np.nan, dtype=np.float64)
            values[shift:] = picked[first : first + read]
            first += read
            weights = None
            if received is not None:
                weights = received[b, lead:width, lead:width].mean(dim=0).cpu().numpy().astype(np.float64)
            out[i] = TokenScores(values[lead:], weights, context)

    with torch.inference_mode(), memory_guard(device, batch_size), _eager_attention(model, attention):
        in_length_batches([len(rows[i]) for i in live], batch_size, score)
    return [s for s in out if s is not None]
