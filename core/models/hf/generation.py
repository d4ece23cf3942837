"""Replies of a local causal LM (`Capability.GENERATION` of the `hf` embedder), batched and seeded.

Each conversation is put to the model through its chat template, or as plain text
(`bias.core.models.hf.chat_template`), and continued token by token with transformers' `generate`:

- with the token ids the template gives (tokenised without added special tokens, its start token
  kept once), or for plain text the tokenizer's ids with the model's start token before them when
  the tokenizer adds none (as every causal score here: `lm_scoring.causal_start`);
- with this run's settings only: the model's own generation_config.json (its sampling temperature,
  repetition penalty, ...) is not applied, so a reply depends on the settings the result records;
- prompts padded on the left in batches of similar length; a reply ends at the model's end-of-turn
  or end-of-sequence token (`finish = "stop"`), at `max_tokens` (`"length"`) or at a `stop` text.

Temperature 0 is greedy decoding: one reply per conversation, repeated for every sample. Otherwise a
token is drawn as the largest of logit / temperature plus Gumbel noise (the Gumbel-max trick, an
exact draw from the softmax), with the noise of each reply from its own generator, seeded by the
sample's seed (`seed + j`) and the conversation's text: a reply does not depend on the other
conversations in its batch, nor on the batch size (to float rounding of padded batches). `top_p`
keeps the smallest set of tokens whose probability reaches it (nucleus sampling) before the draw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from bias.core.errors import BiasError
from bias.core.generation import CUT, FINISHED, GenerationRequest, Generations, Reply, Sampling
from bias.core.models.hf.batching import memory_guard, pad_id, token_limit
from bias.core.models.hf.chat_template import conversation_text, strip_start
from bias.core.models.hf.lm_scoring import causal_start
from bias.core.models.hf.loading import quiet_transformers
from bias.core.models.hf.vectors import check_length


def row_seed(seed: int, text: str) -> int:
    """The seed of one reply's noise: its sample's seed and its conversation's text, hashed."""
    digest = hashlib.sha256(f"{seed}\x00{text}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


class SeededSampler:
    """A logits processor that turns greedy decoding into seeded sampling, row by row."""

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float) -> None:
        import torch

        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        self.temperature, self.top_p = float(temperature), float(top_p)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        logits = scores.float() / self.temperature
        if self.top_p < 1.0:
            ordered, order = torch.sort(logits, descending=True, dim=-1)
            probs = ordered.softmax(dim=-1)
            outside = probs.cumsum(dim=-1) - probs >= self.top_p  # the first token always stays
            ordered = ordered.masked_fill(outside, float("-inf"))
            logits = torch.full_like(logits, float("-inf")).scatter(-1, order, ordered)
        noise = torch.stack(
            [
                torch.rand(logits.shape[-1], generator=g, dtype=torch.float64)
                for g in self.generators
            ]
        )
        gumbel = -torch.log(-torch.log(noise))
        return (logits.double() + gumbel.to(logits.device)).to(scores.dtype)


def prompt_ids(
    tokenizer: Any, request: GenerationRequest, template: bool
) -> tuple[list[int], str, str]:
    """The ids the model continues, the text they are, and how the prompt was made."""
    text, how = conversation_text(tokenizer, request, template)
    check_length(text)
    if template:
        body, had_start = strip_start(tokenizer, text)
        with quiet_transformers():  # a prompt past the model's length is refused in words after
            ids = list(tokenizer(body, add_special_tokens=False)["input_ids"])
        start = getattr(tokenizer, "bos_token_id", None) if had_start else None
        return ([int(start)] if start is not None else []) + ids, text, how
    with quiet_transformers():
        ids = list(tokenizer(text, add_special_tokens=True)["input_ids"])
    specials = set(getattr(tokenizer, "all_special_ids", []) or [])
    # an EOS a tokenizer appends ends nothing here
    while ids and ids[-1] in specials and len(ids) > 1:
        ids.pop()
    start, _ = causal_start(tokenizer)
    return ([start] if start is not None else []) + ids, text, how


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    found = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if found is None:
        found = getattr(tokenizer, "eos_token_id", None)
    values = found if isinstance(found, (list, tuple)) else [found]
    return [int(v) for v in values if v is not None]


def _cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    ends = [text.find(s) for s in stop if s and s in text]
    return (text[: min(ends)], True) if ends else (text, False)


def generate(
    loaded: Any,
    requests: Sequence[GenerationRequest],
    sampling: Sampling,
    template: bool,
    batch_size: int,
) -> list[Generations]:
    """Each conversation's replies (`sampling` resolved: every setting given)."""
    import torch
    from transformers import GenerationConfig

    model, tokenizer, device = loaded.model, loaded.tokenizer, loaded.device
    prompts = [prompt_ids(tokenizer, r, template) for r in requests]
    limit = token_limit(model, tokenizer)
    max_new = int(sampling.max_tokens or 1)
    for i, (ids, text, _) in enumerate(prompts):
        if not ids:
            raise BiasError(f"Prompt {i} ({text[:40]!r}) tokenised to nothing.")
        if limit is not None and len(ids) + max_new > limit:
            raise BiasError(
                f"Prompt {i} ({text[:40]!r}...) is {len(ids)} tokens; with {max_new} new "
                f"tokens that is more than the model's limit of {limit}.",
                "Ask for fewer tokens (max_tokens), shorten the prompt, or use a model "
                "with a longer context.",
            )
    draws = 1 if sampling.greedy else int(sampling.samples or 1)
    rows = [(i, j) for i in range(len(prompts)) for j in range(draws)]
    rows.sort(key=lambda row: len(prompts[row[0]][0]))
    stops = _stop_ids(model, tokenizer)
    filler = pad_id(tokenizer, model)
    config = GenerationConfig(
        max_new_tokens=max_new,
        do_sample=False,
        num_beams=1,
        pad_token_id=filler,
        eos_token_id=stops or None,
    )
    replies: dict[tuple[int, int], Reply] = {}
    with torch.inference_mode(), memory_guard(device, batch_size):
        for first in range(0, len(rows), batch_size):
            batch = rows[first : first + batch_size]
            width = max(len(prompts[i][0]) for i, _ in batch)
            ids = torch.full((len(batch), width), filler, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for b, (i, _) in enumerate(batch):
                n = len(prompts[i][0])
                ids[b, width - n :] = torch.tensor(prompts[i][0], dtype=torch.long)
                mask[b, width - n :] = 1
            processors = []
            if not sampling.greedy:
                seeds = [row_seed(int(sampling.seed or 0) + j, prompts[i][1]) for i, j in batch]
                processors.append(
                    SeededSampler(
                        seeds, float(sampling.temperature or 1.0), float(sampling.top_p or 1.0)
                    )
                )
            out = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                generation_config=config,
                logits_processor=processors or None,
            )
            for b, row in enumerate(batch):
                replies[row] = _reply(
                    tokenizer, out[b, width:].tolist(), stops, max_new, sampling.stop
                )
    context = prompts[0][2] if prompts else ""
    if draws == 1 and (sampling.samples or 1) > 1:
        context += "; temperature 0: one greedy reply per prompt, repeated for every sample"
    return [
        Generations(
            tuple(replies[(i, 0 if draws == 1 else j)] for j in range(int(sampling.samples or 1))),
            sampling,
            context,
        )
        for i in range(len(prompts))
    ]


def _reply(
    tokenizer: Any, new: list[int], stops: list[int], max_new: int, stop: Sequence[str]
) -> Reply:
    ended = next((k for k, token in enumerate(new) if token in stops), None)
    tokens = new if ended is None else new[:ended]
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    text, stopped = _cut_at_stop(text, stop)
    finished = ended is not None or stopped or len(new) < max_new
    return Reply(text, FINISHED if finished else CUT)


__all__ = ["SeededSampler", "generate", "prompt_ids", "row_seed"]
