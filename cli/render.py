"""Rich rendering of plugin listings, plugin details, results and validation problems."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import io

from rich import box
from rich.console import Console
from rich.table import Table

from bias.cli.say import cell as _escape, cell_lines as _escape_lines, say_whole, warn, whole


def results_table(
    results: Any,
    family: str = "run",
    *,
    width: int | None = None,
    wide: bool = False,
    terminal: bool = True,
) -> Any:
    """The results for the terminal: a table that fits `width` columns without splitting a number or
    a name, and the conventions shared by all rows said once below it.

    Layouts, richest first, the first that fits is printed: tests as rows with each metric (and
    setting) side by side (one model, up to four variants, as the README shows the quickstart), then
    one row per result with the value and its interval, p and Holm p; each with cells on one line,
    then stacked. `wide` prints every column (model spec, BH p, convention, sizes, status) and never
    splits a cell: as a table where it fits, else one block of fields per result on a terminal, and
    the table unwrapped (lines longer than `width`) when the output is not a terminal. Print it with
    `crop=False`.
    """
    from rich.console import Group

    from bias.core.reports import Report, build

    rep = results if isinstance(results, Report) else build(list(results), family=family)
    width = width or 80
    notes = [whole(n) for n in rep.notes()]
    if wide:
        table = _wide_table(rep)
        if _full_width(table) <= width:
            return Group(table, *notes)
        if not terminal:  # piped: the table unwrapped, one line per result, for a file or `less -S`
            return Group(_Unwrapped(table), *notes)
        return Group(*_records(rep), *notes)
    candidates = []
    if _pivot_fits(rep):
        candidates += [_pivot_table(rep, stacked=False), _pivot_table(rep, stacked=True)]
    candidates += [_long_table(rep, level=level) for level in range(4)]
    candidates.append(_long_table(rep, level=3, fold=True))  # nothing fits: fold rather than cut
    chosen = next((t for t in candidates if _natural_width(t) <= width), candidates[-1])
    return Group(chosen, *notes)


def robustness_table(curves: Sequence[Any], *, width: int = 80) -> Table:
    """One row per specification curve: how many specifications, how many agree in sign and are
    significant after correction, the median and range of the value. Fits 80 columns: the numbers
    never break; the test's name (with its model below it when a run has several) folds instead."""
    models = list(dict.fromkeys(c.model for c in curves))
    title = "Robustness to design choices" + (f" (model {models[0]})" if len(models) == 1 else "")
    table = Table(title=_escape(title), box=box.SIMPLE_HEAD, pad_edge=False)
    longest = max(
        [len(c.concept) for c in curves] + [len(c.model) for c in curves if len(models) > 1] + [4]
    )
    table.add_column(
        "Test" if len(models) == 1 else "Test / model",
        overflow="fold",
        min_width=min(longest, max(8, width - 56)),
    )
    for name in ("Specs", "Same sign", "Signif.", "Median", "Range"):
        table.add_column(name, justify="right", no_wrap=True)
    titles = [c.title for c in curves]
    for c in curves:
        share = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
        # one concept on one model with curves on several scales (bbq's s_AMB and s_DIS): say which
        concept = c.concept + (f" ({c.scale.scale_name})" if titles.count(c.title) > 1 else "")
        label = _escape(concept) + (f"\n[dim]{_escape(c.model)}[/dim]" if len(models) > 1 else "")
        table.add_row(
            label,
            str(c.n),
            share(c.same_sign_share),
            share(c.significant_share),
            c.scale.format(c.median, 2),
            f"{c.scale.format(c.low, 2)}..{c.scale.format(c.high, 2)}",
        )
    return table


def agreement_table(found: Any) -> Table:
    """Two rows per pair of methods (every score, significant scores only): n, Pearson's r and
    Spearman's rho with their 95% intervals. Fits 80 columns: the methods' names fold, numbers
    never."""
    from bias.core.reports.agreement import HEADINGS, rows

    table = Table(title="Agreement between methods", box=box.SIMPLE_HEAD, pad_edge=False)
    longest = max([len(row["pair"]) for row in rows(found)] + [8])
    short = {"pearson": "Pearson r [CI]", "spearman": "Spearman rho [CI]"}  # the notes say 95%
    for key, heading in HEADINGS.items():
        heading = short.get(key, heading)
        if key == "pair":
            table.add_column(heading, overflow="fold", min_width=min(longest, 12))
        else:
            table.add_column(heading, justify="right" if key == "n" else "left", no_wrap=True)
    for i, row in enumerate(rows(found)):
        table.add_row(
            *(_escape(row[k]) if k != "pair" or i % 2 == 0 else "" for k in HEADINGS),
            end_section=i % 2 == 1,
        )
    return table


def agreement_report(
    console: Console, report: Any, folder: Any, formats: Sequence[str]
) -> list[Any]:
    """`bias report --agreement`: the agreement table and its notes on the terminal; the report's
    files with the agreement's tables, figure and report.html section beside them."""
    from bias.core.reports import write_report
    from bias.core.reports.agreement import agreement, notes

    found = agreement(report)
    console.print(agreement_table(found))
    for note in notes(found):
        say_whole(console, note)
    return write_report(report, folder, formats, agreement=found)


def _natural_width(table: Table) -> int:
    console = Console(width=100_000, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(table)
    return max((len(line.rstrip()) for line in capture.get().splitlines()), default=0)


def _full_width(table: Table) -> int:
    """The width a table takes when nothing in it is wrapped or shortened, padding included."""
    from rich.measure import Measurement

    console = Console(width=100_000, file=io.StringIO(), color_system=None)
    return Measurement.get(console, console.options, table).maximum


def _title(rep: Any) -> str:
    """The table's title, from the file's `title` and a model's name: escaped and made visible, as
    every user text (an escape code in it would redraw the terminal)."""
    from bias.core.reports.values import short_models

    names = short_models(rep.results)
    if len(names) == 1:
        label, short = next(iter(names.items()))
        return _escape(f"{rep.title} | model: {short}")
    return _escape(rep.title)


def _variant(rep: Any, r: Any, models: dict[str, str]) -> str:
    from bias.core.reports.values import variant_label

    label = variant_label(r.metric, rep.settings.get(r.key, ""))
    return f"{models[r.model]} {label}" if len(models) > 1 else label


def _pivot_fits(rep: Any) -> bool:
    from bias.core.reports.values import short_models

    models = short_models(rep.results)
    seen = {(r.wordset, _variant(rep, r, models)) for r in rep.results}
    variants = {v for _, v in seen}
    tests = {t for t, _ in seen}
    full = len(seen) == len(tests) * len(variants)  # every test has every variant
    return (
        bool(rep.results)
        and full
        and len(seen) == len(rep.results)
        and 1 < len(variants) <= 4
        and len(models) <= 2
    )


def _status_cell(r: Any) -> str:
    return "refused" if r.status == "refused" else "failed"


def _holm_marks(rep: Any, r: Any) -> str:
    from bias.core.reports.values import significance

    adj = rep.adjusted.get(r.key)
    return significance(adj.holm) if adj else ""


def _pivot_table(rep: Any, *, stacked: bool) -> Table:
    from bias.core.reports.tables import ci_text
    from bias.core.reports.values import kind_of, result_p, short_models, short_tests, test_title

    models = short_models(rep.results)
    short = short_tests(rep.results)
    variants = list(dict.fromkeys(_variant(rep, r, models) for r in rep.results))
    tests = list(dict.fromkeys(r.wordset for r in rep.results))
    cell = {(r.wordset, _variant(rep, r, models)): r for r in rep.results}
    table = Table(title=_title(rep), box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
    titles = {r.wordset: test_title(r) for r in rep.results}
    table.add_column("Test", no_wrap=False, max_width=max(24, *(len(short[t]) for t in tests)))
    for v in variants:
        members = [r for r in rep.results if _variant(rep, r, models) == v]
        kinds = {kind_of(r).label for r in members}
        unit = kinds.pop() if len(kinds) == 1 else "value"
        head = (v if unit.upper() == v.upper() else f"{v} {unit}") + (
            f" [{rep.ci_label}]"
            if any(r.figures.get("ci_low") is not None for r in members) and not stacked
            else ""
        )
        table.add_column(head, no_wrap=True, justify="left")
        if not stacked:
            table.add_column("p", no_wrap=True)
    for t in tests:
        row = [_escape(short[t]) + (f"\n[dim]{_escape(titles[t])}[/dim]" if titles.get(t) else "")]
        for v in variants:
            r = cell.get((t, v))
            if r is None:
                row += ["", ""] if not stacked else [""]
                continue
            if r.status != "ok":
                row += [_status_cell(r), ""] if not stacked else [_status_cell(r)]
                continue
            kind = kind_of(r)
            value = kind.format(r.effect_size) + ("%" if kind.unit == "%" else "")
            ci = ci_text(r, 2) if r.figures.get("ci_low") is not None else ""
            p = result_p(r)
            marks = _holm_marks(rep, r)
            if stacked:
                lines = [f"{value} {marks}".rstrip(), ci, f"p {p}" if p != "-" else ""]
                row.append("\n".join(x for x in lines if x))
            else:
                row += [f"{value} {ci}".rstrip(), f"{p} {marks}".rstrip() if p != "-" else "-"]
        table.add_row(*row)
    return table


def _long_table(rep: Any, *, level: int, fold: bool = False) -> Table:
    """One row per result; `level` 0 puts everything on one line, 1 turns the model column into a
    heading above its rows, 2 stacks the interval under the value and the settings under the metric,
    3 also stacks the Holm p under the raw p."""
    from bias.core.reports.tables import ci_text, value_text
    from bias.core.reports.values import (
        format_p,
        result_p,
        short_models,
        short_tests,
        variant_label,
    )

    models = short_models(rep.results)
    tests = short_tests(rep.results)
    several = len(models) > 1
    table = Table(title=_title(rep), box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
    kw: dict[str, Any] = {"overflow": "fold"} if fold else {"no_wrap": True}
    if several and level == 0:
        table.add_column("Model", **kw)
    table.add_column("Test", **kw)
    table.add_column("Metric", **kw)
    table.add_column("Value" + ("" if level >= 2 else f" [{rep.ci_label}]"), **kw)
    table.add_column("p" if level < 3 else "p / Holm p", **kw)
    if level < 3:
        table.add_column("Holm p", **kw)
    order = (
        sorted(range(len(rep.results)), key=lambda i: list(models).index(rep.results[i].model))
        if several
        else range(len(rep.results))
    )
    current = None
    for i in order:
        r = rep.results[i]
        if several and level >= 1 and r.model != current:
            current = r.model
            table.add_row(
                f"[bold]{_escape(models[r.model])}[/bold]", *([""] * (len(table.columns) - 1))
            )
        row = [models[r.model]] if several and level == 0 else []
        settings = rep.settings.get(r.key, "")
        metric = variant_label(r.metric, settings)
        if level >= 2 and settings:
            head = variant_label(
                r.metric, ", ".join(p for p in settings.split(", ") if p.startswith("level="))
            )
            rest = [p for p in settings.split(", ") if p and not p.startswith("level=")]
            metric = head + ("\n" + "\n".join(rest) if rest else "")
        row += [tests[r.wordset], metric]
        cells: list[str]
        if r.status != "ok":
            cells = [_status_cell(r), "", ""]
        else:
            ci = ci_text(r, 2) if r.figures.get("ci_low") is not None else ""
            value = value_text(r)
            adj = rep.adjusted.get(r.key)
            holm = (format_p(adj.holm) + " " + _holm_marks(rep, r)).rstrip() if adj else "-"
            cells = [
                f"{value}\n{ci}".rstrip() if level >= 2 else f"{value} {ci}".rstrip(),
                result_p(r),
                holm,
            ]
        if level >= 3:
            cells = [
                cells[0],
                cells[1] + (f"\nHolm {cells[2]}" if cells[2] not in ("", "-") else ""),
            ]
        row += cells
        style = None if r.status == "ok" else "yellow" if r.status == "refused" else "red"
        lead = [_escape(c) for c in row[: -len(cells) - 1]] + [_escape_lines(row[-len(cells) - 1])]
        table.add_row(*lead, *(_escape_lines(c) for c in cells), style=style)
    return table


def _wide_table(rep: Any) -> Table:
    table = Table(title=_escape(rep.title), box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
    for c in rep.columns():
        table.add_column(c.label, no_wrap=True)
    for row, result in zip(rep.rows(), rep.results):
        style = None if result.status == "ok" else "yellow" if result.status == "refused" else "red"
        table.add_row(*(_escape(row[c.key]) for c in rep.columns()), style=style)
    return table


class _Unwrapped:
    """A renderable drawn at its own natural width, whatever the console's (printed with
    crop=False)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: Any) -> Any:
        yield from console.render(self.table, options.update(width=_full_width(self.table)))


def _records(rep: Any) -> list[Any]:
    """The wide table turned on its side: per result a heading (model, test, metric and settings)
    and one line per other column, label and value, so no value is ever split at any terminal
    width."""
    from rich.padding import Padding

    from bias.cli.say import line

    columns = [c for c in rep.columns() if c.key not in ("model", "wordset", "metric", "settings")]
    out: list[Any] = [line((rep.title, "bold"))]
    for i, (row, result) in enumerate(zip(rep.rows(), rep.results), start=1):
        head = " | ".join(
            x for x in (row["model"], row["wordset"], row["metric"], row["settings"]) if x
        )
        out.append(line((f"{i}. ", "bold"), head))
        fields = Table(box=None, show_header=False, pad_edge=False, expand=False)
        fields.add_column("Field", no_wrap=True, style="dim")
        fields.add_column("Value", overflow="fold")
        style = None if result.status == "ok" else "yellow" if result.status == "refused" else "red"
        for c in columns:
            fields.add_row(_escape(c.label), _escape(row[c.key]), style=style)
        out.append(Padding(fields, (0, 0, 0, 3), expand=False))
    return out


def problems(console: Console, found: Sequence[Any]) -> None:
    for p in found:
        colour = {"error": "red", "warning": "yellow"}.get(p.severity, "cyan")
        warn(console, str(p), label=p.severity, style=colour)
