"""The specification curve of `bias report --robustness` (Simonsohn et al. 2020): a curve's values
sorted, with their intervals, filled where significant after correction, above a panel that marks
the choice each specification made on each varied dimension. One file per curve.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bias.core.reports.plotting import pyplot, save
from bias.core.reports.robustness import Curve, share_text
from bias.core.reports.tables import ci_of
from bias.core.text import natural_key

_POSITIVE, _NEGATIVE, _GREY = "#b2182b", "#2166ac", "#8a8a8a"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-").lower() or "curve"


def figure_names(found: Sequence[Curve]) -> dict[str, str]:
    """Curve key -> file stem `robustness-<concept>-<model>`, with the scale where one concept on
    one model has curves on several scales (`robustness-<concept>-<model>-<scale>`), numbered where
    two would still collide."""
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
    """The curve above its choice panel: values sorted with intervals, filled where significant
    after correction; below, a dot for the choice each specification made on each varied
    dimension."""
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
    same = share_text(curve.same_sign_share)
    sig = share_text(curve.significant_share)
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
