"""Close matches for a mistyped name, shared by every lookup that answers "did you mean"."""

from __future__ import annotations

import difflib


def suggestions(name: str, candidates: list[str]) -> str:
    """A "Did you mean ...?" sentence naming up to three close candidates, or "" when none is close.

    Close is difflib's ratio of at least 0.5; failing that, a candidate containing the name (case
    ignored), so that a short fragment such as "weat" still finds "seat-weat7"."""
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    if not close:
        close = [c for c in candidates if name.lower() in c.lower()][:3]
    return f"Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
