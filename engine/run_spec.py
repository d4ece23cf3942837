"""One run, however it was written: `RunSpec`.

The command line, an experiment file (TOML) and a BIAS Detection Framework config each build one
`RunSpec` (`bias.cli.run_command`, `bias.engine.experiment_file`, `bias.engine.framework_file`);
`bias.engine.front_door` lays the command line over a file and checks the result in one place; the
engine expands it into experiments and plans them. Every option has one name
(`bias.engine.vocabulary`) and `where` remembers how each value was given (`--limit`, or `exp.toml:
limit`), so that a refusal names the flag or the file and field the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.engine.experiments import DEFAULT_SEED, Experiment, ModelConfig, expand
from bias.engine.presets import PRESET_PARAMS, preset_notes, preset_params

DEFAULT_METRIC = "weat"


@attrs.frozen
class MetricEntry:
    """A metric of a grid, with the parameters given to it alone (`{ name = "weat", ddof = 0 }`)."""

    name: str
    params: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Listed:
    """One experiment named on its own (`[[experiments]]`, or a line of a framework config), not a
    grid; `comments` are written above it by `to_toml` (the line it came from)."""

    model: ModelConfig
    wordset: str
    metric: str
    params: Mapping[str, Any] = attrs.field(factory=dict)
    comments: tuple[str, ...] = ()


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class RunSpec:
    """What a run is asked for. Either a grid (`models` x `wordsets` x `metrics` x `grid`) or
    `listed` experiments; both with `seeds`, the shared metric `params` and the run options.

    A value is given when `where` names it; a value not given takes the engine's default when the
    run is assembled, so that the command line laid over a file changes only what it gives.
    `model_options` and `shared_model_options` are the command line's model options
    (`--model-option` and `--device`, ...): already in the `models` it names, and laid over a file's
    models by the front door once the file was held to what a file may decide
    (`bias.engine.guards`)."""

    models: tuple[ModelConfig, ...] = attrs.field(default=(), converter=_tuple)
    wordsets: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    metrics: tuple[MetricEntry, ...] = attrs.field(default=(), converter=_tuple)
    listed: tuple[Listed, ...] = attrs.field(default=(), converter=_tuple)
    params: Mapping[str, Any] = attrs.field(factory=dict)  # one value, to every metric declaring it
    # every value, one experiment each
    grid: Mapping[str, tuple[Any, ...]] = attrs.field(factory=dict)
    seeds: tuple[int, ...] = attrs.field(default=(), converter=_tuple)
    preset: str | None = None
    duplicates: str | None = None
    limit: int | None = None
    family: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    out: Path | None = None
    resume: bool = False
    fail_fast: bool = False
    threads: int | None = (
        None  # CPU threads of torch and BLAS (None: every core, bias.core.threads)
    )
    formats: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    json: bool = False
    wide: bool = False
    title: str | None = None
    description: str | None = None
    with_original: bool = False
    before_after: bool = False
    max_cost: float | None = None
    confirm_cost: bool = False
    model_options: Mapping[str, str] = attrs.field(factory=dict)
    shared_model_options: Mapping[str, Any] = attrs.field(factory=dict)
    allow: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    # The command line's flag for each model option that runs code, named when a file sets one.
    code_flags: Mapping[str, str] = attrs.field(factory=dict)
    # How each value was given, by its name (`limit`, `params.ddof`, `metrics[0].ddof`).
    where: Mapping[str, str] = attrs.field(factory=dict)
    origin: str = ""  # the file the spec was read from; "" for the command line
    text: str | None = None  # that file's text, kept in the manifest
    written: Mapping[str, Any] = attrs.field(factory=dict)  # the file's values as written (`out`)
    comments: tuple[str, ...] = attrs.field(default=(), converter=_tuple)  # to_toml's header notes
    # folders the command line chose that the file's word sets may be read from (a framework
    # config's datasets, --datasets or beside the config)
    data_folders: tuple[Path, ...] = attrs.field(default=(), converter=_tuple)

    def given(self, name: str) -> bool:
        return name in self.where

    def metric_names(self) -> list[str]:
        if self.listed:
            return list(dict.fromkeys(e.metric for e in self.listed))
        return list(dict.fromkeys(m.name for m in self.metrics)) or [DEFAULT_METRIC]

    def model_list(self) -> list[ModelConfig]:
        """The models of a grid; with `with_original`, the original model before the debiased
        one."""
        models = list(self.models)
        return with_original(models) if self.with_original else models

    @property
    def after_model(self) -> ModelConfig | None:
        """The debiased model of a before/after comparison (the last one), else None."""
        if not (self.with_original or self.before_after):
            return None
        if self.listed:
            return self.listed[-1].model
        models = self.model_list()
        return models[-1] if models else None

    def experiments(self) -> list[Experiment]:
        """Every experiment of the run, models outermost; the preset's parameters, then the shared
        ones, then a metric's own and a grid's combination, each winning over the one before."""
        seeds: list[int | None] = list(self.seeds) or [DEFAULT_SEED]
        if self.listed:
            out = [
                Experiment(
                    e.model,
                    e.wordset,
                    e.metric,
                    {**self._fixed(e.metric), **self.params, **e.params},
                    seed,
                    from_preset=self._from_preset(e.metric, e.params),
                )
                for e in self.listed
                for seed in seeds
            ]
        else:
            entries = self.metrics or (MetricEntry(DEFAULT_METRIC),)
            metrics = [
                (m.name, {**self._fixed(m.name), **self.params, **m.params}) for m in entries
            ]
            grid = {k: list(v) for k, v in self.grid.items()}
            given = [self._from_preset(m.name, m.params) for m in entries]
            out = expand(self.model_list(), self.wordsets, metrics, seeds, grid, given)
        if self.preset:
            out = [attrs.evolve(e, preset=self.preset) for e in out]
        if self.limit is not None:
            out = [attrs.evolve(e, limit=self.limit) for e in out]
        return out

    def _from_preset(self, metric: str, own: dict[str, Any]) -> tuple[str, ...]:
        """The parameters the preset gives this metric that neither the run nor the experiment's
        own entry (`own`, its params) sets itself."""
        mine = {k.replace("-", "_") for k in (*self.params, *self.grid, *own)}
        return tuple(sorted(k for k in self._fixed(metric) if k not in mine))

    def _fixed(self, metric: str) -> dict[str, Any]:
        """What the preset and `duplicates` give this metric: only the parameters it declares."""
        return preset_params(metric, self.preset, self.duplicates)

    def notes(self) -> list[str]:
        """The note a run with this preset carries into its manifest and reports; when the run sets
        some of the preset's parameters itself, the note says which (it describes the preset's
        values, the results' conventions the ones used)."""
        notes = preset_notes(self.preset)
        own = [
            name
            for name in PRESET_PARAMS.get(self.preset or "", {})
            if name in self.params
            or name in self.grid
            or any(name in m.params for m in self.metrics)
            or any(name in e.params for e in self.listed)
        ]
        if notes and own:
            notes[-1] += (
                f" This run sets {', '.join(own)} itself, which the preset's values above do not "
                "describe: each result's convention records the value used."
            )
        return notes

    def settings(self) -> dict[str, Any]:
        """What the manifest and the reports record of the run besides its experiments."""
        settings: dict[str, Any] = {
            k: getattr(self, k) for k in ("title", "description") if getattr(self, k)
        }
        if self.origin:
            settings.update(
                path=self.origin,
                text=self.text,
                family=self.family or "run",
                grid=_plain(self.grid),
            )
        elif self.grid:
            settings["grid"] = _plain(self.grid)
        if self.notes():
            settings["notes"] = self.notes()
        return settings

    def to_toml(self) -> str:
        """The experiment file of this run: `bias run FILE` plans the same experiments."""
        from bias.engine.spec_toml import spec_to_toml

        return spec_to_toml(self)


def _plain(grid: Mapping[str, Any]) -> dict[str, list[Any]]:
    return {k: list(v) for k, v in grid.items()}


def with_original(configs: list[ModelConfig]) -> list[ModelConfig]:
    """The original model first, then the debiased one (`--with-original`)."""
    if len(configs) != 1 or configs[0].debias is None:
        raise BiasError(
            "--with-original compares one model with its debiased version.",
            "Give one --model and --debias METHOD.",
        )
    return [attrs.evolve(configs[0], debias=None), configs[0]]


def params_and_grid(
    values: Mapping[str, list[Any]],
) -> tuple[dict[str, Any], dict[str, tuple[Any, ...]]]:
    """Metric parameters given once go to every metric declaring them; given several values, they
    are a grid (one experiment per value)."""
    params = {k: v[0] for k, v in values.items() if len(v) == 1}
    grid = {k: tuple(v) for k, v in values.items() if len(v) > 1}
    return params, grid
