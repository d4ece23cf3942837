"""What the contract checks of every kind of plugin share: named checks, the messages they give, the
checks of declared parameters, and the model that offers nothing.

A check is a named function of the plugin class (and, in run mode, of what it runs on). It raises
AssertionError whose message starts with the plugin's class and name and says what to fix, and
returns how many things it checked, so a test can see that it really ran.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import attrs

from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.params import coerce_params, describe_params

# Values a parameter is given to see that a bad one is refused cleanly (BiasError), whatever its
# type.
BAD_VALUES = ("not-a-value", "-1", "0", "1e400", "")


def say(plugin: Any, what: str) -> str:
    """`Class (name): what`: the start of every message of a check."""
    return f"{getattr(plugin, '__name__', plugin)} ({getattr(plugin, 'name', '?')}): {what}"


@attrs.frozen
class Check:
    """One named check of one plugin class. `run`: it needs what the plugin runs on (an embedder
    and data for a metric, a loadable location for an embedder, ...), passed as keywords."""

    name: str
    plugin: type
    function: Callable[..., int]
    run: bool = False

    def __call__(self, **context: Any) -> int:
        return self.function(self.plugin, **context) if self.run else self.function(self.plugin)

    @property
    def id(self) -> str:
        return f"{getattr(self.plugin, 'name', self.plugin.__name__)}-{self.name}"


def run_checks(
    checks: Iterable[Check], context: Mapping[str, Any], expected_failed: Mapping[str, str] | None
) -> int:
    """Every check in order (run checks only with a context); a check named in `expected_failed`
    (name -> why) must fail, and is then skipped, so that a fixed defect is noticed."""
    done = 0
    for check in checks:
        if check.run and not context:
            continue
        if expected_failed and check.name in expected_failed:
            try:
                check(**context)
            except AssertionError:
                continue
            raise AssertionError(
                say(
                    check.plugin,
                    f"{check.name} passes, but is declared to fail: {expected_failed[check.name]}",
                )
            )
        done += check(**context)
    return done


def calling(plugin: type, what: str, call: Callable[[], Any]) -> Any:
    """`call()`; an exception other than BiasError becomes a message naming `what` was called."""
    try:
        return call()
    except BiasError:
        raise
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001  (the point: the plugin broke its contract)
        raise AssertionError(say(plugin, f"{what} raised {type(exc).__name__}: {exc}")) from exc


# --- declarations shared by every kind of plugin --------------------------------------------------


def check_name_and_summary(cls: type, base: type) -> int:
    for attr in ("name", "summary"):
        value = getattr(cls, attr, None)
        assert isinstance(value, str) and value.strip(), say(
            cls, f"declares no {attr} (a non-empty text ClassVar)"
        )
    assert isinstance(cls, type) and issubclass(cls, base), say(
        cls, f"does not derive from {base.__name__}"
    )
    return 2


def check_capabilities(cls: type, attr: str) -> int:
    value = getattr(cls, attr, frozenset())
    assert isinstance(value, frozenset) and all(isinstance(c, Capability) for c in value), say(
        cls, f"{attr} must be a frozenset of Capability, not {value!r}"
    )
    return 1


# --- parameters -----------------------------------------------------------------------------------


def _cli_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def check_parameters_documented(cls: type, required: tuple[str, ...] = ()) -> int:
    """Every attrs field a user can set is a `param(default, help)`: documented, with a default
    (but those in `required`: an embedder's `location`)."""
    infos = describe_params(cls)
    for field in attrs.fields(cls) if attrs.has(cls) else ():
        if (
            field.init
            and not field.name.startswith("_")
            and field.default is attrs.NOTHING
            and field.name not in required
        ):
            raise AssertionError(
                say(cls, f"parameter {field.name} has no default (param(default, help))")
            )
    for info in infos:
        assert info.help.strip(), say(
            cls, f"parameter {info.name} has no help text (param(default, help))"
        )
    return len(infos) + 1


def check_no_mutable_defaults(cls: type) -> int:
    """A list, dict or set as a default is one object shared by every instance: a change made by one
    run leaks into the next. Immutable defaults (a tuple, a frozenset) or `attrs.Factory`
    instead."""
    checked = 0
    for field in attrs.fields(cls) if attrs.has(cls) else ():
        checked += 1
        assert not isinstance(field.default, (list, dict, set, bytearray)), say(
            cls,
            f"parameter {field.name} has a mutable default {field.default!r}: "
            f"use a tuple, or attrs.Factory({type(field.default).__name__})",
        )
    return checked


def check_parameters_round_trip(
    cls: type, build: Callable[[dict[str, Any]], Any], params_of: Callable[[Any], dict[str, Any]]
) -> int:
    """`params()` gives back what the class takes, as Python values and as command-line text."""
    params = params_of(calling(cls, "building it with its defaults", lambda: build({})))
    try:
        again = params_of(build(copy.deepcopy(dict(params))))
    except Exception as exc:  # noqa: BLE001  (a parameter that cannot be given back is the defect)
        raise AssertionError(
            say(
                cls,
                f"params() gives what the class does not take back: {type(exc).__name__}: {exc}",
            )
        ) from exc
    assert again == params, say(
        cls, "its parameters do not round-trip: cls(**params()).params() differs"
    )
    as_text = {
        k: _cli_text(v)
        for k, v in params.items()
        if v is not None and not isinstance(v, (dict, list, tuple))
    }
    try:
        again = params_of(build(coerce_params(cls, as_text, cls.name)))
    except BiasError as exc:
        raise AssertionError(
            say(cls, f"its defaults, written as on the command line, are refused: {exc.message}")
        ) from exc
    assert again == params, say(
        cls, f"its defaults written as text do not read back: {as_text} gave {again}"
    )
    return 2


def accepted_bad_values(
    cls: type, build: Callable[[dict[str, Any]], Any]
) -> list[tuple[str, str, Any]]:
    """Each (parameter, bad text, plugin built with it) that construction accepts. A value refused
    must be refused with a BiasError; any other exception is a defect, named."""
    accepted = []
    for info in describe_params(cls):
        for bad in BAD_VALUES:
            try:
                built = build(coerce_params(cls, {info.name: bad}, cls.name))
            except BiasError:
                continue
            except Exception as exc:  # noqa: BLE001  (the point: any other exception is a defect)
                raise AssertionError(
                    say(
                        cls,
                        f"parameter {info.name} = {bad!r} raised {type(exc).__name__}: {exc} "
                        "instead of a BiasError",
                    )
                ) from exc
            accepted.append((info.name, bad, built))
    return accepted


def check_parameters_used(cls: type, stop: type, exempt: tuple[str, ...] = ()) -> int:
    """Every parameter is read somewhere in the plugin's own code (the modules of its class and of
    its bases below `stop`): as `.NAME` or as the text "NAME" (`getattr(self, "NAME")`). One that is
    never read changes nothing but the experiment's key: a typo of the name the code reads, or a
    leftover."""
    import re
    import sys

    sources = []
    for klass in cls.__mro__:
        if klass is stop or klass is object:
            break
        module = sys.modules.get(klass.__module__)
        try:
            sources.append(inspect.getsource(module) if module is not None else "")
        except (OSError, TypeError):
            # defined where no source is kept (a test's own class): its body
            try:
                sources.append(inspect.getsource(klass))
            except (OSError, TypeError):
                return 0
    text = "\n".join(dict.fromkeys(sources))
    checked = 0
    for info in describe_params(cls):
        if info.name in exempt:
            continue
        name = re.escape(info.name)
        used = re.search(rf"\.{name}\b|[\"']{name}[\"']", text)
        assert used, say(
            cls, f"parameter {info.name} is never read by its code: remove it or use it"
        )
        checked += 1
    return checked


# --- the model that offers nothing ----------------------------------------------------------------


@attrs.define
class Bare(Embedder):
    """A model that offers nothing: a metric or debiaser that needs something must refuse it."""

    name: ClassVar[str] = "bare"
    summary: ClassVar[str] = "offers no capability"
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    location: str = "-"


def finite_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isfinite(value))
