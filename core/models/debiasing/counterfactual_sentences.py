"""Sentence pairs that differ only by their gendered words, the training data of the debiasers that
work on sentence encodings (Sent-Debias, INLP and LEACE at sentence level).

Every sentence of a corpus (one per line) that holds a word of a definitional pair is written twice,
once with every female word replaced by its male partner and once the other way round (whole words
only, case kept: "He" <-> "She"). Without a corpus the sentences come from the language's SEAT
templates filled with the definitional words, or, when the language has none, from the bare words
("he", "He.", ...), which need no grammar. It lives in core so that every debiaser builds the same
pairs from the same lists without importing another plugin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from bias.core.data.debias_lists import DebiasLists
from bias.core.errors import BiasError

log = logging.getLogger(__name__)

# Templates that need no grammar, for languages without SEAT templates: the word alone, as a
# sentence, exclaimed and asked.
BARE_TEMPLATES = ("{word}", "{Word}.", "{Word}!", "{Word}?")
MAX_CORPUS_LINES = 200_000  # sentences read from a corpus; more add little to a k-dimensional PCA
MAX_CORPUS_TEXT = 64 * 2**20  # and their characters: 200,000 lines of a megabyte would not fit


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
    """Replace every matched word found in `mapping`; the span is that of the first gendered
    word."""
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
    """Every sentence holding a definitional word, as (all-male, all-female) versions; sentences
    that give the same pair twice count once."""
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
    """The corpus's sentences (stripped, blank lines left out), at most MAX_CORPUS_LINES, read as
    every corpus is (`bias.core.data.corpus.read_lines`: a plain UTF-8 file, lines of at most
    1 MB)."""
    from bias.core.data.corpus import read_lines

    lines: list[str] = []
    kept = 0
    for _, line in read_lines(path):
        lines.append(line.strip())
        kept += len(lines[-1])
        if kept > MAX_CORPUS_TEXT:
            log.warning(
                "%s: the first %s sentences hold more than %s characters; the rest of the corpus "
                "is not read.",
                path,
                f"{len(lines):,}",
                f"{MAX_CORPUS_TEXT:,}",
            )
            break
        if len(lines) >= MAX_CORPUS_LINES:
            break
    return lines


def template_sentences(lists: DebiasLists) -> tuple[list[str], str]:
    """Sentences with the definitional words (male side; pairing writes the female side): from the
    language's SEAT templates attached to the lists (`lists.templates`, looked up by whoever loaded
    them) when its package has them, else (said in a warning and recorded) the bare-word templates.
    A template set that exists but cannot be loaded is an error, never a silent switch to English
    sentence frames."""
    words = [m for m, _ in lists.definitional]
    language = lists.meta.language or "en"
    found = lists.templates
    name = found.name if found is not None else f"{language}/seat-templates"
    if found is not None and found.error is not None:
        raise BiasError(
            f"Sent-Debias cannot read the sentence templates {name}: {found.error.message}",
            "Fix the language package's template file, or give sentences with --debias-corpus.",
        ) from found.error
    if found is not None and found.templates is not None:
        render = getattr(found.templates, "render", None)
        # The lists carry no grammar, so the words get the set's generic templates (its default
        # class).
        rendered = [r.text for w in words for r in render(w)] if render is not None else []
        if len(rendered) >= 2:
            return rendered, name
        log.warning(
            "The templates %s fit fewer than 2 definitional words; Sent-Debias uses "
            "bare-word sentences instead.",
            name,
        )
    elif found is None:
        log.warning(
            "The lists %s come without their language's sentence templates (lists loaded "
            "through bias.registry have them); "
            "Sent-Debias uses bare-word sentences.",
            lists.name,
        )
    else:
        log.warning(
            "Language '%s' has no sentence templates (%s); Sent-Debias uses bare-word sentences.",
            language,
            name,
        )
    out = []
    for word in words:
        for template in BARE_TEMPLATES:
            out.append(
                template.replace("{word}", word).replace("{Word}", word[:1].upper() + word[1:])
            )
    return out, "bare words"


def encode_pairs(embedder: Any, pairs: Sequence[SentencePair], key: tuple[str, str, Any]) -> Any:
    """The encodings of the pairs' male versions, then of their female versions (2 x len(pairs)
    rows), for one way of taking vectors `key` = (sentence or span, pooling, layer): what every
    debiaser fitted on sentence pairs trains on."""
    level, pooling, layer = key
    kwargs: dict[str, Any] = {"pooling": pooling}
    if layer is not None:
        kwargs["layer"] = layer
    texts = [p.male.text for p in pairs] + [p.female.text for p in pairs]
    spans = (
        [p.male.span for p in pairs] + [p.female.span for p in pairs] if level == "span" else None
    )
    return embedder.encode(texts, spans, **kwargs)


def check_pairs(pairs: Sequence[Any], needed: int, where: str) -> None:
    if len(pairs) < max(2, needed):
        raise BiasError(
            f"Only {len(pairs)} sentence pair(s) could be built from {where}; at least "
            f"{max(2, needed)} are needed.",
            "Give a corpus whose sentences contain the definitional words "
            "(--debias-corpus), or other lists.",
        )
