"""What any house-format record may hold, checked before its kind's own checks, whichever format
it was read from: a text of megabytes (a template, a debiasing word, a labelled text's cell spread
over short lines) passes every line and file bound, and the tokenizer then holds the offsets of its
every token at once (3.8 MB aborted it at 2 GB)."""

from __future__ import annotations

from typing import Any

MAX_STRING = 65_536  # characters of one text, as a corpus line; the longest shipped has 3,640
NO_TEXT_NEEDS_MORE = "no text of a data file needs more"


def oversized(data: Any) -> list[tuple[str, str]]:
    """(field, message) for the first text longer than MAX_STRING, named by its path in the record
    (`templates[3].text`)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        field, value = stack.pop()
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                return [(field, f"longer than {MAX_STRING:,} characters ({NO_TEXT_NEEDS_MORE})")]
        elif isinstance(value, dict):
            stack.extend((f"{field}.{k}" if field else str(k), v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{field}[{i}]", v) for i, v in enumerate(value))
    return []
