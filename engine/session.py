"""One session of a run into its output folder: the folder's lock, the manifest's session record,
the executor (in process or on Ray), and the report files once the results are in.

A session that is interrupted (Ctrl-C, SIGTERM, SIGHUP) or stopped by --fail-fast still closes its
manifest record and writes the report of what it kept, so `--resume` can continue it; the caller
learns how it ended from the returned `Session` instead of from an exception."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import Interrupted, interrupt_exit_code
from bias.core.model import FAILED, Result
from bias.engine.assembly import Assembly
from bias.engine.planning import Plan

FINISHED, STOPPED, INTERRUPTED, FAILED_SESSION = "finished", "stopped", "interrupted", "failed"
INTERRUPTED_EXIT = 130  # the shell's code for Ctrl-C, when the interruption names none


@attrs.define
class Session:
    """What a session did. `results` are the ones computed now; `report` (with an output folder)
    holds every result of the folder, earlier sessions' included."""

    plan: Plan
    out: Path | None
    results: list[Result]
    status: str  # finished, stopped (--fail-fast) or interrupted
    report: Any = None
    written: list[Path] = attrs.field(factory=list)  # the report files, in the order written
    interrupt_exit_code: int | None = None  # the exit code the interruption asks for

    def this_run(self) -> list[Result]:
        """The results of this run's experiments, whether computed now or, on --resume, before."""
        if self.out is None:
            return self.results
        wanted = {p.experiment.key for p in self.plan.runnable}
        return [r for r in self.report.results if r.key in wanted]

    def already_finished(self) -> int:
        """Experiments of the plan that an earlier session had finished (0 unless the run
        finished)."""
        return len(self.plan.runnable) - len(self.results) if self.status == FINISHED else 0


def run_session(
    assembly: Assembly,
    *,
    resume: bool = False,
    fail_fast: bool = False,
    debug: bool = False,
    formats: Sequence[str] = ("md", "csv", "tex"),
    argv: Sequence[str] | None = None,
    on_event: Callable[[Any], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
    display: contextlib.AbstractContextManager[Any] | None = None,
    hold: contextlib.ExitStack | None = None,
) -> Session:
    """Run the plan into `assembly.out` (or only in memory without one).

    `display` is entered around the experiments alone (a progress bar is gone before the report is
    written). The output folder's lock is released when `hold` closes, so the caller can write
    beside the report (a before/after table) while no other run can start there; without `hold` it
    is released when the session ends. An error other than an interruption closes the manifest
    record as failed and is raised."""
    if hold is not None:
        return _run(
            assembly, hold, resume, fail_fast, debug, formats, argv, on_event, on_result, display
        )
    with contextlib.ExitStack() as own:
        return _run(
            assembly, own, resume, fail_fast, debug, formats, argv, on_event, on_result, display
        )


def _run(
    assembly: Assembly,
    hold: contextlib.ExitStack,
    resume: bool,
    fail_fast: bool,
    debug: bool,
    formats: Sequence[str],
    argv: Sequence[str] | None,
    on_event: Callable[[Any], None] | None,
    on_result: Callable[[Result], None] | None,
    display: contextlib.AbstractContextManager[Any] | None,
) -> Session:
    from bias.core.reports import load_report, write_report
    from bias.engine import runner
    from bias.engine.manifest import Manifest, command_line

    plan, out, settings, family = assembly.plan, assembly.out, assembly.settings, assembly.family
    manifest = None
    if out is not None:
        runner.ResultStore(out)  # a folder that cannot be written is refused before any work
        from bias.core.runs.lock import RunLock

        # a second run into this folder is refused while this one runs
        hold.callback(RunLock(out).acquire().release)
        manifest = Manifest.begin(
            out,
            plan=plan,
            command=command_line(argv),
            config_text=settings.get("text"),
            config_path=settings.get("path"),
            settings=settings,
            family=family,
            resume=resume,
        )
    if assembly.executor == "ray":
        from bias.engine import ray_executor

        ray_executor.import_ray()  # a missing extra is said before any work
        run_plan: Any = functools.partial(
            ray_executor.run,
            address=assembly.ray_address,
            max_cost=assembly.max_cost,
            confirm_cost=assembly.confirm_cost,
            threads=assembly.threads,
        )
    else:
        from bias.core.threads import available_cores

        run_plan = functools.partial(
            runner.run,
            input_models=plan.input_models,
            max_cost=assembly.max_cost,
            confirm_cost=assembly.confirm_cost,
            threads=assembly.threads or available_cores(),
        )
        if manifest is not None:
            manifest.executor("local")
    session = Session(plan=plan, out=out, results=[], status=FINISHED)
    Interrupted.latest = (
        None  # a signal of an earlier session in this process says nothing of this one
    )
    results = session.results
    try:
        with display if display is not None else contextlib.nullcontext():
            for result in run_plan(
                plan.runnable,
                out=out,
                resume=resume,
                fail_fast=fail_fast,
                debug=debug,
                on_event=on_event,
                manifest=manifest,
            ):
                results.append(result)
                if on_result is not None:
                    on_result(result)
        if fail_fast and results and results[-1].status == FAILED:
            session.status = STOPPED
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP
        session.status = INTERRUPTED
        session.interrupt_exit_code = interrupt_exit_code(exc, INTERRUPTED_EXIT)
    except BaseException:
        session.status = FAILED_SESSION
        raise
    finally:
        if manifest is not None:
            manifest.finish(
                session.status,
                computed=len(results),
                planned=len(plan.runnable),
                skipped=len(plan.skipped),
            )
        if out is not None and (out / "results.jsonl").exists():
            from bias import registry

            order = [
                p.experiment.key for p in plan.runnable
            ]  # plan order, whatever order results arrived in
            session.report = load_report(
                out,
                family=family,
                title=settings.get("title"),
                declared=registry.value_declaration,
                order=order,
            )
            session.written = write_report(session.report, out, formats)
    return session
