"""Selection rates by group, drawn for every result whose metric declares the figure "selection"
(`ValueKind(figures=("selection",))`, as the hiring audits do): one panel per result, a bar per
group with its selection rate and its impact ratio (its rate over the highest), in red where the
metric flagged the ratio (the four-fifths rule unless the run set another threshold). What a hiring
audit is about, which the forest and heat map (one number per result) do not show. Drawn from
results.jsonl alone, from `figures["selection"]["group"]` ({group: {"rate": number, "ratio":
number or None, "flagged": bool}}); a result whose figures lack that shape gets no panel."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bias.core.model import Result
from bias.core.reports.plotting import (
    FORMATS,
    page_names,
    page_note,
    plotted,
    pyplot,
    remove_pages_past,
    save,
)
from bias.core.reports.tables import Report
from bias.core.reports.values import kind_of, short_models, short_tests
from bias.core.runs.folder import remove_in_run
from bias.core.text import shown

FIGURE = "selection"
PER_PAGE = 6
MAX_GROUPS = 40  # bars a panel shows; the panel says how many more there are


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _groups(result: Result) -> dict[str, dict[str, Any]] | None:
    """The result's groups, in its order, each a rate from 0 to 1; None when the shape is not there
    (a results file is outside input: such a result gets no panel rather than a wrong one)."""
    selection = (result.figures or {}).get("selection")
    groups = selection.get("group") if isinstance(selection, dict) else None
    if not isinstance(groups, dict) or not groups:
        return None
    out = {}
    for name, entry in groups.items():
        rate = entry.get("rate") if isinstance(entry, dict) else None
        if not _number(rate) or not 0.0 <= rate <= 1.0:
            return None
        ratio = entry.get("ratio")
        out[shown(name, 40)] = {
            "rate": float(rate),
            "ratio": float(ratio) if _number(ratio) else None,
            "flagged": entry.get("flagged") is True,
        }
    return out


def selection(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """The panels of every result that declares the figure, PER_PAGE a file (selection.png,
    selection-2.png, ...)."""
    rows = [
        (r, groups)
        for r in plotted(report)
        if FIGURE in kind_of(r).figures and (groups := _groups(r)) is not None
    ]
    pages = [rows[i : i + PER_PAGE] for i in range(0, len(rows), PER_PAGE)]
    files = page_names(FIGURE, len(pages))
    written: list[Path] = []
    for n, page in enumerate(pages):
        note = page_note(files, n, PER_PAGE * n + 1, PER_PAGE * n + len(page), len(rows), "Panels")
        written += _page(report, folder, formats, page, files[n], note)
    remove_pages_past(folder, FIGURE, len(pages), formats)
    if not pages:  # an earlier report's figure would be read as this one's
        for fmt in formats:
            remove_in_run(folder, f"{FIGURE}.{fmt}")
    return written


def _page(
    report: Report,
    folder: Path,
    formats: tuple[str, ...],
    page: list[tuple[Result, dict[str, dict[str, Any]]]],
    name: str,
    note: str,
) -> list[Path]:
    plt = pyplot()
    names, tests = short_models(report.results), short_tests(report.results)
    heights = [0.9 + 0.32 * min(len(groups), MAX_GROUPS) for _, groups in page]
    fig, axes = plt.subplots(
        len(page),
        1,
        figsize=(7.0, sum(heights) + 0.4),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, (r, every) in zip(axes[:, 0], page):
        # the flagged groups first among those cut: a flag past the 40th must still be seen
        order = (
            sorted(every, key=lambda g: not every[g]["flagged"])
            if len(every) > MAX_GROUPS
            else every
        )
        groups = {g: every[g] for g in list(order)[:MAX_GROUPS]}
        labels = list(groups)
        rates = [groups[g]["rate"] for g in labels]
        colours = ["#c0392b" if groups[g]["flagged"] else "#5d6d7e" for g in labels]
        ax.barh(range(len(labels)), rates, color=colours, height=0.6)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        top = max(rates) if rates else 0.0
        for i, g in enumerate(labels):
            ratio = groups[g]["ratio"]
            text = f"{rates[i]:.2f}" + ("" if ratio is None else f"  (ratio {ratio:.2f})")
            ax.text(rates[i], i, " " + text, va="center", fontsize=6.5)
        ax.set_xlim(0, max(top * 1.35, 0.05))
        ax.tick_params(axis="x", labelsize=6.5)
        more = len(every) - len(groups)
        ax.set_title(
            f"{tests[r.wordset]} on {names[r.model]} ({r.metric})"
            + (f"; {more:,} more groups not shown (the breakdown lists them)" if more else ""),
            fontsize=8,
            loc="left",
        )
    axes[-1, 0].set_xlabel(
        "selection rate (impact ratio: over the highest rate); red: a ratio the metric flagged"
        + (f"\n{note}" if note else ""),
        fontsize=7,
    )
    written = save(fig, folder, name, formats)
    plt.close(fig)
    return written
