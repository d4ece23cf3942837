"""The words figure of a report: each target word's association s(w) with A rather than B, sorted
and coloured by set, one panel per WEAT/SEAT result, read from the scores file each result wrote
beside results.jsonl; over several files when there are many panels.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bias.core.model import Result
from bias.core.reports.plotting import (
    COLOURS,
    FORMATS,
    TITLE_AT_TOP,
    page_note,
    page_names,
    plotted,
    pyplot,
    remove_pages_past,
    save,
)
from bias.core.reports.tables import Report
from bias.core.reports.values import short_models, short_tests, variant_label
from bias.core.runs.folder import readable_in_run


def _scores_of(folder: Path, r: Result) -> list[dict[str, str]]:
    path = readable_in_run(folder, r.figures.get("scores"), "figures.scores in results.jsonl")
    if path is None:
        return []
    from bias.core.runs.item_tables import read_scores

    return read_scores(path)


def words(
    report: Report, folder: Path, formats: tuple[str, ...] = FORMATS, limit: int = 12
) -> list[Path]:
    """Each target word's s(w), sorted, coloured by set: one panel per WEAT/SEAT result, `limit`
    panels a file (words.png, then words-2.png, ...: each says which panels it shows); SEAT's
    sentences are averaged per word."""
    panels = []
    for r in plotted(report):
        rows = _scores_of(folder, r)
        if not rows or "s" not in rows[0]:
            continue
        per: dict[tuple[str, str], list[float]] = {}
        for row in rows:
            per.setdefault((row["set"], row.get("word") or row["item"]), []).append(float(row["s"]))
        items = sorted(((k[0], k[1], sum(v) / len(v)) for k, v in per.items()), key=lambda t: t[2])
        panels.append((r, items))
    pages = [panels[i : i + limit] for i in range(0, len(panels), limit)]
    names = page_names("words", len(pages))
    written: list[Path] = []
    for n, page in enumerate(pages):
        first = n * limit + 1
        note = page_note(names, n, first, first + len(page) - 1, len(panels), "Panels")
        written += _words_page(report, folder, formats, page, names[n], note)
    remove_pages_past(folder, "words", len(pages), formats)
    return written


# The page's layout, in inches. A words page holds up to twelve panels of words: matplotlib's
# constrained layout measured every label of every panel several times (two thirds of the page's
# time), so the page is laid out here from each panel's widest word, measured once.
AXES_WIDTH = 2.6
TITLE_ROOM = 0.28  # above each panel: its title
BELOW_ROOM = 0.42  # under each panel: the x tick labels and the x axis label
GAP = 0.3  # between a panel and the next one's labels
ROW_HEIGHT = 0.13  # a bar


def _words_page(
    report: Report, folder: Path, formats: tuple[str, ...], panels: list[Any], name: str, note: str
) -> list[Path]:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    names = short_models(report.results)
    tests = short_tests(report.results)
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    tallest = max(len(items) for _, items in panels)
    sizes = [6 if len(items) > 20 else 7 for _, items in panels]
    measure = TextToPath()

    def inches(text: str, size: float) -> float:
        width, _, _ = measure.get_text_width_height_descent(text, FontProperties(size=size), False)
        return width / 72

    label_room = 0.1 + max(
        (inches(w, size) for (_, items), size in zip(panels, sizes) for _, w, _ in items),
        default=0.0,
    )
    col_width = label_room + AXES_WIDTH + GAP
    axes_height = 0.25 + ROW_HEIGHT * tallest
    row_height = TITLE_ROOM + axes_height + BELOW_ROOM
    top = 0.25 + 0.17 * (2 if note else 1)
    bottom = 0.35  # the legend
    width, height = 0.1 + cols * col_width, top + nrows * row_height + bottom
    fig = plt.figure(figsize=(width, height))
    set_colour = {"X": COLOURS[0], "Y": COLOURS[1]}
    for n, ((r, items), size) in enumerate(zip(panels, sizes)):
        row, col = divmod(n, cols)
        left = 0.1 + col * col_width + label_room
        lower = height - top - row * row_height - TITLE_ROOM - axes_height
        ax = fig.add_axes((left / width, lower / height, AXES_WIDTH / width, axes_height / height))
        ax.barh(
            range(len(items)),
            [s for _, _, s in items],
            color=[set_colour.get(k, "grey") for k, _, _ in items],
        )
        ax.set_yticks(range(len(items)))
        ax.set_yticklabels([w for _, w, _ in items], fontsize=size)
        ax.set_ylim(-0.6, len(items) - 0.4)
        ax.axvline(0, color="grey", linewidth=0.6)
        settings = report.settings.get(r.key, "")
        title = f"{tests[r.wordset]} {variant_label(r.metric, settings)}" + (
            f" | {names[r.model]}" if len(names) > 1 else ""
        )
        fitted = _fitted(title, 7.5, col_width - GAP, inches)
        ax.set_title(fitted, fontsize=7.5, loc="left", y=TITLE_AT_TOP)
        ax.set_xlabel("s(w) = mean cos(w, A) - mean cos(w, B)", fontsize=6.5)
        ax.tick_params(axis="x", labelsize=6)
        ax.xaxis.set_major_locator(MaxNLocator(5))  # six-figure ticks side by side ran together
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=set_colour["X"], label="X (first target set)"),
        plt.Rectangle((0, 0), 1, 1, color=set_colour["Y"], label="Y (second target set)"),
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.02 / height),
        ncol=2,
        fontsize=7,
        frameon=False,
    )
    fig.suptitle(
        "Association of each target word with A rather than B" + (f"\n{note}" if note else ""),
        fontsize=9,
        y=1 - 0.1 / height,
        va="top",
    )
    written = save(fig, folder, name, formats)
    plt.close(fig)
    return written


def _fitted(text: str, size: float, room: float, inches: Any) -> str:
    """`text` cut (with an ellipsis) to what `room` inches hold at `size` points: a panel's title
    must not run into the next panel's."""
    if inches(text, size) <= room:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest start that fits with its ellipsis
        mid = (low + high + 1) // 2
        low, high = (mid, high) if inches(text[:mid] + "…", size) <= room else (low, mid - 1)
    return text[:low] + "…"
