"""Planning a run: every metric built, every word set and secondary input loaded and checked, the
combinations that cannot run set aside with their reason, all before any model loads, so that bad
input fails in seconds rather than after the first models ran."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from bias import registry
from bias.core.runs import budget
from bias.core.did_you_mean import suggestions
from bias.core.errors import BadValue, BiasError
from bias.core.compatibility import check_compatible
from bias.core.interfaces import Metric
from bias.core.params import coerce_params, describe_params
from bias.core.data.limit import first_items
from bias.engine.absolute_paths import absolute_metric
from bias.engine.experiments import Experiment
from bias.engine.inputs import InputModels, requested_inputs, resolve_requests
from bias.registry import entry_points as eps
from bias.registry.resolve import embedder_class


@attrs.define
class PlannedExperiment:
    """An experiment ready to run: its metric built, its data loaded and checked against its
    embedder type, and the secondary inputs its metric asked for (word sets loaded; models located,
    see `bias.engine.inputs`)."""

    experiment: Experiment
    metric: Metric
    data: Any
    inputs: dict[str, Any] = attrs.Factory(dict)
    # the parameters the user set (not the defaults, not a preset's): a run warns of those among
    # them that the model's kind does not read
    given: tuple[str, ...] = ()


def route_params(experiments: Sequence[Experiment]) -> list[Experiment]:
    """Give each metric only the parameters it declares, so one command can run WEAT and CrowS with
    options meant for one of them; a parameter no chosen metric has is a mistake, and is refused."""
    declared: dict[str, set[str]] = {}
    for exp in experiments:
        if exp.metric not in declared:
            declared[exp.metric] = {
                p.name for p in describe_params(eps.load("metrics", exp.metric))
            }
    given = {k.replace("-", "_") for exp in experiments for k in exp.params}
    known = set().union(*declared.values()) if declared else set()
    unknown = sorted(given - known)
    if unknown:
        names = ", ".join(sorted(declared))
        tips = " ".join(s for s in (suggestions(u, sorted(known)) for u in unknown) if s)
        if {"layer", "pooling"} & set(unknown):
            tips += (
                " The layer and pooling of word vectors (WEAT and other word-level "
                "metrics) are the model's:"
                " --model-option layer=N, --model-option word_pooling=first."
            )
        raise BiasError(
            f"No metric of this run ({names}) has the parameter(s) {', '.join(unknown)}.",
            (tips.strip() + " " if tips.strip() else "")
            + "See `bias info METRIC` for the parameters of each metric.",
        )
    out = []
    for exp in experiments:
        params = {k.replace("-", "_"): v for k, v in exp.params.items()}
        out.append(
            attrs.evolve(exp, params={k: v for k, v in params.items() if k in declared[exp.metric]})
        )
    return out


@attrs.frozen
class Skipped:
    """A combination of the grid that cannot run (a pair set given to WEAT, a masked-LM metric on
    word2vec), listed with its reason instead of stopping the batch."""

    model: str
    wordset: str
    metric: str
    params: dict[str, Any]
    reason: str
    key: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.metric} on {self.wordset} with {self.model}: {self.reason}"


@attrs.define
class Plan:
    """What a batch will do: the runnable experiments, the skipped combinations and how many grid
    combinations collapsed into one (an option that the metric does not declare)."""

    runnable: list[PlannedExperiment]
    skipped: list[Skipped] = attrs.Factory(list)
    merged: int = 0
    # The models the metrics asked for as inputs, built while planning; the local runner loads each
    # at its first use.
    input_models: InputModels = attrs.Factory(InputModels)

    @property
    def fingerprint(self) -> str:
        """A hash of the experiment keys (runnable and skipped): the same configuration, however
        written, has the same fingerprint; a resumed run must match it."""
        keys = sorted(p.experiment.key for p in self.runnable) + sorted(
            "skipped:" + s.key for s in self.skipped
        )
        return hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:16]

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint of the same configuration under the older experiment keys (see
        `Experiment.legacy_key`), accepted when resuming a folder written before."""
        keys = sorted(p.experiment.legacy_key for p in self.runnable) + sorted(
            "skipped:" + s.key for s in self.skipped
        )
        return hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:16]


def plan(
    experiments: Sequence[Experiment], input_guard: Callable[[Any], None] | None = None
) -> Plan:
    """Build every metric and load every word set up front, so bad input fails before any model
    loads; set aside the combinations that cannot run, with their reason; then resolve the secondary
    inputs every runnable experiment's metric asks for (see `bias.engine.inputs`). Raises if nothing
    is left or an input is missing. `input_guard` sees each model input before it is built (see
    bias.engine.guards: a spec a file wrote is held to what a file may decide)."""
    if not experiments:
        raise BiasError(
            "Nothing to run: the grid has no experiments.",
            "Name at least one model, word set and metric.",
        )
    wordsets: dict[str, Any] = {}
    metric_classes: dict[str, Any] = {}
    embedder_types: dict[str, Any] = {}
    runnable: list[PlannedExperiment] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    merged = 0
    for exp in route_params(experiments):
        # entry points are looked up once per name, not per experiment
        if exp.metric not in metric_classes:
            metric_classes[exp.metric] = eps.load("metrics", exp.metric)
        cls = metric_classes[exp.metric]
        try:
            metric = cls(**coerce_params(cls, exp.params, exp.metric))
        except BadValue as exc:  # a value no combination could take: said as that, not as a skip
            message = (
                exc.message if f"'{exp.metric}'" in exc.message else f"{exp.metric}: {exc.message}"
            )
            raise BadValue(
                message,
                exc.hint or f"See `bias info {exp.metric}` for its parameters and their values.",
            ) from None
        except BiasError as exc:
            # A combination of options that does not fit (cls pooling at word level): set aside with
            # its reason; if no combination fits, the error below names it.
            skipped.append(
                Skipped(
                    exp.model.label(),
                    exp.wordset,
                    exp.metric,
                    dict(exp.params),
                    exc.message,
                    exp.key,
                )
            )
            continue
        if exp.wordset not in wordsets:
            wordsets[exp.wordset] = registry.load_wordset(exp.wordset)
        data = first_items(wordsets[exp.wordset], exp.limit)
        full = attrs.evolve(exp, params=metric.params())
        # the same experiment reached twice through a grid of another metric's options
        if full.key in seen:
            merged += 1
            continue
        seen.add(full.key)
        embedder_name = exp.model.parsed.embedder
        if embedder_name not in embedder_types:
            # unknown names are errors
            embedder_types[embedder_name] = embedder_class(embedder_name)
        embedder_type = embedder_types[embedder_name]
        try:
            check_compatible(metric, embedder_type, data.meta.kind)
            # A metric may know that one of its settings cannot work with a kind of model (cls
            # pooling of static vectors): `unfit(embedder_type)` gives the reason.
            reason = metric.unfit(embedder_type)
            if reason:
                raise BiasError(reason)
        except BiasError as exc:
            skipped.append(
                Skipped(
                    exp.model.label(), exp.wordset, exp.metric, full.params, exc.message, full.key
                )
            )
            continue
        budget.check(f"{exp.metric} on {exp.wordset}", metric.cost(data))
        # files it reads, absolute
        given = tuple(k for k in exp.params if k not in exp.from_preset)
        runnable.append(PlannedExperiment(full, absolute_metric(metric), data, given=given))
    runnable = _debias_languages(runnable)
    if not runnable:
        reasons = list(dict.fromkeys(s.reason for s in skipped))
        raise BiasError(
            f"Nothing to run: every combination was skipped ({len(skipped)}). "
            + " ".join(reasons[:3]),
            "Choose metrics that fit the models and word sets (see `bias list metrics` and "
            "`bias list wordsets`).",
        )
    models = InputModels()
    runnable = [
        attrs.evolve(
            p,
            inputs=resolve_requests(
                requested_inputs(p.metric, p.data),
                p.experiment.metric,
                p.experiment.model,
                wordsets,
                models,
                input_guard,
            ),
        )
        for p in runnable
    ]
    return Plan(runnable, skipped, merged, models)


def _debias_languages(runnable: list[PlannedExperiment]) -> list[PlannedExperiment]:
    """A model debiased on load (`debias` without `debias_lists`) takes the debiasing lists of the
    language of the word sets it is measured on, so a Dutch model is not debiased with English
    lists. A model measured on word sets of several languages needs lists named by the user."""
    languages: dict[str, set[str]] = {}
    for p in runnable:
        debias = p.experiment.model.debias
        if debias is not None and not debias.lists and not debias.language:
            languages.setdefault(p.experiment.model.label(), set()).add(
                str(getattr(p.data.meta, "language", "") or "")
            )
    if not languages:
        return runnable
    for spec, found in languages.items():
        named = sorted(x for x in found if x)
        if len(named) != 1 or len(found) != 1:
            raise BiasError(
                f"Cannot choose the debiasing lists for {spec}: the run's word sets are in "
                + (
                    f"several languages ({', '.join(named)})"
                    if len(named) > 1
                    else "no stated language"
                )
                + ", and each language has its own lists.",
                "Name the lists with --debias-lists (e.g. en/debias-gender, or a file), or "
                "run one language at a time.",
            )
    out = []
    for p in runnable:
        model = p.experiment.model
        if model.label() in languages and model.debias is not None:
            language = next(iter(languages[model.label()]))
            model = attrs.evolve(model, debias=attrs.evolve(model.debias, language=language))
            p = attrs.evolve(p, experiment=attrs.evolve(p.experiment, model=model))
        out.append(p)
    return out


def check_models(plan: Plan, *, devices: bool = True) -> None:
    """Each model's cheap checks (files, device, Hub reachable) before any model is loaded, so a
    missing file or an impossible device is answered in seconds, not after the other models ran.
    The models asked for as inputs are checked too. `devices=False` leaves the device out: on a Ray
    cluster the workers' GPUs count, not this machine's (the Ray executor checks them)."""
    seen: set[str] = set()
    for p in plan.runnable:
        model = p.experiment.model
        if model.label() in seen:
            continue
        seen.add(model.label())
        parsed = model.parsed
        if not devices and "device" in parsed.options:
            parsed = attrs.evolve(parsed, options={**parsed.options, "device": "cpu"})
        try:
            registry.build_embedder(parsed, model.parsed_debias).check()
        except BiasError as exc:
            # a model of an experiment file: the refusal names the file that gave its options
            if model.origin and model.origin not in exc.message:
                exc.message = f"{model.origin}: {exc.message}"
            raise
    for embedder in plan.input_models.built.values():
        embedder.check()
