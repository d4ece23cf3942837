"""Turning the options of a run (command-line flags, or an experiment file and the flags that may go
with it) into a checked plan, so that every front end refuses the same combinations with the same words.

Nothing here prints: what a user should read on the way (an experiment file's lines that cannot run,
an `out` replaced on the command line) goes to the callbacks the caller gives, in the order it happens.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.runs.same_model import same_models
from bias.core.errors import BiasError
from bias.engine import guards, planning
from bias.engine.inputs import ModelInput
from bias.engine.experiments import (
    DEFAULT_SEED, EXECUTORS, Experiment, ModelConfig, expand, load_config, refuse_conflicts, unique,
)
from bias.engine.presets import PRESETS, preset_notes, with_preset

log = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class RunOptions:
    """What a run was asked for. Either `config` (an experiment file, with `datasets` and `models_dir`
    for a BIAS Detection Framework config) or the `models` x `wordsets` x `metrics` grid."""

    config: Path | None = None
    datasets: Path | None = None
    models_dir: Path | None = None
    models: Sequence[str] = ()
    wordsets: Sequence[str] = ()
    metrics: Sequence[str] = ()
    seeds: Sequence[int] = ()
    params: dict[str, Any] = attrs.field(factory=dict)
    grid: dict[str, list[Any]] = attrs.field(factory=dict)
    # Strict loader options (--model-option, --debias): every model must accept them.
    model_options: dict[str, str] = attrs.field(factory=dict)
    # Loader options (--device, --dtype, ...) given to the models whose embedder declares them.
    shared_model_options: dict[str, Any] = attrs.field(factory=dict)
    out: Path | None = None
    resume: bool = False
    family: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    with_original: bool = False
    before_after: bool = False
    # Paid models (embedding services): the US dollars one model may cost without confirmation.
    max_cost: float | None = None
    confirm_cost: bool = False
    limit: int | None = None  # --limit: the first N items of each list of each test
    threads: int | None = None  # --threads: CPU threads of torch and BLAS (None: every core, see bias.core.threads)
    preset: str | None = None  # --preset: a peer tool's conventions (engine/presets.py)
    # --allow NAME=VALUE: what the command line confirms of a file's route options (bias.engine.guards).
    allow: Sequence[str] = ()
    # The command line's flag for each option that runs code (named when a file sets one).
    code_flags: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Assembly:
    """A run ready to start: its plan and the settings the options and the experiment file agreed on."""

    plan: planning.Plan
    settings: dict[str, Any]  # the experiment file's settings (empty without a file)
    out: Path | None
    family: str
    executor: str
    ray_address: str | None
    after_model: ModelConfig | None  # the debiased model of a before/after comparison, else None
    max_cost: float | None = None  # see RunOptions
    confirm_cost: bool = False
    threads: int | None = None  # see RunOptions
    # Where the run's models send requests and with which key variable, one line each, said before
    # anything is sent.
    contacts: list[str] = attrs.field(factory=list)


def assemble(
    options: RunOptions,
    *,
    on_warning: Callable[[str], None] = lambda text: None,
    on_notice: Callable[[str], None] = lambda text: None,
    on_contact: Callable[[str], None] = lambda text: None,
) -> Assembly:
    """The plan of a run. `on_warning` hears each line of a BIAS Detection Framework config that cannot
    run; `on_notice` hears that --out (or --ray-address) replaces the experiment file's `out` (`ray_address`);
    `on_contact` hears each address the run's models will send requests to, and with which key, once
    the models are checked and before any is loaded."""
    o = options
    settings: dict[str, Any] = {}
    after_model: ModelConfig | None = None
    # A value repeated with --model-option confirms a file's route option as --allow does.
    allowed = guards.Allowed.parse([*o.allow, *(f"{k}={v}" for k, v in o.model_options.items() if str(v).strip())])
    if o.with_original and o.config is not None:
        raise BiasError("--with-original goes with --model and --debias, not with an experiment file.", "List the original and the debiased model in the file's [[models]] instead.")
    if o.config is not None:
        if o.models or o.wordsets:
            raise BiasError("Give either an experiment file or --model/--wordset, not both.")
        experiments, settings = load(o.config, o.datasets, o.models_dir, on_warning, o.code_flags)
        data = [Path(settings["datasets"])] if settings.get("datasets") else []
        guards.check_file_experiments(experiments, allowed, o.code_flags, data)
        experiments = with_command_line_options(experiments, o.shared_model_options, o.model_options)
        if o.seeds:
            experiments = [attrs.evolve(e, seed=s) for s in o.seeds for e in experiments]
        if o.params or o.grid:
            raise BiasError("Metric options go into the experiment file's [params] or [grid] table when a file is given.")
        if o.preset is not None:
            raise BiasError("--preset goes with --model and --wordset; an experiment file names its own.", f'Write preset = "{o.preset}" in the file.')
    else:
        if o.datasets is not None or o.models_dir is not None:
            raise BiasError("--datasets and --models go with a BIAS Detection Framework config file.", "bias run CONFIG.txt --datasets DIR --models DIR")
        if not o.models:
            raise BiasError("No model given.", "Use --model NAME:LOCATION (e.g. word2vec:vectors.bin) or give an experiment file.")
        if not o.wordsets:
            raise BiasError("No word set given.", "Use --wordset NAME (see `bias list wordsets`) or a file path.")
        configs = [with_shared(ModelConfig(m, o.model_options), o.shared_model_options) for m in o.models]
        if o.with_original:
            configs = with_original(configs)
        if o.with_original or o.before_after:
            after_model = configs[-1]
        experiments = expand(configs, o.wordsets, [(m, dict(o.params)) for m in o.metrics], list(o.seeds) or [DEFAULT_SEED], o.grid)
        if o.preset is not None:
            if o.preset not in PRESETS:
                raise BiasError(f"--preset: unknown preset {o.preset!r}.", f"Presets: {', '.join(PRESETS)}.")
            experiments = with_preset(experiments, o.preset)
            settings["notes"] = preset_notes(o.preset)
    if o.limit is not None:
        experiments = [attrs.evolve(e, limit=o.limit) for e in experiments]
    experiments = unique(same_models(experiments))
    out = o.out
    if out is None and settings.get("out"):
        out = out_of_file(Path(settings["out"]), settings.get("out_written", ""), Path(settings["path"]))
    elif out is not None and settings.get("out") and Path(settings["out"]).resolve() != Path(out).resolve():
        on_notice(f"--out {out} replaces the experiment file's out = {settings.get('out_written')!r}.")
    if o.resume and out is None:
        raise BiasError("--resume needs --out (the folder of the run to resume).")
    family = o.family or settings.get("family", "run")
    executor, ray_address = checked_executor(o.executor or settings.get("executor", "local"), ray_address_of(o.ray_address, settings, on_notice))
    plan = planning.plan(experiments, functools.partial(guard_input, allowed=allowed, flags=o.code_flags))
    # Cheap checks that send nothing: a bad key variable is said first. On Ray, the workers' GPUs count.
    planning.check_models(plan, devices=executor != "ray")
    said = contacts(plan)
    for line in said:  # before any model is loaded, so before anything is sent
        on_contact(line)
    return Assembly(plan=plan, settings=settings, out=out, family=family, executor=executor, ray_address=ray_address, after_model=after_model,
                    max_cost=o.max_cost, confirm_cost=o.confirm_cost, threads=o.threads, contacts=said)


def guard_input(found: ModelInput, *, allowed: guards.Allowed, flags: Mapping[str, str]) -> None:
    """A model a file named as a metric's input (or a debias.json's source_model) is held to what a
    file may decide, as the file's own models are."""
    if found.origin and found.spec is not None:
        how = f" ({found.how})" if found.how != found.spec else ", a metric's input,"
        guards.check_spec_from_file(found.spec, found.origin, allowed, flags, f"the model {found.spec}{how}")


def contacts(plan: planning.Plan) -> list[str]:
    """One line per address the run's models will send requests to, with the variable whose key goes
    along (`Embedder.contacts`), for the user to read before anything is sent."""
    from bias import registry

    lines: list[str] = []
    seen: set[str] = set()
    models = {p.experiment.model.label(): p.experiment.model for p in plan.runnable}
    embedders = [registry.build_embedder(m.parsed, m.debias) for m in models.values()]
    for embedder in [*embedders, *plan.input_models.built.values()]:
        for contact in embedder.contacts():
            line = contact.line(embedder.spec)
            if line not in seen:
                seen.add(line)
                lines.append(line)
    return lines


def with_original(configs: Sequence[ModelConfig]) -> list[ModelConfig]:
    """The original model first, then the debiased one (`--with-original`)."""
    if len(configs) != 1 or configs[0].debias is None:
        raise BiasError("--with-original compares one model with its debiased version.", "Give one --model and --debias METHOD.")
    return [attrs.evolve(configs[0], debias=None), configs[0]]


def checked_executor(executor: str, address: str | None) -> tuple[str, str | None]:
    if executor not in EXECUTORS:
        raise BiasError(f"--executor must be one of {', '.join(EXECUTORS)}, not '{executor}'.", "local runs in this process; ray on a Ray cluster.")
    if address and executor != "ray":
        raise BiasError("--ray-address needs --executor ray.")
    return executor, address


def with_command_line_options(experiments: Sequence[Experiment], shared: dict[str, Any], strict: dict[str, str]) -> list[Experiment]:
    """The models of an experiment file with the loader options given on the command line (such as
    --trust-remote-code or --allow-pickle, which a file cannot set); a value the file sets otherwise is
    refused, naming both places."""
    if not shared and not strict:
        return list(experiments)
    out = []
    for e in experiments:
        given = {**fitting(e.model.parsed.embedder, shared, e.model.spec), **strict}
        written = e.model.written_options()
        refuse_conflicts(written, given, f"the experiment file (model {e.model.spec})", "the command line")
        model = ModelConfig(e.model.spec, {**written, **given}, e.model.resources, e.model.name, origin=e.model.origin)
        out.append(attrs.evolve(e, model=model))
    return out


def ray_address_of(given: str | None, settings: dict[str, Any], on_notice: Callable[[str], None]) -> str | None:
    """The Ray cluster to join. An experiment file may ask for Ray, but joining the cluster it names
    (which could be anyone's: a Ray driver runs what the cluster sends back) needs --ray-address on the
    command line to confirm it, as an `out` outside the file's folder needs --out."""
    written = settings.get("ray_address")
    if written is None:
        return given
    if not isinstance(written, str) or not written.strip():
        raise BiasError(f"{settings.get('path')}: ray_address must be auto or HOST:PORT, not {written!r}.")
    if given is None:
        raise BiasError(
            f"{settings.get('path')}: ray_address = {written!r} would join that Ray cluster; an experiment file alone does not connect to a machine.",
            f"If you trust that cluster, confirm it with --ray-address {written} on the command line (or remove ray_address to start Ray here).",
        )
    if given != written:
        on_notice(f"--ray-address {given} replaces the experiment file's ray_address = {written!r}.")
    return given


def out_of_file(out: Path, written: str, config: Path) -> Path:
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


def load(
    config: Path, datasets: Path | None, models_dir: Path | None, on_warning: Callable[[str], None], flags: Mapping[str, str] | None = None
) -> tuple[list[Experiment], dict[str, Any]]:
    """An experiment file: house TOML, or a BIAS Detection Framework config converted line by line
    (lines that cannot run go to `on_warning` and are left out)."""
    from bias.core.framework import config as framework_config

    if not framework_config.is_framework_config(config):
        if datasets is not None or models_dir is not None:
            raise BiasError("--datasets and --models go with a BIAS Detection Framework config file, not a TOML one.")
        return load_config(config, flags=flags)
    datasets = datasets or framework_config.default_folder(config, "datasets")
    models_dir = models_dir or framework_config.default_folder(config, "models")
    planned, problems = framework_config.plan(config, datasets, models_dir)
    for problem in problems:
        on_warning(problem)
    framework_config.refuse_empty(config, planned, problems, "nothing to run")
    experiments, settings = load_config(config, framework_config.to_toml(config, planned, problems), base=Path("."), flags=flags)
    return experiments, {**settings, "datasets": str(datasets)}  # word sets are read from there


def with_shared(config: ModelConfig, shared: dict[str, Any]) -> ModelConfig:
    """A model given on the command line with the shared loader options its embedder declares (its
    own options, from --model-option or the spec's brackets, win)."""
    fit = fitting(config.parsed.embedder, shared, config.spec)
    return attrs.evolve(config, options={**fit, **config.options}) if fit else config


def fitting(embedder: str, options: dict[str, Any], spec: str) -> dict[str, Any]:
    """The shared loader options (--device, --dtype, ...) that this embedder declares."""
    from bias.core.params import describe_params
    from bias.registry.resolve import embedder_class

    if not options:
        return {}
    declared = {p.name for p in describe_params(embedder_class(embedder))}
    unused = sorted(set(options) - declared)
    if unused:
        log.info("%s ignores %s (its embedder has no such option)", spec, ", ".join(unused))
    return {k: v for k, v in options.items() if k in declared}
