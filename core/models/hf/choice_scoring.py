"""Multiple-choice answers scored with their prompt read once (a causal LM).

The answers of a BBQ question share its context and question, the long part of the text. The plain
way runs the model over prompt + answer once per answer. Here each question is one row: the prompt,
then every answer's tokens after it, each answer seeing the prompt and its own earlier tokens only
(a segment mask, passed to the model as a 4D attention mask) and placed at the positions it would
have right after the prompt (explicit position ids). One forward call per batch of questions reads
the prompt once and every answer once; no key-value cache is kept or copied per answer, so memory is
that of one forward over the question's tokens. The output head runs at the answers' positions only
(and at the prompt's last position, which predicts every answer's first token), in blocks; see
`bias.core.models.hf.scoring_plan`.

Log-probabilities are `log_softmax` of float64 logits. The numbers equal those of one sequence per
answer to float rounding (tests/test_bbq.py checks 1e-5 on a tiny GPT-2; benchmarks/bench_bbq.py
compares the two on a GPT-2-sized model). A model that does not take a 4D attention mask and
position ids (flash attention, models with their own code) is scored the plain way, with the same
numbers; so is every call whose first question disagrees with the plain way by more than the model's
precision allows (a model that would ignore the mask)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from bias.core.errors import BiasError
from bias.core.lm_requests import ChoiceRequest, ChoiceScores
from bias.core.models.choices import choice_tokens
from bias.core.models.hf.batching import memory_guard, pad_id, padded_rows, token_limit
from bias.core.models.hf.lm_scoring import causal_start
from bias.core.models.hf.scoring_plan import offsets, runs, score_reads

log = logging.getLogger(__name__)

# How far the first question's log-probabilities may move from the plain way's and still be the
# same computation: float32 rounding is ~1e-6 per token; half precisions round to 2^-8 (bfloat16) or
# 2^-11 (float16) inside every layer. Ignoring the mask moves them by far more.
_AGREE = {"float64": 1e-8, "float32": 1e-4, "float16": 0.05, "bfloat16": 0.25}


def packable(model: Any) -> bool:
    """Whether the model takes position ids and a 4D attention mask that it honours: transformers'
    own causal LMs with eager or sdpa attention."""
    config = getattr(model, "config", None)
    implementation = getattr(config, "_attn_implementation", None)
    own = type(model).__module__.startswith("transformers.models.")
    takes = "position_ids" in inspect.signature(model.forward).parameters
    return own and takes and implementation in ("eager", "sdpa")


def packed_choice_log_probs(
    model: Any,
    tokenizer: Any,
    embedder: Any,
    device: Any,
    requests: Sequence[ChoiceRequest],
    batch_size: int,
    *,
    max_tokens: int | None = None,
) -> list[ChoiceScores] | None:
    """Per request, the log-probabilities of each continuation's tokens; None when the model cannot
    be given the packed rows (the caller then scores one sequence per continuation)."""
    import torch

    if not packable(model):
        return None
    requests = list(requests)
    heads, tails, redone = choice_tokens(embedder, requests)
    start, context = causal_start(tokenizer)
    prompts = [([start] if start is not None else []) + head for head in heads]
    if any(not p for p in prompts):
        raise BiasError(
            "A prompt tokenised to nothing and the model has no start token to condition on."
        )
    limit = token_limit(model, tokenizer)
    if limit is not None:
        for i, (prompt, own) in enumerate(zip(prompts, tails)):
            longest = len(prompt) + max(len(t) for t in own)
            if longest > limit:
                raise BiasError(
                    f"Question {i} ({requests[i].prompt[:40]!r}...) is {longest} tokens "
                    "long with its longest answer, "
                    f"more than the model's limit of {limit}.",
                    "Shorten the context, or use a model with a longer context.",
                )
    rows, positions, segments, gather_pos, gathers, read_token = [], [], [], [], [], []
    for prompt, own in zip(prompts, tails):
        n = len(prompt)
        row, position, segment, gathered = list(prompt), list(range(n)), [0] * n, []
        for j, tail in enumerate(own, start=1):
            # the answer's first token is read at the prompt's last position; token u + 1 at token u
            gathered.append(n - 1)
            gathered.extend(range(len(row), len(row) + len(tail) - 1))
            row.extend(tail[:-1])
            position.extend(range(n, n + len(tail) - 1))
            segment.extend([j] * (len(tail) - 1))
            read_token.extend(tail)
        rows.append(row)
        positions.append(position)
        segments.append(segment)
        gather_pos.extend(gathered)
        gathers.append(len(gathered))
    ids, lengths = padded_rows(rows, pad_id(tokenizer, model))
    position_ids = padded_rows(positions, 0)[0]
    segment_ids = padded_rows(segments, -1)[0]
    gather_seq, _ = runs(np.asarray(gathers))
    reads = len(read_token)
    with torch.inference_mode(), memory_guard(device, batch_size):
        picked = score_reads(
            model,
            device,
            ids,
            lengths,
            gather_seq,
            np.asarray(gather_pos, dtype=np.int64),
            np.arange(reads),
            np.asarray(read_token, dtype=np.int64),
            batch_size,
            positions=position_ids,
            segments=segment_ids,
            max_tokens=max_tokens,
        )
    answers = offsets(np.fromiter((len(t) for own in tails for t in own), dtype=np.int64)).tolist()
    values = [picked[a:b] for a, b in zip(answers[:-1], answers[1:])]
    out, k = [], 0
    for own, count in zip(tails, redone):
        out.append(ChoiceScores(tuple(values[k : k + len(own)]), context, count))
        k += len(own)
    if not _agrees_with_plain(
        model, device, prompts[0], tails[0], out[0], pad_id(tokenizer, model)
    ):
        log.warning(
            "%s does not honour a packed attention mask; its answers are scored one sequence each.",
            type(model).__name__,
        )
        return None
    return out


def _agrees_with_plain(
    model: Any,
    device: Any,
    prompt: list[int],
    tails: list[list[int]],
    packed: ChoiceScores,
    pad: int,
) -> bool:
    """The first question scored the plain way gives the packed numbers, within the model's
    precision. The plain way: each answer its own sequence (prompt, then the answer), under the
    model's own causal mask and positions, the output head at the answer's tokens only (a head at
    every position of three ~150-token sequences would take more memory than the packed batches)."""
    import torch

    rows = [prompt + tail[:-1] for tail in tails]  # an answer's last token is read, never input
    ids, lengths = padded_rows(rows, pad)
    counts = np.asarray([len(tail) for tail in tails], dtype=np.int64)
    gather_seq, place = runs(counts)
    reads = int(counts.sum())
    with torch.inference_mode():
        plain = score_reads(
            model,
            device,
            ids,
            lengths,
            gather_seq,
            len(prompt) - 1 + place,
            np.arange(reads),
            np.asarray([t for tail in tails for t in tail], dtype=np.int64),
            len(rows),
        )
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    tolerance = _AGREE.get(dtype, 1e-4)
    starts = offsets(counts).tolist()
    return all(
        len(a) == b - a0 and float(np.max(np.abs(a - plain[a0:b]))) <= tolerance
        for a, a0, b in zip(packed.log_probs, starts[:-1], starts[1:])
    )
