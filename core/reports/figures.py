"""Figures of a report (matplotlib, Agg backend, PNG and SVG), drawn from the same `Report` as the
tables.

- forest: each test's value with its bootstrap interval, one facet per metric with that metric's
  own reference line (0 for d, 50% for CrowS-style scores); tests (with their titles) as rows,
  settings as sub-labels, models as a legend of distinct colour-and-marker pairs; filled:
  significant after Holm;
- heatmap: one panel per metric, models (and settings) x tests, the colour scale symmetric around
  the metric's reference and labelled with its unit, values written in the cells while they are
  legible;
- words: the per-item association s(w) of every target word, sorted, coloured by set (WEAT/SEAT;
  `word_figure.py`);
- languages: for runs over several languages, languages x tests (weat6 in nl, de, ...) per metric
  (`language_figure.py`);
- p-vs-effect: -log10 p against the value, the 0.05 line and the sampled test's p floor marked.

Every figure grows with what it shows and stays readable for a 100-experiment grid. What the
figures share (matplotlib itself, saving, styles per model) is in `plotting.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bias.core.model import Result
from bias.core.reports.language_figure import languages
from bias.core.reports.plotting import (
    FORMATS,
    TITLE_AT_TOP,
    label_cells,
    model_styles,
    plotted,
    pyplot,
    save,
)
from bias.core.reports.tables import Report, ci_of, significance
from bias.core.reports.values import (
    kind_of,
    p_floor,
    short_models,
    short_tests,
    test_title,
    variant_label,
)
from bias.core.reports.word_figure import words
from bias.core.text import natural_key

FIGURES = ("forest", "heatmap", "words", "languages", "p-vs-effect", "selection")


def _holm_significant(report: Report, r: Result, alpha: float = 0.05) -> bool:
    adj = report.adjusted.get(r.key)
    return bool(adj and adj.holm < alpha)


def _test_label(r: Result, tests: dict[str, str], with_title: bool = True) -> str:
    title = test_title(r) if with_title else ""
    if title and len(title) > 38:
        title = title[:37] + "…"
    return f"{tests[r.wordset]}  {title}" if title else tests[r.wordset]


def forest(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    plt = pyplot()
    rows = plotted(report)
    metrics = list(dict.fromkeys(r.metric for r in rows))
    names = short_models(report.results)
    tests = short_tests(report.results)
    models = list(dict.fromkeys(names[r.model] for r in rows))
    styles = model_styles(models)
    # One facet per metric; within it one row per (test, settings), models side by side in the row.
    facets = []
    for metric in metrics:
        members = [r for r in rows if r.metric == metric]
        keys = list(dict.fromkeys((r.wordset, report.settings.get(r.key, "")) for r in members))
        keys.sort(key=lambda k: (natural_key(k[0]), natural_key(k[1])))
        facets.append((metric, members, keys))
    heights = [max(1.5, len(k)) for _, _, k in facets]
    per_row = 0.28 + 0.07 * min(len(models), 6)
    fig_h = (
        1.2 + per_row * sum(heights) + 0.7 * len(facets) + 0.2 * math.ceil((len(models) + 1) / 3)
    )
    fig, axes = plt.subplots(
        len(facets),
        1,
        figsize=(8.5, fig_h),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, (metric, members, keys) in zip(axes[:, 0], facets):
        kind = kind_of(members[0])
        index = {k: i for i, k in enumerate(keys)}
        n = len(models)
        for r in members:
            y = len(keys) - 1 - index[(r.wordset, report.settings.get(r.key, ""))]
            offset = (
                (models.index(names[r.model]) - (n - 1) / 2) * (0.7 / max(n, 1)) if n > 1 else 0.0
            )
            colour, marker = styles[names[r.model]]
            ci = ci_of(r)
            if ci is not None:
                ax.plot(ci, [y + offset, y + offset], color=colour, linewidth=1.4)
            # hollow only for a p that is not significant
            filled = r.p_value is None or _holm_significant(report, r)
            ax.plot(
                [r.effect_size],
                [y + offset],
                marker,
                color=colour,
                markerfacecolor=colour if filled else "white",
                markersize=5.5,
            )
        labels = []
        for wordset, settings in keys:
            example = next(r for r in members if r.wordset == wordset)
            label = _test_label(example, tests, with_title=len(keys) <= 40)
            if settings:
                label += f"\n{settings}"
            labels.append(label)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(list(reversed(labels)), fontsize=7 if len(keys) > 20 else 8)
        ax.set_ylim(-0.7, len(keys) - 0.3)
        if kind.reference is not None:
            ax.axvline(kind.reference, color="grey", linewidth=0.8, linestyle="--")
        for y in range(len(keys) - 1):
            ax.axhline(y + 0.5, color="#eeeeee", linewidth=0.6, zorder=0)
        bars = {
            r.figures.get("ci_method")
            if r.figures.get("ci_method") in ("normal", "wald")
            else "bootstrap"
            for r in members
            if ci_of(r)
        }
        bars_text = {
            "normal": "95% normal-approximation interval",
            "bootstrap": "bootstrap interval",
            "wald": "Wald interval of the model's coefficient",
        }
        ax.set_xlabel(
            kind.axis
            + (f"  (bars: {', '.join(bars_text[b] for b in sorted(bars))})" if bars else ""),
            fontsize=8,
        )
        ax.set_title(variant_label(metric, ""), fontsize=9, loc="left", y=TITLE_AT_TOP)
        ax.tick_params(axis="x", labelsize=8)
    handles = [
        plt.Line2D([], [], color=styles[m][0], marker=styles[m][1], linestyle="", label=m)
        for m in models
    ]
    # no p-value, no hollow point
    if any(r.p_value is not None for _, members, _ in facets for r in members):
        handles.append(
            plt.Line2D(
                [],
                [],
                color="black",
                marker="o",
                markerfacecolor="white",
                linestyle="",
                label="hollow: not significant (Holm)",
            )
        )
    fig.suptitle(report.title, fontsize=10)
    fig.legend(
        handles=handles,
        fontsize=7,
        loc="outside lower center",
        ncol=min(3, len(handles)),
        frameon=False,
    )
    written = save(fig, folder, "forest", formats)
    plt.close(fig)
    return written


def heatmap(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    import numpy as np

    plt = pyplot()
    rows = plotted(report)
    names = short_models(report.results)
    tests = short_tests(report.results)
    metrics = list(dict.fromkeys(r.metric for r in rows))
    panels = []
    for metric in metrics:
        members = [r for r in rows if r.metric == metric]
        row_keys = sorted({_row_key(report, names, r) for r in members}, key=natural_key)
        cols = sorted({tests[r.wordset] for r in members}, key=natural_key)
        panels.append((metric, members, row_keys, cols))
    max_cols = max(len(p[3]) for p in panels)
    cell_w = 0.62 if max_cols <= 12 else 0.36
    width = max(6.0, 2.8 + cell_w * max_cols)
    heights = [1.3 + 0.3 * len(p[2]) + 0.06 * max(len(c) for c in p[3]) for p in panels]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(width, sum(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, (metric, members, row_keys, cols) in zip(axes[:, 0], panels):
        kind = kind_of(members[0])
        grid = np.full((len(row_keys), len(cols)), np.nan)
        text = [["" for _ in cols] for _ in row_keys]
        digits = _cell_digits(kind, [r.effect_size for r in members])
        for r in members:
            i, j = row_keys.index(_row_key(report, names, r)), cols.index(tests[r.wordset])
            grid[i, j] = r.effect_size
            adj = report.adjusted.get(r.key)
            text[i][j] = (
                f"{kind.format(r.effect_size, digits)}{significance(adj.holm) if adj else ''}"
            )
        ref = kind.reference if kind.reference is not None else float(np.nanmean(grid))
        spread = _spread(members, ref)
        cmap = plt.get_cmap("RdBu_r").with_extremes(bad="#dddddd")
        image = ax.imshow(
            np.ma.masked_invalid(grid),
            cmap=cmap,
            vmin=ref - spread,
            vmax=ref + spread,
            aspect="auto",
        )
        legible = max_cols <= 14 and len(row_keys) <= 40
        if legible:
            label_cells(ax, grid, text, ref, spread)
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels(cols, rotation=40, ha="right", fontsize=7)
        ax.set_yticks(range(len(row_keys)))
        ax.set_yticklabels(row_keys, fontsize=7)
        marks = (
            " (* Holm p<0.05, ** <0.01, *** <0.001)"
            if any(report.adjusted.get(r.key) for r in members) and legible
            else ""
        )
        grey = "; grey: no result (refused, failed or not run)" if np.isnan(grid).any() else ""
        ax.set_title(
            f"{variant_label(metric, '')}: {kind.name}{marks}{grey}",
            fontsize=8,
            loc="left",
            y=TITLE_AT_TOP,
        )
        bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.01)
        bar.set_label(
            kind.label + (f" ({kind.unit})" if kind.unit and kind.unit != kind.label else ""),
            fontsize=7,
        )
        bar.ax.tick_params(labelsize=6)
    written = save(fig, folder, "heatmap", formats)
    plt.close(fig)
    return written


def _spread(members: Sequence[Result], ref: float) -> float:
    """How far from the reference the colour scale reaches: the farthest value, and at least the
    median cell's farthest interval bound. A value alone whose interval spans the reference is then
    pale, not the darkest colour for being the only one; one wide interval among many does not
    wash the others out."""
    import statistics

    values = [abs(r.effect_size - ref) for r in members if math.isfinite(r.effect_size)]
    bounds = [
        max(abs(b - ref) for b in ci)
        for r in members
        if (ci := ci_of(r)) and all(math.isfinite(b) for b in ci)
    ]
    spread = max([*values, statistics.median(bounds) if bounds else 0.0], default=0.0)
    return spread if spread > 0 else 1.0


def _cell_digits(kind: Any, values: Sequence[float]) -> int:
    """Decimals of a value written in a cell: two (none for percentages), more where every value is
    small (MAC's 0.005 and 0.013 must not both read 0.01), at most four."""
    if kind.unit == "%":
        return 0
    largest = max((abs(v) for v in values if v is not None and math.isfinite(v)), default=1.0)
    if largest >= 0.1 or largest == 0:
        return min(kind.digits, 2)
    return min(4, 1 - math.floor(math.log10(largest)))


def _row_key(report: Report, names: dict[str, str], r: Result) -> str:
    settings = report.settings.get(r.key, "")
    return names[r.model] + (f" ({settings})" if settings else "")


def p_vs_effect(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    rows = [r for r in plotted(report) if r.p_value is not None]
    if not rows:  # metrics that give no p-value (BBQ, RND, ...): nothing to plot against p
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    every = list(
        dict.fromkeys(variant_label(r.metric, report.settings.get(r.key, "")) for r in rows)
    )
    # a legend of 16 styles; the points of any further variant are drawn in grey
    variants = every[:16]
    styles = model_styles(variants)
    rest = every[16:]
    if rest:
        styles[f"{len(rest)} other metric/setting variants (grey, see results.csv)"] = (
            "#999999",
            "o",
        )
    for v in list(styles):
        members = [
            r
            for r in rows
            if variant_label(r.metric, report.settings.get(r.key, ""))
            in ([v] if v in variants else rest)
        ]
        xs = [r.effect_size for r in members]
        ys = [-math.log10(max(r.p_value, 1e-300)) for r in members]
        colour, marker = styles[v]
        faces = [colour if _holm_significant(report, r) else "white" for r in members]
        ax.scatter(
            xs,
            ys,
            marker=marker,
            facecolors=faces,
            edgecolors=[colour],
            label=v,
            s=26,
            linewidths=0.9,
        )
    ax.axhline(
        -math.log10(0.05), color="grey", linestyle="--", linewidth=0.8, label="p = 0.05 (raw)"
    )
    floors = sorted({f for f in (p_floor(r) for r in rows) if f})
    for f in floors[:2]:
        ax.axhline(
            -math.log10(f),
            color="#b07000",
            linestyle=":",
            linewidth=1.0,
            label=f"p floor of a sampled test: {f:.1e} (true p may be smaller)",
        )
    kinds = {kind_of(r).axis for r in rows}
    ax.set_xlabel(kinds.pop() if len(kinds) == 1 else "value as each metric defines it", fontsize=8)
    ax.set_ylabel("-log10 p (raw)", fontsize=8)
    ax.set_title("p-value against value (filled: significant after Holm)", fontsize=9)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    written = save(fig, folder, "p-vs-effect", formats)
    plt.close(fig)
    return written


def write_figures(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Every figure that has something to show, in every format; nothing when no result has a
    value."""
    if not plotted(report):
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Any] = []
    from bias.core.reports.selection_figure import selection

    for draw in (forest, heatmap, words, languages, p_vs_effect, selection):
        out += draw(report, folder, formats)
    return out
