"""The quadrant scatter, drawn for every result whose metric declares the figure "quadrants"
(`ValueKind(figures=("quadrants",))`, as FISE does): every item at (association with axis x, with
axis y), the four quadrants named after their groups, the top items of each quadrant labelled, and
points coloured by valence when the result gives one. Drawn from results.jsonl alone, from the
result's figures: `axes` [x name, y name], `groups` {axis name: [positive group, negative group]},
`points` [[label, x, y], ...], and optionally `quadrants` {"<x group> <y group>": {"share": float,
"top": [[label, strength], ...]}}, `valence` {label: number} and `axis_unit` (what the axes
measure). A result whose figures do not have these shapes is left without the figure."""

from __future__ import annotations

import re
from pathlib import Path

from bias.core.model import OK, Result
from bias.core.reports.tables import Report
from bias.core.reports.values import kind_of

FIGURE = "quadrants"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[-60:] or "test"


def _drawable(figures: dict) -> bool:
    """Whether a result's figures hold what the scatter is drawn from, in the shapes it needs (a
    results file is outside input: a result that does not is left without the figure)."""
    axes, groups, points = figures.get("axes"), figures.get("groups"), figures.get("points")
    if not (isinstance(axes, list) and len(axes) == 2 and all(isinstance(a, str) for a in axes)):
        return False
    if not isinstance(groups, dict) or not all(
        isinstance(groups.get(a), list)
        and len(groups[a]) == 2
        and all(isinstance(g, str) for g in groups[a])
        for a in axes
    ):
        return False
    number = (int, float)
    return (
        isinstance(points, list)
        and bool(points)
        and all(
            isinstance(p, list)
            and len(p) == 3
            and isinstance(p[0], str)
            and all(isinstance(v, number) for v in p[1:])
            for p in points
        )
    )


def quadrant_results(report: Report) -> list[Result]:
    """The results that declare the quadrant figure and give what it is drawn from."""
    return [
        r
        for r in report.results
        if FIGURE in kind_of(r).figures and r.status == OK and _drawable(r.figures or {})
    ]


def quadrant_scatter(result: Result, folder: Path, formats: tuple[str, ...]) -> list[Path]:
    from bias.core.reports.plotting import pyplot, save

    plt = pyplot()
    figures = result.figures
    x_name, y_name = figures["axes"]
    (x_pos, x_neg), (y_pos, y_neg) = figures["groups"][x_name], figures["groups"][y_name]
    points = figures["points"]
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    valence = figures.get("valence")
    if isinstance(valence, dict) and all(isinstance(v, (int, float)) for v in valence.values()):
        colours = ["#c0392b" if valence.get(p[0], 0) > 0 else "#2471a3" for p in points]
        ax.scatter(xs, ys, c=colours, s=22, alpha=0.8, zorder=3)
        ax.scatter([], [], c="#c0392b", label="positive valence")
        ax.scatter([], [], c="#2471a3", label="negative valence")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False)
    else:
        ax.scatter(xs, ys, s=22, alpha=0.8, color="#34495e", zorder=3)
    span_x = max(abs(v) for v in xs) * 1.25 or 1.0
    span_y = max(abs(v) for v in ys) * 1.25 or 1.0
    ax.set_xlim(-span_x, span_x)
    ax.set_ylim(-span_y, span_y)
    ax.axhline(0, color="grey", lw=0.8, zorder=1)
    ax.axvline(0, color="grey", lw=0.8, zorder=1)
    corners = {
        (1, 1): f"{x_pos} {y_pos}",
        (-1, 1): f"{x_neg} {y_pos}",
        (-1, -1): f"{x_neg} {y_neg}",
        (1, -1): f"{x_pos} {y_neg}",
    }
    quadrants = figures.get("quadrants")
    quadrants = (
        {k: v for k, v in quadrants.items() if isinstance(v, dict)}
        if isinstance(quadrants, dict)
        else {}
    )
    for (sx, sy), name in corners.items():
        share = quadrants.get(name, {}).get("share")
        text = name + (f"\n{share:.0%} of items" if isinstance(share, (int, float)) else "")
        ax.text(
            sx * span_x * 0.97,
            sy * span_y * 0.95,
            text,
            ha="right" if sx > 0 else "left",
            va="top" if sy > 0 else "bottom",
            color="grey",
            fontsize=9,
        )
    where = {p[0]: (p[1], p[2]) for p in points}
    for name, entry in quadrants.items():
        top = entry.get("top")
        for item in top if isinstance(top, list) else []:
            label = item[0] if isinstance(item, list) and item else None
            if isinstance(label, str) and label in where:
                ax.annotate(
                    label,
                    where[label],
                    xytext=(4, 3),
                    textcoords="offset points",
                    fontsize=8,
                    zorder=4,
                )
    unit = figures.get("axis_unit")
    unit = f", {unit}" if isinstance(unit, str) and unit else ""
    ax.set_xlabel(f"{x_name}: {x_pos} (+) vs {x_neg} (-){unit}")
    ax.set_ylabel(f"{y_name}: {y_pos} (+) vs {y_neg} (-){unit}")
    p = f", p = {result.p_value:.3g}" if result.p_value is not None else ""
    ax.set_title(
        f"{result.metric.upper()} {result.wordset.split('/')[-1]} on "
        f"{result.model.split('/')[-1]}{p}",
        fontsize=10,
    )
    written = save(
        fig, folder, f"{_slug(result.metric)}-{_slug(result.wordset)}-{result.key[:8]}", formats
    )
    plt.close(fig)
    return written


def write_quadrant_figures(report: Report, folder: Path, formats: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for result in quadrant_results(report):
        Path(folder).mkdir(parents=True, exist_ok=True)
        out += quadrant_scatter(result, Path(folder), formats)
    return out
