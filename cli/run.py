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
) -> int:
    from bias.core import runner
    from bias.core.report import markdown

    settings: dict[str, Any] = {}
    if config is not None:
        if models or wordsets:
            raise BiasError("Give either an experiment file or --model/--wordset, not both.")
        experiments, settings = load_config(config)
        if seeds:
            experiments = [e for s in seeds for e in _with_seed(experiments, s)]
        if params or grid:
            raise BiasError("Metric options go into the experiment file's [params] table when a file is given.")
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

    prepared = runner.prepare(experiments)
    results = []
    show_progress = not as_json and console.is_terminal
    with _progress(console, len(prepared), show_progress) as advance:
        for result in runner.run(prepared, out=out, resume=resume, fail_fast=fail_fast, debug=debug, on_start=advance.start):
            results.append(result)
            advance.done()
            if as_json:
                print(json.dumps(result.to_dict(), ensure_ascii=False, sort_keys=True), flush=True)
    shown = results
    if out is not None:
        all_results = runner.ResultStore(out).read()
        (out / "report.md").write_text(markdown(all_results, settings.get("title", "Bias report")), encoding="utf-8")
        # On resume, the table shows this run's experiments, whether computed now or before.
        wanted = {p.experiment.key for p in prepared}
        latest = {r.key: r for r in all_results if r.key in wanted}
        shown = [latest[p.experiment.key] for p in prepared if p.experiment.key in latest]
    if not as_json:
        from bias.cli.render import results_table

        console.print(results_table(shown))
        for r in results:
            for key, words in r.lost.items():
                console.print(f"lost words of {r.wordset} set {key}: {', '.join(words)}", highlight=False)
            for key, words in r.approximated.items():
                console.print(f"built from sub-words ({r.wordset} set {key}): {', '.join(words)}", highlight=False)
            if r.status == OK and r.warnings:
                for w in r.warnings:
                    console.print(f"[yellow]warning[/yellow] {r.wordset}: {w}", highlight=False)
            if r.status != OK:
                console.print(f"[red]{r.status}[/red] {r.wordset} on {r.model}: {r.reason}", highlight=False)
        if out is not None:
            skipped = len(prepared) - len(results)
            note = f" ({skipped} already finished, skipped)" if skipped else ""
            console.print(f"Results: {out / 'results.jsonl'}; report: {out / 'report.md'}{note}", highlight=False)
    if any(r.status == FAILED for r in results):
        return FAILURE
    if any(r.status == REFUSED for r in results):
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
    """A rich progress bar over experiments, or nothing when output is not a terminal."""

    def __init__(self, console: Console, total: int, enabled: bool) -> None:
        self.console, self.total, self.enabled = console, total, enabled
        self.bar: Any = None

    def __enter__(self) -> _progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=self.console, transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("experiments", total=self.total)
        return self

    def start(self, prepared: Any) -> None:
        if self.bar:
            exp = prepared.experiment
            self.bar.update(self.task, description=f"{exp.metric} {exp.wordset} on {exp.model.spec}")

    def done(self) -> None:
        if self.bar:
            self.bar.advance(self.task)

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()
