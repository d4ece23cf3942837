"""SEAT, the Sentence Encoder Association Test (May, Wang, Bordia, Bowman & Rudinger 2019, NAACL-HLT).

Each word of a WEAT test is put into bleached template sentences ("This is the rose.") and every
sentence becomes one stimulus; the WEAT statistics (`association_result` of the WEAT plugin: effect size,
permutation test and every convention option) then run unchanged on the sentence vectors.

- s-SEAT (`level = "sentence"`): the sentence's vector, with an explicit pooling ([CLS], mean over
  tokens, first or last token; "last" by default for causal LMs, whose last token has seen the sentence).
- w-SEAT (`level = "word"`): the vector of the word inside its sentence, the sub-tokens covering its
  character span (found through the tokenizer's offsets) pooled by mean, first or last.

Tests whose stimuli already are sentences (SEAT JSON files) are used as they are, at sentence level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import ASSOCIATION, TEMPLATES, AssociationTest, Result
from bias.core.params import MEAN_LAST_4, is_layer, layer_value, one_of, param
from bias.core.templates import Sentence, TemplateSet, sentence_sets
from bias.plugins.metrics.weat import AssociationConventions, association_result

LEVELS = ("sentence", "word")
SENTENCE_POOLINGS = ("cls", "mean", "first", "last")
WORD_POOLINGS = ("target-mean", "target-first", "target-last", "mean", "first", "last")
POOLINGS = ("cls", "mean", "first", "last", "target-mean", "target-first", "target-last")


def check_layer(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if is_layer(value):
        return
    raise BiasError(
        f"{attribute.name} must be a layer number (-1 is the last), {MEAN_LAST_4}, or none, not {value!r}.",
        "None uses the model's own setting.",
    )


def check_pooling(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    level = getattr(instance, "level", "sentence")
    allowed = SENTENCE_POOLINGS if level == "sentence" else WORD_POOLINGS
    if value not in allowed:
        raise BiasError(
            f"pooling {value!r} does not fit level {level}: use one of {', '.join(allowed)}.",
            "Sentence level pools the whole sentence (cls, mean, first, last); word level pools the word's "
            "sub-tokens (target-mean, target-first, target-last; mean, first and last mean the same there).",
        )


def resolve_pooling(pooling: str | None, level: str, embedder: Embedder) -> str:
    """The pooling actually used: the one asked for, else [CLS] for encoders, the last token for causal
    LMs and the mean of the word vectors for static embeddings (which have no [CLS]) at sentence
    level, the mean of the word's sub-tokens at word level."""
    if level == "word":
        chosen = pooling or "target-mean"
        return chosen if chosen.startswith("target-") else f"target-{chosen}"
    if pooling is not None:
        return pooling
    static = getattr(embedder, "static", None)
    if static is None:  # a fixed vocabulary (all_vectors) is what marks static vectors
        static = type(embedder).all_vectors is not Embedder.all_vectors
    if static:
        return "mean"
    have = embedder.available()
    causal = Capability.CAUSAL_LM in have and Capability.MASKED_LM not in have
    return "last" if causal else "cls"


def vector_conventions(embedder: Embedder, level: str, pooling: str, layer: int | str | None) -> dict[str, Any]:
    """How the contextual vectors were really taken, for the result's convention: the layer asked for
    (or the embedder's own setting) and the hidden-state index it is, and which tokens a pooling covers."""
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
    if level == "sentence":
        out["pooled_tokens"] = {
            "mean": "every token the attention mask keeps, special tokens ([CLS]/[SEP], <s>/</s>) included"
            if contextual else "the mean of the sentence's word vectors (words not in the vocabulary skipped)",
            "cls": "the first token ([CLS] / <s>)",
            "first": "the sentence's own first token" if contextual else "the first word found in the vocabulary",
            "last": "the sentence's own last token (for a causal LM, the one that has seen the whole sentence)"
            if contextual else "the last word found in the vocabulary",
        }.get(pooling, pooling)
    else:
        out["pooled_tokens"] = "the target word's own sub-tokens (special tokens excluded), located by character offsets"
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
    """One call to the embedder for every context: whole sentences at sentence level, the word's span at
    word level. Identical requests are encoded once."""
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
        embedder.encode([t for t, _ in unique], [s for _, s in unique] if level == "word" else None, **kwargs),
        dtype=np.float64,
    )
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise BiasError(f"Embedder '{embedder.name}' returned {vectors.shape} vectors for {len(unique)} texts.")
    row = {k: i for i, k in enumerate(unique)}
    return vectors[[row[k] for k in keys]] if keys else vectors.reshape(0, vectors.shape[1] if vectors.ndim == 2 else 0)


def load_templates(name: str | None, language: str) -> TemplateSet:
    """The template set named (or the file given), by default the test language's `seat-templates`."""
    from bias.registry.resolve import load_wordset

    wanted = name or f"{language}/seat-templates"
    try:
        found = load_wordset(wanted)
    except BiasError as exc:
        if name is None:
            raise BiasError(
                f"The test's language '{language}' has no template set {wanted}: {exc.message}",
                "Give one with --templates NAME or FILE (a word set of kind templates).",
            ) from exc
        raise
    if getattr(found, "meta", None) is None or found.meta.kind != TEMPLATES:
        kind = getattr(getattr(found, "meta", None), "kind", "unknown")
        raise BiasError(f"'{wanted}' is a word set of kind {kind}, not a template set.", "Give a word set of kind templates.")
    return found


@attrs.define
class Seat(AssociationConventions):
    """WEAT over sentence vectors (s-SEAT) or over the target word's vector in its sentence (w-SEAT).

    Every sentence is a stimulus: sizes count sentences, and the permutation test partitions the
    sentences of X u Y. Words no template fits are lost (and refuse the test beyond lost_threshold).
    """

    name: ClassVar[str] = "seat"
    summary: ClassVar[str] = "Sentence Encoder Association Test: WEAT on template sentences, sentence or word level (May et al. 2019)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    data_kind: ClassVar[str] = ASSOCIATION

    level: str = param("sentence", "sentence (s-SEAT: the sentence's vector) or word (w-SEAT: the word's vector in it)", validator=one_of(LEVELS))
    pooling: str | None = param(
        None,
        "sentence level: cls, mean, first or last (default cls; last for causal LMs; mean for static vectors); word level: target-mean "
        "(default), target-first or target-last",
        validator=check_pooling,
    )
    layer: str | int | None = param(None, "hidden layer: None (the model's setting), N (-1 last), or mean-last-4", converter=layer_value, validator=check_layer)
    templates: str | None = param(None, "template set name or file (default: <test language>/seat-templates)")
    def unfit(self, embedder_type: type) -> str | None:
        """Why this SEAT cannot run on models of `embedder_type`, before any is loaded (a grid drops it)."""
        static = getattr(embedder_type, "all_vectors", Embedder.all_vectors) is not Embedder.all_vectors
        if static and self.level == "sentence" and self.pooling == "cls":
            return "pooling 'cls' needs a [CLS] token, which static vectors have not (their sentences are the mean of the word vectors)"
        return None

    def compute(self, embedder: Embedder, data: AssociationTest, *, seed: int | None = None) -> Result:
        data = self.stimuli(data)
        pooling = resolve_pooling(self.pooling, self.level, embedder)
        if data.stimuli == "sentences":
            if self.level == "word":
                raise BiasError(
                    f"w-SEAT needs words to locate in sentences, but the stimuli of {data.name} already are sentences.",
                    "Run it at sentence level (--level sentence).",
                )
            stimuli = {
                key: tuple(Sentence(s, (0, len(s)), s) for s in wl.words) for key, wl in data.sets().items()
            }
            lost: dict[str, list[str]] = {key: [] for key in stimuli}
            template_name = None
        else:
            template_set = load_templates(self.templates, data.meta.language)
            built = sentence_sets(data, template_set)
            stimuli = dict(built.sentences)
            lost = {key: list(words) for key, words in built.lost.items()}
            template_name = template_set.name
        return self._result(embedder, data, stimuli, lost, pooling, template_name, seed)

    def _result(
        self,
        embedder: Embedder,
        data: AssociationTest,
        stimuli: Mapping[str, Sequence[Sentence]],
        lost: Mapping[str, list[str]],
        pooling: str,
        template_name: str | None,
        seed: int | None,
    ) -> Result:
        order = list(stimuli)
        flat = [s for key in order for s in stimuli[key]]
        if flat:
            vectors = encode_contexts(
                embedder, [s.text for s in flat], [s.span for s in flat], level=self.level, pooling=pooling, layer=self.layer
            )
        else:
            vectors = np.zeros((0, 0))
        matrices, start = {}, 0
        for key in order:
            n = len(stimuli[key])
            matrices[key] = vectors[start : start + n] if flat else np.zeros((0, 0))
            start += n
        result = association_result(
            self,
            matrices,
            data,
            model=embedder.spec,
            seed=seed,
            lost=lost,
            words={key: [s.text for s in stimuli[key]] for key in order},
            source_words={key: [s.word for s in stimuli[key]] for key in order},
        )
        convention = {
            **result.convention,
            "level": self.level,
            "pooling": pooling,
            **vector_conventions(embedder, self.level, pooling, self.layer),
            "templates": template_name or "stimuli are sentences",
            "stimulus": "sentence",
        }
        words = {key: len(dict.fromkeys(s.word for s in stimuli[key])) for key in order}
        figures = {**result.figures, "words": words} if result.ok else result.figures
        level = "s-SEAT (sentence level)" if self.level == "sentence" else "w-SEAT (word level)"
        return attrs.evolve(result, convention=convention, figures=figures, warnings=[f"{level}: {w}" for w in result.warnings])
