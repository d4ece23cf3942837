"""A BIAS Detection Framework config read into a `RunSpec`: one listed experiment per line that can
run (`bias.core.framework.config` plans each line), with the framework's conventions as the
`bias-framework` preset. `bias convert` prints the spec as an experiment file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from bias.core.framework import config as framework
from bias.engine.experiments import ModelConfig
from bias.engine.run_spec import Listed, RunSpec


def read_framework_config(
    config: Path,
    datasets: Path | None,
    models_dir: Path | None,
    on_warning: Callable[[str], None],
    what: str = "nothing to run",
) -> RunSpec:
    """The spec of a config file; each line that cannot run goes to `on_warning` and is left out,
    and a file of which no line can run is refused (`what`: the refusal's words)."""
    datasets = datasets or framework.default_folder(config, "datasets")
    models_dir = models_dir or framework.default_folder(config, "models")
    planned, problems = framework.plan(config, datasets, models_dir)
    for problem in problems:
        on_warning(problem)
    framework.refuse_empty(config, planned, problems, what)
    return attrs.evolve(framework_spec(config, planned, problems), data_folders=(Path(datasets),))


def framework_spec(
    config: Path,
    planned: Sequence[framework.Planned],
    problems: Sequence[str],
    *,
    preset: bool = True,
) -> RunSpec:
    """The spec of the planned lines. With the preset, an OpenAI model keeps the first 768
    components of its vectors, as the framework does."""
    listed = []
    for p in planned:
        if preset and p.model.startswith("openai:") and p.line.embedding in framework.SERVICES:
            p = attrs.evolve(
                p,
                model_options={**p.model_options, "truncate": framework.OPENAI_TRUNCATION},
                notes=(
                    *p.notes,
                    f"preset {framework.PRESET}: the first {framework.OPENAI_TRUNCATION} "
                    "components of each OpenAI vector, as the framework keeps",
                ),
            )
        comments = (f"line {p.line.number}: {p.line.text}", *(f"note: {n}" for n in p.notes))
        model = ModelConfig(p.model, dict(p.model_options), origin=str(config))
        listed.append(Listed(model, p.wordset, p.metric, dict(p.params), comments))
    title = Path(config).stem
    header = (
        f"Converted from {Path(config).name}, an experiment file of the BIAS Detection Framework.",
        "Each [[experiments]] entry is one line of that file; edit freely.",
    )
    where = {"title": f"{config}: its name"}
    if preset:
        where["preset"] = f"{config}: the framework's conventions"
    spec = RunSpec(
        listed=listed,
        title=title,
        preset=framework.PRESET if preset else None,
        where=where,
        origin=str(config),
        comments=(*header, *(f"not converted: {problem}" for problem in problems)),
    )
    return attrs.evolve(spec, text=spec.to_toml())
