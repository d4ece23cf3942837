"""What an embedder can give and a metric needs, in a module of its own: `bias list` reads the
needs of every metric from its cache through it, without importing the interfaces."""

from __future__ import annotations

import enum


class Capability(str, enum.Enum):
    """What an embedder can give; metrics declare which they need, checked before a run starts."""

    WORD_VECTORS = "word-vectors"  # one vector per word (static lookup or a word encoding)
    CONTEXTUAL = "contextual"  # sentence vectors and vectors of a span inside a sentence
    MASKED_LM = "masked-lm"  # log-probabilities of masked tokens
    CAUSAL_LM = "causal-lm"  # sequence log-likelihoods
    # A fixed list of words with one vector each (static vectors, and debiased ones): `vocabulary()`
    # and `all_vectors()` answer. Whole-vocabulary methods need it (Hard-Debias, clustering,
    # analogies).
    VOCABULARY = "vocabulary"
    GENERATION = "generation"  # replies written to prompts or chat messages (bias.core.generation)

    def __str__(self) -> str:
        return self.value
