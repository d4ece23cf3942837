"""User and file text made safe to show: invisible, control and right-to-left characters made
visible, long words, sentences and lists cut with how much was left out.

Every word, path or name that came from a user or a file passes through here before it reaches the
terminal, so that a million-word set prints one line and a bidi override cannot reorder a message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_TEXT = 200  # characters of one word, path or sentence shown
MAX_ITEMS = 10  # items of a list shown
# Characters that change how surrounding text is drawn without being seen themselves.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_INVISIBLE = set("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")


def visible(text: object) -> str:
    """`text` with control, bidi-override and zero-width characters written as <U+XXXX>."""
    value = str(text)
    if value.isprintable():  # no "Other" (Cc, Cf, Cs, Co, Cn) character: nothing to write out
        return value
    out = []
    for ch in value:
        if (
            ch in BIDI
            or ch in _INVISIBLE
            or (unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") and ch not in "\t")
        ):
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    return "".join(out)


def shown(text: object, limit: int = MAX_TEXT) -> str:
    """One piece of user text, visible and at most `limit` characters (plus a note of its
    length)."""
    value = str(text)
    if len(value) > limit:
        return visible(value[:limit]) + f"... ({len(value):,} characters)"
    return visible(value)


def listed(items: Iterable[object], limit: int = MAX_ITEMS, each: int = 60) -> str:
    """The first `limit` items, each shown, then 'and N more'."""
    items = list(items)
    head = ", ".join(shown(i, each) for i in items[:limit])
    rest = len(items) - limit
    return head + (f" and {rest:,} more" if rest > 0 else "")


def message(text: object, limit: int = 2000) -> str:
    """A whole message (which may hold several pieces of user text): visible, newlines kept, cut."""
    lines = str(text).splitlines() or [""]
    return "\n".join(shown(line, limit) for line in lines[:4]) + ("\n..." if len(lines) > 4 else "")


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: object) -> tuple:
    """Sort key that reads runs of digits as numbers, as people list tests: weat2 before weat10."""
    return tuple(int(part) if part.isdigit() else part.lower() for part in _DIGITS.split(str(text)))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A cell of a CSV file bias writes. Text is made visible line by line (an escape code or a
    bidi override would redraw the terminal of whoever runs `cat` on the file; line breaks are
    kept), and text a spreadsheet would run as a formula (opening with = + - @ or a tab) gets a
    leading apostrophe, as OWASP advises for CSV, as does text that opens with an apostrophe, so
    that `cell_value` gives back what was written; numbers stay numbers."""
    if not isinstance(value, str):
        return value
    if not value.isprintable():  # isprintable: no control, format or separator character
        value = "\n".join(visible(part) for part in value.split("\n"))
    if value.startswith("'"):
        return "'" + value
    if value.startswith(_FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def cell_value(text: str) -> str:
    """A CSV cell bias wrote, as it was before `csv_cell` (its leading apostrophe taken off)."""
    return text[1:] if isinstance(text, str) and text.startswith("'") else text
