"""`--limit N`: a smoke run on the first N items of each list of a test, whatever its kind.

Why here and generic: a limit the engine applies to every data kind (association sets, pairs,
labelled texts, analogy sections, third-party kinds) cannot rely on each kind implementing it. Test
data are attrs classes whose lists are tuples; the limit cuts those tuples: the data object's own
tuple fields, the tuple fields of the attrs objects it holds (the words of X, Y, A and B), and, one
level down, the lists inside a list of containers (the questions of each analogy section). Strings
inside an item (a pair's two sentences, a word's grammar) are never cut, nor is an item whose class
says it is one whole (`limit_whole = True`: a StereoSet example and its three sentences). `meta` is
left whole."""

from __future__ import annotations

from typing import Any

import attrs


def _is_container(value: Any) -> bool:
    """An attrs object holding a list of attrs items (an analogy section with its questions)."""
    if not attrs.has(type(value)) or getattr(type(value), "limit_whole", False):
        return False
    return any(
        isinstance(getattr(value, f.name), tuple)
        and getattr(value, f.name)
        and attrs.has(type(getattr(value, f.name)[0]))
        for f in attrs.fields(type(value))
    )


def _cut_fields(value: Any, n: int) -> Any:
    changes = {
        f.name.lstrip("_"): getattr(value, f.name)[:n]
        for f in attrs.fields(type(value))
        if f.init and isinstance(getattr(value, f.name), tuple) and f.name != "meta"
    }
    return attrs.evolve(value, **changes) if changes else value


def first_items(data: Any, n: int | None) -> Any:
    """`data` with each of its lists cut to its first `n` items (unchanged for None or non-attrs
    data)."""
    if n is None or not attrs.has(type(data)):
        return data
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(data)):
        if not field.init or field.name == "meta":
            continue
        value = getattr(data, field.name)
        if isinstance(value, tuple):
            cut = value[:n]
            changes[field.name.lstrip("_")] = tuple(
                _cut_fields(v, n) if _is_container(v) else v for v in cut
            )
        elif attrs.has(type(value)):
            changes[field.name.lstrip("_")] = _cut_fields(value, n)
    return attrs.evolve(data, **changes) if changes else data
