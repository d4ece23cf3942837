"""How robust a finding is to design choices: specification curves of a run (Simonsohn et al. 2020).

"Mind Your Bias" (Husse & Spitz 2022) shows that choices a paper rarely discusses (names or group
terms for the groups, templates or natural contexts, sentence or word vectors, pooling, layer,
metric) move a bias score enough to flip its conclusion. A run whose grid varies such choices
answers one question many ways; this module lines the answers up.

A *specification* is one result (status ok, with a value) and the choices it made. Results are
grouped into *curves*, one per question:

- the concept of the test: the word set's `concept` (variants such as en/weat6 with names and
  en/gender-career-terms with group terms share `gender-career`), else the word set itself;
- the model, whatever its options (the layer or pooling given in `[[models]]` are choices);
- the scale of the value: effect sizes d (WEAT, SEAT, LPBS) and CEAT's combined effect size are all
  standardised mean differences and share a curve; other values (a CrowS %, an RND) only with their
  own.

The choices of a specification are its metric, its parameters, its model's options and its test
variant; only those that differ within a curve are shown. Significance is the report's
multiple-testing correction (Holm over the run's family, as in every figure), so a curve of 24
specifications is not 24 chances at p < 0.05. Everything is computed from the results file alone.
The report's tables and files are written by `robustness_report.py`, its figures drawn by
`robustness_figure.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.model import OK, Result
from bias.core.reports.tables import Report
from bias.core.reports.values import ValueKind, _base_name, kind_of, short_test

ALPHA = 0.05
# The order in which choices are listed under a curve; others follow alphabetically, the seed last.
_ORDER = ("test", "metric", "level", "pooling", "word_pooling", "layer", "templates", "corpus")
_FILES = frozenset({"templates", "corpus"})
_MODEL_OPTIONS = re.compile(r"^(?P<spec>.*)\[(?P<options>[^\[\]]*)\]$")


@attrs.frozen
class Specification:
    """One result in a curve and the choice it made on every varied dimension."""

    result: Result
    choices: dict[str, str]
    p_adjusted: float | None  # Holm over the report's family; None: no p-value

    @property
    def effect(self) -> float:
        return float(self.result.effect_size)  # type: ignore[arg-type]

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.p_adjusted is not None and self.p_adjusted < alpha


@attrs.frozen
class Curve:
    """The specifications answering one question (concept, model, scale), sorted by value."""

    concept: str
    model: str
    scale: ValueKind
    specifications: list[Specification]
    dimensions: list[str]  # the choices that vary, in display order
    tests: list[str]  # word sets in the curve
    alpha: float = ALPHA

    @property
    def n(self) -> int:
        return len(self.specifications)

    @property
    def effects(self) -> np.ndarray:
        return np.array([s.effect for s in self.specifications], dtype=np.float64)

    @property
    def median(self) -> float:
        return float(np.median(self.effects))

    @property
    def low(self) -> float:
        return float(self.effects.min())

    @property
    def high(self) -> float:
        return float(self.effects.max())

    @property
    def same_sign_share(self) -> float | None:
        """Share of specifications on the same side of the no-bias value as the median (None where
        the value has no such reference, as for an accuracy)."""
        ref = self.scale.reference
        if ref is None:
            return None
        signs = np.sign(self.effects - ref)
        return float(np.mean(signs == np.sign(self.median - ref)))

    @property
    def with_p(self) -> int:
        return sum(s.p_adjusted is not None for s in self.specifications)

    @property
    def significant_share(self) -> float | None:
        """Share of all specifications significant after correction (one without a p-value is not);
        None when no specification has a p-value."""
        if not self.with_p:
            return None
        return sum(s.significant(self.alpha) for s in self.specifications) / self.n

    @property
    def title(self) -> str:
        return f"{self.concept} | {self.model}"

    @property
    def value_label(self) -> str:
        """The value's label, with its scale where the scale is not the label's own (bbq's `bias
        score (s_AMB)`), since one concept on one model may have a curve on each."""
        label, scale = self.scale.label, self.scale.scale_name
        return label if scale == label else f"{label} ({scale})"

    @property
    def key(self) -> str:
        """What tells curves apart: one concept on one model may have curves on two scales (d,
        RND)."""
        return f"{self.title} | {self.scale.scale_name}"


def _model_parts(label: str) -> tuple[str, dict[str, str]]:
    """`hf:x[layer=3,word_pooling=mean]` -> (`hf:x`, {layer: 3, word_pooling: mean}); see
    ModelConfig.label."""
    found = _MODEL_OPTIONS.match(label)
    if not found:
        return label, {}
    options: dict[str, str] = {}
    for part in found.group("options").split(","):
        key, sep, value = part.partition("=")
        if not sep:  # not an options list written by ModelConfig.label: keep the label whole
            return label, {}
        options[key.strip()] = value.strip()
    return found.group("spec"), options


def _text(value: Any) -> str:
    return "default" if value is None else str(value)


def _concept(r: Result) -> str:
    meta = r.meta or {}
    concept = meta.get("concept")
    if not concept:
        return short_test(r.wordset)
    language = meta.get("language")
    return f"{language}/{concept}" if language else str(concept)


def _test_choice(r: Result) -> str:
    descriptor = (r.meta or {}).get("descriptor")
    test = short_test(r.wordset)
    return f"{descriptor} ({test})" if descriptor else test


def _scale(members: Sequence[Result]) -> ValueKind:
    """The value kind of a curve: its members' own, or, where metrics that declare one scale
    (`value_scale`, such as the d of WEAT and CEAT's combined d) meet, that scale named by every
    kind on it."""
    kinds = list(dict.fromkeys(kind_of(r) for r in members))
    if len(kinds) == 1:
        return kinds[0]
    return attrs.evolve(
        kinds[0], label=kinds[0].scale_name, name="; ".join(dict.fromkeys(k.name for k in kinds))
    )


def _all_choices(r: Result) -> dict[str, str]:
    """Every choice a result made: test variant, metric, parameters, model options (a parameter
    left unset, such as SEAT's layer, takes the model's option of the same name)."""
    _, options = _model_parts(r.model)
    params = dict(r.params or {})
    out = {"test": _test_choice(r), "metric": r.metric}
    for key, value in options.items():
        out[key] = value
    for key, value in params.items():
        if value is None and key in options:
            continue
        # A file given as a parameter (templates, corpus) is told apart by its name, not its whole
        # path.
        out[key] = short_test(value) if key in _FILES and isinstance(value, str) else _text(value)
    if r.seed is not None:
        out["seed"] = str(r.seed)
    return out


def _dimension_order(name: str) -> tuple[int, str]:
    if name in _ORDER:
        return (_ORDER.index(name), name)
    return (len(_ORDER) + (1 if name == "seed" else 0), name)


def curves(report: Report, alpha: float = ALPHA) -> list[Curve]:
    """Every curve of a report (including those with one specification), in first-seen order."""
    groups: dict[tuple[str, str, str, str], list[Result]] = {}
    for r in report.results:
        if r.status != OK or r.effect_size is None or not math.isfinite(r.effect_size):
            continue
        spec, _ = _model_parts(r.model)
        model = (r.meta or {}).get("model_name") or _base_name(spec)
        key = (_concept(r), str(model), spec, kind_of(r).scale_name)
        groups.setdefault(key, []).append(r)
    out = []
    for (concept, model, _, _), members in groups.items():
        choices = [_all_choices(r) for r in members]
        names = sorted({k for c in choices for k in c}, key=_dimension_order)
        varying = [
            k
            for k in names
            if len({c[k] for c in choices if k in c}) > 1
            or (k == "test" and len({r.wordset for r in members}) > 1)
        ]
        specs = []
        for r, c in zip(members, choices):
            adj = report.adjusted.get(r.key)
            specs.append(
                Specification(r, {k: c[k] for k in varying if k in c}, adj.holm if adj else None)
            )
        specs.sort(key=lambda s: (s.effect, s.result.key))
        out.append(
            Curve(
                concept,
                model,
                _scale(members),
                specs,
                varying,
                list(dict.fromkeys(r.wordset for r in members)),
                alpha,
            )
        )
    return out


def robust_curves(report: Report, alpha: float = ALPHA) -> list[Curve]:
    """The curves with two or more specifications; a user error when the run has none."""
    found = curves(report, alpha)
    several = [c for c in found if c.n >= 2]
    if not several:
        what = (
            f"{len(found)} test(s), each with one specification"
            if found
            else "no result with a value"
        )
        raise BiasError(
            f"No test in this run has two or more specifications to compare ({what}).",
            "Run one test across design choices, e.g. several metrics, levels, poolings or layers "
            "in an experiment file's [grid] or [[models]] (see examples/robustness.toml).",
        )
    return several


def share_text(x: float | None) -> str:
    """A curve's share as its tables and figure show it: a whole percentage, "-" where there is
    none."""
    return "-" if x is None else f"{x:.0%}"
