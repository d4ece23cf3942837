"""Declared parameters of plugins.

Plugins are attrs classes; their fields are their parameters. `param()` attaches the help text that
`bias info` shows, and `describe_params` reads it back without instantiating the plugin. Values from
the command line arrive as text and are converted by the type each field's annotation resolves to.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from collections.abc import Collection
from typing import Any

import attrs

from bias.core.errors import BadValue, BiasError


# What a parameter may do beyond computing (see README, "Security", and CONTRIBUTING, "Guarded
# parameters"); an experiment file, a converted config or a word-set file is someone else's text:
#   code   its value lets the model's files run code (gensim's pickles, a Hub model's own Python).
#          Only the command line sets it; a file that does is refused.
#   route  it decides where requests, keys or data go (a server's URL, the variable holding a key, a
#          folder written to). From a file it needs the user's confirmation: --allow NAME=VALUE.
#   cost   it sets what the run's cost estimate assumes (a price). From a file it can only make the
#          estimate higher, never lower what --max-cost stops.
GUARDS = ("code", "route", "cost")


# The kinds of language model a parameter may apply to alone (`only_for`): a run warns of such a
# parameter that the user set for a model of the other kind (see `not_used`).
MODEL_KINDS = ("masked", "causal")


def param(
    default: Any,
    help: str,
    *,
    guard: str | None = None,
    only_for: str | None = None,
    **kwargs: Any,
) -> Any:
    """An attrs field with a help text for `bias info`, and, for a parameter that runs code, routes
    requests or sets a price, its `guard` (one of GUARDS), which the engine enforces for values that
    come from a file; `only_for` (one of MODEL_KINDS) for a parameter that only one kind of language
    model reads."""
    if guard is not None and guard not in GUARDS:
        raise ValueError(f"guard must be one of {', '.join(GUARDS)}, not {guard!r}")
    if only_for is not None and only_for not in MODEL_KINDS:
        raise ValueError(f"only_for must be one of {', '.join(MODEL_KINDS)}, not {only_for!r}")
    metadata = {
        "help": help,
        **({"guard": guard} if guard else {}),
        **({"only_for": only_for} if only_for else {}),
    }
    return attrs.field(default=default, metadata=metadata, **kwargs)


def for_one_kind(plugin: Any) -> bool:
    """Whether a plugin has a parameter that only one kind of language model reads."""
    return attrs.has(type(plugin)) and any(
        "only_for" in f.metadata for f in attrs.fields(type(plugin))
    )


def not_used(plugin: Any, model_kind: str, given: Collection[str]) -> list[str]:
    """Warnings for the parameters in `given` (those the user set; a preset serves both kinds and
    is not counted) that this kind of model does not read: a value that changes nothing must not
    pass for one that was applied (a grid over it would show the same number twice as a
    comparison)."""
    out = []
    for f in attrs.fields(type(plugin)):
        kind, value = f.metadata.get("only_for"), getattr(plugin, f.name)
        if kind in (None, model_kind) or f.name not in given:
            continue
        out.append(
            f"{f.name} = {value} applies to {kind} language models only; "
            f"this model is {model_kind}, so it was not used"
        )
    return out


@attrs.frozen
class ParamInfo:
    name: str
    type: str
    default: Any
    help: str
    guard: str | None = None  # see GUARDS


def describe_params(cls: type) -> list[ParamInfo]:
    if not attrs.has(cls):
        return []
    out = []
    for f in attrs.fields(cls):
        if f.name.startswith("_") or not f.init:
            continue
        default = f.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if default is attrs.NOTHING:
            default = None
        type_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        out.append(
            ParamInfo(
                f.name, str(type_name), default, f.metadata.get("help", ""), f.metadata.get("guard")
            )
        )
    return out


def guarded(cls: type, guard: str) -> dict[str, ParamInfo]:
    """The parameters of a plugin class declared with `guard`, by name."""
    return {p.name: p for p in describe_params(cls) if p.guard == guard}


def coerce_params(cls: type, options: dict[str, Any], plugin: str) -> dict[str, Any]:
    """Check option names against the declared parameters and convert strings from the CLI."""
    known = _known_params(cls)
    hints = _resolved_types(cls)
    out: dict[str, Any] = {}
    for key, value in options.items():
        key = key.replace("-", "_")
        if key not in known:
            names = ", ".join(sorted(known)) or "none"
            # Parameter names are ASCII: a look-alike letter (Cyrillic а) or an invisible one is
            # shown.
            shown = "".join(
                c if c.isascii() and c.isprintable() else f"<U+{ord(c):04X}>" for c in key
            )
            from bias.core.did_you_mean import suggestions

            close = suggestions(key, sorted(known))
            raise BiasError(
                f"Plugin '{plugin}' has no parameter '{shown}'." + (f" {close}" if close else ""),
                f"Its parameters are: {names} (see `bias info {plugin}`).",
            )
        out[key] = _convert(value, hints.get(key, str), known[key], plugin)
    return out


@functools.lru_cache(maxsize=256)
def _known_params(cls: type) -> dict[str, ParamInfo]:
    """The declared parameters by name, read once per class: a grid of cheap experiments coerces the
    same metric's options thousands of times."""
    return {p.name: p for p in describe_params(cls)}


def resolved_types(cls: type) -> dict[str, Any]:
    """Field name -> the type object its annotation names (see `_resolved_types`, which caches it
    per class: `typing.get_type_hints` costs about a millisecond)."""
    return dict(_resolved_types(cls))


@functools.lru_cache(maxsize=256)
def _resolved_types(cls: type) -> dict[str, Any]:
    """Field name -> the type object its annotation names, however it was written: `Optional[int]`,
    `int | None`, with or without `from __future__ import annotations` (which leaves strings).

    A plugin whose annotations cannot be resolved (a name imported only under TYPE_CHECKING) keeps
    the types it can: its fields with real type objects, the others taken as text."""
    if not attrs.has(cls):
        return {}
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an unresolvable name in a third party's annotations must not stop a run
        pass
    module = sys.modules.get(cls.__module__)
    namespace = {**vars(typing), **(vars(module) if module is not None else {})}
    out: dict[str, Any] = {}
    for f in attrs.fields(cls):
        try:  # what get_type_hints does for each annotation, one field at a time
            out[f.name] = eval(f.type, namespace) if isinstance(f.type, str) else f.type  # noqa: S307
        except Exception:
            continue
    return out


def _members(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union (`int | None`, `Optional[int]`), or the type itself."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


_WANTED = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "text",
    type(None): "None",
}


def _wanted(members: tuple[Any, ...]) -> str:
    return " or ".join(_WANTED.get(m, getattr(m, "__name__", str(m))) for m in members)


def _convert(value: Any, hint: Any, info: ParamInfo, plugin: str) -> Any:
    members = _members(hint)
    if not isinstance(value, str):
        return _checked(value, members, info, plugin)
    if type(None) in members and value.strip().lower() in ("none", "null"):
        return None
    for member in members:  # the first alternative that takes the text, in the order written
        if member is str or member is Any:
            return value
        try:
            if member is bool:
                return _boolean(value)
            if member is int:
                return int(value)
            if member is float:
                return float(value)
        except ValueError:
            continue
    if any(m in (bool, int, float) for m in members):
        raise BadValue(
            f"Parameter '{info.name}' of '{plugin}' expects {_wanted(members)}, got '{value}'.",
            f"See `bias info {plugin}` for its parameters.",
        )
    return value


def _checked(value: Any, members: tuple[Any, ...], info: ParamInfo, plugin: str) -> Any:
    """A value that is not text (from TOML or Python) against a parameter that takes only numbers or
    true/false: 1.5 for an integer, true for a count, a number for a flag are refused; 2.0 for an
    integer is 2."""
    scalar = (bool, int, float)
    if isinstance(value, (dict, list, tuple)) and all(
        m in (*scalar, str, type(None)) for m in members
    ):
        kind = "a table" if isinstance(value, dict) else "a list"
        raise BadValue(
            f"Parameter '{info.name}' of '{plugin}' expects {_wanted(members)}, got {kind}.",
            f"Write one value in its place (see `bias info {plugin}`).",
        )
    if not isinstance(value, scalar) or not all(m in (*scalar, type(None)) for m in members):
        return value
    if isinstance(value, bool):
        if bool in members:
            return value
    elif isinstance(value, int):
        if int in members or float in members:
            return value
    elif isinstance(value, float):
        if float in members:
            return value
        if int in members and value.is_integer():
            return int(value)
    raise BadValue(
        f"Parameter '{info.name}' of '{plugin}' expects {_wanted(members)}, got {value!r}.",
        f"See `bias info {plugin}` for its parameters.",
    )


def _boolean(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


# Validators for plugin parameters: a bad value is a user error (exit 2) that names the parameter.


def int_at_least(minimum: int, hint: str | None = None) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            what = "a positive whole number" if minimum == 1 else f"a whole number >= {minimum}"
            raise BadValue(f"{attribute.name} must be {what}, not {value!r}.", hint)

    return check


def at_most(maximum: int | float) -> Any:
    """A bound a value may not pass (a documented maximum, such as the retries of a request)."""

    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > maximum:
            raise BadValue(f"{attribute.name} must be at most {maximum:g}, not {value!r}.")

    return check


def one_of(choices: Any, hint: str | None = None) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices:
            listed = ", ".join(str(c) for c in choices)
            raise BadValue(f"{attribute.name} must be one of {listed}, not {value!r}.", hint)

    return check


def between(low: float, high: float) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not low <= value <= high
        ):
            raise BadValue(f"{attribute.name} must lie between {low} and {high}, not {value!r}.")

    return check


# The hidden layer a metric takes encodings from (SEAT, CEAT, the probe): None (the model's own
# setting), a layer number (-1 the last) or the mean of the last four.

MEAN_LAST_4 = "mean-last-4"


def layer_value(value: Any) -> int | str | None:
    """The layer as the embedder takes it: None, an int (a CLI string "-2" becomes -2) or
    "mean-last-4"."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("none", "null", ""):
            return None
        try:
            return int(text)
        except ValueError:
            return text
    return value


def is_layer(value: Any) -> bool:
    """Whether a converted layer value is one the embedders take (each metric words its own
    refusal)."""
    return (
        value is None
        or value == MEAN_LAST_4
        or (isinstance(value, int) and not isinstance(value, bool))
    )
