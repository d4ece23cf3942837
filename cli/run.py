"""`bias run`: build the experiments, run them with a progress bar, print and write the results."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from bias.core.errors import FAILURE, USAGE, BiasError
from bias.engine.experiments import DEFAULT_SEED, ModelConfig, expand, load_config, refuse_conflicts, unique
from bias.core.duplicates import same_models
from bias.core.model import FAILED, OK, REFUSED
from bias.core.text import listed, message

err_console = Console(stderr=True)


_held: list = []  # the output folder's lock while a run holds it


def execute(**kwargs: Any) -> int:
    """Run and report (see `_execute`); the output folder's lock is released however it ends."""
    try:
        return _execute(**kwargs)
    finally:
        while _held:
            _held.pop().release()


def _execute(
    *,
    config: Path | None,
    models: Sequence[str],
    datasets: Path | None = None,
    models_dir: Path | None = None,
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
    executor: str | None = None,
    ray_address: str | None = None,
    wide: bool = False,
    with_original: bool = False,
    before_after: bool = False,
) -> int:
    from bias.engine import planning, runner
    from bias.engine.manifest import Manifest, command_line
    from bias.core.reports import build, load_report, write_report

    settings: dict[str, Any] = {}
    after_model: ModelConfig | None = None  # --with-original, bias debias --wordset: the model "after"
    if with_original and config is not None:
        raise BiasError("--with-original goes with --model and --debias, not with an experiment file.", "List the original and the debiased model in the file's [[models]] instead.")
    if config is not None:
        if models or wordsets:
            raise BiasError("Give either an experiment file or --model/--wordset, not both.")
        experiments, settings = _load(config, datasets, models_dir)
        experiments = _with_command_line_options(experiments, shared_model_options or {}, model_options)
        if seeds:
            experiments = [e for s in seeds for e in _with_seed(experiments, s)]
        if params or grid:
            raise BiasError("Metric options go into the experiment file's [params] or [grid] table when a file is given.")
    else:
        if datasets is not None or models_dir is not None:
            raise BiasError("--datasets and --models go with a BIAS Detection Framework config file.", "bias run CONFIG.txt --datasets DIR --models DIR")
        if not models:
            raise BiasError("No model given.", "Use --model NAME:LOCATION (e.g. word2vec:vectors.bin) or give an experiment file.")
        if not wordsets:
            raise BiasError("No word set given.", "Use --wordset NAME (see `bias list wordsets`) or a file path.")
        configs = [ModelConfig(m, {**_fitting(m, shared_model_options or {}), **model_options}) for m in models]
        if with_original:
            configs = _with_original(configs)
        if with_original or before_after:
            after_model = configs[-1]
        experiments = expand(configs, wordsets, [(m, dict(params)) for m in metrics], list(seeds) or [DEFAULT_SEED], grid)
    experiments = unique(same_models(experiments))
    if out is None and settings.get("out"):
        out = _out_of_file(Path(settings["out"]), settings.get("out_written", ""), Path(settings["path"]))
    elif out is not None and settings.get("out") and Path(settings["out"]).resolve() != Path(out).resolve():
        err_console.print(Text(f"--out {out} replaces the experiment file's out = {settings.get('out_written')!r}."), highlight=False, soft_wrap=True)
    if resume and out is None:
        raise BiasError("--resume needs --out (the folder of the run to resume).")
    family = family or settings.get("family", "run")
    executor, ray_address = _executor(executor or settings.get("executor", "local"), ray_address or settings.get("ray_address"))

    plan = planning.plan(experiments)
    planning.check_models(plan)
    for line in skipped_lines(plan.skipped):
        (err_console if as_json else console).print(line, highlight=False, soft_wrap=True)
    manifest = None
    if out is not None:
        runner.ResultStore(out)  # a folder that cannot be written is refused before any work
        from bias.core.run_lock import RunLock

        _held.append(RunLock(out).acquire())  # a second run into this folder is refused while this one runs
        manifest = Manifest.begin(
            out, plan=plan, command=command_line(argv), config_text=settings.get("text"), config_path=settings.get("path"),
            settings=settings, family=family, resume=resume,
        )
    if executor == "ray":
        from bias.engine import ray_executor

        ray_executor.import_ray()  # a missing extra is said before any work
        run_plan: Any = functools.partial(ray_executor.run, address=ray_address)
    else:
        run_plan = functools.partial(runner.run, input_models=plan.input_models)
        if manifest is not None:
            manifest.executor("local")
    results: list[Any] = []
    written: list[Path] = []
    status = "finished"
    import logging

    quiet = logging.getLogger().getEffectiveLevel() >= logging.ERROR
    show_progress = not as_json and not quiet and console.is_terminal
    # Off a terminal (CI, tee, nohup) a line per finished experiment on stderr, so a long run is never silent.
    plain_lines = not quiet and not show_progress
    try:
        with _progress(console, show_progress, plain=plain_lines) as progress:
            for result in run_plan(
                plan.runnable, out=out, resume=resume, fail_fast=fail_fast, debug=debug, on_event=progress.event, manifest=manifest
            ):
                results.append(result)
                if as_json:
                    print(json.dumps(result.to_dict(), ensure_ascii=False, sort_keys=True), flush=True)
        if fail_fast and results and results[-1].status == FAILED:
            status = "stopped"
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP
        status = "interrupted"
        interrupted_code = getattr(exc, "exit_code", 130)
    except BaseException:
        status = "failed"
        raise
    finally:
        if manifest is not None:
            manifest.finish(status, computed=len(results), planned=len(plan.runnable), skipped=len(plan.skipped))
        if out is not None and (out / "results.jsonl").exists():
            report = load_report(out, family=family, title=settings.get("title"))
            written = write_report(report, out, formats)
    if status == "interrupted":
        where = f"; {len(results)} result(s) of this session kept in {out / 'results.jsonl'} (continue with --resume)" if out else ""
        err_console.print(Text(f"Interrupted{where}."), highlight=False, soft_wrap=True)
        return interrupted_code

    shown = results
    if out is not None:
        # On resume, the table shows this run's experiments, whether computed now or before.
        wanted = {p.experiment.key for p in plan.runnable}
        shown = [r for r in report.results if r.key in wanted]
    if not as_json:
        from bias.cli.render import results_table

        shown_report = build(shown, family=family, title=settings.get("title") or "Results")
        # Refusals and failures on stderr before any table; no table when nothing succeeded.
        for line in refusal_lines(shown_report, results):
            err_console.print(line, highlight=False, soft_wrap=True)
        if any(r.status == OK for r in shown):
            console.print(results_table(shown_report, width=console.width, wide=wide))
        for line in messages(shown_report, results):
            console.print(line, highlight=False, soft_wrap=True)
        if after_model is not None:
            _before_after(shown, plan.runnable, after_model, out, console)
        if out is not None:
            finished = len(plan.runnable) - len(results) if status == "finished" else 0
            note = f" ({finished} already finished, skipped)" if finished else ""
            from bias.core.results import DETAIL_TABLES

            details = [out / r.figures[n] for r in shown for n in DETAIL_TABLES if isinstance(r.figures.get(n), str)]
            files = ", ".join(p.name if p.parent == out else str(p) for p in [out / "results.jsonl", *written, out / "manifest.json", *details])
            console.print(f"Written to {out}/: {files}{note}", highlight=False, soft_wrap=True)
    if status == "stopped":
        err_console.print("Stopped at the first failing experiment (--fail-fast).", highlight=False)
    failed = [r for r in results if r.status == FAILED]
    if any(r.meta.get("exit_code", FAILURE) != USAGE for r in failed):
        return FAILURE
    if failed or any(r.status == REFUSED for r in results):
        return USAGE
    return 0


def _with_original(configs: Sequence[ModelConfig]) -> list[ModelConfig]:
    """The original model first, then the debiased one (`--with-original`)."""
    if len(configs) != 1 or not configs[0].options.get("debias"):
        raise BiasError("--with-original compares one model with its debiased version.", "Give one --model and --debias METHOD.")
    debiased = configs[0]
    original = ModelConfig(debiased.spec, {k: v for k, v in debiased.options.items() if not k.startswith("debias")})
    return [original, debiased]


def _before_after(results: Sequence[Any], prepared: Sequence[Any], after_model: ModelConfig, out: Path | None, console: Console) -> None:
    """The before/after table of `--with-original` (and `bias debias --wordset`): every test (bias
    measures and utilities alike) on the original and on the debiased model, with the change, written
    beside the report with --out."""
    from bias.cli.compare import rich_table
    from bias.core.compare import compare, csv_text, markdown

    def is_after(model: ModelConfig) -> bool:  # the planner adds options (debias_language), so not by equality
        return model.spec == after_model.spec and model.options.get("debias") == after_model.options.get("debias")

    debiased = {p.experiment.key for p in prepared if is_after(p.experiment.model)}
    before = [r for r in results if r.key not in debiased]
    after = [r for r in results if r.key in debiased]
    if not before or not after:
        return
    table = compare(before, after)
    console.print(rich_table(table))
    for note in table.notes:
        console.print(f"[yellow]note[/yellow] {note}", highlight=False)
    if out is not None:
        (out / "compare.md").write_text(markdown(table, title="Original and debiased"), encoding="utf-8")
        (out / "compare.csv").write_text(csv_text(table), encoding="utf-8")
        console.print(f"Before/after written to {out / 'compare.md'}, {out / 'compare.csv'}", highlight=False, soft_wrap=True)


def _executor(executor: str, address: str | None) -> tuple[str, str | None]:
    from bias.engine.experiments import EXECUTORS

    if executor not in EXECUTORS:
        raise BiasError(f"--executor must be one of {', '.join(EXECUTORS)}, not '{executor}'.", "local runs in this process; ray on a Ray cluster.")
    if address and executor != "ray":
        raise BiasError("--ray-address needs --executor ray.")
    return executor, address


def _with_command_line_options(experiments: Sequence[Any], shared: dict[str, Any], strict: dict[str, str]) -> list[Any]:
    """The models of an experiment file with the loader options given on the command line (such as
    --trust-remote-code or --allow-pickle, which a file cannot set); a value the file sets otherwise is
    refused, naming both places."""
    import attrs

    if not shared and not strict:
        return list(experiments)
    out = []
    for e in experiments:
        given = {**_fitting(e.model.spec, shared), **strict}
        refuse_conflicts(e.model.options, given, f"the experiment file (model {e.model.spec})", "the command line")
        out.append(attrs.evolve(e, model=attrs.evolve(e.model, options={**e.model.options, **given})))
    return out


def _out_of_file(out: Path, written: str, config: Path) -> Path:
    """The `out` of an experiment file; a folder outside the file's folder and the working directory
    is written only when the command line confirms it with --out."""
    resolved = out.resolve()
    inside = [config.resolve().parent, Path.cwd().resolve()]
    if not any(resolved == base or base in resolved.parents for base in inside):
        raise BiasError(
            f"{config}: out = {written!r} points to {resolved}, outside the experiment file's folder and the working directory.",
            f"If that is where results should go, confirm it with --out {resolved} on the command line.",
        )
    return out


def _load(config: Path, datasets: Path | None, models_dir: Path | None) -> tuple[list[Any], dict[str, Any]]:
    """An experiment file: house TOML, or a BIAS Detection Framework config converted line by line
    (lines that cannot run are reported with their number and left out)."""
    from bias.core import framework_config

    if not framework_config.is_framework_config(config):
        if datasets is not None or models_dir is not None:
            raise BiasError("--datasets and --models go with a BIAS Detection Framework config file, not a TOML one.")
        return load_config(config)
    planned, problems = framework_config.plan(config, datasets or Path("datasets"), models_dir or Path("models"))
    for problem in problems:
        err_console.print(f"[yellow]warning[/yellow] {problem}", highlight=False, soft_wrap=True)
    if not planned:
        raise BiasError(f"{config}: no line of this experiment file can run.", "See the warnings above; `bias convert` shows the conversion.")
    return load_config(config, framework_config.to_toml(config, planned, problems))


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


def skipped_lines(skipped: Sequence[Any]) -> list[str]:
    """The combinations set aside before the run, grouped by reason: one line per reason with the
    settings it concerns, so a grid's 40 skipped combinations read as two lines."""
    from rich.markup import escape

    groups: dict[str, list[Any]] = {}
    for s in skipped:
        groups.setdefault(s.reason, []).append(s)
    lines = []
    for reason, members in groups.items():
        what = list(dict.fromkeys(
            f"{s.metric}" + (f" ({', '.join(f'{k}={v}' for k, v in sorted(s.params.items()) if k in ('level', 'pooling', 'layer'))})"
                             if any(k in s.params for k in ("level", "pooling", "layer")) else "")
            for s in members
        ))
        shown = ", ".join(what[:4]) + (f" and {len(what) - 4} more" if len(what) > 4 else "")
        lines.append(f"[yellow]skipped[/yellow] {len(members)} combination(s), {escape(shown)}: {escape(reason)}")
    return lines


def messages(report: Any, results: Sequence[Any]) -> list[str]:
    """What the user should know beyond the table, each said once: lost and sub-word words per test,
    warnings naming the experiment and setting they belong to (the same warning of several settings
    on one line). Refusals are said by `refusal_lines`."""
    from rich.markup import escape as markup_escape

    def escape(text: str) -> str:  # user text: never markup, invisible characters shown, long text cut
        return markup_escape(message(text))

    from bias.core.reports.values import short_models

    names = short_models(results) if results else {}
    lines: list[str] = []
    said: set[str] = set()
    for r in results:
        if r.status != OK:  # a refusal names its lost words in its reason
            continue
        for key, words in r.lost.items():
            text = f"lost words of {r.wordset} set {key}: {listed(words)}"
            if text not in said:
                said.add(text)
                lines.append(escape(text))
        for key, words in r.approximated.items():
            text = f"built from sub-words ({r.wordset} set {key}): {listed(words)}"
            if text not in said:
                said.add(text)
                lines.append(escape(text))
    warned: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.status == OK:
            for w in r.warnings:
                warned.setdefault((r.wordset, w), []).append(_where(report, r, names))
    for (wordset, w), wheres in warned.items():
        lines.append(f"[yellow]warning[/yellow] {escape(wordset)} ({escape(', '.join(dict.fromkeys(wheres)))}): {escape(w)}")
    return lines


def _where(report: Any, r: Any, names: dict[str, str]) -> str:
    from bias.core.reports.values import variant_label

    where = variant_label(r.metric, report.settings.get(r.key, ""))
    return f"{names.get(r.model, r.model)} {where}" if len(names) > 1 else where


def refusal_lines(report: Any, results: Sequence[Any]) -> list[str]:
    """Refused and failed experiments grouped by reason, one line each, naming the tests and settings."""
    from rich.markup import escape as markup_escape

    def escape(text: str) -> str:  # user text: never markup, invisible characters shown, long text cut
        return markup_escape(message(text))

    from bias.core.reports.values import short_models

    names = short_models(results) if results else {}
    refused: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.status != OK:
            refused.setdefault((r.status, r.reason or ""), []).append(f"{r.wordset} {_where(report, r, names)}")
    lines: list[str] = []
    for (status, reason), wheres in refused.items():
        colour = "yellow" if status == REFUSED else "red"
        unique_wheres = list(dict.fromkeys(wheres))
        shown = ", ".join(unique_wheres[:6]) + (f" and {len(unique_wheres) - 6} more" if len(unique_wheres) > 6 else "")
        count = f" ({len(wheres)} experiments)" if len(wheres) > 1 else ""
        lines.append(f"[{colour}]{status}[/{colour}]{count} {escape(shown)}: {escape(reason)}")
    return lines


class _progress:
    """Two rich progress lines on a terminal: the whole batch (done of total, elapsed, time remaining)
    and the current experiment (what runs, for how long). Off a terminal, one plain line per finished
    experiment on stderr: `[k/N] test metric settings: value (time)`."""

    def __init__(self, console: Console, enabled: bool, plain: bool = False) -> None:
        self.console, self.enabled, self.plain = console, enabled, plain
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
        if self.plain and event.kind == "result" and event.result is not None:
            self._line(event)
        if not self.bar:
            return
        self.bar.update(self.overall, total=event.total, completed=event.done, description="batch")
        if event.kind == "loading":
            self.bar.reset(self.current, total=None, description=f"loading {event.model}")
        elif event.kind == "start":
            exp = event.experiment
            self.bar.reset(self.current, total=None, description=f"{exp.metric} {exp.wordset} on {event.model}")

    def _line(self, event: Any) -> None:
        import sys

        from bias.core.reports.tables import value_text
        from bias.core.reports.values import result_p, variant_label

        r, exp = event.result, event.experiment
        varying = ", ".join(f"{k}={v}" for k, v in sorted(exp.params.items()) if k in ("level", "pooling", "layer") and v is not None)
        what = variant_label(exp.metric, varying) + (f" seed={exp.seed}" if exp.seed not in (None, 0) else "")
        if r.status == OK:
            p = result_p(r)
            outcome = value_text(r) + (f", p {p}" if p != "-" else "")
        else:
            outcome = r.status
        seconds = sum(v for k, v in r.timings.items() if k.endswith("_s"))
        print(f"[{event.done}/{event.total}] {exp.wordset} {what}: {outcome} ({seconds:.1f} s)", file=sys.stderr, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()
