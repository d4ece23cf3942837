"""What a metric's number is: one frozen declaration per metric, carried by every result it gives.

A WEAT d, a CrowS-Pairs percentage and an analogy accuracy are different quantities. Each metric
declares its own as one value on its class,

    value: ClassVar[ValueKind] = ValueKind("d", "effect size d", reference=0.0, scale="d")

and its results carry that declaration in `meta["value"]`, so that every report (which reads results
only) labels, formats and compares the number without knowing the metric. Nothing here imports
numpy: listing and describing plugins reads declarations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

MORE_BIASED = ("", "higher", "lower", "none")
# The figures a report can draw from a metric's results beyond the standard ones, by name. A metric
# that declares one writes the figures it needs (CONTRIBUTING.md, "Figures a report draws").
FIGURES = ("quadrants", "selection")


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _digits(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10


def _figures(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(f in FIGURES for f in value)


# What each field must be; also what a report accepts from a results file (which is outside input).
FIELD_TYPES = {
    "label": (_text, "text"),
    "name": (_text, "text"),
    "unit": (_text, "text"),
    "reference": (_number_or_none, "a number or None"),
    "signed": (lambda v: isinstance(v, bool), "True or False"),
    "digits": (_digits, "a whole number from 0 to 10"),
    "scale": (_text, "text"),
    "more_biased": (lambda v: v in MORE_BIASED, f"one of {MORE_BIASED}"),
    "meaning": (_text, "text"),
    "figures": (_figures, f"a tuple of names from {FIGURES}"),
}


def wrong_fields(fields: Mapping[str, Any]) -> list[str]:
    """The known fields of `fields` whose value is not what a declaration allows, each with why."""
    return [
        f"{key} = {value!r} (must be {FIELD_TYPES[key][1]})"
        for key, value in fields.items()
        if key in FIELD_TYPES and not FIELD_TYPES[key][0](value)
    ]


def _check(instance: ValueKind, attribute: attrs.Attribute, value: Any) -> None:
    wrong = wrong_fields({attribute.name: value})
    if wrong:
        raise TypeError(f"ValueKind: {wrong[0]}")


def _check_by_param(instance: ValueKind, attribute: attrs.Attribute, value: Any) -> None:
    shape = "{parameter: {parameter value: {field: value}}}"
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise TypeError(f"ValueKind: by_param must be {shape}, not {value!r}")
    for parameter, by_value in value.items():
        for chosen in by_value.values():
            unknown = (
                sorted(set(chosen) - set(FIELD_TYPES)) if isinstance(chosen, Mapping) else [chosen]
            )
            if unknown:
                raise TypeError(
                    f"ValueKind: by_param[{parameter!r}] sets {unknown}, which are not fields"
                )
            wrong = wrong_fields(chosen)
            if wrong:
                raise TypeError(f"ValueKind: by_param[{parameter!r}]: {wrong[0]}")


@attrs.frozen
class ValueKind:
    """How a metric's number reads: its short label and what it is, unit, the value of a model
    without bias, whether its sign says which way the bias goes, decimals shown, the scale it shares
    with other metrics, which way is more bias, what its sign means, the extra figures reports draw
    from its results, and what changes with a parameter that chooses which number is the value."""

    label: str = attrs.field(validator=_check)  # short column or axis name: "d", "%", "accuracy"
    name: str = attrs.field(default="", validator=_check)  # what it is; "": the label says it
    unit: str = attrs.field(default="", validator=_check)  # "%" or "" (unitless)
    # The value of an unbiased model; None: there is no such value (an accuracy, a distance).
    reference: float | None = attrs.field(default=0.0, validator=_check)
    signed: bool = attrs.field(default=True, validator=_check)  # write a + sign: it says which way
    digits: int = attrs.field(default=2, validator=_check)
    # Values on one scale may share a robustness curve ("": the label's own scale).
    scale: str = attrs.field(default="", validator=_check)
    # Which way is more bias, so that metrics on different scales can be compared: "higher",
    # "lower" (a JSS of 100 is no bias), "none" (the number says nothing about how biased a model
    # is); "": "higher" where there is a reference, else "none".
    more_biased: str = attrs.field(default="", validator=_check)
    # One sentence saying what the sign or the number means, printed once under a table.
    meaning: str = attrs.field(default="", validator=_check)
    # Figures beyond the standard ones that reports draw from the results (see FIGURES).
    figures: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_check)
    # {parameter: {value: {field: new value}}}: a parameter that chooses which number is the value
    # (bbq's `headline`) may put it on a scale of its own. Not carried by results: they carry the
    # declaration with it applied.
    by_param: Mapping[str, Mapping[Any, Mapping[str, Any]]] = attrs.field(
        factory=dict, validator=_check_by_param, eq=False, hash=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        if not self.label.strip():
            raise TypeError("ValueKind: label must be non-empty text")

    @property
    def title(self) -> str:
        """What the value is, in words: the name, or the label where no name is given."""
        return self.name or self.label

    @property
    def scale_name(self) -> str:
        return self.scale or self.label

    @property
    def bias_sign(self) -> int | None:
        """+1 when a higher value is more bias, -1 when a lower one is, None when the value says
        nothing about how biased a model is (no reference declared and no direction)."""
        chosen = self.more_biased or ("higher" if self.reference is not None else "none")
        return {"higher": 1, "lower": -1}.get(chosen)

    def for_params(self, params: Mapping[str, Any] | None) -> ValueKind:
        """The declaration for a metric with these parameter values (`by_param` applied)."""
        changed: dict[str, Any] = {}
        for parameter, by_value in self.by_param.items():
            if params and parameter in params:
                chosen = by_value.get(params[parameter])
                changed.update(chosen or {})
        return attrs.evolve(self, **changed) if changed else self

    def declared(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The declaration as results carry it (meta["value"]): plain JSON, parameters applied."""
        kind = self.for_params(params)
        out = attrs.asdict(kind, filter=lambda a, _: a.name != "by_param")
        out["figures"] = list(kind.figures)
        return out

    @classmethod
    def from_declared(cls, declared: Any) -> ValueKind | None:
        """The declaration a result carries, or None where it carries none that is well formed
        (a results file is outside input: unknown keys are left out, a wrong type refuses it)."""
        if not isinstance(declared, Mapping) or not _text(declared.get("label")):
            return None
        fields = {k: v for k, v in declared.items() if k in FIELD_TYPES}
        if wrong_fields(fields) or not fields["label"].strip():
            return None
        if not fields.get("name"):  # declared without a name: the label says it
            fields["name"] = (
                fields["label"] if fields["label"] != "value" else "value as the metric defines it"
            )
        return cls(**fields)

    def format(self, value: float | None, digits: int | None = None) -> str:
        import math

        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return "-"
        d = self.digits if digits is None else digits
        return f"{value:+.{d}f}" if self.signed else f"{value:.{d}f}"

    @property
    def axis(self) -> str:
        """Axis title of a figure: name, unit and the reference value."""
        ref = "" if self.reference is None else f"; {self.reference:g}{self.unit} = no bias"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{self.title}{unit}{ref}"


# A number nothing is declared about: what results without a declaration are shown as.
PLAIN_VALUE = ValueKind("value", "value as the metric defines it", reference=None)
