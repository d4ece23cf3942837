"""`bias run`: the engine assembles the plan and runs the session; this module shows what happens
(the progress bar, the tables, the refusal and warning lines, where the files went) and picks the
exit code."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from bias.core.errors import FAILURE, USAGE
from bias.core.model import FAILED, OK, REFUSED, Result
from bias.cli.say import cell, line, say, warn
from bias.core.text import listed
from bias.engine.assembly import Assembly, assemble
from bias.engine.experiments import ModelConfig
from bias.engine.run_spec import RunSpec
from bias.engine.session import INTERRUPTED, INTERRUPTED_EXIT, STOPPED, Session, run_session

if TYPE_CHECKING:
    from bias.cli.say import Line

err_console = Console(stderr=True)
DEFAULT_FORMATS = ("md", "csv", "tex")  # the report files a run with --out writes


def execute(
    spec: RunSpec, *, console: Console, debug: bool, argv: Sequence[str] | None = None
) -> int:
    """Run and report; the output folder's lock is held until the report is printed, however it
    ends."""
    # before anything is sent
    assembly = assemble(spec, on_contact=lambda text: say(err_console, text))
    as_json, resume, wide = spec.json, spec.resume, spec.wide
    plan, out = assembly.plan, assembly.out
    for skipped in skipped_lines(plan.skipped):
        # a warning, on stderr beside the refusals: stdout keeps the results
        say(err_console, skipped)
    quiet = logging.getLogger().getEffectiveLevel() >= logging.ERROR
    show_progress = not as_json and not quiet and console.is_terminal
    # Off a terminal (CI, tee, nohup) a line per finished experiment on stderr, so a long run is
    # never silent.
    plain_lines = not quiet and not show_progress
    progress = _progress(console, show_progress, plain=plain_lines)

    def print_json(result: Any) -> None:
        print(json.dumps(result.to_dict(), ensure_ascii=False, sort_keys=True), flush=True)

    with contextlib.ExitStack() as hold:
        session = run_session(
            assembly,
            resume=resume,
            fail_fast=spec.fail_fast,
            debug=debug,
            formats=spec.formats or DEFAULT_FORMATS,
            argv=argv,
            on_event=progress.event,
            on_result=print_json if as_json else None,
            display=progress,
            hold=hold,
        )
        results = session.results
        for retried in progress.retried_lines():
            say(err_console, retried)
        if session.status == INTERRUPTED:
            where = (
                f"; {len(results)} result(s) of this session kept in "
                f"{out / 'results.jsonl'} (continue with --resume)"
                if out
                else ""
            )
            say(err_console, f"Interrupted{where}.")
            return (
                session.interrupt_exit_code
                if session.interrupt_exit_code is not None
                else INTERRUPTED_EXIT
            )
        if not as_json:
            _show(session, assembly, console, wide)
        if session.status == STOPPED:
            say(err_console, "Stopped at the first failing experiment (--fail-fast).")
        return exit_code(results)


def _show(session: Session, assembly: Assembly, console: Console, wide: bool) -> None:
    """The results of this run: refusals and failures on stderr before any table (no table when
    nothing succeeded), the messages, the before/after table, and where the files went."""
    from bias.cli.render import results_table
    from bias.core.reports import build
    from bias.core.runs.results import DETAIL_TABLES

    out, results, shown = session.out, session.results, session.this_run()
    shown_report = build(
        shown, family=assembly.family, title=assembly.settings.get("title") or "Results"
    )
    for refused in refusal_lines(shown_report, results):
        say(err_console, refused)
    if any(r.status == OK for r in shown):
        console.print(
            results_table(
                shown_report, width=console.width, wide=wide, terminal=console.is_terminal
            ),
            crop=False,
        )
    for said, warning in messages(shown_report, results):
        say(err_console if warning else console, said)
    if assembly.after_model is not None:
        _before_after(shown, session.plan.runnable, assembly.after_model, out, console)
    if out is not None:
        finished = session.already_finished()
        note = f" ({finished} already finished, skipped)" if finished else ""
        details = [
            out / r.figures[n]
            for r in shown
            for n in DETAIL_TABLES
            if isinstance(r.figures.get(n), str)
        ]
        main = [out / "results.jsonl", *session.written, out / "manifest.json"]
        say(console, f"Written to {out}/: {written_files(out, main, details)}{note}", whole=True)


def written_files(out: Path, main: Sequence[Path], details: Sequence[Path], named: int = 2) -> str:
    """The main files by name and the per-item CSVs by name only when they are few: a grid of 60
    experiments writes 60 of them, which a reader finds with the pattern the line gives."""
    shown = [p.name if p.parent == out else str(p) for p in main]
    if len(details) <= named:
        return ", ".join(shown + [p.name if p.parent == out else str(p) for p in details])
    patterns = sorted({p.name.split("-", 1)[0] + "-*.csv" for p in details})
    return ", ".join(shown) + f" and {len(details)} per-item CSV files ({', '.join(patterns)})"


def exit_code(results: Sequence[Result]) -> int:
    """1 when an experiment failed for a reason other than its input, 2 when all that went wrong was
    the input (refusals, failures marked as usage errors), else 0."""
    failed = [r for r in results if r.status == FAILED]
    if any(r.meta.get("exit_code", FAILURE) != USAGE for r in failed):
        return FAILURE
    if failed or any(r.status == REFUSED for r in results):
        return USAGE
    return 0


def _before_after(
    results: Sequence[Any],
    prepared: Sequence[Any],
    after_model: ModelConfig,
    out: Path | None,
    console: Console,
) -> None:
    """The before/after table of `--with-original` (and `bias debias --wordset`): every test (bias
    measures and utilities alike) on the original and on the debiased model, with the change,
    written beside the report with --out."""
    from bias.cli.compare import rich_table
    from bias.core.reports.compare import compare, csv_text, markdown
    from bias.core.runs.folder import open_in_run

    def is_after(
        model: ModelConfig,
    ) -> bool:  # the planner adds the lists' language, so not by equality
        return model.spec == after_model.spec and (model.debias is None) == (
            after_model.debias is None
        )

    debiased = {p.experiment.key for p in prepared if is_after(p.experiment.model)}
    before = [r for r in results if r.key not in debiased]
    after = [r for r in results if r.key in debiased]
    if not before or not after:
        return
    table = compare(before, after)
    console.print(rich_table(table))
    for note in table.notes:
        warn(console, note, label="note")
    if out is not None:
        with open_in_run(out, "compare.md") as fh:
            fh.write(markdown(table, title="Original and debiased"))
        with open_in_run(out, "compare.csv") as fh:
            fh.write(csv_text(table))
        say(console, f"Before/after written to {out / 'compare.md'}, {out / 'compare.csv'}")


def _metric_and_level(skipped: Any) -> str:
    """A skipped combination's metric with the settings that tell its grid cells apart."""
    shown = [f"{k}={v}" for k, v in sorted(skipped.params.items()) if k in _LEVEL_KEYS]
    return f"{skipped.metric} ({', '.join(shown)})" if shown else f"{skipped.metric}"


_LEVEL_KEYS = ("level", "pooling", "layer")


def skipped_lines(skipped: Sequence[Any]) -> list[Line]:
    """The combinations set aside before the run, grouped by reason: one line per reason with the
    settings it concerns, so a grid's 40 skipped combinations read as two lines."""
    groups: dict[str, list[Any]] = {}
    for s in skipped:
        groups.setdefault(s.reason, []).append(s)
    lines = []
    for reason, members in groups.items():
        what = list(dict.fromkeys(_metric_and_level(s) for s in members))
        shown = ", ".join(what[:4]) + (f" and {len(what) - 4} more" if len(what) > 4 else "")
        lines.append(
            line(("skipped", "yellow"), f" {len(members)} combination(s), {shown}: {reason}")
        )
    return lines


def messages(report: Any, results: Sequence[Any]) -> list[tuple[Line, bool]]:
    """What the user should know beyond the table, each said once: lost and sub-word words per test,
    warnings naming the experiment and setting they belong to (the same warning of several settings
    on one line), each with whether it is a warning (said on stderr, as refusals are). Refusals are
    said by `refusal_lines`."""
    from bias.core.reports.values import short_models

    names = short_models(results) if results else {}
    lines: list[tuple[Line, bool]] = []
    said: set[str] = set()
    for r in results:
        if r.status != OK:  # a refusal names its lost words in its reason
            continue
        for key, words in r.lost.items():
            text = f"lost words of {r.wordset} set {key}: {listed(words)}"
            if text not in said:
                said.add(text)
                lines.append((line(text), False))
        for key, words in r.approximated.items():
            text = f"built from sub-words ({r.wordset} set {key}): {listed(words)}"
            if text not in said:
                said.add(text)
                lines.append((line(text), False))
    if not any(r.status == OK for r in report.results):  # else the table's notes say it
        from bias.core.reports.tables import smoke_notes

        lines += [(line(n), True) for n in smoke_notes(report.results)]
    warned: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.status == OK:
            for w in r.warnings:
                warned.setdefault((r.wordset, w), []).append(_where(report, r, names))
    for (wordset, w), wheres in warned.items():
        lines.append(
            (
                line(
                    ("warning", "yellow"), f" {wordset} ({', '.join(dict.fromkeys(wheres))}): {w}"
                ),
                True,
            )
        )
    return lines


def _where(report: Any, r: Any, names: dict[str, str]) -> str:
    from bias.core.reports.values import variant_label

    where = variant_label(r.metric, report.settings.get(r.key, ""))
    return f"{names.get(r.model, r.model)} {where}" if len(names) > 1 else where


def refusal_lines(report: Any, results: Sequence[Any]) -> list[Line]:
    """Refused and failed experiments grouped by reason, one line each, naming the tests and
    settings."""
    from bias.core.reports.values import short_models

    names = short_models(results) if results else {}
    refused: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.status != OK:
            refused.setdefault((r.status, r.reason or ""), []).append(
                f"{r.wordset} {_where(report, r, names)}"
            )
    lines: list[Line] = []
    for (status, reason), wheres in refused.items():
        colour = "yellow" if status == REFUSED else "red"
        unique_wheres = list(dict.fromkeys(wheres))
        shown = ", ".join(unique_wheres[:6]) + (
            f" and {len(unique_wheres) - 6} more" if len(unique_wheres) > 6 else ""
        )
        count = f" ({len(wheres)} experiments)" if len(wheres) > 1 else ""
        lines.append(line((status, colour), f"{count} {shown}: {reason}"))
    return lines


def detail(r: Result) -> str:
    """One experiment's particulars for -v: the sizes of the sets used, the words lost, the
    convention."""
    parts = []
    if r.sizes:
        parts.append("sizes " + ", ".join(f"{k} {v}" for k, v in r.sizes.items()))
    lost = sum(len(words) for words in r.lost.values())
    parts.append(f"lost {lost} word(s)" if lost else "no word lost")
    if r.convention:
        parts.append(
            ", ".join(
                f"{k}={v}"
                for k, v in r.convention.items()
                if isinstance(v, (str, int, float, bool)) and len(str(v)) <= 24
            )
        )
    if r.status != OK and r.reason:
        parts.append(r.reason)
    return "; ".join(parts)


class _progress:
    """Two rich progress lines on a terminal: the whole batch (done of total, elapsed, time
    remaining) and the current experiment (what runs, for how long). Off a terminal, one plain line
    per finished experiment on stderr: `[k/N] test metric settings: value (time)`."""

    def __init__(self, console: Console, enabled: bool, plain: bool = False) -> None:
        self.console, self.enabled, self.plain = console, enabled, plain
        self.loaded: set[str] = set()
        self.bar: Any = None
        self.waiting: dict[str, str] = {}  # Ray: model -> what it waits for (a free CPU or GPU)
        # Ray: model -> (the experiments sent again after a worker was lost, why)
        self.retried: dict[str, tuple[set[str], dict[str, None]]] = {}
        self.started = False  # whether experiments are announced as they start (the local runner)

    def __enter__(self) -> _progress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.overall = self.bar.add_task("batch", total=None)
            self.current = self.bar.add_task("", total=None)
        return self

    def event(self, event: Any) -> None:
        if event.kind == "quote":
            say(err_console, event.note)
        self.started = self.started or event.kind == "start"
        if event.kind == "retry" and event.experiment is not None:
            keys, reasons = self.retried.setdefault(event.model, (set(), {}))
            keys.add(event.experiment.key)
            reasons[event.note] = None
        verbose = logging.getLogger().isEnabledFor(logging.INFO)
        if (self.plain or verbose) and event.kind == "result" and event.result is not None:
            self._line(event, verbose)
        if event.kind == "waiting":
            self.waiting[event.model] = event.note
            if self.plain or verbose:  # a long wait is never silent
                say(err_console, f"[{event.done}/{event.total}] {event.note}")
        elif event.kind in ("loading", "result"):
            self.waiting.pop(event.model, None)
        if not self.bar:
            return
        self.bar.update(self.overall, total=event.total, completed=event.done, description="batch")
        # Ray: a model waits for a CPU or GPU others hold
        if self.waiting and event.kind != "start":
            note = next(iter(self.waiting.values()))
            more = f" (+{len(self.waiting) - 1} more)" if len(self.waiting) > 1 else ""
            self.bar.reset(self.current, total=None, description=cell(note + more))
        elif event.kind == "loading":
            self.bar.reset(self.current, total=None, description=cell(f"loading {event.model}"))
        elif event.kind == "result" and not self.started and event.experiment is not None:
            # Ray says no "start" (models run side by side): the line names the latest result
            # instead
            exp = event.experiment
            self.bar.reset(
                self.current,
                total=None,
                description=cell(f"done {exp.metric} {exp.wordset} on {event.model}"),
            )
        elif event.kind == "start":
            exp = event.experiment
            self.bar.reset(
                self.current,
                total=None,
                description=cell(f"{exp.metric} {exp.wordset} on {event.model}"),
            )

    def _line(self, event: Any, verbose: bool = False) -> None:
        """`[k/N] test metric on model: value (compute time; the model's load time, once per
        model)`, and with -v a second line with what the table leaves out: sets used, lost words,
        convention."""
        from bias.core.reports.tables import value_text
        from bias.core.reports.values import result_p, short_models, variant_label

        r, exp = event.result, event.experiment
        varying = ", ".join(
            f"{k}={v}"
            for k, v in sorted(exp.params.items())
            if k in ("level", "pooling", "layer") and v is not None
        )
        what = variant_label(exp.metric, varying) + (
            f" seed={exp.seed}" if exp.seed not in (None, 0) else ""
        )
        if r.status == OK:
            p = result_p(r)
            outcome = value_text(r) + (f", p {p}" if p != "-" else "")
        else:
            outcome = r.status
        model = short_models([r])[r.model]
        # said once per model
        load = r.timings.get("model_load_s") if r.model not in self.loaded else None
        self.loaded.add(r.model)
        timing = f"{r.timings.get('compute_s', 0.0):.1f} s" + (
            f"; {model} loaded in {load:.1f} s" if load is not None else ""
        )
        say(
            err_console,
            f"[{event.done}/{event.total}] {exp.wordset} {what} on {model}: {outcome} ({timing})",
        )
        if verbose:
            say(err_console, "      " + detail(r))

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()

    def retried_lines(self) -> list[str]:
        """What the Ray executor sent again after losing a worker, one line per model and cause."""
        return [
            f"retried {len(keys)} experiment(s) of {model} on Ray, after losing its "
            f"worker: {'; '.join(reasons)}"
            for model, (keys, reasons) in self.retried.items()
        ]
