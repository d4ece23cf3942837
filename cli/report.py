"""`bias report`: the report of a run regenerated from its results.jsonl (table, CSV, Markdown,
LaTeX, figures, HTML), or its specification curves (--robustness), or how far its methods agree
(--agreement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from bias.cli.say import say, say_whole, warn
from bias.core.errors import BiasError


def execute(
    folder: Path,
    formats: tuple[str, ...],
    family: str | None,
    *,
    wide: bool,
    robustness: bool,
    agreement: bool,
    console: Console,
    err_console: Console,
) -> None:
    from bias.cli.render import results_table
    from bias import registry
    from bias.core.reports import load_report, write_report

    if robustness and agreement:
        raise BiasError(
            "--robustness and --agreement are two different reports; give one of them.",
            f"For example `bias report {folder} --robustness`, then `bias report {folder} "
            "--agreement`.",
        )
    report = load_report(folder, family=family, declared=registry.value_declaration)
    where = folder / "results.jsonl" if folder.is_dir() else folder
    if report.results:  # each damaged line said, whatever is made of the rest
        for bad in report.damaged[:5]:
            warn(err_console, f"{where} {bad}: skipped.")
        rest = report.damaged_lines - len(report.damaged[:5])
        if rest > 0:
            say(err_console, f"... and {rest:,} more damaged line(s) skipped.")
    if robustness and report.results:
        _robustness_report(report, folder, formats, console)
        return
    if not report.results:
        damaged = (
            f" ({len(report.damaged):,} damaged line(s); {report.damaged[0]})"
            if report.damaged
            else ""
        )
        raise BiasError(
            f"{where} holds no valid result line{damaged}.",
            "Give the folder of a `bias run --out` that finished at least one experiment.",
        )
    target = folder if folder.is_dir() else folder.parent
    if agreement:
        from bias.cli.render import agreement_report

        written = agreement_report(console, report, target, formats)
        say_whole(
            console,
            f"Written to {target}{'/' if not str(target).endswith('/') else ''}: "
            + ", ".join(p.name for p in written),
        )
        return
    if not wide:  # the narrow table says "refused" or "failed"; why, as `bias run` says it
        from bias.cli.run import refusal_lines

        for refused in refusal_lines(report, report.results):
            say(err_console, refused)
    console.print(
        results_table(report, width=console.width, wide=wide, terminal=console.is_terminal),
        crop=False,
    )
    written = write_report(report, target, formats)
    names = ", ".join(p.name if p.parent == target else str(p) for p in written)
    say(
        console,
        f"Written to {target}{'' if str(target).endswith('/') else '/'}: {names}",
        whole=True,
    )


def _robustness_report(
    report: Any, folder: Path, formats: tuple[str, ...], console: Console
) -> None:
    """`bias report --robustness`: the table per test on the terminal, figures and tables in the
    folder."""
    from bias.cli.render import robustness_table
    from bias.core.reports.robustness_report import notes, write_robustness

    target = folder if folder.is_dir() else folder.parent
    chosen = tuple(f for f in formats if f in ("md", "csv", "png", "svg"))
    if not chosen:
        raise BiasError(
            "--robustness writes md, csv, png or svg files; none of them is among the "
            "formats asked for.",
            "Leave out --format, or give e.g. --format png,md.",
        )
    found, written = write_robustness(report, target, chosen)
    console.print(robustness_table(found, width=console.width))
    for note in notes(report, found):
        say_whole(console, note)  # wrapped to the terminal
    # Wrapped between names, never inside one, so the output keeps to the terminal's width.
    say_whole(
        console,
        f"Written to {target}{'/' if not str(target).endswith('/') else ''}: "
        + ", ".join(p.name for p in written),
    )
