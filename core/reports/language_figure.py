"""The languages figure of a report, for runs over several languages: languages x tests (`nl/weat6`
and `de/weat6` share a column), one panel per metric and setting, over several files when there are
many panels.
"""

from __future__ import annotations

from pathlib import Path

from bias.core.model import Result
from bias.core.reports.plotting import (
    FORMATS,
    TITLE_AT_TOP,
    label_cells,
    page_note,
    page_names,
    plotted,
    pyplot,
    remove_pages_past,
    save,
)
from bias.core.reports.tables import Report
from bias.core.reports.values import kind_of, short_models, variant_label
from bias.core.text import natural_key


def _language(r: Result) -> str:
    lang = (r.meta or {}).get("language")
    if lang:
        return str(lang)
    head, sep, _ = r.wordset.partition("/")
    return head if sep and len(head) <= 3 else ""


def languages(report: Report, folder: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Languages x tests for runs over several languages: `nl/weat6` and `de/weat6` share a column;
    one panel per metric and setting, 8 panels a file (each file says which it shows)."""
    rows = [r for r in plotted(report) if _language(r)]
    if len({_language(r) for r in rows}) < 2:
        return []
    every = list(dict.fromkeys((r.metric, report.settings.get(r.key, "")) for r in rows))
    # 8 panels a file: languages.png, languages-2.png, ...
    pages = [every[i : i + 8] for i in range(0, len(every), 8)]
    files = page_names("languages", len(pages))
    written: list[Path] = []
    for n, groups in enumerate(pages):
        note = page_note(files, n, 8 * n + 1, 8 * n + len(groups), len(every), "Panels")
        written += _languages_page(report, folder, formats, rows, groups, files[n], note)
    remove_pages_past(folder, "languages", len(pages), formats)
    return written


def _languages_page(
    report: Report,
    folder: Path,
    formats: tuple[str, ...],
    rows: list[Result],
    groups: list[tuple[str, str]],
    name: str,
    note: str,
) -> list[Path]:
    import numpy as np

    plt = pyplot()
    names = short_models(report.results)
    several = len({names[r.model] for r in rows}) > 1

    def row_of(r: Result) -> str:
        return _language(r) + (f" | {names[r.model]}" if several else "")

    all_rows = sorted({row_of(r) for r in rows}, key=natural_key)
    all_tests = sorted({r.wordset.split("/")[-1] for r in rows}, key=natural_key)
    fig, axes = plt.subplots(
        len(groups),
        1,
        squeeze=False,
        layout="constrained",
        figsize=(
            max(6.0, 3.0 + 0.6 * len(all_tests)),
            sum(1.5 + 0.3 * len(all_rows) for _ in groups),
        ),
    )
    for ax, (metric, settings) in zip(axes[:, 0], groups):
        kind = kind_of(next(r for r in rows if r.metric == metric))
        members = [
            r for r in rows if r.metric == metric and report.settings.get(r.key, "") == settings
        ]
        labels = sorted({row_of(r) for r in members}, key=natural_key)
        tests = sorted({r.wordset.split("/")[-1] for r in members}, key=natural_key)
        grid = np.full((len(labels), len(tests)), np.nan)
        for r in members:
            grid[labels.index(row_of(r)), tests.index(r.wordset.split("/")[-1])] = r.effect_size
        ref = kind.reference if kind.reference is not None else float(np.nanmean(grid))
        spread = float(np.nanmax(np.abs(grid - ref))) or 1.0
        image = ax.imshow(
            np.ma.masked_invalid(grid),
            cmap=plt.get_cmap("RdBu_r").with_extremes(bad="#dddddd"),
            vmin=ref - spread,
            vmax=ref + spread,
            aspect="auto",
        )
        if len(tests) <= 16 and len(labels) <= 30:
            digits = 2 if kind.unit != "%" else 0
            text = [[kind.format(v, digits) if np.isfinite(v) else "" for v in row] for row in grid]
            label_cells(ax, grid, text, ref, spread)
        ax.set_xticks(range(len(tests)))
        ax.set_xticklabels(tests, rotation=30, ha="right", fontsize=7)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_title(
            f"{variant_label(metric, settings)}: {kind.name}, by language",
            fontsize=8,
            loc="left",
            y=TITLE_AT_TOP,
        )
        bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.01)
        bar.set_label(kind.label, fontsize=7)
        bar.ax.tick_params(labelsize=6)
    if note:
        fig.suptitle(note, fontsize=8)
    written = save(fig, folder, name, formats)
    plt.close(fig)
    return written
