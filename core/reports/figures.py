"""Figures of a report (matplotlib, Agg backend, PNG and SVG), drawn from the same `Report` as the tables.

- forest plot: each test's effect size with its bootstrap interval, per model; filled markers are
  significant after Holm correction;
- heat map: models (and settings) x tests, effect size as colour on a scale symmetric around 0, the
  value and its Holm significance marks written in each cell (one panel per metric);
- p-value against effect size (the view of the BIAS Detection Framework's report): -log10 p against d,
  the 0.05 line drawn, Holm-significant points filled.

matplotlib is imported here only, so the rest of the framework stays fast to import.
"""

from __future__ import annotations

import math
from pathlib import Path

from bias.core.model import OK
from bias.core.reports.tables import Report, ci_of, significance

FORMATS = ("png", "svg")
FIGURES = ("forest", "heatmap", "p-vs-effect")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.hashsalt"] = "bias-framework"  # stable element ids: same results, same file
    import matplotlib.pyplot as plt

    return plt


def _label(report: Report, r) -> str:
    extra = report.settings.get(r.key, "")
    return f"{r.model}" + (f" ({extra})" if extra else "")


def _holm_significant(report: Report, r, alpha: float = 0.05) -> bool:
    adj = report.adjusted.get(r.key)
    return bool(adj and adj.holm < alpha)


def _plotted(report: Report) -> list:
    return [r for r in report.results if r.status == OK and r.effect_size is not None]


def _save(fig, folder: Path, name: str, formats: tuple[str, ...]) -> list[Path]:
    written = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        # No dates or software versions inside the files: the same results give the same bytes.
        metadata = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}
        fig.savefig(path, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)
        written.append(path)
    return written


def forest(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    plt = _pyplot()
    rows = sorted(_plotted(report), key=lambda r: (r.wordset, r.metric, _label(report, r)))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * len(rows)))
    models = sorted({_label(report, r) for r in rows})
    colours = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(models)}
    for y, r in enumerate(reversed(rows)):
        colour = colours[_label(report, r)]
        ci = ci_of(r)
        if ci is not None:
            ax.plot(ci, [y, y], color=colour, linewidth=1.6)
        filled = _holm_significant(report, r)
        ax.plot([r.effect_size], [y], "o", color=colour, markerfacecolor=colour if filled else "white", markersize=6)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r.wordset} [{r.metric}]" for r in reversed(rows)], fontsize=8)
    ax.axvline(0.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("effect size (bootstrap interval)")
    ax.set_title(report.title, fontsize=10)
    handles = [plt.Line2D([], [], color=colours[m], marker="o", label=m) for m in models]
    handles.append(plt.Line2D([], [], color="black", marker="o", markerfacecolor="white", linestyle="", label="not significant (Holm)"))
    ax.legend(handles=handles, fontsize=7, loc="best")
    written = _save(fig, folder, "forest", formats)
    plt.close(fig)
    return written


def heatmap(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    import numpy as np

    plt = _pyplot()
    rows = _plotted(report)
    metrics = sorted({r.metric for r in rows})
    panels = []
    for metric in metrics:
        members = [r for r in rows if r.metric == metric]
        models = sorted({_label(report, r) for r in members})
        tests = sorted({r.wordset for r in members})
        panels.append((metric, members, models, tests))
    width = max(5.0, 2.5 + 1.2 * max(len(p[3]) for p in panels))
    height = sum(1.2 + 0.45 * len(p[2]) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, height), squeeze=False)
    limit = max(abs(r.effect_size) for r in rows)
    limit = limit if limit > 0 else 1.0
    for ax, (metric, members, models, tests) in zip(axes[:, 0], panels):
        grid = np.full((len(models), len(tests)), np.nan)
        text = [["" for _ in tests] for _ in models]
        for r in members:
            i, j = models.index(_label(report, r)), tests.index(r.wordset)
            grid[i, j] = r.effect_size
            adj = report.adjusted.get(r.key)
            text[i][j] = f"{r.effect_size:+.2f}{significance(adj.holm) if adj else ''}"
        cmap = plt.get_cmap("RdBu_r").with_extremes(bad="#dddddd")  # grey: no result for that cell
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-limit, vmax=limit, aspect="auto")
        for i in range(len(models)):
            for j in range(len(tests)):
                if text[i][j]:
                    dark = abs(grid[i, j]) > 0.6 * limit
                    ax.text(j, i, text[i][j], ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_xticks(range(len(tests)))
        ax.set_xticklabels(tests, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(models)))
        ax.set_yticklabels(models, fontsize=8)
        ax.set_title(f"{metric}: effect size (* Holm p<0.05, ** <0.01, *** <0.001)", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.04)
    fig.tight_layout()
    written = _save(fig, folder, "heatmap", formats)
    plt.close(fig)
    return written


def p_vs_effect(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    plt = _pyplot()
    rows = [r for r in _plotted(report) if r.p_value is not None]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    metrics = sorted({r.metric for r in rows})
    markers = "osD^v<>"
    for k, metric in enumerate(metrics):
        members = [r for r in rows if r.metric == metric]
        xs = [r.effect_size for r in members]
        ys = [-math.log10(max(r.p_value, 1e-300)) for r in members]
        colour = plt.get_cmap("tab10")(k % 10)
        faces = [colour if _holm_significant(report, r) else "white" for r in members]
        ax.scatter(xs, ys, marker=markers[k % len(markers)], facecolors=faces, edgecolors=[colour], label=metric, s=30)
    ax.axhline(-math.log10(0.05), color="grey", linestyle="--", linewidth=0.8, label="p = 0.05 (raw)")
    ax.axvline(0.0, color="grey", linewidth=0.6)
    ax.set_xlabel("effect size")
    ax.set_ylabel("-log10 p (raw)")
    ax.set_title("p-value against effect size (filled: significant after Holm)", fontsize=9)
    if rows:
        ax.legend(fontsize=7)
    written = _save(fig, folder, "p-vs-effect", formats)
    plt.close(fig)
    return written


def write_figures(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Every figure in every format; nothing when no result has an effect size."""
    if not _plotted(report):
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [*forest(report, folder, formats), *heatmap(report, folder, formats), *p_vs_effect(report, folder, formats)]
