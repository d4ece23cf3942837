"""What any house-format record may hold, checked before its kind's own checks, whichever format
it was read from: a text of megabytes (a template, a debiasing word, a labelled text's cell spread
over short lines) passes every line and file bound, and the tokenizer then holds the offsets of its
every token at once (3.8 MB aborted it at 2 GB); a word is multiplied by every sentence it is put
into (a debiasing word of 3.8 MB by each corpus sentence that has its counterpart)."""

from __future__ import annotations

from typing import Any

from bias.core.errors import BiasError

MAX_SET_WORDS = 5_000  # each word is encoded and compared with every other word
MAX_WORD_CHARS = 1_000  # the longest shipped stimulus has 38 characters, a SEAT sentence ~60
# characters of one text of a record; the longest shipped has 3,640. What templates multiply is
# bounded apart (templates.MAX_RENDERED).
MAX_STRING = 2**20
# characters of one text given to a model: the tokenizer takes it whole and Ctrl-C waits for it
# (2.6-3.6 s on 1 MiB); a model reads a few thousand characters of it at most
MAX_TEXT_CHARS = 2**18
TEXT = "no text of a data file needs more"
WORD = "a list of words holds words or short phrases"


def oversized(data: Any, limit: int = MAX_STRING, reason: str = TEXT) -> list[tuple[str, str]]:
    """(field, message) for the first text longer than `limit`, named by its path in the record
    (`templates[3].text`); words are held to MAX_WORD_CHARS by the kinds whose lists hold words."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        field, value = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                return [(field, f"longer than {limit:,} characters ({reason})")]
        elif isinstance(value, dict):
            stack.extend((f"{field}.{k}" if field else str(k), v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{field}[{i}]", v) for i, v in enumerate(value))
    return []


def check_file_words(words: list[Any], path: Any, field: str, *, templates: bool = False) -> None:
    """The set bounds for a format that converts to the house's sets, said with the field as its
    file names it (`targ1.examples`), not the house's `sets.X.words`; `templates`: the list holds
    templates, each held to what a model takes at once instead."""
    if len(words) > MAX_SET_WORDS:
        raise BiasError(
            f"{path}: field '{field}' has more than {MAX_SET_WORDS:,} "
            f"{'templates' if templates else 'words'}.",
            "Check that this is the file you meant.",
        )
    longest = MAX_TEXT_CHARS if templates else MAX_WORD_CHARS
    for i, word in enumerate(words):
        if isinstance(word, str) and len(word) > longest:
            raise BiasError(
                f"{path}: field '{field}[{i}]' is longer than {longest:,} characters.",
                "A template is a sentence with its slots: check that this is the file you meant."
                if templates
                else "A set holds words or short sentences: check that this is the file you meant.",
            )
