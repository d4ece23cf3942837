"""What each metric's number is, and how every output writes numbers and p-values.

A WEAT d, a CrowS-Pairs percentage and an analogy accuracy are different quantities: each gets its
own label, unit, reference value (the value an unbiased model would give) and a sign only where the
sign means something. Every output (terminal, Markdown, LaTeX, figures, HTML) takes them from here,
so they cannot disagree. Every metric, first-party or not, describes its own number by class
attributes (`value_label`, ... on `bias.core.interfaces.Metric`), which its results carry in
`meta["value"]`; a result without one is shown as a plain "value".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import attrs

from bias.core.model import Result


@attrs.frozen
class ValueKind:
    label: str  # short column or axis name: "d", "% stereo", "accuracy"
    name: str  # what it is, for notes and axis titles
    unit: str = ""  # "%" or "" (unitless)
    reference: float | None = 0.0  # the value of an unbiased model; None: no such value
    signed: bool = True  # write a + sign: the sign says which way the bias goes
    digits: int = 2
    scale: str = ""  # values of one scale may share a curve ("" : the label's own scale)
    more_biased: str = ""  # "higher", "lower", "none"; "": higher where there is a reference, else none

    @property
    def scale_name(self) -> str:
        return self.scale or self.label

    @property
    def bias_sign(self) -> int | None:
        """+1 when a higher value is more bias, -1 when a lower one is, None when the value says nothing
        about how biased a model is (no reference declared and no direction)."""
        chosen = self.more_biased or ("higher" if self.reference is not None else "none")
        return {"higher": 1, "lower": -1}.get(chosen)

    def format(self, value: float | None, digits: int | None = None) -> str:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return "-"
        d = self.digits if digits is None else digits
        text = f"{value:+.{d}f}" if self.signed else f"{value:.{d}f}"
        return text

    @property
    def axis(self) -> str:
        """Axis title of a figure: name, unit and the reference value."""
        ref = "" if self.reference is None else f"; {_plain(self.reference)}{self.unit} = no bias"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{self.name}{unit}{ref}"


def _plain(x: float) -> str:
    return f"{x:g}"


_VALUE = ValueKind("value", "value as the metric defines it", reference=None)


# The class attributes a metric declares to describe its number (`bias.core.interfaces.Metric`, with
# their defaults there), and the ValueKind field each fills.
DECLARED = {
    "value_label": "label", "value_name": "name", "value_unit": "unit", "value_reference": "reference",
    "value_signed": "signed", "value_digits": "digits", "value_scale": "scale", "value_more_biased": "more_biased",
}
MORE_BIASED = ("", "higher", "lower", "none")


def declared_value(metric_class: type, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a metric class declares about its number (`value_label = "ratio"`, `value_unit = "%"`, ...),
    as the fields of a ValueKind, with what it declares for the parameter values in `params`
    (`value_by_param`: a parameter that chooses which number is the value, such as bbq's `headline`,
    may put it on its own scale). Results carry it in meta["value"]."""
    out = {field: getattr(metric_class, attr) for attr, field in DECLARED.items() if hasattr(metric_class, attr)}
    by_param = getattr(metric_class, "value_by_param", None)
    if params and isinstance(by_param, dict):
        for name, by_value in by_param.items():
            chosen = by_value.get(params.get(name)) if isinstance(by_value, dict) and name in params else None
            if isinstance(chosen, dict):
                out.update({DECLARED[attr]: v for attr, v in chosen.items() if attr in DECLARED})
    return out


def kind_of_class(metric_class: type) -> ValueKind:
    """The kind of the number a metric class declares."""
    return _from_declared(declared_value(metric_class))


_TYPES = {  # what a declared field must be for a report to use it (a results file is outside input)
    "label": lambda v: isinstance(v, str), "name": lambda v: isinstance(v, str), "unit": lambda v: isinstance(v, str),
    "reference": lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
    "signed": lambda v: isinstance(v, bool), "digits": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10,
    "scale": lambda v: isinstance(v, str),
    "more_biased": lambda v: v in MORE_BIASED,
}


def _from_declared(declared: Any) -> ValueKind:
    if isinstance(declared, dict) and all(_TYPES[k](v) for k, v in declared.items() if k in _TYPES):
        fields = {k: v for k, v in declared.items() if k in _TYPES}
        kind = attrs.evolve(_VALUE, **fields)
        if not fields.get("name"):  # declared without a name: the label says it
            kind = attrs.evolve(kind, name=fields["label"] if fields.get("label") not in (None, "value") else _VALUE.name)
        return kind
    return _VALUE


def kind_of(result: Result) -> ValueKind:
    """The kind of a result's number, as its metric declared it (carried in meta["value"]); a plain
    value when the result carries no (well-formed) declaration."""
    return _from_declared((result.meta or {}).get("value"))


# --- p-values -------------------------------------------------------------------------------------


def p_floor(result: Result) -> float | None:
    """The smallest p a sampled permutation test can report, (0+1)/(m+1): a p there is a bound."""
    c = result.convention or {}
    if c.get("method") == "sampled" and isinstance(c.get("permutations"), int) and c["permutations"] > 0:
        return 1.0 / (c["permutations"] + 1)
    return None


UNDERFLOW = 1e-300  # below it a p-value is reported as this bound (CEAT gives log10_p beside it)


def format_p(p: float | None, floor: float | None = None, *, log10_p: float | None = None) -> str:
    """One format everywhere: two significant digits, scientific below 0.001; at a sampled test's
    floor the value is a bound (`<=1.0e-05`); a p that underflows is written from its log10."""
    if p is None:
        return "-"
    if floor is not None and p <= floor * (1 + 1e-9):
        return f"<={floor:.1e}"
    if log10_p is not None and math.isfinite(log10_p) and p <= UNDERFLOW and log10_p < math.log10(UNDERFLOW):
        return f"<1e{math.ceil(log10_p)}"  # a bound from the exact log10 p, never a number that reads as exact
    if p == 0.0:
        return f"<{UNDERFLOW:.0e}"
    if p < 1e-3:
        return f"{p:.1e}"
    return f"{p:#.2g}"


def result_p(result: Result) -> str:
    return format_p(result.p_value, p_floor(result), log10_p=(result.figures or {}).get("log10_p"))


ALPHA_MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
MARKS_NOTE = "* p < 0.05, ** p < 0.01, *** p < 0.001"


def significance(p: float | None) -> str:
    if p is None:
        return ""
    for alpha, mark in ALPHA_MARKS:
        if p < alpha:
            return mark
    return ""


# --- models, tests and settings -------------------------------------------------------------------

_GENERIC = {"model", "models", "vectors", "embeddings", "snapshot", "checkpoint", "final", "main", "out", "output"}


def _base_name(spec: str) -> str:
    spec = re.sub(r"\[.*\]$", "", spec)
    _, _, location = spec.partition(":")
    location = location or spec
    if location.startswith("pkg:"):
        location = location[4:]
    parts = [p for p in PurePosixPath(location.replace("\\", "/")).parts if p not in ("/", ".")]
    if not parts:
        return spec
    last = parts[-1]
    stem = last.rsplit(".", 1)[0] if "." in last and not last.startswith(".") else last
    if stem.lower() in _GENERIC and len(parts) > 1:
        stem = f"{parts[-2]}/{stem}"
    return stem


def short_models(results: Sequence[Result]) -> dict[str, str]:
    """Model label -> a short, distinct name: the `name` given in the experiment file, else the
    file's or folder's base name (with the options in brackets where two would look the same)."""
    labels = list(dict.fromkeys(r.model for r in results))
    given = {r.model: r.meta.get("model_name") for r in results if r.meta.get("model_name")}
    out = {label: given.get(label) or _base_name(label) for label in labels}
    counts: dict[str, int] = {}
    for name in out.values():
        counts[name] = counts.get(name, 0) + 1
    for label, name in list(out.items()):
        if counts[name] > 1:
            options = re.search(r"\[(.*)\]$", label)
            out[label] = f"{name}[{options.group(1)}]" if options else name
    # Still the same (two folders with one base name): number them.
    seen: dict[str, int] = {}
    for label, name in list(out.items()):
        if list(out.values()).count(name) > 1:
            seen[name] = seen.get(name, 0) + 1
            out[label] = f"{name}#{seen[name]}"
    return out


def short_test(name: str) -> str:
    """An installed word set keeps its name (`en/weat6`); a file given by path is shown by its stem."""
    parts = name.replace("\\", "/").split("/")
    if len(parts) == 2 and "." not in parts[1] and parts[0]:
        return name
    last = parts[-1]
    return last.rsplit(".", 1)[0] if "." in last else last


def short_tests(results: Sequence[Result]) -> dict[str, str]:
    """Word-set name -> short name, distinct (a path stays whole where two stems would collide)."""
    names = list(dict.fromkeys(r.wordset for r in results))
    out = {n: short_test(n) for n in names}
    values = list(out.values())
    return {n: (s if values.count(s) == 1 else n) for n, s in out.items()}


def test_title(result: Result) -> str:
    """The word set's own title ("flowers/insects, pleasant/unpleasant"), recorded with the result."""
    return str((result.meta or {}).get("title") or "")


def variant_label(metric: str, settings: str) -> str:
    """A column name for one metric with its varying settings. A setting named `level` (whose value is
    a word) names the variant by its initial, as May et al. name SEAT's: s-SEAT, w-SEAT, w-CEAT."""
    parts = [p for p in settings.split(", ") if p]
    name = metric.upper() if len(metric) <= 5 else metric
    level = next((p for p in parts if p.startswith("level=") and p.split("=", 1)[1].isalpha()), None)
    if level:
        name = f"{level.split('=', 1)[1][0]}-{name}"
        parts.remove(level)
    return name + (f" {', '.join(parts)}" if parts else "")


def convention_text(result: Result) -> str:
    """The p-value convention in words: exact or sampled, permutations, ddof, sidedness, seed."""
    c = result.convention or {}
    if not c.get("method"):
        return ""
    bits = []
    if c.get("method") == "exact":
        bits.append(f"exact test over {c.get('permutations'):,} partitions" if c.get("permutations") else "exact test")
    elif c.get("method") == "sampled":
        bits.append(f"sampled permutation test ({c.get('permutations'):,} permutations, seed {c.get('seed')})")
    else:
        bits.append(str(c.get("method")))
    if c.get("ddof") is not None:
        bits.append(f"ddof={c.get('ddof')}")
    alt = c.get("alternative")
    if alt:
        bits.append({"greater": "one-sided (greater)", "less": "one-sided (less)", "two-sided": "two-sided"}.get(alt, alt))
    return ", ".join(bits)
