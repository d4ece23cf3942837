"""The masked-LM inputs of StereoSet's intrasentence examples: for each sentence, one input per
piece of its template word, piece i read at a mask after the pieces before it in the slot.

Two ways to build them (the `stereoset` metric's `masked_score`):

- `token-space` (the default, the stated definition): the word's pieces as the sentence has them,
  after the space the context has before BLANK; the input is the context's tokens before BLANK, the
  first i pieces, the mask, the context's tokens after BLANK (a side where BLANK touches a word is
  tokenised as text). No piece of text is decoded and tokenised again, so a byte-level BPE cannot
  merge the pieces with the text around them differently from one input to the next.
- `bias-bench`: bias-bench's own inputs (`IntrasentenceLoader`), quirks included: the word encoded
  after a space (bias-bench's RoBERTa branch; on WordPiece and SentencePiece the ids of the word
  alone, its other branch); for piece i the context with BLANK replaced by the tokenizer's decoding
  of the first i pieces followed by the mask token, that text tokenised again. On a byte-level BPE
  the decoded pieces carry the word's space, so a second piece is read after two spaces (a space
  token of its own) and the decoded pieces may merge anew; a word that starts the context gets a
  space the sentence does not have.

Each builder gives the requests and, per sentence id, the places of its pieces' requests.
"""

from __future__ import annotations

import string
import unicodedata

import attrs

from bias.core.data.stereoset import StereoExample, StereoSetExamples
from bias.core.errors import BiasError
from bias.core.interfaces import Embedder, MaskedRequest, Tokens
from bias.core.pair_metrics.alignment import is_truncated
from bias.core.text import shown

Plan = tuple[list[MaskedRequest], dict[str, list[int]]]

MASKED_INPUTS = {
    "token-space": "built in token space: the context's tokens before BLANK, the first i+1 pieces "
    "of the word (the last one masked), the context's tokens after BLANK; a side where BLANK "
    "touches a word tokenised as text (after BLANK: that text alone; before it: that text and the "
    "first i pieces' text); for WordPiece the same ids as bias-bench's re-tokenised text, for a "
    "byte-level BPE the same for a word of one piece",
    "bias-bench": "bias-bench's IntrasentenceLoader: the word encoded after a space (its RoBERTa "
    "branch; the ids of the word alone on WordPiece and SentencePiece); piece i read in the "
    "context with BLANK replaced by the decoded first i pieces and the mask token, tokenised again",
}


def where(data: StereoSetExamples, example: StereoExample) -> str:
    """The example as a message names it: file, field and id."""
    return f"{data.meta.path or data.name}: data.intrasentence[{example.index}] (id {example.id!r})"


def joins_word(ch: str) -> bool:
    """Whether a character beside BLANK glues the slot to a word: neither whitespace nor punctuation
    (BERT's rule: the ASCII symbols and Unicode's P* categories), so that WordPiece reads the text
    beside the slot and what fills it as one word."""
    if ch.isspace() or ch in string.punctuation:
        return False
    return not unicodedata.category(ch).startswith("P")


@attrs.frozen
class Slot:
    """How an example's context is cut around BLANK. `head` and `tail` are the special tokens the
    tokenizer puts around a text; `left` (None: BLANK is glued to the word before it) and `right`
    (None: glued to the word after it) the context's tokens on each side."""

    head: tuple[int, ...]
    left: tuple[int, ...] | None
    right: tuple[int, ...] | None
    tail: tuple[int, ...]


def slot_split(data: StereoSetExamples, example: StereoExample, tokens: Tokens) -> Slot:
    """The context's tokens before and after its BLANK, from the model's tokenisation of the
    context.

    A side where BLANK touches a word (`joins_word`: "unBLANK", "BLANKs") is left to be tokenised as
    text (None): bias-bench's mask token cuts the text there, so what stands beside it is read as a
    word of its own, and a word glued before BLANK merges with the pieces put in the slot. A side
    with a space or punctuation must have a token boundary at BLANK; refused when a token joins
    BLANK with the text beside it. A token of nothing but the whitespace before BLANK belongs to the
    slot: the template word is tokenised after that whitespace (see `token_space_requests`)."""
    start, end = example.slot
    context = example.context
    plain = [i for i, sp in enumerate(tokens.special) if not sp]
    inside = [i for i in plain if tokens.offsets[i][0] < end and tokens.offsets[i][1] > start]
    if not inside:
        raise BiasError(
            f"{where(data, example)}: the model's tokenizer gives no token for BLANK in the "
            "context.",
            "Check that the context reads as text the model's tokenizer keeps.",
        )
    first_plain, last_plain = plain[0], plain[-1]
    head, tail = tokens.ids[:first_plain], tokens.ids[last_plain + 1 :]
    glued_left = bool(context[:start]) and joins_word(context[:start][-1])
    glued_right = end < len(context) and joins_word(context[end])
    first, last = inside[0], inside[-1]
    # a token of nothing but the space before BLANK (a byte-level BPE without a token for " B") goes
    # with the slot: the template word is tokenised after that space, and its pieces carry it
    while (
        not glued_left
        and first > first_plain
        and not context[tokens.offsets[first - 1][0] : start].strip()
    ):
        first -= 1
    a, b = tokens.offsets[first][0], tokens.offsets[last][1]
    if (not glued_left and context[a:start].strip()) or (
        not glued_right and context[end:b].strip()
    ):
        raise BiasError(
            f"{where(data, example)}: the model's tokenizer joins BLANK with the text beside it "
            f"('{shown(context[a:b], 40)}'), so the slot cannot be cut out of the context's "
            "tokens.",
            "Put a space on each side of BLANK in the context.",
        )
    left = None if glued_left else tokens.ids[first_plain:first]
    right = None if glued_right else tokens.ids[last + 1 : last_plain + 1]
    return Slot(head, left, right, tail)


def plain_ids(tokens: Tokens) -> tuple[int, ...]:
    """The ids of a text without the tokenizer's special tokens."""
    return tuple(i for i, sp in zip(tokens.ids, tokens.special) if not sp)


def _lead(example: StereoExample) -> str:
    """The whitespace the context has right before BLANK ("" at its start or after punctuation or a
    word glued to BLANK): the template word is tokenised after it, as it stands in the sentence."""
    before = example.context[: example.slot[0]]
    return before[-1:] if before[-1:].isspace() else ""


def _no_pieces(data: StereoSetExamples, example: StereoExample, sentence) -> BiasError:
    return BiasError(
        f"{where(data, example)}: the template word {sentence.word!r} of sentence "
        f"{sentence.id!r} gives no token to the model's tokenizer.",
        "Check the sentence, or use another model.",
    )


def _too_long(data: StereoSetExamples, example: StereoExample, limit: int) -> BiasError:
    return BiasError(
        f"{where(data, example)}: the context is longer than the model's limit of {limit} tokens.",
        "Use a model with a longer context, or leave the example out.",
    )


def token_space_requests(embedder: Embedder, data: StereoSetExamples) -> Plan:
    """The inputs in token space: the context's tokens before BLANK, the first i+1 pieces of the
    word (the last one masked), the context's tokens after BLANK. For a WordPiece tokenizer (BERT)
    these are exactly the ids bias-bench gets by re-tokenising the context with BLANK replaced by
    the decoded first i pieces and the mask token: WordPiece cuts words at whitespace, punctuation
    and the mask token, and its greedy longest match splits the decoded first i pieces into those
    same pieces. Where BLANK is glued to a word, that side is tokenised as text, as bias-bench's
    re-tokenisation reads it: the text after BLANK alone (the mask token cuts it off), the text
    before BLANK followed by the first i pieces' text.

    The word's pieces come from the word after the whitespace the context has before BLANK: what
    bias-bench's loader encodes for RoBERTa (" " + word). A byte-level BPE gives a word-initial
    piece there ("Ġc"), and the word alone would be read as glued to the word before BLANK
    ("c")."""
    examples = data.examples
    contexts = embedder.tokenize([e.context for e in examples])
    # each template word as it stands in its sentence: after the space the context has before BLANK
    # (a byte-level BPE marks it on the word's first piece), else alone
    spelled = sorted({_lead(e) + s.word for e in examples for s in e.sentences})
    word_tokens = dict(zip(spelled, embedder.tokenize(spelled)))
    pieces = {w: plain_ids(t) for w, t in word_tokens.items()}
    # the text of the word's first i pieces (BLANK glued to the word before it: no lead), the word
    # up to the end of piece i
    prefixes = {
        w: [""] + [w[:b] for (_, b), sp in zip(t.offsets, t.special) if not sp][:-1]
        for w, t in word_tokens.items()
    }
    slots = []
    for example, tokens in zip(examples, contexts):
        if is_truncated(example.context, tokens):
            raise _too_long(data, example, len(tokens.ids))
        slots.append(slot_split(data, example, tokens))
    # The texts to tokenise where BLANK is glued: the context after BLANK; the context before BLANK
    # followed by the text of the word's first i pieces.
    texts: dict[str, int] = {}
    for example, slot in zip(examples, slots):
        start, end = example.slot
        if slot.right is None:
            texts.setdefault(example.context[end:], len(texts))
        if slot.left is None:
            for sentence in example.sentences:
                for prefix in prefixes[_lead(example) + sentence.word]:
                    texts.setdefault(example.context[:start] + prefix, len(texts))
    read = [plain_ids(t) for t in embedder.tokenize(list(texts))] if texts else []
    requests: list[MaskedRequest] = []
    plan: dict[str, list[int]] = {}
    for example, slot in zip(examples, slots):
        start, end = example.slot
        right = slot.right if slot.right is not None else read[texts[example.context[end:]]]
        for sentence in example.sentences:
            spelt = _lead(example) + sentence.word
            word = pieces[spelt]
            if not word:
                raise _no_pieces(data, example, sentence)
            plan[sentence.id] = []
            for i in range(len(word)):
                if slot.left is not None:
                    left = slot.left + word[:i]
                else:
                    left = read[texts[example.context[:start] + prefixes[spelt][i]]]
                plan[sentence.id].append(len(requests))
                ids = slot.head + left + (word[i],) + right + slot.tail
                requests.append(MaskedRequest(ids, (len(slot.head) + len(left),)))
    return requests, plan


def bias_bench_requests(embedder: Embedder, data: StereoSetExamples) -> Plan:
    """bias-bench's inputs. Its loader encodes " " + word on its RoBERTa branch (a model whose name
    holds "roberta") and the word alone otherwise; here " " + word whatever the model is called. A
    byte-level BPE (RoBERTa, RobBERT, GottBERT) then gets its word-initial pieces, and on WordPiece
    and SentencePiece, where a space before a word changes none of its ids, these are the ids of
    the other branch. For piece i the text is the context with BLANK replaced by the tokenizer's
    decoding of the first i pieces and the mask token, tokenised by the model's tokenizer as
    bias-bench's loader does (the mask token takes the space before it where the tokenizer says so);
    the piece is read at the mask."""
    mask = embedder.mask_token
    if not mask:
        raise BiasError(
            "The stereoset metric's masked_score = bias-bench rebuilds bias-bench's text inputs "
            f"with the mask token in them, and the model '{embedder.spec}' names no mask token.",
            "Give a masked LM whose tokenizer names its mask token (a causal LM is scored without "
            "masks).",
        )
    examples = data.examples
    words = sorted({s.word for e in examples for s in e.sentences})
    encoded = {w: plain_ids(t) for w, t in zip(words, embedder.tokenize([" " + w for w in words]))}
    decoded: dict[tuple[int, ...], str] = {(): ""}
    wanted: list[tuple[StereoExample, str, str, int, int]] = []  # and where the mask starts, piece
    for example in examples:
        start, end = example.slot
        for sentence in example.sentences:
            pieces = encoded[sentence.word]
            if not pieces:
                raise _no_pieces(data, example, sentence)
            for i, piece in enumerate(pieces):
                if pieces[:i] not in decoded:
                    decoded[pieces[:i]] = embedder.decode(pieces[:i])
                before = example.context[:start] + decoded[pieces[:i]]
                text = before + mask + example.context[end:]
                wanted.append((example, sentence.id, text, len(before), piece))
    texts = list(dict.fromkeys(w[2] for w in wanted))
    tokenized = dict(zip(texts, embedder.tokenize(texts)))
    requests: list[MaskedRequest] = []
    plan: dict[str, list[int]] = {}
    for example, sid, text, at, piece in wanted:
        tokens = tokenized[text]
        if is_truncated(text, tokens):
            raise _too_long(data, example, len(tokens.ids))
        places = [k for k, (a, b) in enumerate(tokens.offsets) if a < at + len(mask) and b > at]
        if len(places) != 1:
            raise BiasError(
                f"{where(data, example)}: the model's tokenizer does not read its mask token "
                f"{mask!r} as one token in '{shown(text, 60)}'.",
                "Use masked_score = token-space (the default) for this model.",
            )
        ids = list(tokens.ids)
        ids[places[0]] = piece
        plan.setdefault(sid, []).append(len(requests))
        requests.append(MaskedRequest(tuple(ids), (places[0],)))
    return requests, plan


BUILDERS = {"token-space": token_space_requests, "bias-bench": bias_bench_requests}


def masked_requests(embedder: Embedder, data: StereoSetExamples, inputs: str) -> Plan:
    """The requests of every sentence, built the way `inputs` names (a key of MASKED_INPUTS). A
    context or sentence holding the mask token's own text is refused: the tokenizer would read a
    mask there that the data does not have."""
    mask = embedder.mask_token
    for example in data.examples if mask else ():
        for text in (example.context, *(s.sentence for s in example.sentences)):
            if mask in text:
                raise BiasError(
                    f"{where(data, example)}: '{shown(text, 60)}' holds the model's mask token "
                    f"{mask!r} as text; the model would read a mask there.",
                    "Write the word otherwise in the data, or leave the example out.",
                )
    return BUILDERS[inputs](embedder, data)
