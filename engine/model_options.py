"""The loader options a run gives its models besides each model's own: the ones every model must
take (`--model-option`, `--debias`) and the ones a model takes when its embedder declares them
(`--device`, `--dtype`, `--batch-size`: hf has a device, word2vec has none)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from bias.engine.experiments import ModelConfig, refuse_conflicts

log = logging.getLogger(__name__)


def fitting(embedder: str, options: Mapping[str, Any], spec: str) -> dict[str, Any]:
    """The shared loader options that this embedder declares."""
    from bias.core.params import describe_params
    from bias.registry.resolve import embedder_class

    if not options:
        return {}
    declared = {p.name for p in describe_params(embedder_class(embedder))}
    unused = sorted(set(options) - declared)
    if unused:
        log.info("%s ignores %s (its embedder has no such option)", spec, ", ".join(unused))
    return {k: v for k, v in options.items() if k in declared}


def with_shared(config: ModelConfig, shared: Mapping[str, Any]) -> ModelConfig:
    """A model given on the command line with the shared loader options its embedder declares (its
    own options, from --model-option or the spec's brackets, win)."""
    fit = fitting(config.parsed.embedder, shared, config.spec)
    return attrs.evolve(config, options={**fit, **config.options}) if fit else config


def with_command_line(
    model: ModelConfig,
    shared: Mapping[str, Any],
    strict: Mapping[str, str],
    where: str = "the command line",
    from_command_line: Collection[str] = (),
) -> ModelConfig:
    """A file's model with the loader options given on the command line (such as --trust-remote-code
    or --allow-pickle, which a file cannot set) or at the file's top level (`where`); a value the
    model's own options set otherwise is refused, naming both places. `from_command_line`: the
    names among them that the command line gave (recorded on the model, see
    ModelConfig.command_line)."""
    if not shared and not strict:
        return model
    given = {**fitting(model.parsed.embedder, shared, model.spec), **strict}
    written = model.written_options()
    refuse_conflicts(written, given, f"the experiment file (model {model.spec})", where)
    ours = (set(given) & set(from_command_line)) - set(written)
    return ModelConfig(
        model.spec,
        {**written, **given},
        model.resources,
        model.name,
        origin=model.origin,
        command_line=model.command_line | ours,
    )
