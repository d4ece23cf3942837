"""Scoring the answers of a multiple-choice question with a causal LM: which tokens belong to the
prompt and which to each answer, and the plain way of scoring them (one sequence per answer).

The prompt and every answer are tokenised as one text (prompt + answer), as the model reads them,
and the answer's tokens are what follows the prompt's own tokens. When a tokenizer merges a token
across the boundary (the prompt's tokens are then not a prefix of the whole text's), the answer's
tokens are those of the whole text that start at or after the prompt's last character, and the
prompt keeps its own tokens, so that every answer of a question is scored after the same prompt
tokens; such answers are counted in `ChoiceScores.retokenized`.

The `hf` embedder scores the same tokens faster (`bias.core.models.hf.choice_scoring`: the prompt
encoded once, the answers from its cached keys and values); the numbers agree to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bias.core.errors import BiasError
from bias.core.lm_requests import ChoiceRequest, ChoiceScores, Tokens


def _strip_trailing_specials(tokens: Tokens) -> list[int]:
    ids, special = list(tokens.ids), list(tokens.special)
    while ids and special[-1]:
        ids.pop()
        special.pop()
    return ids


def split_tokens(prompt: Tokens, whole: Tokens, boundary: int) -> tuple[list[int], list[int], bool]:
    """(prompt ids, continuation ids, retokenized) from the tokens of the prompt alone and of the
    whole text; `boundary` is the prompt's length in characters. Special tokens a tokenizer puts at
    the end (an [SEP] or EOS) belong to neither."""
    head = _strip_trailing_specials(prompt)
    full = _strip_trailing_specials(whole)
    if full[: len(head)] == head:
        return head, full[len(head) :], False
    tail = [
        token
        for token, (start, end), special in zip(whole.ids, whole.offsets, whole.special)
        if not special and start >= boundary and end > start
    ]
    return head, tail, True


def _cut(tokens: Tokens, text: str) -> bool:
    """Whether the tokenizer cut the text short (its last real token ends before the text does)."""
    ends = [end for (_, end), special in zip(tokens.offsets, tokens.special) if not special]
    return bool(ends) and max(ends) < len(text.rstrip())


def choice_tokens(
    embedder: Any, requests: Sequence[ChoiceRequest]
) -> tuple[list[list[int]], list[list[list[int]]], list[int]]:
    """For each request: its prompt ids, the ids of each continuation, and how many were
    retokenized. Two calls of the embedder's tokenizer in all (prompts, whole texts)."""
    requests = list(requests)
    for i, request in enumerate(requests):
        if not request.prompt.strip():
            raise BiasError(f"Choice request {i} has an empty prompt.")
        if not request.continuations or not all(c.strip() for c in request.continuations):
            raise BiasError(
                f"Choice request {i} ({request.prompt[:40]!r}) has an empty continuation."
            )
    prompts = embedder.tokenize([r.prompt for r in requests])
    wholes = embedder.tokenize([r.prompt + c for r in requests for c in r.continuations])
    heads: list[list[int]] = []
    tails: list[list[list[int]]] = []
    redone: list[int] = []
    k = 0
    for i, (request, prompt) in enumerate(zip(requests, prompts)):
        own: list[list[int]] = []
        count = 0
        for continuation in request.continuations:
            if _cut(wholes[k], request.prompt + continuation):
                raise BiasError(
                    f"Question {i} ({request.prompt[:40]!r}...) with its answer "
                    f"{continuation.strip()!r} is longer than "
                    "the model's token limit, so the answer would not be scored.",
                    "Shorten the context, or use a model with a longer context.",
                )
            head, tail, retokenized = split_tokens(prompt, wholes[k], len(request.prompt))
            k += 1
            if not tail:
                raise BiasError(
                    f"A continuation of the prompt {request.prompt[:40]!r} has no token of its own."
                )
            own.append(tail)
            count += int(retokenized)
        heads.append(head)
        tails.append(own)
        redone.append(count)
    return heads, tails, redone


def choice_log_probs_by_sequences(
    embedder: Any, requests: Sequence[ChoiceRequest]
) -> list[ChoiceScores]:
    """The plain way: every (prompt, continuation) is one sequence scored by `token_log_probs`
    (batched by the embedder), and the continuation's tokens are read off its end."""
    heads, tails, redone = choice_tokens(embedder, requests)
    sequences = [head + tail for head, own in zip(heads, tails) for tail in own]
    scores = embedder.token_log_probs(sequences)
    out: list[ChoiceScores] = []
    k = 0
    for own, count in zip(tails, redone):
        values = []
        context = ""
        for tail in own:
            row = scores[k]
            k += 1
            values.append(
                np.asarray(row.log_probs, dtype=np.float64)[len(row.log_probs) - len(tail) :]
            )
            context = row.context
        out.append(ChoiceScores(tuple(values), context, count))
    return out
