"""The values a run option may take: the rules its value must meet (`AtLeast`, `OneOf`, `Text`,
`Switch`, each with the words of its refusal), and the command line's `KEY=VALUE` pairs read.

Nothing here imports more than the standard library and attrs: `bias --help` reads the vocabulary
that uses these rules.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any

import attrs


@attrs.frozen
class AtLeast:
    """A number (a whole number when `whole`) at least `minimum`."""

    minimum: float
    whole: bool = True

    @property
    def text(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} >= {self.minimum:g}"

    def fits(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.whole and not isinstance(value, int):
            return False
        return value >= self.minimum  # NaN is never >= anything


@attrs.frozen
class OneOf:
    """One of a list of names; `source` is "module:NAME" of the tuple, read when a value is checked,
    so that the table imports nothing."""

    source: str | tuple[str, ...]
    hint: str = ""

    @property
    def choices(self) -> tuple[str, ...]:
        if isinstance(self.source, tuple):
            return self.source
        module, _, name = self.source.partition(":")
        return tuple(getattr(importlib.import_module(module), name))

    @property
    def text(self) -> str:
        return f"one of {', '.join(self.choices)}"

    def fits(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.choices


@attrs.frozen
class Text:
    """Text that is not blank."""

    text: str = "text"

    def fits(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value.strip())


@attrs.frozen
class Pattern:
    """Text matching `regex` whole; `text` says what that is in words."""

    regex: str
    text: str

    def fits(self, value: Any) -> bool:
        return isinstance(value, str) and re.fullmatch(self.regex, value) is not None


@attrs.frozen
class Switch:
    text: str = "true or false"

    def fits(self, value: Any) -> bool:
        return isinstance(value, bool)


Rule = AtLeast | OneOf | Pattern | Text | Switch


def pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    """`KEY=VALUE` texts (repeated `--model-option`); a key given twice keeps its last value."""
    from bias.core.errors import BiasError

    out = {}
    for pair in values:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BiasError(
                f"{flag} '{pair}' is not KEY=VALUE.", f"For example {flag} batch_size=16."
            )
        out[key.strip()] = value.strip()
    return out


def many_pairs(values: Sequence[str], flag: str) -> dict[str, list[str]]:
    """`NAME=VALUE` texts (repeated `--param`), every value of each name, in order, without
    repeats."""
    from bias.core.errors import BiasError

    out: dict[str, list[str]] = {}
    for pair in values:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BiasError(
                f"{flag} '{pair}' is not NAME=VALUE.", f"For example {flag} permutations=10000."
            )
        found = out.setdefault(key.strip().replace("-", "_"), [])
        if value.strip() not in found:
            found.append(value.strip())
    return out
