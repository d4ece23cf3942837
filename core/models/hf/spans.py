"""Token positions from character offsets, and the window of tokens a long text is cut to.

A span is found through the fast tokenizer's character offsets, never by searching token ids: an id
that occurs twice, or an earlier word split into several pieces, would otherwise shift the position.
Everything here is plain arithmetic on lists, so it is tested without a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from bias.core.errors import BiasError


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """A token's character range without the whitespace byte-level BPE ("Ġword") and SentencePiece
    ("▁word") tokenizers include in it, so a span selects exactly the tokens of its own
    characters."""
    end = min(end, len(text))
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def inside(
    text: str, span: tuple[int, int], offsets: Sequence[tuple[int, int]], special: Sequence[int]
) -> list[int]:
    """Positions of the non-special tokens whose own characters overlap the span."""
    start, end = span
    found = []
    for i, ((a, b), s) in enumerate(zip(offsets, special)):
        if s:
            continue
        a, b = trimmed(text, a, b)
        if b > a and a < end and b > start:
            found.append(i)
    return found


def positions(
    text: str,
    span: tuple[int, int] | None,
    pooling: str,
    ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
    cls_token_id: int | None,
    *,
    causal: bool = False,
) -> list[int]:
    """The token positions whose vectors are averaged into a row; empty when the span covers no
    token.

    Whole text: "mean" takes every token (special tokens included, as sent-bias does for encoders; a
    causal LM's own tokens only, since its start token sees nothing of the text and is the same
    vector in every sentence), "cls" the first. A span, or the whole text under "first"/"last",
    takes the overlapping non-special tokens; "cls" with a span still takes the first token, the
    [CLS] of the sentence that holds the span."""
    if pooling == "cls" and (cls_token_id is None or not ids or ids[0] != cls_token_id):
        raise BiasError(
            "Pooling 'cls' needs a [CLS]-like first token, which this model's tokenizer "
            "does not add.",
            "Use mean, first or last.",
        )
    if span is None:
        if pooling == "mean":
            own = [i for i, s in enumerate(special) if not s] if causal else []
            return own or list(range(len(ids)))
        if pooling == "cls":
            return [0]
        span = (0, len(text))
    found = inside(text, span, offsets, special)
    if not found:
        return []
    if pooling == "mean":
        return found
    if pooling == "first":
        return found[:1]
    if pooling == "last":
        return found[-1:]
    return [0]


def window(
    length: int,
    special: Sequence[int],
    needed: Sequence[int] | None,
    limit: int | None,
    *,
    causal: bool,
    text: str,
) -> list[int] | None:
    """Token indices to keep so the sequence fits the model (None: all fit).

    The leading and trailing special tokens stay; of the text's own tokens a window of the allowed
    size is kept that holds every needed position: centred on them for an encoder, ending with them
    for a causal LM (whose vectors see only what comes before). `text` only names the text in an
    error."""
    if limit is None or length <= limit:
        return None
    prefix = 0
    while prefix < length and special[prefix]:
        prefix += 1
    suffix = 0
    while suffix < length - prefix and special[length - 1 - suffix]:
        suffix += 1
    budget = limit - prefix - suffix
    if budget < 1:
        raise BiasError(
            f"The model's limit of {limit} tokens leaves no room for text between its "
            "special tokens."
        )
    first, stop = prefix, length - suffix
    if needed:
        low, high = min(needed), max(needed)
        width = high - low + 1
        if width > budget:
            raise BiasError(
                f"The span to encode in the text {text[:60]!r}... covers {width} tokens, "
                "more than the "
                f"{budget} the model takes at once ({limit} with its special tokens).",
                "Give a shorter span, or a model with a longer limit.",
            )
        start = high + 1 - budget if causal else low - (budget - width) // 2
        start = max(first, min(start, stop - budget))
    else:
        start = first
    return (
        list(range(prefix))
        + list(range(start, start + budget))
        + list(range(length - suffix, length))
    )
