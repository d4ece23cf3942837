"""What a metric asks a language model and what the model answers: a text's tokens, masked
requests, per-token scores, and the continuations of a multiple-choice question with their scores.

The types of the language-model methods of `bias.core.interfaces.Embedder` (`tokenize`,
`masked_log_probs`, `token_log_probs`, `choice_log_probs`): plain frozen records, so the metrics
that build requests and the models that answer them share one vocabulary without importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:  # annotations only: listing plugins must not import numpy
    import numpy as np


@attrs.frozen
class Tokens:
    """A text as the model sees it."""

    ids: tuple[int, ...]
    # The character span of each token in the text; (0, 0) for special tokens.
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]


@attrs.frozen
class MaskedRequest:
    """Token ids with `positions` to be replaced by the mask token at the same time."""

    ids: tuple[int, ...]
    positions: tuple[int, ...]


@attrs.frozen
class TokenScores:
    """The score of every token of one sequence (and the attention each receives, when asked)."""

    log_probs: np.ndarray = attrs.field(eq=False)  # float64, one per token; NaN where undefined
    attention: np.ndarray | None = attrs.field(default=None, eq=False)
    # Causal LMs: what the first token was conditioned on (e.g. "bos token '<s>' prepended"), for
    # the result's convention; empty for masked LMs.
    context: str = ""


@attrs.frozen
class ChoiceRequest:
    """A prompt and the continuations to score after it (the answers of a multiple-choice question).
    The text scored is `prompt + continuation`, so a continuation carries its own leading space."""

    prompt: str
    continuations: tuple[str, ...]


@attrs.frozen
class ChoiceScores:
    """Per continuation, the log-probability of each of its tokens after the prompt (float64)."""

    log_probs: tuple[np.ndarray, ...] = attrs.field(eq=False)
    # What the prompt was conditioned on (the start token put before it): the result's convention.
    context: str = ""
    # Continuations whose tokens were cut from the whole text because the prompt's tokens were not
    # a prefix of it (a tokenizer merging across the boundary); their scores are still of those
    # tokens.
    retokenized: int = 0
