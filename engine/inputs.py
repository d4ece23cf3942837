"""Secondary inputs: what a metric needs beside its data (a template set, the original of a debiased
model), resolved by the planner and handed to `compute(..., inputs={...})`.

Why the planner does it and not the metric: a metric that looked them up itself would import the
registry and read files, would be refused half-way through a run when one is missing, and would load
the original model again for every experiment. Here every word set asked for is loaded and its kind
checked before any model loads (a missing one stops the run with the metric's hint), every model
asked for is built before the run (a bad spec or a damaged debias.json stops it too), and each model
is loaded once per run, at its first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from bias import registry
from bias.core.errors import BiasError, said_as_data
from bias.core.regular_files import open_regular
from bias.core.interfaces import MODEL_INPUT, WORDSET_INPUT, Embedder, InputRequest, ResolvedModel
from bias.core.specs import parse_spec, resolve_location
from bias.engine.absolute_paths import absolute_spec_text
from bias.engine.experiments import ModelConfig

# Written by `bias debias` beside the vectors it saves; names the model they were debiased from.
DEBIAS_RECORD = "debias.json"
MAX_RECORD = 2**20  # a debiasing record is a few hundred bytes
SAME = "same"  # `how` of an original that was not found: the measured model itself


@attrs.frozen
class ModelInput:
    """A model a metric asked for, as far as it can be resolved before the run: a spec to build
    (named by the metric, or the `source_model` of a debias.json), and/or "the original of the model
    measured" (`original`), settled once the measured model is built (the source of a debiased
    one)."""

    spec: str | None
    how: str
    original: bool = False
    # The file the spec was written in (an experiment file's parameter, a debias.json), "" when the
    # command line gave it: held to what a file may decide (bias.engine.guards) before it is built.
    origin: str = attrs.field(default="", eq=False)


def requested_inputs(metric: Any, data: Any) -> dict[str, InputRequest]:
    """The metric's requests, by the name `compute` receives each under."""
    return dict(metric.inputs(data))


def debias_record(location: str) -> Path | None:
    """The debias.json beside a model file, or inside a model folder, if there is one."""
    try:
        path = resolve_location(location)
    except BiasError:
        return None
    record = (path if path.is_dir() else path.parent) / DEBIAS_RECORD
    return record if record.is_file() else None


def recorded_source(record: Path, hint: str) -> tuple[str, str]:
    """The spec of the model a debiased one was made from, read from its debias.json (a relative
    location is read against the record's folder), and how it was found."""
    try:
        # a record of a few hundred bytes: not a pipe, a device or megabytes
        with open_regular(record, limit=MAX_RECORD, what="debiasing record") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: JSON, UTF-8, 4,301 digits
        raise BiasError(
            f"{record}: cannot read the record of the debiasing ({said_as_data(exc)}).", hint
        ) from exc
    found = data.get("source_model") if isinstance(data, dict) else None
    if not isinstance(found, str) or ":" not in found:
        raise BiasError(f"{record}: no 'source_model' spec in the record of the debiasing.", hint)
    try:
        parsed = parse_spec(found)
    except BiasError as exc:
        raise BiasError(f"{record}: source_model: {exc.message}", exc.hint) from None
    location = parsed.location
    if (
        not location.startswith("pkg:")
        and not Path(location).exists()
        and (record.parent / location).exists()
    ):
        location = str(record.parent / location)
    # The options stay with the spec: the rules of what a file may decide judge them (a code option
    # or an address in a debias.json is refused naming it), never dropped to reach a default host.
    options = ",".join(f"{k}={v}" for k, v in parsed.options.items())
    return f"{parsed.embedder}:{location}" + (
        f"[{options}]" if options else ""
    ), f"source_model of {record.name} ({found})"


def model_input(request: InputRequest, measured: ModelConfig) -> ModelInput:
    """Where a model request points, before any model is built. With no name: the source of a model
    debiased in this run (known once it is built), else the debias.json beside the model's file,
    else the model itself."""
    if request.name:  # its location absolute: the model is loaded where the metric runs
        return ModelInput(absolute_spec_text(request.name), request.name, origin=measured.origin)
    if measured.debias is not None:
        return ModelInput(None, SAME, original=True)
    record = debias_record(measured.parsed.location)
    if record is None:
        return ModelInput(None, SAME, original=True)
    spec, how = recorded_source(record, request.hint)
    return ModelInput(absolute_spec_text(spec), how, original=True, origin=str(record))


def wordset_input(
    name: str | None, request: InputRequest, metric: str, load: Callable[[str], Any]
) -> Any:
    """The word set a request names, of the kind it asks for; anything else stops the run."""
    if not name:
        raise BiasError(
            f"Metric '{metric}' asks for a word set without naming one.", request.hint or None
        )
    try:
        found = load(name)
    except BiasError as exc:
        if request.optional and not _exists(name):
            return None
        raise BiasError(
            f"Metric '{metric}' needs the word set {name}: {exc.message}", request.hint or exc.hint
        ) from exc
    kind = getattr(getattr(found, "meta", None), "kind", None)
    if request.data_kind and kind != request.data_kind:
        raise BiasError(
            f"Metric '{metric}' needs a word set of kind {request.data_kind}, and '{name}' "
            f"is of kind {kind or 'unknown'}.",
            request.hint or None,
        )
    return found


def _exists(name: str) -> bool:
    """Whether a word-set name or file exists at all (a broken one still stops the run)."""
    if Path(name).expanduser().exists():
        return True
    return any(info.name == name for info in registry.wordsets())


def resolve_requests(
    requests: dict[str, InputRequest],
    metric: str,
    measured: ModelConfig,
    wordsets: dict[str, Any],
    models: InputModels,
    guard: Callable[[ModelInput], None] | None = None,
) -> dict[str, Any]:
    """Each request resolved as far as it can be before the run: word sets loaded (once per name, in
    `wordsets`), model inputs located, held to `guard` (what a file may not decide) and built (once
    per spec, in `models`)."""
    out: dict[str, Any] = {}
    for key, request in requests.items():
        if request.kind == WORDSET_INPUT:
            if request.name not in wordsets:
                wordsets[str(request.name)] = wordset_input(
                    request.name, request, metric, registry.load_wordset
                )
            out[key] = wordsets[str(request.name)]
        elif request.kind == MODEL_INPUT:
            found = model_input(request, measured)
            if found.spec is not None:
                if guard is not None:
                    guard(found)
                models.build(found.spec)
            out[key] = found
        else:
            raise BiasError(
                f"Metric '{metric}' asks for an input of unknown kind {request.kind!r}.",
                f"Inputs are of kind {WORDSET_INPUT} or {MODEL_INPUT}; this is a problem "
                "of the metric's plugin.",
            )
    return out


@attrs.define
class InputModels:
    """The models asked for as inputs, built once per spec and loaded once, at their first use."""

    built: dict[str, Embedder] = attrs.Factory(dict)
    loaded: set[str] = attrs.Factory(set)

    def build(self, spec: str) -> Embedder:
        if spec not in self.built:
            self.built[spec] = registry.build_embedder(spec)
        return self.built[spec]

    def loaded_model(self, spec: str) -> Embedder:
        embedder = self.build(spec)
        if spec not in self.loaded:
            embedder.load()
            self.loaded.add(spec)
        return embedder

    def resolve(self, inputs: dict[str, Any], measured: Embedder) -> dict[str, Any]:
        """The inputs `compute` receives: model inputs bound to loaded embedders (the original of an
        in-run debiased model is its source; with nothing else found, the measured model itself)."""
        out: dict[str, Any] = {}
        for key, value in inputs.items():
            if not isinstance(value, ModelInput):
                out[key] = value
                continue
            source = getattr(measured, "source", None) if value.original else None
            if isinstance(source, Embedder):
                out[key] = ResolvedModel(
                    source, f"the source of the debiased model ({source.spec})"
                )
            elif value.spec is not None:
                out[key] = ResolvedModel(self.loaded_model(value.spec), value.how)
            else:
                out[key] = ResolvedModel(measured, SAME)
        return out
