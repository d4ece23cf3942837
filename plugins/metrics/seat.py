"""SEAT, the Sentence Encoder Association Test (May, Wang, Bordia, Bowman & Rudinger 2019,
NAACL-HLT).

Each word of a WEAT test is put into bleached template sentences ("This is the rose.") and every
sentence becomes one stimulus; the WEAT statistics (`bias.core.association.association_result`:
effect size, permutation test and every convention option) then run unchanged on the sentence
vectors. The template set is an input the runner resolves before the run (`inputs`), never loaded
here.

- s-SEAT (`level = "sentence"`): the sentence's vector, with an explicit pooling ([CLS], mean over
  tokens, first or last token; "last" by default for causal LMs, whose last token has seen the
  sentence).
- w-SEAT (`level = "word"`): the vector of the word inside its sentence, the sub-tokens covering its
  character span (found through the tokenizer's offsets) pooled by mean, first or last (by default
  the mean, and the last sub-token for causal LMs, the only one that has seen the whole word).

Tests whose stimuli already are sentences (SEAT JSON files) are used as they are, at sentence level.

On static models a sentence's vector is the model's own (fastText's sentence vector; else the mean
of the vectors of the words found). `static_sentence = word-mean` takes instead the raw mean of the
vectors of the whitespace-separated tokens, punctuation attached, a token without a vector counting
as zeros: the BIAS Detection Framework's sentence encoder, for reproducing its numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api.association import EFFECT_SIZE_D
from bias.api import (
    ASSOCIATION,
    AssociationTest,
    BiasError,
    Capability,
    Embedder,
    InputRequest,
    Result,
    one_of,
    param,
)
from bias.api.association import (
    LEVELS,
    AssociationConventions,
    Sentence,
    association_result,
    check_layer,
    check_pooling,
    encode_contexts,
    given_templates,
    resolve_pooling,
    sentence_sets,
    template_request,
    vector_conventions,
)
from bias.api.data import layer_value


STATIC_SENTENCES = ("model", "word-mean")


def word_mean(embedder: Embedder, texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Each text's raw mean of the vectors of its whitespace-separated tokens as written
    (punctuation stays attached), a token the model has no vector for counting as a zero vector
    (what fastText's `get_word_vector` gives such a token); and the tokens that had none."""
    tokens = [t.split() for t in texts]
    found = embedder.word_vectors(list(dict.fromkeys(w for ts in tokens for w in ts))).as_dict()
    dim = len(next(iter(found.values()))) if found else 0
    if not dim:
        raise BiasError(
            "No token of the sentences has a vector in the model.", "Check the sentences' language."
        )
    zero = np.zeros(dim, dtype=np.float64)
    rows = [
        np.mean([np.asarray(found.get(w, zero), dtype=np.float64) for w in ts], axis=0)
        if ts
        else zero
        for ts in tokens
    ]
    return np.array(rows, dtype=np.float64).reshape(len(texts), dim), sorted(
        {w for ts in tokens for w in ts if w not in found}
    )


@attrs.define
class Seat(AssociationConventions):
    """WEAT over sentence vectors (s-SEAT) or over the target word's vector in its sentence
    (w-SEAT).

    Every sentence is a stimulus: sizes count sentences, and the permutation test partitions the
    sentences of X u Y. Words no template fits are lost (and refuse the test beyond lost_threshold).
    """

    name: ClassVar[str] = "seat"
    summary: ClassVar[str] = (
        "Sentence Encoder Association Test: WEAT on template sentences, sentence or word "
        "level (May et al. 2019)."
    )
    value: ClassVar[ValueKind] = EFFECT_SIZE_D
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    data_kind: ClassVar[str] = ASSOCIATION

    level: str = param(
        "sentence",
        "sentence (s-SEAT: the sentence's vector) or word (w-SEAT: the word's vector in it)",
        validator=one_of(LEVELS),
    )
    pooling: str | None = param(
        None,
        "sentence level: cls, mean, first or last (default cls; last for causal LMs; mean "
        "for static vectors); word level: target-mean "
        "(default; target-last for causal LMs), target-first or target-last",
        validator=check_pooling,
    )
    layer: str | int | None = param(
        None,
        "hidden layer: None (the model's setting), N (-1 last), or mean-last-4",
        converter=layer_value,
        validator=check_layer,
    )
    templates: str | None = param(
        None, "template set name or file (default: <test language>/seat-templates)"
    )
    static_sentence: str = param(
        "model",
        "static models at sentence level: model (the model's sentence vector: fastText's "
        "own, else the mean of "
        "the words found) or word-mean (raw mean of the vectors of the "
        "whitespace-separated tokens, a token without "
        "one counting as zeros, as the BIAS Detection Framework)",
        validator=one_of(STATIC_SENTENCES),
    )

    def unfit(self, embedder_type: type) -> str | None:
        """Why this SEAT cannot run on models of `embedder_type`, before any is loaded (a grid drops
        it)."""
        static = Capability.VOCABULARY in getattr(embedder_type, "capabilities", frozenset())
        if static and self.level == "sentence" and self.pooling == "cls":
            return (
                "pooling 'cls' needs a [CLS] token, which static vectors have not (their "
                "sentences are the mean of the word vectors)"
            )
        return None

    def _raw_mean(self, embedder: Embedder) -> bool:
        """Whether the sentences are the raw mean of their tokens' vectors: asked for, at sentence
        level, on a static model (one with a vocabulary); a contextual model always pools its own
        encodings."""
        static = Capability.VOCABULARY in embedder.available()
        return self.static_sentence == "word-mean" and self.level == "sentence" and static

    def inputs(self, data: AssociationTest) -> dict[str, InputRequest]:
        """The template set the words are put into; none for stimuli that already are sentences."""
        if data.stimuli == "sentences":
            return {}
        return {"templates": template_request(self.templates, data.meta.language)}

    def compute(
        self,
        embedder: Embedder,
        data: AssociationTest,
        *,
        seed: int | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Result:
        data = self.stimuli(data)
        pooling = resolve_pooling(self.pooling, self.level, embedder)
        if data.stimuli == "sentences":
            if self.level == "word":
                raise BiasError(
                    "w-SEAT needs words to locate in sentences, but the stimuli of "
                    f"{data.name} already are sentences.",
                    "Run it at sentence level (--level sentence).",
                )
            stimuli = {
                key: tuple(Sentence(s, (0, len(s)), s) for s in wl.words)
                for key, wl in data.sets().items()
            }
            lost: dict[str, list[str]] = {key: [] for key in stimuli}
            template_name = None
        else:
            template_set = given_templates(inputs, "SEAT", data)
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
        raw_mean = self._raw_mean(embedder)
        without: list[str] = []
        if flat and raw_mean:
            vectors, without = word_mean(embedder, [s.text for s in flat])
        elif flat:
            vectors = encode_contexts(
                embedder,
                [s.text for s in flat],
                [s.span for s in flat],
                level=self.level,
                pooling=pooling,
                layer=self.layer,
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
            "static_sentence": self.static_sentence,
        }
        if raw_mean:
            convention["pooled_tokens"] = (
                "raw mean of the vectors of the whitespace-separated tokens (punctuation "
                "attached, a token without a "
                "vector counts as zeros), as the BIAS Detection Framework"
            )
            if without:
                result = attrs.evolve(
                    result,
                    warnings=[
                        *result.warnings,
                        f"{len(without)} token(s) had no vector and counted as zeros: "
                        f"{', '.join(without[:8])}",
                    ],
                )
        words = {key: len(dict.fromkeys(s.word for s in stimuli[key])) for key in order}
        figures = {**result.figures, "words": words} if result.ok else result.figures
        level = "s-SEAT (sentence level)" if self.level == "sentence" else "w-SEAT (word level)"
        return attrs.evolve(
            result,
            convention=convention,
            figures=figures,
            warnings=[f"{level}: {w}" for w in result.warnings],
        )
