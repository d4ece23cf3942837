"""A checked `RunSpec` (`bias.engine.front_door`) into a plan: its experiments expanded, the same
model named twice run once, every name looked up and every input checked before any model loads, and
the addresses the run's models will contact said before anything is sent.

Nothing here prints: the lines a user should read go to the callback the caller gives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.runs.same_model import same_models
from bias.engine import guards, planning
from bias.engine.experiments import ModelConfig, unique
from bias.engine.front_door import allowed_by
from bias.engine.inputs import ModelInput
from bias.engine.run_spec import RunSpec


@attrs.frozen(kw_only=True)
class Assembly:
    """A run ready to start: its plan and the settings of its spec."""

    plan: planning.Plan
    settings: dict[str, Any]  # title, description, notes; the experiment file's path and text
    out: Path | None
    family: str
    executor: str
    ray_address: str | None
    after_model: ModelConfig | None  # the debiased model of a before/after comparison, else None
    max_cost: float | None = None  # US dollars one paid model may cost without confirmation
    confirm_cost: bool = False
    threads: int | None = (
        None  # CPU threads of torch and BLAS (None: every core, bias.core.threads)
    )
    # Where the run's models send requests and with which key variable, one line each, said before
    # anything is sent.
    contacts: list[str] = attrs.field(factory=list)


def assemble(spec: RunSpec, *, on_contact: Callable[[str], None] = lambda text: None) -> Assembly:
    """The plan of a checked spec. `on_contact` hears each address the run's models will send
    requests to, and with which key, once the models are checked and before any is loaded."""
    experiments = unique(same_models(spec.experiments()))
    guard = functools.partial(guard_input, allowed=allowed_by(spec), flags=spec.code_flags)
    plan = planning.plan(experiments, guard)
    # Cheap checks that send nothing: a bad key variable is said first. On Ray, the workers' GPUs
    # count.
    planning.check_models(plan, devices=(spec.executor or "local") != "ray")
    said = contacts(plan)
    for line in said:  # before any model is loaded, so before anything is sent
        on_contact(line)
    return Assembly(
        plan=plan,
        settings=spec.settings(),
        out=spec.out,
        family=spec.family or "run",
        executor=spec.executor or "local",
        ray_address=spec.ray_address,
        after_model=spec.after_model,
        max_cost=spec.max_cost,
        confirm_cost=spec.confirm_cost,
        threads=spec.threads,
        contacts=said,
    )


def guard_input(found: ModelInput, *, allowed: guards.Allowed, flags: Mapping[str, str]) -> None:
    """A model a file named as a metric's input (or a debias.json's source_model) is held to what a
    file may decide, as the file's own models are."""
    if found.origin and found.spec is not None:
        how = f" ({found.how})" if found.how != found.spec else ", a metric's input,"
        guards.check_spec_from_file(
            found.spec, found.origin, allowed, flags, f"the model {found.spec}{how}"
        )


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
