"""Sent-Debias (Liang et al. 2020, "Towards Debiasing Sentence Representations").

Sentence pairs differ only by their gendered words: every sentence of a corpus (one per line) that
holds a word of a definitional pair is written twice, once with every female word replaced by its
male partner and once the other way round (whole words only, case kept: "He" <-> "She"). Without a
corpus the pairs come from the language's SEAT templates filled with the definitional words, or,
when the language has none, from the bare words ("he", "He.", ...), which need no grammar.

Each embedding is L2-normalised and centred on its pair's mean; the principal directions of those
rows (full SVD, signed male-minus-female positive) form the subspace V (k = 1 by default), and every
vector the model gives is debiased as e <- normalise(e - sum_j (e.v_j) v_j). The reference code
meant to exempt definitional sentences from this, but its test never fired; here nothing is exempt,
and the result says so.

The subspace depends on how vectors are taken, so one is fitted for each (pooling, layer, sentence
or span) the metrics ask for, from encodings taken the same way; word vectors get one fitted on the
definitional words' own vectors."""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import (
    ON_THE_FLY,
    BiasError,
    Capability,
    DebiasLists,
    Debiaser,
    Embedder,
    SentencePair,
    int_at_least,
    param,
)
from bias.api.debiasing import (  # noqa: F401  (BARE_TEMPLATES, MAX_CORPUS_LINES, Version, partners: re-exported, older code imports them from here)
    BARE_TEMPLATES,
    MAX_CORPUS_LINES,
    DebiasedEmbedder,
    FitOnLoad,
    PerEncoding,
    SubspaceRemoval,
    Version,
    check_pairs,
    encode_pairs,
    lists_of,
    pair_subspace as bias_subspace,
    partners,
    read_corpus,
    sentence_pairs,
    template_sentences,
    timed,
)


def needs_encodings(embedder: Embedder, method: str) -> str | None:
    if Capability.CONTEXTUAL not in embedder.capabilities:
        return (
            f"{method} needs a model that encodes sentences; {embedder.spec} gives word "
            "vectors only"
        )
    return None


@attrs.define
class SentDebias(FitOnLoad, Debiaser):
    """Remove a gender subspace found in sentence pairs from every encoding, on the fly."""

    name: ClassVar[str] = "sent"
    summary: ClassVar[str] = (
        "Sent-Debias: remove a bias subspace found in swapped sentence pairs from every "
        "encoding (Liang et al. 2020)."
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    # encodings changed as they are made
    produces: ClassVar[frozenset[str]] = frozenset({ON_THE_FLY})

    components: int = param(1, "dimensions of the bias subspace", validator=int_at_least(1))
    corpus: str | None = param(
        None,
        "text file, one sentence per line, whose gendered sentences are swapped (default: "
        "templates)",
    )

    _state: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        return needs_encodings(embedder, "Sent-Debias")

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}

    def fit(self, embedder: Embedder, lists: Any) -> SentDebias:
        lists = lists_of(lists, "Sent-Debias")
        reason = self.supports(embedder)
        if reason:
            raise BiasError(reason + ".", "Methods for static word vectors: hard, inlp.")
        if self.corpus is not None:
            sentences, origin = read_corpus(self.corpus), str(self.corpus)
        else:
            sentences, origin = template_sentences(lists)
        pairs = sentence_pairs(sentences, lists)
        check_pairs(pairs, self.components, origin)
        info: dict[str, Any] = {
            "method": self.name,
            "parameters": self.params(),
            "lists": {"name": lists.name, "file": lists.meta.path},
            "sentences_from": origin,
            "sentence_pairs": len(pairs),
            "exempt": "none (every encoding is debiased)",
            "subspaces": {},
        }
        self._state = {"lists": lists, "pairs": pairs, "info": info, "source": embedder}
        embedder.load()
        started = time.perf_counter()
        default = ("sentence", "mean", None)
        self._state["fitted"] = {
            default: self._fit_key(embedder, default)
        }  # recorded with the result
        timed(info, "fit_s", started)
        return self

    def _fit_key(self, embedder: Embedder, key: Hashable) -> SubspaceRemoval:
        assert self._state is not None
        pairs: list[SentencePair] = self._state["pairs"]
        lists: DebiasLists = self._state["lists"]
        if key == ("words",):
            kept = [(a, b) for a, b in lists.definitional]
            found = embedder.word_vectors([w for p in kept for w in p]).as_dict()
            kept = [(a, b) for a, b in kept if a in found and b in found]
            check_pairs(kept, self.components, "the definitional words the model has")
            first = np.array([found[a] for a, _ in kept])
            second = np.array([found[b] for _, b in kept])
        else:
            encoded = encode_pairs(embedder, pairs, key)  # type: ignore[arg-type]
            first, second = encoded[: len(pairs)], encoded[len(pairs) :]
        first = first / np.linalg.norm(first, axis=1, keepdims=True)
        second = second / np.linalg.norm(second, axis=1, keepdims=True)
        if self.components > len(first):
            raise BiasError(
                f"components = {self.components} but only {len(first)} pairs were encoded.",
                f"Use components <= {len(first)}.",
            )
        basis, ratio = bias_subspace(first, second, self.components)
        self._state["info"]["subspaces"][":".join(map(str, key))] = {
            "explained_variance": [
                float(r) for r in ratio[: max(self.components, min(10, len(ratio)))]
            ],
            "pairs": len(first),
        }
        return SubspaceRemoval(basis)

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        if self._state is None:
            raise BiasError(
                "Sent-Debias must be fitted before transform().", "Call fit(embedder, lists) first."
            )
        info = self._state["info"]
        default = self._state["info"]["subspaces"].get("sentence:mean:None", {})
        info["explained_variance"] = default.get("explained_variance")
        fitted = dict(self._state["fitted"]) if embedder is self._state["source"] else {}
        per_key = PerEncoding(lambda key: self._fit_key(embedder, key), fitted)
        return DebiasedEmbedder(source=embedder, method=self.name, transform=per_key, info=info)
