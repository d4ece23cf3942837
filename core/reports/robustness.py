"""How robust a finding is to design choices: specification curves of a run (Simonsohn et al. 2020).

"Mind Your Bias" (Husse & Spitz 2022) shows that choices a paper rarely discusses (names or group terms
for the groups, templates or natural contexts, sentence or word vectors, pooling, layer, metric) move a
bias score enough to flip its conclusion. A run whose grid varies such choices answers one question
many ways; this module lines the answers up.

A *specification* is one result (status ok, with a value) and the choices it made. Results are
grouped into *curves*, one per question:

- the concept of the test: the word set's `concept` (variants such as en/weat6 with names and
  en/gender-career-terms with group terms share `gender-career`), else the word set itself;
- the model, whatever its options (the layer or pooling given in `[[models]]` are choices);
- the scale of the value: effect sizes d (WEAT, SEAT, LPBS) and CEAT's combined effect size are all
  standardised mean differences and share a curve; other values (a CrowS %, an RND) only with their own.

The choices of a specification are its metric, its parameters, its model's options and its test
variant; only those that differ within a curve are shown. Significance is the report's
multiple-testing correction (Holm over the run's family, as in every figure), so a curve of 24
specifications is not 24 chances at p < 0.05. Everything is computed from the results file alone.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from bias.core.text import natural_key
from bias.core.errors import BiasError
from bias.core.model import OK, Result
from bias.core.reports.tables import Report, ci_of, md_text
from bias.core.runs.folder import open_in_run
from bias.core.reports.values import ValueKind, _base_name, format_p, kind_of, short_test

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
        """Share of specifications on the same side of the no-bias value as the median (None where the
        value has no such reference, as for an accuracy)."""
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
        """The value's label, with its scale where the scale is not the label's own (bbq's `bias score
        (s_AMB)`), since one concept on one model may have a curve on each."""
        label, scale = self.scale.label, self.scale.scale_name
        return label if scale == label else f"{label} ({scale})"

    @property
    def key(self) -> str:
        """What tells curves apart: one concept on one model may have curves on two scales (d, RND)."""
        return f"{self.title} | {self.scale.scale_name}"


def _model_parts(label: str) -> tuple[str, dict[str, str]]:
    """`hf:x[layer=3,word_pooling=mean]` -> (`hf:x`, {layer: 3, word_pooling: mean}); see ModelConfig.label."""
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
    """The value kind of a curve: its members' own, or, where metrics that declare one scale (`value_scale`,
    such as the d of WEAT and CEAT's combined d) meet, that scale named by every kind on it."""
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
        # A file given as a parameter (templates, corpus) is told apart by its name, not its whole path.
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
            "Run one test across design choices, e.g. several metrics, levels, poolings or layers in an experiment "
            "file's [grid] or [[models]] (see examples/robustness.toml).",
        )
    return several


# --- tables -------------------------------------------------------------------------------------


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _number(kind: ValueKind, x: float) -> str:
    return kind.format(x, 2)


def summary_records(found: Sequence[Curve]) -> list[dict[str, Any]]:
    """One unformatted row per curve, for CSV and programs."""
    rows = []
    for c in found:
        rows.append(
            {
                "concept": c.concept,
                "model": c.model,
                "value": c.value_label,
                "specifications": c.n,
                "same_sign_share": c.same_sign_share,
                "significant_share": c.significant_share,
                "with_p_value": c.with_p,
                "alpha": c.alpha,
                "median": c.median,
                "min": c.low,
                "max": c.high,
                "choices_varied": "; ".join(c.dimensions),
                "tests": "; ".join(c.tests),
            }
        )
    return rows


def specification_records(found: Sequence[Curve]) -> list[dict[str, Any]]:
    """One row per specification (in curve order, sorted by value), with every varied choice."""
    dims = list(dict.fromkeys(d for c in found for d in c.dimensions))
    rows = []
    for c in found:
        for rank, s in enumerate(c.specifications, start=1):
            ci = ci_of(s.result)
            rows.append(
                {
                    "concept": c.concept,
                    "model": c.model,
                    "rank": rank,
                    "wordset": s.result.wordset,
                    **{d: s.choices.get(d, "") for d in dims},
                    "effect_size": s.effect,
                    "ci_low": ci[0] if ci else None,
                    "ci_high": ci[1] if ci else None,
                    "p_value": s.result.p_value,
                    "p_holm": s.p_adjusted,
                    "significant": s.significant(c.alpha),
                    "key": s.result.key,
                }
            )
    return rows


def _csv(records: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    if records:
        writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
        writer.writeheader()
        for rec in records:
            writer.writerow({k: ("" if v is None else v) for k, v in rec.items()})
    return buffer.getvalue()


def to_csv(found: Sequence[Curve]) -> str:
    return _csv(summary_records(found))


def specifications_csv(found: Sequence[Curve]) -> str:
    return _csv(specification_records(found))


def notes(report: Report, found: Sequence[Curve]) -> list[str]:
    fam = report.family
    return [
        "Specification: one result of the test, with the choices it made (metric, level, pooling, layer, "
        "test variant, ...); a curve holds every specification of one concept on one model.",
        "Same sign: share of specifications on the same side of the no-bias value as the median.",
        f"Significant: share of all specifications with Holm-adjusted p < {found[0].alpha if found else ALPHA:g} "
        f"(family: {fam}); one without a p-value counts as not significant.",
        "Median and range: of the value over the specifications.",
    ]


def to_markdown(
    report: Report, found: Sequence[Curve], figures: dict[str, str] | None = None
) -> str:
    lines = ["# Robustness to design choices", "", f"Run: {md_text(report.title)}.", ""]
    lines += [
        "| Concept | Model | Value | Specs | Same sign | Significant | Median | Range | Choices varied |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in found:
        rng = f"{_number(c.scale, c.low)} to {_number(c.scale, c.high)}"
        cells = [
            c.concept,
            c.model,
            c.value_label,
            str(c.n),
            _share(c.same_sign_share),
            _share(c.significant_share),
            _number(c.scale, c.median),
            rng,
            ", ".join(c.dimensions),
        ]
        lines.append("| " + " | ".join(md_text(x) for x in cells) + " |")
    lines += ["", "Notes:", ""] + [f"- {n}" for n in notes(report, found)]
    titles = [c.title for c in found]
    for c in found:
        scale = f" ({c.value_label})" if titles.count(c.title) > 1 else ""
        lines += ["", f"## {md_text(c.concept)} on {md_text(c.model)}{scale}", ""]
        if figures and c.key in figures:
            lines += [f"![Specification curve of {md_text(c.concept)}]({figures[c.key]})", ""]
        lines.append(
            "| # | " + " | ".join(md_text(d) for d in c.dimensions) + " | Value | p (Holm) |"
        )
        lines.append("|---|" + "---|" * len(c.dimensions) + "---|---|")
        for rank, s in enumerate(c.specifications, start=1):
            marks = "*" if s.significant(c.alpha) else ""
            cells = [
                str(rank),
                *(s.choices.get(d, "") for d in c.dimensions),
                _number(c.scale, s.effect),
                (format_p(s.p_adjusted) + marks) if s.p_adjusted is not None else "-",
            ]
            lines.append("| " + " | ".join(md_text(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


# --- figure --------------------------------------------------------------------------------------

_POSITIVE, _NEGATIVE, _GREY = "#b2182b", "#2166ac", "#8a8a8a"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-").lower() or "curve"


def figure_names(found: Sequence[Curve]) -> dict[str, str]:
    """Curve key -> file stem `robustness-<concept>-<model>`, with the scale where one concept on one
    model has curves on several scales (`robustness-<concept>-<model>-<scale>`), numbered where two
    would still collide."""
    titles = [c.title for c in found]
    out: dict[str, str] = {}
    for c in found:
        stem = f"robustness-{_slug(c.concept)}-{_slug(c.model)}"
        if titles.count(c.title) > 1:
            stem += f"-{_slug(c.scale.scale_name)}"
        base, i = stem, 1
        while stem in out.values():
            i += 1
            stem = f"{base}-{i}"
        out[c.key] = stem
    return out


def draw(curve: Curve, path_stem: Path, formats: Sequence[str] = ("png",)) -> list[Path]:
    """The curve above its choice panel: values sorted with intervals, filled where significant after
    correction; below, a dot for the choice each specification made on each varied dimension."""
    from bias.core.reports.plotting import pyplot, save

    plt = pyplot()
    specs = curve.specifications
    n = curve.n
    ref = curve.scale.reference
    rows = [(d, v) for d in curve.dimensions for v in _values(curve, d)]
    width = min(24.0, max(7.0, 3.2 + 0.24 * n))
    top_h, row_h = 3.2, 0.24
    fig, (ax, panel) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(width, top_h + 0.9 + row_h * max(len(rows), 1)),
        layout="constrained",
        gridspec_kw={"height_ratios": [top_h, max(row_h * len(rows), 0.6)]},
    )
    xs = np.arange(n)
    for x, s in zip(xs, specs):
        colour = _GREY
        if s.significant(curve.alpha):
            colour = _POSITIVE if ref is None or s.effect >= ref else _NEGATIVE
        ci = ci_of(s.result)
        if ci is not None:
            ax.plot([x, x], ci, color=colour, linewidth=1.2, alpha=0.55)
        filled = s.significant(curve.alpha)
        ax.plot(
            [x],
            [s.effect],
            "o",
            color=colour,
            markerfacecolor=colour if filled else "white",
            markersize=5.5,
            zorder=3,
        )
    if ref is not None:
        ax.axhline(ref, color="black", linewidth=0.8)
    ax.axhline(curve.median, color="#555555", linewidth=0.8, linestyle=":")
    no_bias = "" if ref is None else f"\n({ref:g}{curve.scale.unit} = no bias)"
    ax.set_ylabel(f"{curve.value_label}{no_bias}", fontsize=8)
    same = _share(curve.same_sign_share)
    sig = _share(curve.significant_share)
    ax.set_title(
        f"{curve.concept} on {curve.model}: {n} specifications\n"
        f"same sign as the median: {same}; significant after Holm correction: {sig}",
        fontsize=9.5,
        loc="left",
    )
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
    handles = [
        plt.Line2D(
            [],
            [],
            color=_POSITIVE,
            marker="o",
            linestyle="",
            label=f"significant, above {ref:g}" if ref is not None else "significant",
        ),
        plt.Line2D(
            [],
            [],
            color=_NEGATIVE,
            marker="o",
            linestyle="",
            label=f"significant, below {ref:g}" if ref is not None else "significant",
        ),
        plt.Line2D(
            [],
            [],
            color=_GREY,
            marker="o",
            markerfacecolor="white",
            linestyle="",
            label=f"not significant (Holm p >= {curve.alpha:g})",
        ),
        plt.Line2D(
            [],
            [],
            color="#555555",
            linestyle=":",
            label=f"median {curve.scale.format(curve.median, 2)}",
        ),
    ]
    if ref is None:
        handles.pop(1)
    if any(ci_of(s.result) for s in specs):
        handles.append(
            plt.Line2D(
                [], [], color=_GREY, linewidth=1.2, alpha=0.55, label="bar: bootstrap interval"
            )
        )
    fig.legend(
        handles=handles,
        fontsize=7,
        loc="outside lower center",
        frameon=False,
        ncol=min(len(handles), 3),
    )
    # The choice panel: one row per (dimension, value), grouped by dimension.
    for y, (dim, value) in enumerate(rows):
        hit = [x for x, s in zip(xs, specs) if s.choices.get(dim) == value]
        panel.plot(hit, [y] * len(hit), "s", color="#333333", markersize=4.2)
    starts = [i for i, (d, _) in enumerate(rows) if i == 0 or rows[i - 1][0] != d]
    for i in starts[1:]:
        panel.axhline(i - 0.5, color="#bbbbbb", linewidth=0.7)
    panel.set_yticks(range(len(rows)))
    panel.set_yticklabels([f"{d}: {v}" for d, v in rows], fontsize=7.5)
    panel.set_ylim(len(rows) - 0.5, -0.5)
    panel.set_xlim(-0.7, n - 0.3)
    panel.set_xticks(xs)
    panel.set_xticklabels([str(i + 1) for i in xs], fontsize=6.5 if n > 30 else 7.5)
    panel.set_xlabel("specification, sorted by value", fontsize=8)
    for x in xs:
        panel.axvline(x, color="#f2f2f2", linewidth=0.6, zorder=0)
    written = save(fig, path_stem.parent, path_stem.name, tuple(formats))
    plt.close(fig)
    return written


def _values(curve: Curve, dim: str) -> list[str]:
    """A dimension's values in a readable order: numbers numerically, the rest as first seen."""
    seen = list(dict.fromkeys(s.choices[dim] for s in curve.specifications if dim in s.choices))

    def key(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return (
        sorted(seen, key=key)
        if all(key(v)[0] == 0 for v in seen)
        else sorted(seen, key=natural_key)
    )


def write_robustness(
    report: Report,
    folder: Path,
    formats: Sequence[str] = ("md", "csv", "png"),
    alpha: float = ALPHA,
) -> tuple[list[Curve], list[Path]]:
    """Curves with two or more specifications, their figures (`robustness-<concept>-<model>.png`) and
    tables (robustness.md; robustness.csv, one row per curve; robustness-specifications.csv)."""
    found = robust_curves(report, alpha)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    names = figure_names(found)
    images = tuple(f for f in formats if f in ("png", "svg"))
    figures: dict[str, str] = {}
    if images:
        for c in found:
            paths = draw(c, folder / names[c.key], images)
            written += paths
            figures[c.key] = paths[-1].name if paths else ""
    if "md" in formats:
        with open_in_run(folder, "robustness.md") as fh:
            fh.write(to_markdown(report, found, figures))
        written.append(folder / "robustness.md")
    if "csv" in formats:
        for name, text in (
            ("robustness.csv", to_csv(found)),
            ("robustness-specifications.csv", specifications_csv(found)),
        ):
            with open_in_run(folder, name) as fh:
                fh.write(text)
            written.append(folder / name)
    return found, written
