"""Building blocks of Hugging Face embedders: loading a model, where and in what precision it
computes, tokens and pooled hidden states, LM scoring and the fingerprint of a model's files.
Modules are re-exported whole (`loading.load`, `vectors.hidden_states`, ...): they are one library a
model-family embedder builds on.

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.models.hf import fingerprint as files
from bias.core.models.hf import (
    batching,
    chat_template,
    choice_scoring,
    compute,
    generation,
    lm_scoring,
    loading,
    vectors,
)
from bias.core.models.hf.base import HuggingFaceModel
from bias.core.models.hf.loading import HEADS, LoadedModel
from bias.core.models.hf.vectors import POOLINGS, PooledInput

__all__ = [
    "batching",
    "chat_template",
    "choice_scoring",
    "compute",
    "generation",
    "files",
    "HEADS",
    "HuggingFaceModel",
    "lm_scoring",
    "LoadedModel",
    "loading",
    "PooledInput",
    "POOLINGS",
    "vectors",
]
