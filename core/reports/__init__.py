"""Reports built from a run's results file alone (never from a live run), so they can be
regenerated.

    from bias.core.reports import write_report
    write_report("runs/2026-nl", formats=("md", "csv", "tex", "png", "svg"))

Outputs in the run folder: report.md, results.csv, results.tex, report.html (one self-contained
file), and forest / heatmap / words / languages / p-vs-effect as .png and .svg. The multiple-testing
family and the skipped combinations come from the run's manifest.json when there is one (the family
can be overridden)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bias.core.did_you_mean import suggestions
from bias.core.errors import BiasError
from bias.core.reports.tables import Report, build, to_csv, to_markdown
from bias.core.statistics.multiple_testing import FAMILIES
from bias.core.text import shown

FORMATS = ("md", "csv", "tex", "png", "svg", "html")
TABLE_FILES = {"md": "report.md", "csv": "results.csv", "tex": "results.tex"}


def parse_formats(values: Sequence[str]) -> tuple[str, ...]:
    """`all`, or names from FORMATS, repeated or comma-separated; unknown names are user errors."""
    out: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part == "all":
                out.extend(FORMATS)
            elif part in FORMATS:
                out.append(part)
            else:
                raise BiasError(
                    f"Unknown report format '{part}'.",
                    (
                        suggestions(part, [*FORMATS, "all"]) + " "
                        if suggestions(part, [*FORMATS, "all"])
                        else ""
                    )
                    + f"Formats: all, {', '.join(FORMATS)}.",
                )
    return tuple(dict.fromkeys(out))


def load_report(
    folder: Path,
    *,
    family: str | None = None,
    title: str | None = None,
    declared: Callable[[str], dict[str, Any] | None] | None = None,
    order: Sequence[str] = (),
) -> Report:
    """The report of a run folder (or a results.jsonl path): latest result per key, damaged lines
    listed.

    Results written by earlier versions are read as today's (`old_results`); `declared(metric)`
    answers what a metric declares now, for those written before results carried it (the CLI asks
    the registry). `order` (the plan's experiment keys) puts the results in plan order, whatever
    order they arrived in (a Ray run writes them as its workers finish); keys it does not name
    follow, in the file's order."""
    from bias.core.runs.manifest import read_manifest
    from bias.core.runs.results import scan_results

    from bias.core.reports.old_results import upgraded

    found = scan_results(folder)
    results = [upgraded(r, declared) for r in found.latest()]
    if order:
        place = {key: i for i, key in enumerate(order)}
        # stable: rest in file order
        results = sorted(results, key=lambda r: place.get(r.key, len(place)))
    try:
        manifest = read_manifest(found.path.parent) or {}
    except (
        BiasError
    ) as exc:  # the results alone make the report; the manifest adds title and family
        import logging

        logging.getLogger(__name__).warning(
            "%s The report is built from results.jsonl alone.", exc.message
        )
        manifest = {}
    written = manifest.get("family")
    if family is None and written is not None and written not in FAMILIES:
        import logging

        logging.getLogger(__name__).warning(
            "%s: family %s is not one of %s; the report takes the family run.",
            found.path.parent / "manifest.json",
            shown(written, 40),
            ", ".join(FAMILIES),
        )
        written = None
    return build(
        results,
        family=family or written or "run",
        title=title or manifest.get("title") or "Bias report",
        skipped=manifest.get("skipped", []),
        damaged=found.damaged,
        notes=manifest.get("notes", []),
    )


def write_report(
    report: Report, folder: Path, formats: Sequence[str] = FORMATS, agreement: Any = None
) -> list[Path]:
    """Write the chosen formats of `report` into `folder`; returns the files written. With
    `agreement` (`bias.core.reports.agreement.agreement(report)`) also its tables and figure
    (agreement.*), and its section in report.html."""
    from bias.core.reports.latex import to_latex

    from bias.core.runs.folder import open_in_run

    folder = Path(folder)
    written = []
    writers = {"md": to_markdown, "csv": to_csv, "tex": to_latex}
    for fmt in formats:
        if fmt in writers:
            with open_in_run(folder, TABLE_FILES[fmt]) as fh:
                fh.write(writers[fmt](report))
            written.append(folder / TABLE_FILES[fmt])
    images = tuple(f for f in formats if f in ("png", "svg"))
    if images:
        from bias.core.reports.figures import write_figures

        written += write_figures(report, folder, images)
        from bias.core.reports.quadrant_figure import write_quadrant_figures

        written += write_quadrant_figures(report, folder, images)
    if agreement is not None:
        from bias.core.reports.agreement import write_agreement

        written += write_agreement(report, agreement, folder, formats)
    if "html" in formats:
        from bias.core.reports.html import to_html

        with open_in_run(folder, "report.html") as fh:
            fh.write(to_html(report, folder, agreement))
        written.append(folder / "report.html")
    return written


__all__ = [
    "FORMATS",
    "Report",
    "build",
    "load_report",
    "parse_formats",
    "to_csv",
    "to_markdown",
    "write_report",
]
