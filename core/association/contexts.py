"""Contextual vectors of test stimuli: SEAT's encoding of sentences (or of a word inside its
sentence), which CEAT shares for its contexts, and the parameters that choose it (level, pooling,
layer).

Every context is sent to the embedder in one call and identical requests are encoded once; what was
really pooled, and from which hidden state, is described for the result's convention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.errors import BadValue, BiasError
from bias.core.interfaces import WORDSET_INPUT, Capability, Embedder, InputRequest
from bias.core.model import TEMPLATES, AssociationTest
from bias.core.params import MEAN_LAST_4, is_layer
from bias.core.data.templates import TemplateSet

LEVELS = ("sentence", "word")
SENTENCE_POOLINGS = ("cls", "mean", "first", "last")
WORD_POOLINGS = ("target-mean", "target-first", "target-last", "mean", "first", "last")
POOLINGS = ("cls", "mean", "first", "last", "target-mean", "target-first", "target-last")


def check_layer(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if is_layer(value):
        return
    raise BadValue(
        f"{attribute.name} must be a layer number (-1 is the last), {MEAN_LAST_4}, or "
        f"none, not {value!r}.",
        "None uses the model's own setting.",
    )


def check_pooling(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    level = getattr(instance, "level", "sentence")
    allowed = SENTENCE_POOLINGS if level == "sentence" else WORD_POOLINGS
    if value not in POOLINGS:
        raise BadValue(
            f"pooling {value!r} is not a pooling: use one of "
            f"{', '.join(SENTENCE_POOLINGS)} (sentence level) or "
            f"{', '.join(WORD_POOLINGS[:3])} (word level).",
            "Sentence level pools the whole sentence; word level pools the word's sub-tokens.",
        )
    if value not in allowed:
        raise BiasError(
            f"pooling {value!r} does not fit level {level}: use one of {', '.join(allowed)}.",
            "Sentence level pools the whole sentence (cls, mean, first, last); word level "
            "pools the word's "
            "sub-tokens (target-mean, target-first, target-last; mean, first and last mean "
            "the same there).",
        )


def _causal(embedder: Embedder) -> bool:
    have = embedder.available()
    return Capability.CAUSAL_LM in have and Capability.MASKED_LM not in have


def resolve_pooling(pooling: str | None, level: str, embedder: Embedder) -> str:
    """The pooling actually used: the one asked for, else [CLS] for encoders, the last token for
    causal LMs and the mean of the word vectors for static embeddings (which have no [CLS]) at
    sentence level; at word level the mean of the word's sub-tokens, or its last sub-token in a
    causal LM (the only one that has seen the whole word)."""
    if level == "word":
        chosen = pooling or (
            "target-last" if not embedder.static and _causal(embedder) else "target-mean"
        )
        return chosen if chosen.startswith("target-") else f"target-{chosen}"
    if pooling is not None:
        return pooling
    if embedder.static:
        return "mean"
    return "last" if _causal(embedder) else "cls"


def vector_conventions(
    embedder: Embedder, level: str, pooling: str, layer: int | str | None
) -> dict[str, Any]:
    """How the contextual vectors were really taken, for the result's convention: the layer asked
    for (or the embedder's own setting) and the hidden-state index it is, and which tokens a pooling
    covers."""
    info = embedder.describe() or {}
    chosen = layer if layer is not None else info.get("layer")
    out: dict[str, Any] = {}
    if chosen is None:
        out["layer"] = "none (static word vectors)"
    else:
        out["layer"] = chosen
        layers = info.get("layers")
        if isinstance(layers, int):
            states = layers + 1  # hidden state 0 is the embedding output
            if isinstance(chosen, int):
                out["layer_index"] = chosen if chosen >= 0 else states + chosen
            elif isinstance(chosen, str) and chosen.startswith("mean-last-"):
                n = int(chosen.rsplit("-", 1)[1])
                out["layer_index"] = f"mean of hidden states {states - n}..{states - 1}"
            out["hidden_states"] = f"0..{states - 1} (0 = embedding output)"
    contextual = "tokenizer" in info
    causal = bool(info.get("causal"))
    if contextual and "causal" in info:
        out["model_kind"] = "causal LM (decoder)" if causal else "encoder"
    if info.get("start_token"):
        out["start_token"] = info["start_token"]
    if level == "sentence":
        mean = (
            "every token the attention mask keeps, special tokens ([CLS]/[SEP], <s>/</s>) included"
        )
        if causal:
            mean = (
                "the sentence's own tokens (a start token, which sees nothing of the sentence, "
                "excluded)"
            )
        out["pooled_tokens"] = {
            "mean": mean
            if contextual
            else "the mean of the sentence's word vectors (words not in the vocabulary skipped)",
            "cls": "the first token ([CLS] / <s>)",
            "first": "the sentence's own first token"
            if contextual
            else "the first word found in the vocabulary",
            "last": "the sentence's own last token (for a causal LM, the one that has seen the "
            "whole sentence)"
            if contextual
            else "the last word found in the vocabulary",
        }.get(pooling, pooling)
    else:
        which = {
            "target-first": "the target word's first sub-token",
            "target-last": "the target word's last sub-token",
        }
        chosen_tokens = which.get(pooling, "the target word's own sub-tokens")
        out["pooled_tokens"] = (
            f"{chosen_tokens} (special tokens excluded), located by character offsets"
        )
    return out


def encode_contexts(
    embedder: Embedder,
    texts: Sequence[str],
    spans: Sequence[tuple[int, int]],
    *,
    level: str,
    pooling: str,
    layer: int | str | None,
) -> np.ndarray:
    """One call to the embedder for every context: whole sentences at sentence level, the word's
    span at word level. Identical requests are encoded once."""
    if level == "word":
        keys = list(zip(texts, spans))
        how = pooling.removeprefix("target-")
    else:
        keys = [(t, None) for t in texts]
        how = pooling
    unique = list(dict.fromkeys(keys))
    kwargs: dict[str, Any] = {"pooling": how}
    if layer is not None:
        kwargs["layer"] = layer
    vectors = np.asarray(
        embedder.encode(
            [t for t, _ in unique], [s for _, s in unique] if level == "word" else None, **kwargs
        ),
        dtype=np.float64,
    )
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise BiasError(
            f"Embedder '{embedder.name}' returned {vectors.shape} vectors for {len(unique)} texts."
        )
    row = {k: i for i, k in enumerate(unique)}
    return vectors[[row[k] for k in keys]]  # no key: (0, width)


def template_request(name: str | None, language: str) -> InputRequest:
    """The template set SEAT and CEAT ask for: the one named (or the file given), by default the
    test language's `seat-templates`."""
    return InputRequest(
        WORDSET_INPUT,
        name or f"{language}/seat-templates",
        TEMPLATES,
        hint="Give one with --templates NAME or FILE (a word set of kind templates).",
    )


def given_templates(
    inputs: Mapping[str, Any] | None, metric: str, data: AssociationTest
) -> TemplateSet:
    """The resolved template set among `inputs`; a programming error when the caller did not resolve
    it."""
    found = (inputs or {}).get("templates")
    if not isinstance(found, TemplateSet):
        raise BiasError(
            f"{metric} on {data.name} needs its template set, resolved before the run, as "
            "inputs['templates'].",
            "Run it through `bias run`, or pass the template set the metric's inputs() asks for.",
        )
    return found
