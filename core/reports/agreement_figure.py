"""The scatter-plot matrix of `bias report --agreement` ("Mind Your Bias", Appendix E).

Below the diagonal, one panel per pair of methods: a point per (model, test) cell both measured, its
oriented scores (larger: more bias) on the axes, a colour and marker per model, filled where both
scores are significant after the run's correction. Above the diagonal, the pair's Pearson r and
Spearman rho over every score and over the significant ones. On the diagonal, the method's name and
the spread of its scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bias.core.reports.agreement import Agreement, number
from bias.core.reports.tables import Report

MAX_METHODS = 8  # beyond this the panels are too small to read; the table holds every pair


def axis_name(found: Agreement, method: str) -> str:
    """The method, and how its value was oriented where that is more than the value itself."""
    kind = found.kinds[method]
    ref = kind.reference or 0.0
    if kind.bias_sign == -1:
        return f"{method} ({ref:g} - {kind.label})"
    return f"{method} ({kind.label} - {ref:g})" if ref else method


def draw(report: Report, found: Agreement, folder: Path, formats: Sequence[str]) -> list[Path]:
    from bias.core.reports.plotting import model_styles, pyplot, save
    from bias.core.reports.values import short_models

    plt = pyplot()
    methods = found.methods[:MAX_METHODS]
    k = len(methods)
    names = short_models(report.results)
    models = list(dict.fromkeys(model for m in methods for model, _ in found.scores[m]))
    styles = model_styles(models)
    pairs = {(p.first, p.second): p for p in found.pairs}
    size = 2.3 if k <= 4 else 1.8
    fig, axes = plt.subplots(
        k, k, figsize=(size * k + 0.6, size * k + 0.9), squeeze=False, layout="constrained"
    )
    for i, row in enumerate(methods):
        for j, col in enumerate(methods):
            ax = axes[i][j]
            ax.tick_params(labelsize=6.5)
            if i == j:
                values = [s.oriented for s in found.scores[row].values()]
                ax.hist(
                    values, bins=min(10, max(3, len(values))), color="#bbbbbb", edgecolor="white"
                )
                ax.set_title(row, fontsize=8.5, loc="center")
                ax.set_yticks([])
            elif i > j:
                shared = (
                    found.cells(col, row, "all")
                    if (col, row) in pairs
                    else found.cells(row, col, "all")
                )
                for cell in shared:
                    x, y = found.scores[col][cell], found.scores[row][cell]
                    colour, marker = styles[cell[0]]
                    both = bool(x.significant and y.significant)
                    ax.plot(
                        [x.oriented],
                        [y.oriented],
                        marker,
                        color=colour,
                        markersize=4.5,
                        markerfacecolor=colour if both else "white",
                        linestyle="",
                    )
                ax.axhline(0, color="#999999", linewidth=0.6)
                ax.axvline(0, color="#999999", linewidth=0.6)
            else:
                pair = pairs.get((row, col)) or pairs.get((col, row))
                ax.set_axis_off()
                if pair is not None:
                    text = (
                        f"all (n={pair.pearson['all'].n})\nr {number(pair.pearson['all'])} "
                        f" rho {number(pair.spearman['all'])}\n\n"
                        f"significant (n={pair.pearson['significant'].n})\n"
                        f"r {number(pair.pearson['significant'])}  rho "
                        f"{number(pair.spearman['significant'])}"
                    )
                else:
                    text = "no shared cells"
                ax.text(
                    0.5, 0.5, text, ha="center", va="center", fontsize=7.5, transform=ax.transAxes
                )
            if i == k - 1 and i != j:
                ax.set_xlabel(axis_name(found, col), fontsize=7.5)
            if j == 0 and i != j:
                ax.set_ylabel(axis_name(found, row), fontsize=7.5)
    handles = [
        plt.Line2D(
            [], [], color=styles[m][0], marker=styles[m][1], linestyle="", label=names.get(m, m)
        )
        for m in models[:12]
    ]
    handles += [
        plt.Line2D(
            [], [], color="#555555", marker="o", linestyle="", label="both significant (Holm)"
        ),
        plt.Line2D(
            [],
            [],
            color="#555555",
            marker="o",
            markerfacecolor="white",
            linestyle="",
            label="not both significant",
        ),
    ]
    fig.legend(
        handles=handles,
        fontsize=7,
        loc="outside lower center",
        frameon=False,
        ncol=min(len(handles), 4),
    )
    more = (
        f" (first {MAX_METHODS} of {len(found.methods)} methods)"
        if len(found.methods) > MAX_METHODS
        else ""
    )
    fig.suptitle(
        f"Agreement between methods: scores per (model, test), larger = more bias{more}",
        fontsize=9.5,
    )
    written = save(fig, Path(folder), "agreement", tuple(formats))
    plt.close(fig)
    return written
