"""The contract checks of a Metric class, each a named function (see `metric_checks`).

Class mode checks the declarations and parameters; run mode (with an embedder and data, and the
`inputs` the metric asks for, resolved) computes it: the result is well formed and carries the
declaration, its numbers are finite, its p-value says how it was computed, the seed reproduces it,
what it was given is left as it was, its cost is an estimate, and a parameter value that
construction accepts does not break compute with anything but a BiasError.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from bias.core.data.kinds import known_kinds
from bias.core.errors import BiasError
from bias.core.compatibility import check_compatible
from bias.core.interfaces import Measured, Metric
from bias.core.model import OK, REFUSED, Result
from bias.core.runs.budget import Cost
from bias.core.values import PLAIN_VALUE, ValueKind
from bias.testing.contract import (
    Bare,
    Check,
    accepted_bad_values,
    calling,
    check_capabilities,
    check_name_and_summary,
    check_no_mutable_defaults,
    check_parameters_documented,
    check_parameters_round_trip,
    check_parameters_used,
    finite_or_none,
    say,
)


def _build(cls: type) -> Any:
    return lambda p: cls(**p)


def check_metric_name_and_summary(cls: type) -> int:
    return check_name_and_summary(cls, Metric)


def check_metric_needs(cls: type) -> int:
    """requires and requires_any are frozensets of Capability; a model without them is refused."""
    checks = check_capabilities(cls, "requires") + check_capabilities(cls, "requires_any")
    if cls.requires or cls.requires_any:
        try:
            check_compatible(cls, Bare, cls.data_kind)
        except BiasError:
            return checks + 1
        raise AssertionError(say(cls, "a model without its declared needs is not refused"))
    return checks


def check_metric_data_kind(cls: type) -> int:
    kind = getattr(cls, "data_kind", None)
    assert isinstance(kind, str), say(cls, "declares no data_kind (the kind of word set it takes)")
    kinds = known_kinds()
    assert kind in kinds, say(
        cls, f"data_kind {kind!r} is not an installed kind of word set ({', '.join(kinds)})"
    )
    return 2


def check_metric_value(cls: type) -> int:
    """`value` is a ValueKind declared for this metric (not the base's plain "value"), and what it
    changes by parameter names real parameters and values."""
    value = getattr(cls, "value", None)
    assert isinstance(value, ValueKind), say(
        cls,
        f"value must be a ValueKind, not {type(value).__name__}: "
        "value: ClassVar[ValueKind] = ValueKind(label, name, ...)",
    )
    assert value is not PLAIN_VALUE, say(
        cls, "declares no value (how reports label its number): value = ValueKind(label, name, ...)"
    )
    fields = {info.name: info for info in attrs.fields(cls)} if attrs.has(cls) else {}
    for parameter in value.by_param:
        assert parameter in fields, say(
            cls, f"value.by_param names {parameter!r}, which is not one of its parameters"
        )
    return 2 + len(value.by_param)


def check_metric_parameters(cls: type) -> int:
    return (
        check_parameters_documented(cls)
        + check_no_mutable_defaults(cls)
        + check_parameters_used(cls, Metric)
    )


def check_metric_parameters_round_trip(cls: type) -> int:
    return check_parameters_round_trip(cls, _build(cls), lambda m: m.params())


def check_metric_bad_values_refused(cls: type) -> int:
    """A bad value is refused with a BiasError at construction, or accepted (run mode then computes
    with it: `check_metric_bad_values_at_compute`)."""
    accepted_bad_values(cls, _build(cls))
    return 1


# --- run mode -------------------------------------------------------------------------------------


def _compute(
    cls: type, metric: Metric, embedder: Any, data: Any, seed: int, inputs: Mapping[str, Any] | None
) -> Result:
    asked = calling(cls, "inputs()", lambda: metric.inputs(data))
    assert isinstance(asked, dict), say(cls, "inputs() must give a dict")
    given = set(inputs or {})
    missing = sorted(k for k in set(asked) - given if not getattr(asked[k], "optional", False))
    assert not missing, say(cls, f"asks for inputs {missing}; pass them resolved with inputs=")
    kwargs = {"inputs": dict(inputs or {})} if asked else {}
    result = calling(cls, "compute()", lambda: metric.compute(embedder, data, seed=seed, **kwargs))
    assert isinstance(result, Result), say(
        cls, f"compute() returned {type(result).__name__}, not a Result"
    )
    return result


def check_metric_fits_what_it_is_given(cls: type, *, embedder: Any, data: Any, **_: Any) -> int:
    """The declared needs and data kind fit the model and data given (else nothing else can run)."""
    try:
        check_compatible(cls, embedder, data.meta.kind)
    except BiasError as exc:
        raise AssertionError(say(cls, f"cannot run on what it was given: {exc.message}")) from exc
    return 1


def check_metric_cost(
    cls: type, *, data: Any, params: Mapping[str, Any] | None = None, **_: Any
) -> int:
    cost = calling(cls, "cost()", lambda: cls(**dict(params or {})).cost(data))
    assert cost is None or isinstance(cost, Cost), say(
        cls, f"cost() must give a Cost or None, not {cost!r}"
    )
    if cost is not None:
        assert math.isfinite(cost.seconds) and cost.seconds >= 0 and cost.memory >= 0, say(
            cls, f"cost() is not a finite, non-negative estimate: {cost}"
        )
        assert all(isinstance(c, str) and c and part >= 0 for c, part in cost.causes), say(
            cls, f"cost() names no cause: {cost.causes}"
        )
    return 1


def check_metric_result(
    cls: type,
    *,
    embedder: Any,
    data: Any,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    **_: Any,
) -> int:
    """The result names the metric, its parameters and seed, carries the value declaration, and its
    numbers are finite (a p in [0, 1], said how it was computed); a refusal says why."""
    metric = cls(**dict(params or {}))
    result = _compute(cls, metric, embedder, data, seed, inputs)
    assert result.metric == cls.name and result.params == metric.params() and result.seed == seed, (
        say(
            cls,
            "the result does not name the metric, its parameters and its seed "
            "(build it with make_result)",
        )
    )
    assert result.status in (OK, REFUSED), say(cls, f"status {result.status!r} ({result.reason})")
    assert result.meta.get("value") == cls.value.declared(metric.params()), say(
        cls, "the result does not carry the value declaration (build it with make_result)"
    )
    if result.status != OK:
        assert result.reason, say(cls, "a refused result gives no reason")
        return 4
    e, p = result.effect_size, result.p_value
    assert finite_or_none(e), say(
        cls, f"effect_size {e!r} is not a finite float: refuse (BiasError) what gives no number"
    )
    assert p is None or (isinstance(p, float) and 0.0 <= p <= 1.0), say(
        cls, f"p_value {p!r} is not a float in [0, 1]"
    )
    if p is not None:
        assert isinstance(result.convention.get("p_value"), str), say(
            cls,
            "gives a p-value without saying how it was computed: "
            "return Measured(test=...) or write convention['p_value']",
        )
    return 7


def check_metric_seed_reproduces(
    cls: type,
    *,
    embedder: Any,
    data: Any,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    **_: Any,
) -> int:
    metric = cls(**dict(params or {}))
    first = _compute(cls, metric, embedder, data, seed, inputs)
    again = _compute(cls, metric, embedder, data, seed, inputs)
    same = (again.status, again.effect_size, again.p_value, again.figures) == (
        first.status,
        first.effect_size,
        first.p_value,
        first.figures,
    )
    assert same, say(
        cls,
        f"seed {seed} does not reproduce the result: draw every random number from the seed given",
    )
    return 1


def _vectors(embedder: Any, words: list[str]) -> np.ndarray | None:
    try:
        found = embedder.word_vectors(words)
    except BiasError:
        return None
    return np.array(found.vectors, dtype=np.float64, copy=True)


def check_metric_leaves_its_input(
    cls: type,
    *,
    embedder: Any,
    data: Any,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    **_: Any,
) -> int:
    """Computing changes neither the data, the inputs nor the model's vectors; a metric on the
    vectors of X, Y, A and B (`measure`) leaves the matrices it is given as they were."""
    from bias.core.interfaces import ResolvedModel

    given = {
        k: v for k, v in (inputs or {}).items() if not isinstance(v, ResolvedModel)
    }  # a model: its vectors below
    before = copy.deepcopy((data, given))
    words = (
        sorted({w for wl in data.sets().values() for w in wl.words})
        if hasattr(data, "sets")
        else []
    )
    vectors = _vectors(embedder, words) if words else None
    _compute(cls, cls(**dict(params or {})), embedder, data, seed, inputs)
    assert (data, given) == before, say(
        cls, "compute() changed the data or inputs it was given: work on a copy"
    )
    if vectors is not None:
        assert np.array_equal(_vectors(embedder, words), vectors), say(
            cls, "compute() changed the model's vectors: work on a copy"
        )
    measure = getattr(cls, "measure", None)
    if measure is not None and hasattr(data, "sets") and vectors is not None:
        from bias.core.association import SetVectors

        sets = {key: [w for w in wl.words if w in words] for key, wl in data.sets().items()}
        found = embedder.word_vectors(words).as_dict()
        matrices = {
            k: np.array([found[w] for w in ws if w in found], dtype=np.float64)
            for k, ws in sets.items()
        }
        given = {k: m.copy() for k, m in matrices.items()}
        try:
            measured = cls(**dict(params or {})).measure(
                SetVectors(matrices, {k: [w for w in ws if w in found] for k, ws in sets.items()}),
                seed=seed,
            )
        except (TypeError, BiasError):  # not the association shape, or refused: nothing to compare
            return 3
        assert all(np.array_equal(matrices[k], given[k]) for k in given), say(
            cls,
            "measure() overwrote the vectors it was given: "
            "compute on copies (x = x * 2, not x *= 2)",
        )
        assert isinstance(measured, Measured), say(
            cls, f"measure() returned {type(measured).__name__}, not a Measured"
        )
    return 3


def check_metric_bad_values_at_compute(
    cls: type,
    *,
    embedder: Any,
    data: Any,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    **_: Any,
) -> int:
    """A bad parameter value that construction accepts must not break compute with anything but a
    BiasError (the run then gives a refusal naming the value): add a validator to refuse it
    early."""
    checked = 0
    for name, bad, metric in accepted_bad_values(cls, lambda p: cls(**{**dict(params or {}), **p})):
        try:
            kwargs = {"inputs": dict(inputs or {})} if metric.inputs(data) else {}
            metric.compute(embedder, data, seed=seed, **kwargs)
        except BiasError:
            pass
        except Exception as exc:  # noqa: BLE001  (the point: the bad value broke compute)
            raise AssertionError(
                say(
                    cls,
                    f"parameter {name} = {bad!r} is accepted, then compute() raises "
                    f"{type(exc).__name__}: {exc}; "
                    "refuse it with a validator (bias.api.between, int_at_least, one_of)",
                )
            ) from exc
        checked += 1
    return checked + 1  # and every other bad value was refused when the metric was built


CLASS_CHECKS = (
    check_metric_name_and_summary,
    check_metric_needs,
    check_metric_data_kind,
    check_metric_value,
    check_metric_parameters,
    check_metric_parameters_round_trip,
    check_metric_bad_values_refused,
)
RUN_CHECKS = (  # what a computation changes is seen best by the first one: it comes first
    check_metric_fits_what_it_is_given,
    check_metric_leaves_its_input,
    check_metric_cost,
    check_metric_result,
    check_metric_seed_reproduces,
    check_metric_bad_values_at_compute,
)


def metric_checks(cls: type) -> list[Check]:
    """Every check of a Metric class, by name: class checks first, then run checks."""
    return [Check(f.__name__, cls, f) for f in CLASS_CHECKS] + [
        Check(f.__name__, cls, f, run=True) for f in RUN_CHECKS
    ]
