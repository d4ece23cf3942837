"""Contract checks for plugins, in the spirit of scikit-learn's `check_estimator`: run on a class, they
exercise what the framework relies on, so a third party's metric, embedder or debiaser finds out in its
own tests what `bias run` would otherwise find out half-way through a batch.

    from bias.testing import check_metric

    def test_my_metric(word2vec_model, my_test):
        check_metric(MyMetric, embedder=word2vec_model, data=my_test)

Without an embedder and data a check exercises the class alone: its declarations (name, summary, needs,
how reports label its number, what a debiaser produces), its parameters (they round-trip through the
strings of the command line and are documented; a bad value is refused with a BiasError, never another
exception). With them it runs the plugin: the result is well formed, carries the declarations, and the
same seed gives the same numbers. Each check raises AssertionError naming the plugin and what is wrong,
and returns how many checks it made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.runs.budget import Cost
from bias.core.errors import BiasError
from bias.core.interfaces import (
    ON_THE_FLY,
    STATIC_VECTORS,
    Capability,
    Debiaser,
    Embedder,
    Metric,
    check_compatible,
)
from bias.core.model import OK, REFUSED, Result
from bias.core.params import coerce_params, describe_params
from bias.core.reports.values import _TYPES, DECLARED, declared_value

# Values a parameter is given to see that a bad one is refused cleanly (BiasError), whatever its type.
BAD_VALUES = ("not-a-value", "-1", "1e400", "")


def _say(plugin: Any, what: str) -> str:
    return f"{getattr(plugin, '__name__', plugin)} ({getattr(plugin, 'name', '?')}): {what}"


def _declared(cls: type, base: type) -> int:
    """`name` and `summary`: non-empty text declared on the class."""
    for attr in ("name", "summary"):
        value = getattr(cls, attr, None)
        assert isinstance(value, str) and value.strip(), _say(cls, f"declares no {attr}")
    assert issubclass(cls, base), _say(cls, f"does not derive from {base.__name__}")
    return 2


def _capabilities(cls: type, attr: str) -> int:
    value = getattr(cls, attr, frozenset())
    assert isinstance(value, frozenset) and all(isinstance(c, Capability) for c in value), _say(
        cls, f"{attr} must be a frozenset of Capability, not {value!r}"
    )
    return 1


def _cli_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _parameters(cls: type, build: Any, params_of: Any) -> int:
    """Every parameter is documented, the defaults round-trip through the command line's strings, and a
    bad value is refused with a BiasError."""
    checks = 0
    infos = describe_params(cls)
    for info in infos:
        assert info.help.strip(), _say(
            cls, f"parameter {info.name} has no help text (param(default, help))"
        )
        checks += 1
    instance = build({})
    params = params_of(instance)
    try:
        again = params_of(build(dict(params)))
    except Exception as exc:  # noqa: BLE001  (a parameter that cannot be given back is the defect)
        raise AssertionError(
            _say(
                cls,
                f"params() gives what the class does not take back: {type(exc).__name__}: {exc}",
            )
        ) from exc
    assert again == params, _say(
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
            _say(cls, f"its defaults, written as on the command line, are refused: {exc.message}")
        ) from exc
    assert again == params, _say(
        cls, f"its defaults written as text do not read back: {as_text} gave {again}"
    )
    checks += 2
    for info in infos:
        for bad in BAD_VALUES:
            try:
                build(coerce_params(cls, {info.name: bad}, cls.name))
            except BiasError:
                pass
            except Exception as exc:  # noqa: BLE001  (the point: any other exception is a defect)
                raise AssertionError(
                    _say(
                        cls,
                        f"parameter {info.name} = {bad!r} raised {type(exc).__name__}: {exc} instead of a BiasError",
                    )
                ) from exc
            checks += 1
    return checks


def _value_label(cls: type) -> int:
    declared = next((k for k in cls.__mro__ if k is not Metric and "value_label" in vars(k)), None)
    assert declared is not None, _say(cls, "declares no value_label (how reports label its number)")
    value = declared_value(cls)
    wrong = [k for k, v in value.items() if not _TYPES[k](v)]
    assert not wrong, _say(cls, f"value declaration of the wrong type: {', '.join(wrong)}")
    by_param = getattr(cls, "value_by_param", {})
    fields = {info.name for info in attrs.fields(cls)} if attrs.has(cls) else set()
    assert isinstance(by_param, dict) and all(isinstance(v, dict) for v in by_param.values()), _say(
        cls, "value_by_param must be {parameter: {value: {value_attribute: ...}}}"
    )
    for name, by_value in by_param.items():
        assert name in fields, _say(cls, f"value_by_param names {name!r}, which is not one of its parameters")
        for chosen in by_value.values():
            unknown = [a for a in chosen if a not in DECLARED]
            assert isinstance(chosen, dict) and not unknown, _say(cls, f"value_by_param[{name!r}] declares {unknown or chosen!r}, not value_* attributes")
            wrong = [a for a, v in chosen.items() if not _TYPES[DECLARED[a]](v)]
            assert not wrong, _say(cls, f"value_by_param[{name!r}] declares {', '.join(wrong)} of the wrong type")
    return 3


def _cost(cls: type, metric: Metric, data: Any) -> int:
    cost = metric.cost(data)
    assert cost is None or isinstance(cost, Cost), _say(
        cls, f"cost() must give a Cost or None, not {cost!r}"
    )
    if cost is not None:
        assert math.isfinite(cost.seconds) and cost.seconds >= 0 and cost.memory >= 0, _say(
            cls, f"cost() is not a finite, non-negative estimate: {cost}"
        )
        assert all(isinstance(c, str) and c and part >= 0 for c, part in cost.causes), _say(
            cls, f"cost() names no cause: {cost.causes}"
        )
    return 1


@attrs.define
class _Bare(Embedder):
    """A model that offers nothing: every metric and debiaser that needs something must refuse it."""

    name: ClassVar[str] = "bare"
    summary: ClassVar[str] = "offers no capability"
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    location: str = "-"


def _result(
    cls: type,
    metric: Metric,
    embedder: Embedder,
    data: Any,
    seed: int,
    inputs: Mapping[str, Any] | None,
) -> Result:
    kwargs = {"inputs": dict(inputs or {})} if metric.inputs(data) else {}
    result = metric.compute(embedder, data, seed=seed, **kwargs)
    assert isinstance(result, Result), _say(
        cls, f"compute() returned {type(result).__name__}, not a Result"
    )
    return result


def check_metric(
    cls: type,
    *,
    embedder: Embedder | None = None,
    data: Any = None,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> int:
    """The contract of a Metric class; with `embedder` and `data` (and the `inputs` its `inputs(data)`
    asks for, resolved), also a run of it."""
    checks = (
        _declared(cls, Metric) + _capabilities(cls, "requires") + _capabilities(cls, "requires_any")
    )
    assert isinstance(getattr(cls, "data_kind", None), str), _say(cls, "declares no data_kind")
    checks += _value_label(cls)
    checks += _parameters(cls, lambda p: cls(**p), lambda m: m.params())
    if cls.requires or cls.requires_any:
        try:
            check_compatible(cls, _Bare, cls.data_kind)
        except BiasError:
            checks += 1
        else:
            raise AssertionError(_say(cls, "a model without its declared needs is not refused"))
    if embedder is None or data is None:
        return checks
    metric = cls()
    check_compatible(
        cls, embedder, data.meta.kind
    )  # declared needs and data kind fit what it is given
    checks += _cost(cls, metric, data)
    asked = metric.inputs(data)
    assert isinstance(asked, dict), _say(cls, "inputs() must give a dict")
    missing = sorted(k for k in set(asked) - set(inputs or {}) if not getattr(asked[k], "optional", False))
    assert not missing, _say(cls, f"asks for inputs {missing}; pass them resolved with inputs=")
    first = _result(cls, metric, embedder, data, seed, inputs)
    assert first.metric == cls.name and first.params == metric.params() and first.seed == seed, (
        _say(
            cls,
            "the result does not name the metric, its parameters and its seed (build it with make_result)",
        )
    )
    assert first.status in (OK, REFUSED), _say(cls, f"status {first.status!r} ({first.reason})")
    assert first.meta.get("value") == declared_value(cls, metric.params()), _say(
        cls, "the result does not carry the value declaration"
    )
    if first.status == OK:
        e, p = first.effect_size, first.p_value
        assert e is None or (isinstance(e, float) and math.isfinite(e)), _say(
            cls, f"effect_size {e!r} is not a finite float"
        )
        assert p is None or (isinstance(p, float) and 0.0 <= p <= 1.0), _say(
            cls, f"p_value {p!r} is not in [0, 1]"
        )
    else:
        assert first.reason, _say(cls, "a refused result gives no reason")
    again = _result(cls, metric, embedder, data, seed, inputs)
    same = (again.status, again.effect_size, again.p_value, again.figures) == (
        first.status,
        first.effect_size,
        first.p_value,
        first.figures,
    )
    assert same, _say(cls, f"seed {seed} does not reproduce the result")
    return checks + 5


def check_embedder(
    cls: type,
    *,
    location: str | None = None,
    words: tuple[str, ...] = ("the",),
    texts: tuple[str, ...] = ("A text.",),
) -> int:
    """The contract of an Embedder class; with `location` (a model it can load), also a use of it."""
    checks = _declared(cls, Embedder) + _capabilities(cls, "capabilities")
    where = location if location is not None else "model-file"
    checks += _parameters(
        cls,
        lambda p: cls(**{"location": where, **p}),
        lambda e: {
            k: v
            for k, v in attrs.asdict(e, recurse=False).items()
            if k in {i.name for i in describe_params(cls)}
        },
    )
    if location is None:
        return checks
    embedder = cls(location=location)
    embedder.check()
    embedder.load()
    available = embedder.available()
    assert available <= embedder.capabilities, _say(
        cls, f"available() offers more than declared: {sorted(available - embedder.capabilities)}"
    )
    assert embedder.fingerprint() == embedder.fingerprint(), _say(
        cls, "fingerprint() is not stable"
    )
    checks += 3
    if Capability.WORD_VECTORS in available:
        found = embedder.word_vectors([*words, "zzq-no-such-word-qzz"])
        assert len(found.words) == found.vectors.shape[0] and found.vectors.ndim == 2, _say(
            cls, "word_vectors(): one row per word found"
        )
        assert "zzq-no-such-word-qzz" in found.lost or "zzq-no-such-word-qzz" in found.words, _say(
            cls, "an unknown word is neither found nor lost"
        )
        checks += 2
    if Capability.CONTEXTUAL in available:
        encoded = np.asarray(embedder.encode(list(texts)))
        assert encoded.ndim == 2 and encoded.shape[0] == len(texts), _say(
            cls, f"encode(): one row per text, not shape {encoded.shape}"
        )
        checks += 1
    return checks


def check_debiaser(cls: type, *, embedder: Embedder | None = None, lists: Any = None) -> int:
    """The contract of a Debiaser class; with a (loaded or loadable) `embedder` it supports and
    debiasing `lists`, also a fit: the same fit twice gives the same vectors."""
    checks = _declared(cls, Debiaser) + _capabilities(cls, "requires")
    produces = getattr(cls, "produces", frozenset())
    assert produces and produces <= {STATIC_VECTORS, ON_THE_FLY}, _say(
        cls, f"produces must name {STATIC_VECTORS} and/or {ON_THE_FLY}, not {produces!r}"
    )
    checks += 1 + _parameters(cls, lambda p: cls(**p), lambda d: d.params())
    supported = cls.supports(_Bare(location="-")) if cls.requires else None
    assert supported is None or (isinstance(supported, str) and supported), _say(
        cls, "supports() must give None or a reason"
    )
    if embedder is None or lists is None:
        return checks
    reason = cls.supports(embedder)
    assert reason is None, _say(cls, f"does not support the model given: {reason}")
    embedder.load()
    vectors = []
    for _ in range(2):
        debiaser = cls()
        assert debiaser.fit(embedder, lists) is debiaser, _say(
            cls, "fit() must return the debiaser itself"
        )
        debiased = debiaser.transform(embedder)
        assert isinstance(debiased, Embedder), _say(cls, "transform() must return an Embedder")
        if STATIC_VECTORS in produces and Capability.VOCABULARY in debiased.capabilities:
            found = debiased.all_vectors()
            vectors.append(np.asarray(found.vectors, dtype=np.float64))
            assert len(found.words) == found.vectors.shape[0], _say(
                cls, "all_vectors(): one row per word"
            )
    if vectors:
        assert np.array_equal(vectors[0], vectors[1]), _say(
            cls, "two fits on the same model and lists give different vectors"
        )
    return checks + 3
