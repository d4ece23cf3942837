"""Minimal pairs as a language model sees them, before any score: each pair tokenised by the
model's own tokenizer (lowercased first where the model is uncased), a sentence the tokenizer cut
refused, and the two sentences aligned on token ids with difflib's opcodes: 'equal' runs are the
shared (unmodified) tokens U, the rest of each sentence its modified tokens M; special tokens are
in neither. Pairs with nothing to compare are kept aside with the reason, for `figures["skipped"]`.
The scores of the aligned pairs are in `bias.core.pair_metrics.scoring`.
"""

from __future__ import annotations

import difflib
from typing import Any

import attrs

from bias.core.data.minimal_pairs import PairSet, SentencePair
from bias.core.errors import BiasError
from bias.core.interfaces import Embedder
from bias.core.lm_requests import Tokens
from bias.core.text import shown

LOWERCASE = ("auto", "yes", "no")


def decide_lowercase(embedder: Embedder, policy: str) -> bool:
    """Whether to lowercase sentences first: yes/no as asked; auto asks the embedder (`uncased`),
    else tests whether its tokenizer maps a capital letter to the small one."""
    if policy == "yes":
        return True
    if policy == "no":
        return False
    flag = embedder.uncased
    if isinstance(flag, bool):
        return flag
    probe = embedder.tokenize(["A", "a", "Z", "z"])
    plain = [tuple(i for i, s in zip(t.ids, t.special) if not s) for t in probe]
    return all(plain) and plain[0] == plain[1] and plain[2] == plain[3]


def is_truncated(text: str, tokens: Tokens) -> bool:
    """Whether the tokenizer cut the text: its last token ends before the text does. A score of a
    cut sentence would silently be the score of another sentence, so callers refuse it."""
    ends = [b for (a, b), s in zip(tokens.offsets, tokens.special) if not s and b > a]
    return bool(text.strip()) and (not ends or max(ends) < len(text.rstrip()))


def align(
    a: Tokens, b: Tokens
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Shared positions of a and b (pairwise aligned) and the modified positions of each.

    difflib's 'equal' opcodes on the token ids, special tokens excluded; autojunk off, so long
    sentences are aligned exactly rather than with difflib's popularity heuristic.
    """
    matcher = difflib.SequenceMatcher(None, list(a.ids), list(b.ids), autojunk=False)
    shared_a: list[int] = []
    shared_b: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            if not a.special[i] and not b.special[j]:
                shared_a.append(i)
                shared_b.append(j)
    in_a, in_b = set(shared_a), set(shared_b)
    modified_a = tuple(i for i, s in enumerate(a.special) if not s and i not in in_a)
    modified_b = tuple(j for j, s in enumerate(b.special) if not s and j not in in_b)
    return tuple(shared_a), tuple(shared_b), modified_a, modified_b


@attrs.frozen
class AlignedPair:
    """A pair as the model sees it: both sentences' tokens, and which positions are shared or
    modified."""

    index: int
    pair: SentencePair
    more: Tokens
    less: Tokens
    shared_more: tuple[int, ...]
    shared_less: tuple[int, ...]
    modified_more: tuple[int, ...]
    modified_less: tuple[int, ...]


def describe_pair(index: int, pair: SentencePair) -> str:
    return f"pair {index}" + (f" (line {pair.line})" if pair.line is not None else "")


def skipped_row(index: int, pair: SentencePair, reason: str) -> dict[str, Any]:
    """A pair left out of the scores, as `figures["skipped"]` lists it."""
    return {
        "index": index,
        "line": pair.line,
        "bias_type": pair.bias_type,
        "direction": pair.direction,
        "reason": reason,
    }


def prepare_pairs(
    embedder: Embedder, data: PairSet, lowercase: bool
) -> tuple[list[AlignedPair], list[dict[str, Any]]]:
    """Tokenise and align every pair; pairs with nothing to compare are returned as skipped, with
    why."""
    if not isinstance(data, PairSet):
        raise BiasError(f"Pair metrics need a pair set (kind pairs), not {type(data).__name__}.")
    texts = []
    for pair in data.pairs:
        texts.extend(
            [pair.more.lower(), pair.less.lower()] if lowercase else [pair.more, pair.less]
        )
    tokens = embedder.tokenize(texts)
    aligned: list[AlignedPair] = []
    skipped: list[dict[str, Any]] = []
    for k, pair in enumerate(data.pairs):
        more, less = tokens[2 * k], tokens[2 * k + 1]
        for name, text, toks in (("more", texts[2 * k], more), ("less", texts[2 * k + 1], less)):
            if is_truncated(text, toks):
                raise BiasError(
                    f"{data.name}: {describe_pair(k, pair)}: the sentence `{name}` is longer than "
                    f"the model's limit of {len(toks.ids)} tokens: '{shown(text, 60)}'.",
                    "Shorten it or remove the pair; pair scores need the whole sentence.",
                )
        shared_m, shared_l, mod_m, mod_l = align(more, less)
        if more.ids == less.ids:
            same = (
                "the two sentences give the same token ids "
                "(their group words are probably both unknown to the tokenizer)"
            )
            skipped.append(skipped_row(k, pair, same))
        elif not shared_m:
            skipped.append(skipped_row(k, pair, "the sentences share no token"))
        else:
            aligned.append(AlignedPair(k, pair, more, less, shared_m, shared_l, mod_m, mod_l))
    return aligned, skipped
