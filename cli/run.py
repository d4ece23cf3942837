"""`bias run`: build the experiments, run them with a progress bar, print and write the results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from bias.core.errors import FAILURE, USAGE, BiasError
from bias.core.experiments import DEFAULT_SEED, ModelConfig, expand, load_config, unique
from bias.core.model import FAILED, OK, REFUSED

err_console = Console(stderr=True)


def execute(
    *,
    config: Path | None,
    models: Sequence[str],
    wordsets: Sequence[str],
    metrics: Sequence[str],
    seeds: Sequence[int],
    params: dict[str, Any],
    grid: dict[str, list[Any]],
    model_options: dict[str, str],
    out: Path | None,
    shared_model_options: dict[str, Any] | None = None,
    resume: bool,
    fail_fast: bool,
    as_json: bool,
    console: Console,
    debug: bool,
    family: str | None = None,
    formats: Sequence[str] = ("md", "csv", "tex"),
    argv: Sequence[str] | None = None,
) -> int:
    from bias.core import runner
    from bias.core.manifest import Manifest, command_line
    from bias.core.reports import build, load_report, write_report

    settings: dict[str, Any] = {}
    if config is not None:
        if models or wordsets:
            raise BiasError("Give either an experiment file or --model/--wordset, not both.")
        experiments, settings = load_config(config)
        if seeds:
            experiments = [e for s in seeds for e in _with_seed(experiments, s)]
        if params or grid:
            raise BiasError("Metric options go into the experiment file's [params] or [grid] table when a file is given.")
    else:
        if not models:
            raise BiasError("No model given.", "Use --model NAME:LOCATION (e.g. word2vec:vectors.bin) or give an experiment file.")
        if not wordsets:
            raise BiasError("No word set given.", "Use --wordset NAME (see `bias list wordsets`) or a file path.")
        configs = [ModelConfig(m, {**_fitting(m, shared_model_options or {}), **model_options}) for m in models]
        experiments = expand(configs, wordsets, [(m, dict(params)) for m in metrics], list(seeds) or [DEFAULT_SEED], grid)
    experiments = unique(experiments)
    out = out or (Path(settings["out"]) if settings.get("out") else None)
    if resume and out is None:
        raise BiasError("--resume needs --out (the folder of the run to resume).")
    family = family or settings.get("family", "run")

    plan = runner.plan(experiments)
    for s in plan.skipped:
        (err_console if as_json else console).print(f"[yellow]skipped[/yellow]: {s}", highlight=False, soft_wrap=True)
    manifest = None
    if out is not None:
        runner.ResultStore(out)  # a folder that cannot be written is refused before any work
        manifest = Manifest.begin(
            out, plan=plan, command=command_line(argv), config_text=settings.get("text"), config_path=settings.get("path"),
            settings=settings, family=family, resume=resume,
        )
    results: list[Any] = []
    written: list[Path] = []
    status = "finished"
    show_progress = not as_json and console.is_terminal
    try:
        with _progress(console, show_progress) as progress:
            for result in runner.run(
                plan.prepared, out=out, resume=resume, fail_fast=fail_fast, debug=debug, on_event=progress.event, manifest=manifest
            ):
                results.append(result)
                if as_json:
                    print(json.dumps(result.to_dict(), ensure_ascii=False, sort_keys=True), flush=True)
        if fail_fast and results and results[-1].status == FAILED:
            status = "stopped"
    except KeyboardInterrupt:
        status = "interrupted"
    except BaseException:
        status = "failed"
        raise
    finally:
        if manifest is not None:
            manifest.finish(status, computed=len(results), planned=len(plan.prepared), skipped=len(plan.skipped))
        if out is not None and (out / "results.jsonl").exists():
            report = load_report(out, family=family, title=settings.get("title"))
            written = write_report(report, out, formats)
    if status == "interrupted":
        where = f"; {len(results)} result(s) of this session kept in {out / 'results.jsonl'} (continue with --resume)" if out else ""
        err_console.print(f"Interrupted{where}.", highlight=False, soft_wrap=True)
        return 130

    shown = results
    if out is not None:
        # On resume, the table shows this run's experiments, whether computed now or before.
        wanted = {p.experiment.key for p in plan.prepared}
        shown = [r for r in report.results if r.key in wanted]
    if not as_json:
        from bias.cli.render import results_table

        console.print(results_table(build(shown, family=family)))
        for r in results:
            for key, words in r.lost.items():
                console.print(f"lost words of {r.wordset} set {key}: {', '.join(words)}", highlight=False)
            for key, words in r.approximated.items():
                console.print(f"built from sub-words ({r.wordset} set {key}): {', '.join(words)}", highlight=False)
            if r.status == OK and r.warnings:
                for w in r.warnings:
                    console.print(f"[yellow]warning[/yellow] {r.wordset}: {w}", highlight=False)
            if r.status != OK:
                console.print(f"[red]{r.status}[/red] {r.wordset} on {r.model}: {r.reason}", highlight=False, soft_wrap=True)
        if out is not None:
            finished = len(plan.prepared) - len(results) if status == "finished" else 0
            note = f" ({finished} already finished, skipped)" if finished else ""
            files = ", ".join(str(p) for p in [out / "results.jsonl", *written, out / "manifest.json"])
            console.print(f"Written: {files}{note}", highlight=False, soft_wrap=True)
    if status == "stopped":
        err_console.print("Stopped at the first failing experiment (--fail-fast).", highlight=False)
    failed = [r for r in results if r.status == FAILED]
    if any(r.meta.get("exit_code", FAILURE) != USAGE for r in failed):
        return FAILURE
    if failed or any(r.status == REFUSED for r in results):
        return USAGE
    return 0


def _fitting(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    """The shared loader options (--device, --dtype, ...) that this model's embedder declares."""
    from bias.core.params import describe_params
    from bias.core.specs import parse_spec
    from bias.registry.resolve import embedder_class

    if not options:
        return {}
    declared = {p.name for p in describe_params(embedder_class(parse_spec(spec).embedder))}
    unused = sorted(set(options) - declared)
    if unused:
        import logging

        logging.getLogger(__name__).info("%s ignores %s (its embedder has no such option)", spec, ", ".join(unused))
    return {k: v for k, v in options.items() if k in declared}


def _with_seed(experiments: Sequence[Any], seed: int) -> list[Any]:
    import attrs

    return [attrs.evolve(e, seed=seed) for e in experiments]


class _progress:
    """Two rich progress lines, or nothing when output is not a terminal: the whole batch (done of
    total, elapsed, time remaining) and the current experiment (what runs, for how long)."""

    def __init__(self, console: Console, enabled: bool) -> None:
        self.console, self.enabled = console, enabled
        self.bar: Any = None

    def __enter__(self) -> _progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), console=self.console, transient=True,
            )
            self.bar.start()
            self.overall = self.bar.add_task("batch", total=None)
            self.current = self.bar.add_task("", total=None)
        return self

    def event(self, event: Any) -> None:
        if not self.bar:
            return
        self.bar.update(self.overall, total=event.total, completed=event.done, description="batch")
        if event.kind == "loading":
            self.bar.reset(self.current, total=None, description=f"loading {event.model}")
        elif event.kind == "start":
            exp = event.experiment
            self.bar.reset(self.current, total=None, description=f"{exp.metric} {exp.wordset} on {event.model}")

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()
