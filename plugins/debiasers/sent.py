"""Sent-Debias (Liang et al. 2020, "Towards Debiasing Sentence Representations").

Sentence pairs differ only by their gendered words: every sentence of a corpus (one per line) that
holds a word of a definitional pair is written twice, once with every female word replaced by its
male partner and once the other way round (whole words only, case kept: "He" <-> "She"). Without a
corpus the pairs come from the language's SEAT templates filled with the definitional words, or,
when the language has none, from the bare words ("he", "He.", ...), which need no grammar.

Each embedding is L2-normalised and centred on its pair's mean; the principal directions of those
rows (full SVD, signed male-minus-female positive) form the subspace V (k = 1 by default), and every
vector the model gives is debiased as e <- normalise(e - sum_j (e.v_j) v_j). The reference code meant
to exempt definitional sentences from this, but its test never fired; here nothing is exempt, and the
result says so.

The subspace depends on how vectors are taken, so one is fitted for each (pooling, layer, sentence or
span) the metrics ask for, from encodings taken the same way; word vectors get one fitted on the
definitional words' own vectors.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.core.debias_lists import DebiasLists, lists_of
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Debiaser, Embedder
from bias.core.params import int_at_least, param
from bias.plugins.debiasers.hard import bias_subspace
from bias.plugins.embedders.debiased import (
    DebiasedEmbedder,
    FitOnLoad,
    PerEncoding,
    SubspaceRemoval,
    timed,
)

log = logging.getLogger(__name__)

# Templates that need no grammar, for languages without SEAT templates: the word alone, as a
# sentence, exclaimed and asked.
BARE_TEMPLATES = ("{word}", "{Word}.", "{Word}!", "{Word}?")
MAX_CORPUS_LINES = 200_000  # sentences read from a corpus; more add little to a k-dimensional PCA


@attrs.frozen
class Version:
    """One side of a sentence pair: its text and the character span of its first gendered word."""

    text: str
    span: tuple[int, int]


@attrs.frozen
class SentencePair:
    male: Version
    female: Version


def partners(lists: DebiasLists) -> tuple[dict[str, str], dict[str, str]]:
    """male -> female and female -> male maps (case-folded keys) from the definitional pairs; a word
    in several pairs keeps its first partner."""
    to_female: dict[str, str] = {}
    to_male: dict[str, str] = {}
    for male, female in lists.definitional:
        to_female.setdefault(male.casefold(), female)
        to_male.setdefault(female.casefold(), male)
    return to_female, to_male


def _cased(replacement: str, original: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _pattern(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = sorted({re.escape(w) for w in words}, key=len, reverse=True)
    return re.compile(r"(?<!\w)(" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def _rewrite(text: str, pattern: re.Pattern[str], mapping: dict[str, str]) -> Version:
    """Replace every matched word found in `mapping`; the span is that of the first gendered word."""
    parts: list[str] = []
    last = 0
    first: tuple[int, int] | None = None
    length = 0
    for match in pattern.finditer(text):
        word = match.group(0)
        new = _cased(mapping[word.casefold()], word) if word.casefold() in mapping else word
        parts.append(text[last : match.start()])
        length += match.start() - last
        if first is None:
            first = (length, length + len(new))
        parts.append(new)
        length += len(new)
        last = match.end()
    parts.append(text[last:])
    assert first is not None
    return Version("".join(parts), first)


def sentence_pairs(sentences: Sequence[str], lists: DebiasLists) -> list[SentencePair]:
    """Every sentence holding a definitional word, as (all-male, all-female) versions; sentences that
    give the same pair twice count once."""
    to_female, to_male = partners(lists)
    pattern = _pattern([*to_female, *to_male])
    out: dict[tuple[str, str], SentencePair] = {}
    for sentence in sentences:
        sentence = sentence.strip()
        if not sentence or not pattern.search(sentence):
            continue
        male = _rewrite(sentence, pattern, to_male)
        female = _rewrite(sentence, pattern, to_female)
        if male.text != female.text:
            out.setdefault((male.text, female.text), SentencePair(male, female))
    return list(out.values())


def read_corpus(path: str | Path) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise BiasError(f"Debiasing corpus not found: {file}", "Give a text file with one sentence per line (--debias-corpus).")
    lines: list[str] = []
    try:
        with open(file, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    lines.append(line.strip())
                if len(lines) >= MAX_CORPUS_LINES:
                    break
    except UnicodeDecodeError as exc:
        raise BiasError(f"{file}: not UTF-8 text ({exc.reason}).", "Save the corpus as UTF-8.") from exc
    return lines


def template_sentences(lists: DebiasLists) -> tuple[list[str], str]:
    """Sentences with the definitional words (male side; pairing writes the female side): from the
    language's SEAT templates when its package has them, else (said in a warning and recorded) the
    bare-word templates. A template set that exists but cannot be loaded is an error, never a silent
    switch to English sentence frames."""
    from bias.registry import load_wordset, names

    words = [m for m, _ in lists.definitional]
    language = lists.meta.language or "en"
    name = f"{language}/seat-templates"
    if name in names("wordsets"):
        try:
            template_set = load_wordset(name)
        except BiasError as exc:
            raise BiasError(
                f"Sent-Debias cannot read the sentence templates {name}: {exc.message}",
                "Fix the language package's template file, or give sentences with --debias-corpus.",
            ) from exc
        render = getattr(template_set, "render", None)
        # The lists carry no grammar, so the words get the set's generic templates (its default class).
        rendered = [r.text for w in words for r in render(w)] if render is not None else []
        if len(rendered) >= 2:
            return rendered, name
        log.warning("The templates %s fit fewer than 2 definitional words; Sent-Debias uses bare-word sentences instead.", name)
    else:
        log.warning("Language '%s' has no sentence templates (%s); Sent-Debias uses bare-word sentences.", language, name)
    out = []
    for word in words:
        for template in BARE_TEMPLATES:
            out.append(template.replace("{word}", word).replace("{Word}", word[:1].upper() + word[1:]))
    return out, "bare words"


def check_pairs(pairs: Sequence[Any], needed: int, where: str) -> None:
    if len(pairs) < max(2, needed):
        raise BiasError(
            f"Only {len(pairs)} sentence pair(s) could be built from {where}; at least {max(2, needed)} are needed.",
            "Give a corpus whose sentences contain the definitional words (--debias-corpus), or other lists.",
        )


def needs_encodings(embedder: Embedder, method: str) -> str | None:
    if Capability.CONTEXTUAL not in embedder.capabilities:
        return f"{method} needs a model that encodes sentences; {embedder.spec} gives word vectors only"
    return None


@attrs.define
class SentDebias(FitOnLoad, Debiaser):
    """Remove a gender subspace found in sentence pairs from every encoding, on the fly."""

    name: ClassVar[str] = "sent"
    summary: ClassVar[str] = "Sent-Debias: remove a bias subspace found in swapped sentence pairs from every encoding (Liang et al. 2020)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})

    components: int = param(1, "dimensions of the bias subspace", validator=int_at_least(1))
    corpus: str | None = param(None, "text file, one sentence per line, whose gendered sentences are swapped (default: templates)")

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
        self._state["fitted"] = {default: self._fit_key(embedder, default)}  # recorded with the result
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
            level, pooling, layer = key  # type: ignore[misc]
            kwargs: dict[str, Any] = {"pooling": pooling}
            if layer is not None:
                kwargs["layer"] = layer
            texts = [p.male.text for p in pairs] + [p.female.text for p in pairs]
            spans = [p.male.span for p in pairs] + [p.female.span for p in pairs] if level == "span" else None
            encoded = embedder.encode(texts, spans, **kwargs)
            first, second = encoded[: len(pairs)], encoded[len(pairs) :]
        first = first / np.linalg.norm(first, axis=1, keepdims=True)
        second = second / np.linalg.norm(second, axis=1, keepdims=True)
        if self.components > len(first):
            raise BiasError(f"components = {self.components} but only {len(first)} pairs were encoded.", f"Use components <= {len(first)}.")
        basis, ratio = bias_subspace(first, second, self.components)
        self._state["info"]["subspaces"][":".join(map(str, key))] = {
            "explained_variance": [float(r) for r in ratio[: max(self.components, min(10, len(ratio)))]],
            "pairs": len(first),
        }
        return SubspaceRemoval(basis)

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        if self._state is None:
            raise BiasError("Sent-Debias must be fitted before transform().", "Call fit(embedder, lists) first.")
        info = self._state["info"]
        default = self._state["info"]["subspaces"].get("sentence:mean:None", {})
        info["explained_variance"] = default.get("explained_variance")
        fitted = dict(self._state["fitted"]) if embedder is self._state["source"] else {}
        per_key = PerEncoding(lambda key: self._fit_key(embedder, key), fitted)
        return DebiasedEmbedder(source=embedder, method=self.name, transform=per_key, info=info)
