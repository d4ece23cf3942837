"""Model specs: `NAME:LOCATION[OPTION=VALUE,...]`, e.g. `word2vec:vectors.bin`, `hf:./my-bert`,
`hf:pkg:module/model`, `openai:text-embedding-3-small[base_url=http://localhost:8000/v1]`.

A spec is parsed here, once, into a `ModelSpec` (embedder, location, options) that the engine and
the registry pass down; nothing else splits the text. Options in brackets are the same as
`--model-option` (the form tables and labels print a configured model in). The debiasing settings a
model may carry (`debias`, `debias_lists`, ...) are not the embedder's options: `split_debias` makes
them a value of their own, `DebiasSettings`.

A location of the form `pkg:MODULE/sub/path` names a folder or file inside an installed Python
package, found without importing it: that is how the quickstart finds the MiniLM encoder shipped on
PyPI."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError


@attrs.frozen
class ModelSpec:
    """A model as parsed from its spec: which embedder reads it, from where, with which of the
    embedder's own options (values as written; the embedder's parameters convert them)."""

    embedder: str
    location: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)

    def __str__(self) -> str:
        return f"{self.embedder}:{self.location}"


# An option's key is any run of characters up to its `=` (no space, bracket, comma, colon or slash):
# a key spelt `base-url`, or with an invisible or look-alike letter, opens the options like any
# other and is then named as unknown if it is one, never left in the location for the requests to
# go to a default host.
_KEY = r"[^\s=\[\],:/]+"
_OPTION = re.compile(rf"^\s*({_KEY})\s*=(.*)$", re.DOTALL)
_OPENS_OPTIONS = re.compile(rf"\[\s*{_KEY}\s*=")
# What makes a bracket look like options though none parses: an equals sign (also a fullwidth one),
# a word followed by a colon and a space, or an address (`[http://...]`, base_url= forgotten). Such
# a bracket is refused, never left in the location for the requests to go to a default host.
_LOOKS_LIKE_OPTIONS = re.compile(r"[=\uff1d]|\w:\s|\w://")


def _closes_at_end(text: str, start: int) -> bool:
    """Whether the bracket opened at `start` is closed by the text's last character (brackets
    inside, such as an IPv6 host's, balanced)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def _items(inside: str) -> list[str]:
    """The comma-separated items of an option list, a comma inside brackets kept in its item."""
    items, depth, current = [], 0, []
    for char in inside:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return items


def split_options(spec: str) -> tuple[str, dict[str, str]]:
    """`NAME:LOCATION[k=v,...]` -> (`NAME:LOCATION`, {k: v}). The options are the bracket that opens
    with `key=` and closes at the end, whatever brackets the values hold
    (`base_url=http://[::1]:8000/v1`). Brackets whose content is not options (a folder named
    `model[1]`) stay part of the location; a mix of both, or option brackets that do not close at
    the end, is refused: an option is never dropped."""
    text = spec.strip()
    opening = [m.start() for m in _OPENS_OPTIONS.finditer(text)]
    if opening and not _closes_at_end(text, opening[0]):
        # An option bracket left open, closed twice, or followed by another: each would leave an
        # option out, and the requests would go to a default host.
        raise BiasError(
            f"Model spec '{spec}': the brackets of its options do not pair up.",
            "Options are one bracket of key=value pairs after the location, closed at the end: "
            "openai:NAME[base_url=http://[::1]:8000/v1,dimensions=256].",
        )
    if not text.endswith("]") or "[" not in text:
        return spec, {}
    start = opening[0] if opening else None
    if start is None:
        start = text.rindex("[")
        if not any(_OPTION.match(item) for item in _items(text[start + 1 : -1])):
            if _LOOKS_LIKE_OPTIONS.search(text[text.index("[") :]):
                raise BiasError(
                    f"Model spec '{spec}': its brackets hold something like an option that is not "
                    "one.",
                    "Options are key=value pairs in one bracket after the location, each key a "
                    "plain name: openai:NAME[base_url=http://127.0.0.1:8000/v1,dimensions=256].",
                )
            return spec, {}
    items = _items(text[start + 1 : -1])
    matched = [_OPTION.match(item) for item in items]
    if not any(matched):
        return spec, {}
    if not all(matched):
        bad = next(item for item, m in zip(items, matched) if not m)
        raise BiasError(
            f"Model spec '{spec}': '{bad.strip()}' in the brackets is not an option.",
            "Options in brackets are key=value pairs separated by commas, e.g. openai:NAME[base_url=http://localhost:8000/v1,dimensions=256].",
        )
    options: dict[str, str] = {}
    for m in matched:
        assert m is not None
        key, value = m.group(1).lower(), m.group(2).strip()
        if key in options:
            raise BiasError(f"Model spec '{spec}' gives {key} twice.", "Give each option once.")
        options[key] = value
    return text[:start], options


def parse_spec(spec: str) -> ModelSpec:
    bare, options = split_options(spec)
    name, sep, location = bare.partition(":")
    if not sep or not name.strip() or not location.strip():
        raise BiasError(
            f"Model spec '{spec}' is not of the form NAME:LOCATION.",
            "For example word2vec:vectors.bin, fasttext:cc.nl.300.bin or hf:path/to/model "
            "(see `bias list embedders`).",
        )
    return ModelSpec(name.strip().lower(), location.strip(), options)


# The options that ask for debiasing on load, and the DebiasSettings field each fills.
DEBIAS_OPTIONS = {
    "debias": "method",
    "debias_corpus": "corpus",
    "debias_lists": "lists",
    "debias_language": "language",
}


@attrs.frozen
class DebiasSettings:
    """Debiasing a model on load (`--debias`, or `debias = ...` in a models table): which debiaser,
    fitted on which corpus, with which lists (or the lists of which language). Written among a
    model's options, but not the embedder's: kept apart so no layer peels them off again."""

    method: str
    corpus: Any = None
    lists: Any = None
    language: Any = None

    def as_options(self) -> dict[str, Any]:
        """The settings as the options they were written as (for labels and experiment keys)."""
        return {
            option: getattr(self, field)
            for option, field in DEBIAS_OPTIONS.items()
            if getattr(self, field) is not None
        }


def split_debias(options: Mapping[str, Any]) -> tuple[dict[str, Any], DebiasSettings | None]:
    """A model's options -> (the embedder's own, the debiasing settings or None)."""
    own = {k: v for k, v in options.items() if k not in DEBIAS_OPTIONS}
    given = {
        DEBIAS_OPTIONS[k]: v for k, v in options.items() if k in DEBIAS_OPTIONS and v is not None
    }
    if not given.get("method"):
        if given:
            names = ", ".join(
                sorted(k for k in options if k in DEBIAS_OPTIONS and options[k] is not None)
            )
            raise BiasError(
                f"{names} given without --debias.", "Add --debias hard, inlp, sent or leace."
            )
        return own, None
    return own, DebiasSettings(**given)


def resolve_location(location: str) -> Path:
    """The filesystem path a location names (`pkg:` locations resolved inside installed
    packages)."""
    if not location.startswith("pkg:"):
        return Path(location).expanduser()
    module, _, sub = location[4:].partition("/")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.submodule_search_locations:
        raise BiasError(
            f"Python package '{module}' (from '{location}') is not installed.",
            f"Install it, e.g. `pip install {module.replace('_', '-')}`.",
        )
    return Path(list(found.submodule_search_locations)[0]) / sub
