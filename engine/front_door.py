"""The front door of a run: options by their one name into a `RunSpec`, the command line laid over
an experiment file or a BIAS Detection Framework config, and every value checked in one place.

Nothing here prints: what a user should read on the way (a framework config's lines that cannot run,
a file's value the command line replaces) goes to the callbacks the caller gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BadValue, BiasError
from bias.core.threads import usable_cpus
from bias.engine import file_decisions, guards
from bias.engine.experiments import ModelConfig
from bias.engine.model_options import with_command_line, with_shared
from bias.engine.presets import declared_params
from bias.engine.run_spec import MetricEntry, RunSpec, params_and_grid, with_original
from bias.engine.vocabulary import (
    BY_NAME,
    CODE,
    MODEL,
    PARAM,
    RUN,
    SHARED,
    WORDSET,
    Option,
    checked,
    flag_of,
)

Notice = Callable[[str], None]


def from_options(
    values: Mapping[str, Any],
    where: Mapping[str, str] | None = None,
    table: Mapping[str, Option] = BY_NAME,
) -> RunSpec:
    """A spec from options by their vocabulary names (`limit`, `models`, `permutations`, `params` as
    NAME -> values, `model_options` as KEY -> VALUE): the command line's, or a Python caller's.
    `where` says how each was given (default: its flag); `table` is the vocabulary with the command
    line's own options (its flags for model options that run code)."""
    where = {name: flag_of(name, table) for name in values} | dict(where or {})
    fields: dict[str, Any] = {}
    params: dict[str, list[Any]] = {}
    strict: dict[str, str] = {}
    shared: dict[str, Any] = {}
    extra: list[str] = []
    for name, value in values.items():
        option = table[name]
        if option.to == PARAM:
            for key, found in value.items() if name == "params" else [(name, value)]:
                add = [found] if not isinstance(found, (list, tuple)) else found
                kept = params.setdefault(key, [])
                kept.extend(v for v in add if str(v).lower() not in {str(k).lower() for k in kept})
                where.setdefault(
                    f"params.{key}", where[name] if name != "params" else f"--param {key}"
                )
        elif option.to == MODEL:
            strict.update(
                value
                if name == "model_options"
                else {name: "true" if value is True else str(value)}
            )
        elif option.to == SHARED:
            shared[name] = "true" if value is True else value
        elif option.to == WORDSET:
            extra.extend(value)
        else:
            fields[name] = value
    one, grid = params_and_grid(params)
    where.update({f"grid.{k}": where[f"params.{k}"] for k in grid})
    models = [with_shared(ModelConfig(m, dict(strict)), shared) for m in fields.pop("models", ())]
    metrics = [MetricEntry(m) for m in fields.pop("metrics", ())]
    wordsets = [*fields.pop("wordsets", ()), *extra]
    if extra or wordsets:
        where["wordsets"] = where.get("wordsets", "--wordset")
    if "out" in fields:
        fields["out"] = Path(fields["out"])
    return RunSpec(
        models=models,
        wordsets=wordsets,
        metrics=metrics,
        params=one,
        grid=grid,
        model_options=strict,
        shared_model_options=shared,
        where=where,
        code_flags={o.name: o.flag for o in table.values() if o.why_command_line == CODE},
        **fields,
    )


def spec_for_run(
    options: RunSpec,
    config: Path | None = None,
    *,
    datasets: Path | None = None,
    models_dir: Path | None = None,
    on_warning: Notice = lambda text: None,
    on_notice: Notice = lambda text: None,
) -> RunSpec:
    """The run: the options alone, or laid over the experiment file `config` (house TOML, or a BIAS
    Detection Framework config with its `datasets` and `models_dir`), checked."""
    if config is None:
        if datasets is not None or models_dir is not None:
            raise BiasError(
                "--datasets and --models go with a BIAS Detection Framework config file.",
                "bias run CONFIG.txt --datasets DIR --models DIR",
            )
        return validate(options)
    file = read_run_file(config, datasets, models_dir, on_warning, options.code_flags)
    return validate(lay_over(file, options, on_notice))


def read_run_file(
    config: Path,
    datasets: Path | None,
    models_dir: Path | None,
    on_warning: Notice,
    flags: Mapping[str, str] | None = None,
) -> RunSpec:
    """An experiment file: house TOML, or a BIAS Detection Framework config converted line by line
    (lines that cannot run go to `on_warning` and are left out)."""
    from bias.core.framework.config import is_framework_config
    from bias.engine.experiment_file import read_experiment_file
    from bias.engine.framework_file import read_framework_config

    if not is_framework_config(config):
        if datasets is not None or models_dir is not None:
            raise BiasError(
                "--datasets and --models go with a BIAS Detection Framework config file, not a "
                "TOML one."
            )
        return read_experiment_file(Path(config), flags)
    return read_framework_config(Path(config), datasets, models_dir, on_warning)


def allowed_by(spec: RunSpec) -> guards.Allowed:
    """What the command line confirmed of a file's routes: --allow, and a value repeated with
    --model-option."""
    return guards.Allowed.parse(
        [*spec.allow, *(f"{k}={v}" for k, v in spec.model_options.items() if str(v).strip())]
    )


def lay_over(file: RunSpec, flags: RunSpec, on_notice: Notice = lambda text: None) -> RunSpec:
    """The file's spec with what the command line gives: the file is first held to what a file may
    decide (bias.engine.guards: options that run code, routes, files outside its folder, an `out`
    elsewhere, a Ray cluster to join, money); then each option the command line gives replaces the
    file's, said when the file had another value."""
    for name, what in (("models", "--model"), ("wordsets", "--wordset"), ("metrics", "--metric")):
        if getattr(flags, name):
            raise BiasError(
                f"Give either an experiment file or --model/--wordset/--metric, not both ({what} "
                f"with {file.origin}).",
                "The file names its models, word sets and metrics; other options on the command "
                "line replace the file's.",
            )
    # the file's top-level loader options, held to the rules with its models
    own = file.shared_model_options
    checked = attrs.evolve(
        file,
        with_original=False,
        models=[
            with_command_line(m, own, {}, f"{file.origin} (its top level)") for m in file.models
        ],
        listed=[
            attrs.evolve(
                e, model=with_command_line(e.model, own, {}, f"{file.origin} (its top level)")
            )
            for e in file.listed
        ],
    )
    guards.check_file_experiments(
        checked.experiments(), allowed_by(flags), flags.code_flags, file.data_folders
    )
    values: dict[str, Any] = {
        "out": file_decisions.out(file, flags, on_notice),
        "ray_address": file_decisions.ray_address(file, flags, on_notice),
        "executor": file_decisions.executor(file, flags, on_notice),
        "max_cost": file_decisions.max_cost(file, flags),
    }
    for name in [
        n
        for n, o in BY_NAME.items()
        if o.to == RUN and n not in values and n not in ("models", "wordsets", "metrics", "seeds")
    ]:
        if not flags.given(name):
            continue
        new, old = getattr(flags, name), getattr(file, name)
        if file.given(name) and new != old:
            on_notice(
                f"{flags.where[name]} {_shown(new)} replaces the experiment file's {name} = "
                f"{old!r}."
            )
        values[name] = new
    values.update(_params_over(file, flags, on_notice))
    strict, shared = flags.model_options, {**own, **flags.shared_model_options}
    for name in sorted(set(own) & set(flags.shared_model_options)):
        if str(own[name]) != str(flags.shared_model_options[name]):
            on_notice(
                f"{flags.where.get(name, flag_of(name))} {flags.shared_model_options[name]} "
                f"replaces the experiment file's {name} = {own[name]!r}."
            )
    ours = set(strict) | set(flags.shared_model_options)
    values.update(
        models=[with_command_line(m, shared, strict, from_command_line=ours) for m in file.models],
        listed=[
            attrs.evolve(
                e, model=with_command_line(e.model, shared, strict, from_command_line=ours)
            )
            for e in file.listed
        ],
        model_options=strict,
        shared_model_options=shared,
        allow=flags.allow,
        code_flags=flags.code_flags,
        where={
            **file.where,
            **{k: v for k, v in flags.where.items() if k not in ("models", "wordsets", "metrics")},
        },
    )
    return attrs.evolve(file, **values)


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def _params_over(file: RunSpec, flags: RunSpec, on_notice: Notice) -> dict[str, Any]:
    """The command line's metric parameters (and seeds) replace the file's of the same name wherever
    the file gives them: [params], [grid], a metric's own table, an experiment's params."""
    names = set(flags.params) | set(flags.grid)
    if not names and not flags.seeds:
        return {}
    for name in sorted(names):
        before = _file_values(file, name)
        if before:
            new = flags.params.get(name, flags.grid.get(name))
            on_notice(
                f"{flags.where.get(f'params.{name}', flag_of(name))} {_shown(new)} replaces the "
                f"experiment file's {name} = {_shown(before)}."
            )
    if flags.seeds and file.seeds and tuple(flags.seeds) != tuple(file.seeds):
        on_notice(
            f"--seed {_shown(flags.seeds)} replaces the experiment file's seeds = "
            f"{list(file.seeds)}."
        )

    def without(params: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k not in names}

    return {
        "params": {**without(file.params), **flags.params},
        "grid": {**without(file.grid), **flags.grid},
        "metrics": [MetricEntry(m.name, without(m.params)) for m in file.metrics],
        "listed": [attrs.evolve(e, params=without(e.params)) for e in file.listed],
        "seeds": flags.seeds or file.seeds,
    }


def _file_values(spec: RunSpec, name: str) -> list[Any]:
    found = [spec.params[name]] if name in spec.params else []
    found += list(spec.grid.get(name, ()))
    found += [m.params[name] for m in spec.metrics if name in m.params]
    found += [e.params[name] for e in spec.listed if name in e.params]
    return list(dict.fromkeys(map(str, found)))


def validate(spec: RunSpec) -> RunSpec:
    """Every value against its rule, naming the flag or the file and field that gave it; metric
    parameters against the declarations of the run's metrics; then what the run as a whole needs.
    Returns the spec with its report formats read."""
    for name, option in BY_NAME.items():
        if option.to == RUN and option.rule is not None and spec.given(name) and name != "seeds":
            checked(name, getattr(spec, name), spec.where[name])
    for seed in spec.seeds:
        checked("seeds", seed, spec.where.get("seeds", "--seed"))
    for name, value in spec.shared_model_options.items():
        checked(name, value, spec.where.get(name, flag_of(name)))
    if spec.description is not None and not isinstance(spec.description, str):
        raise BiasError(f"{spec.where.get('description')} must be text, not {spec.description!r}.")
    _check_whole(spec)
    check_params(spec)
    if not spec.formats:
        return spec
    from bias.core.reports import parse_formats

    try:
        return attrs.evolve(spec, formats=parse_formats(list(spec.formats)))
    except BiasError as exc:
        where = spec.where.get("formats", "--format")
        raise BiasError(
            exc.message if where == "--format" else f"{where}: {exc.message}", exc.hint
        ) from None


def _check_whole(spec: RunSpec) -> None:
    """What a run needs as a whole: models and word sets, an output folder to resume, Ray to join a
    cluster, one debiased model to compare with its original."""
    if not spec.listed and not spec.models:
        raise BiasError(
            "No model given.",
            "Use --model NAME:LOCATION (e.g. word2vec:vectors.bin) or give an experiment file.",
        )
    if not spec.listed and not spec.wordsets:
        raise BiasError(
            "No word set given.", "Use --wordset NAME (see `bias list wordsets`) or a file path."
        )
    if spec.resume and spec.out is None:
        raise BiasError(
            f"{spec.where.get('resume', '--resume')} needs --out (the folder of the run to resume)."
        )
    cores = usable_cpus()
    if spec.threads is not None and spec.threads > cores and (spec.executor or "local") != "ray":
        raise BiasError(
            f"{spec.where.get('threads', '--threads')} is {spec.threads}, more than the {cores} "
            "CPUs of this machine: the threads would only wait for each other.",
            f"Use at most {cores} (1 is often fastest on a busy machine).",
        )
    if spec.ray_address and (spec.executor or "local") != "ray":
        raise BiasError(f"{spec.where.get('ray_address', '--ray-address')} needs --executor ray.")
    if spec.with_original:
        where = spec.where.get("with_original", "--with-original")
        if spec.listed:
            raise BiasError(
                f"{where} goes with models (a grid), not [[experiments]].",
                "List the original and the debiased model as experiments instead.",
            )
        if len(spec.models) != 1 or spec.models[0].debias is None:
            raise BiasError(
                f"{where} compares one model with its debiased version.",
                "Give one --model and --debias METHOD.",
            )
        with_original(list(spec.models))


def check_params(spec: RunSpec) -> None:
    """Each metric parameter given against the declaration of every metric of the run that has it
    (the rules live there, once), refused naming where it was given: `--permutations`, `--param
    ddof`, `exp.toml: params.ddof`; one given in a metric's own entry only against that metric. A
    parameter no metric has is refused when the run is planned."""
    from bias.core.did_you_mean import suggestions
    from bias.core.params import coerce_params
    from bias.registry import entry_points as eps

    # (name, value, where it was given, the one metric it is for: None for a run's shared ones)
    given: list[tuple[str, Any, str, str | None]] = [
        (k, v, spec.where.get(f"params.{k}", f"--param {k}"), None) for k, v in spec.params.items()
    ]
    given += [
        (k, v, spec.where.get(f"grid.{k}", f"--param {k}"), None)
        for k, values in spec.grid.items()
        for v in values
    ]
    given += [
        (k, v, spec.where.get(f"metrics[{i}].{k}", f"metrics[{i}].{k}"), m.name)
        for i, m in enumerate(spec.metrics)
        for k, v in m.params.items()
    ]
    given += [
        (k, v, _listed_where(spec, i, k), e.metric)
        for i, e in enumerate(spec.listed)
        for k, v in e.params.items()
    ]
    for name, _, where, only in given:
        if only is not None and name.replace("-", "_") not in declared_params(only):
            tip = suggestions(name.replace("-", "_"), sorted(declared_params(only)))
            raise BadValue(
                f"{where}: the metric {only} has no parameter '{name}'.",
                (f"{tip} " if tip else "") + f"See `bias info {only}` for its parameters.",
            )
    for metric in spec.metric_names():
        declared = declared_params(metric)
        cls = eps.load("metrics", metric)
        for name, value, where, only in given:
            if name.replace("-", "_") not in declared or only not in (None, metric):
                continue
            try:
                cls(**coerce_params(cls, {name: value}, metric))
            except BadValue as exc:
                raise BadValue(
                    f"{where} (metric {metric}): {exc.message}",
                    exc.hint or f"See `bias info {metric}` for its parameters.",
                ) from None
            except (BiasError, TypeError):
                continue  # a combination of settings: the plan sets it aside, or says so


def _listed_where(spec: RunSpec, index: int, name: str) -> str:
    return spec.where.get(
        f"experiments[{index}].params.{name}", f"{spec.origin}: experiments[{index}].params.{name}"
    )
