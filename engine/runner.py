"""Runs a plan (see `bias.engine.planning`) in this process: loads each model once, writes each
result the moment it exists, and skips finished experiments on `resume`.

The runner knows nothing of the terminal: it reports through callbacks, and the CLI renders them.
"""

from __future__ import annotations

import functools
import logging
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from bias import registry
from bias.core import threads as cpu_threads
from bias.core.errors import FAILURE, BiasError, recognised
from bias.core.experiment_log import collected
from bias.core.compatibility import missing_capabilities
from bias.core.interfaces import Capability, Embedder, Metric, variant_meta
from bias.core.model import FAILED, OK, REFUSED, Result
from bias.core.pair_metrics.scoring import lm_mode
from bias.core.params import for_one_kind, not_used
from bias.core.runs.results import ResultStore
from bias.engine.experiments import Experiment, ModelConfig
from bias.engine.availability import refuse_unavailable
from bias.engine.inputs import InputModels
from bias.engine.planning import PlannedExperiment
from bias.engine.presets import PRESET_PARAMS
from bias.engine.spending import check_spending

log = logging.getLogger(__name__)


def versions(embedder: Embedder | None = None) -> dict[str, str]:
    """Versions that could change a number: Python, the framework, numpy, and the libraries the
    embedder computes with (its class's `libraries`; a debiased model's include its source's). They
    depend on the model alone, never on what ran before in the process, so a Ray worker records what
    a local run records (read from package metadata once per set of libraries)."""
    return dict(_versions(embedder_libraries(embedder) if embedder is not None else ()))


def embedder_libraries(embedder: Embedder) -> tuple[str, ...]:
    source = getattr(embedder, "source", None)
    inner = (
        embedder_libraries(source)
        if isinstance(source, Embedder) and source is not embedder
        else ()
    )
    return tuple(dict.fromkeys((*getattr(type(embedder), "libraries", ()), *inner)))


# Import names whose distribution has another name.
DISTRIBUTIONS = {"fasttext": "fasttext-numpy2-wheel"}


@functools.lru_cache(maxsize=16)
def _versions(libraries: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = {"python": platform.python_version()}
    for dist in ("bias-framework", "numpy", *(DISTRIBUTIONS.get(m, m) for m in libraries)):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return tuple(out.items())


@attrs.frozen
class Event:
    """Progress of a batch, for the CLI to render (the runner itself never prints).

    kind: "loading" (a model is being opened), "start" (an experiment begins), "result" (one ended).
    `done` and `total` count this session's experiments (finished ones skipped on resume excluded).
    """

    kind: str
    done: int
    total: int
    model: str
    experiment: Experiment | None = None
    result: Result | None = None
    note: str = ""  # kind "quote": what a paid model's experiments will send and cost


def run(
    planned: Sequence[PlannedExperiment],
    *,
    out: Path | None = None,
    resume: bool = False,
    on_start: Callable[[PlannedExperiment], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    fail_fast: bool = False,
    debug: bool = False,
    manifest: Any = None,
    input_models: InputModels | None = None,
    max_cost: float | None = None,
    confirm_cost: bool = False,
    threads: int | None = None,
) -> Iterator[Result]:
    """Yield each result as it is computed (and append it to `out/results.jsonl` first).

    Each model is loaded once for all its experiments, and each model a metric asked for as an input
    once for the run (`input_models`: those the plan built). A model that fails to load gives a
    failed result for each of its experiments and the batch goes on (`fail_fast` stops it). On
    resume, experiments whose key already has a result other than "failed" are skipped. A paid model
    (an embedding service) is asked what its experiments will cost before its first request (event
    "quote"); above `max_cost` US dollars the run stops unless `confirm_cost`. An interrupt
    (KeyboardInterrupt) simply ends the iteration: every result written so far is on disk. `threads`
    sets the CPU threads of torch and BLAS for the process (None leaves them as they are)."""
    if threads is not None:
        cpu_threads.use_threads(threads)
    input_models = input_models if input_models is not None else InputModels()
    store = ResultStore(out) if out is not None else None
    done = store.done_keys() if (store and resume and store.path.exists()) else set()
    todo = (
        [p for p in planned if p.experiment.key not in done and p.experiment.legacy_key not in done]
        if done
        else list(planned)
    )
    if done:
        log.info(
            "Resuming: %d of %d experiments already finished.",
            len(planned) - len(todo),
            len(planned),
        )
    by_model: dict[str, list[PlannedExperiment]] = {}
    for p in todo:
        model = p.experiment.model
        by_model.setdefault(model.label(), []).append(p)
    total, finished = len(todo), 0

    def emit(
        kind: str,
        model: str,
        experiment: Experiment | None = None,
        result: Result | None = None,
        note: str = "",
    ) -> None:
        if on_event:
            on_event(Event(kind, finished, total, model, experiment, result, note))

    try:
        for group in by_model.values():
            model = group[0].experiment.model
            # What the model's files say it offers (a Hugging Face config.json's architectures),
            # read before the weights load: a metric it cannot serve is refused in a second, not
            # after the load.
            foreseen = _foreseen(model)
            for p in [
                p
                for p in group
                if foreseen is not None and missing_capabilities(p.metric, foreseen)
            ]:
                group = [q for q in group if q is not p]
                result = _refused_before_load(p, foreseen)
                if store:
                    store.append(result)
                finished += 1
                emit("result", model.label(), p.experiment, result)
                yield result
            if not group:
                continue
            emit("loading", model.label())
            started = time.perf_counter()
            error: Exception | None = None
            quote: str | None = None
            try:
                embedder = registry.build_embedder(model.parsed, model.parsed_debias)
            except (
                Exception
            ) as exc:  # recorded for each of the model's experiments; the batch goes on
                error = exc
            else:
                # A paid model: what its experiments will send, asked before anything is sent (a
                # model debiased on load sends the debiasing lists' words when it is fitted, at its
                # load).
                quote = check_spending(
                    embedder, group, model.label(), max_cost, confirm_cost, model
                )
                try:
                    embedder.load()
                    cpu_threads.apply_to_torch()  # loading imported torch after the count was set
                except Exception as exc:
                    error = exc
            if error is not None:
                exc = error
                if debug:
                    raise exc
                load_seconds = time.perf_counter() - started
                if manifest is not None:
                    manifest.model_loaded(model.label(), error=_reason(exc), load_s=load_seconds)
                for p in group:
                    result = _load_failure(p, exc, load_seconds)
                    if store:
                        store.append(result)
                    finished += 1
                    emit("result", model.label(), p.experiment, result)
                    yield result
                    if fail_fast:
                        return
                continue
            load_seconds = time.perf_counter() - started
            if quote:
                emit("quote", model.label(), note=quote)
            facts = model_facts(embedder)
            if manifest is not None:
                manifest.model_loaded(
                    model.label(), fingerprint=facts[0], info=facts[1], load_s=load_seconds
                )
            for p in group:
                if on_start:
                    on_start(p)
                emit("start", model.label(), p.experiment)
                result = run_one(
                    p,
                    embedder,
                    debug=debug,
                    input_models=input_models,
                    facts=facts,
                    load_s=load_seconds,
                )
                if store:
                    store.append(result)
                finished += 1
                emit("result", model.label(), p.experiment, result)
                yield result
                if fail_fast and result.status == FAILED:
                    return
    finally:
        if store:
            store.close()  # the last batch of lines fsynced


def _reason(exc: BaseException) -> str:
    """A failure in words: a BiasError's, or the words for memory, disk and network failures
    (a MemoryError has none of its own), else the exception's type and text."""
    said = recognised(exc)
    if said is not None:
        return said.message + (f" {said.hint}" if said.hint else "")
    return f"{type(exc).__name__}: {exc}"


def identity(exp: Experiment) -> dict[str, Any]:
    """What names a result: the experiment's key, model (as labelled), word set, metric, parameters
    and seed. Written here only, into every result of a run, whatever the metric put there
    itself."""
    return {
        "key": exp.key,
        "model": exp.model.label(),
        "wordset": exp.wordset,
        "metric": exp.metric,
        "params": exp.params,
        "seed": exp.seed,
    }


def limited(exp: Experiment) -> dict[str, Any]:
    """The smoke run's `--limit`, recorded in every result of the experiment (one that never ran
    too: a report says which results were smoke runs from them)."""
    return {"limit": exp.limit} if exp.limit is not None else {}


def failed_before_metric(
    exp: Experiment, reason: str, timings: dict[str, float], meta: dict[str, Any] | None = None
) -> Result:
    """The failed result of an experiment whose metric never ran (its model did not open, or its Ray
    worker died): recorded under the experiment's own key so that --resume redoes it."""
    return Result(
        **identity(exp),
        status=FAILED,
        reason=reason,
        timings=timings,
        versions=versions(),
        meta={**(meta or {}), **limited(exp)},
    )


def _load_failure(
    p: PlannedExperiment, exc: BaseException, load_seconds: float, where: str = ""
) -> Result:
    """The result of an experiment whose model could not be opened: failed (redone on resume).
    `where` names the machine when it is not this one (" on Ray node HOST (IP)")."""
    exp = p.experiment
    code = exc.exit_code if isinstance(exc, BiasError) else 1
    return failed_before_metric(
        exp,
        f"the model could not be loaded{where}: {_reason(exc)}",
        {"compute_s": 0.0, "model_load_s": round(load_seconds, 4)},
        {"exit_code": code, **({"model_name": exp.model.name} if exp.model.name else {})},
    )


def _foreseen(model: ModelConfig) -> frozenset[Capability] | None:
    """What the model will offer, from its files alone; None when only loading it can tell."""
    try:
        return registry.build_embedder(model.parsed, model.parsed_debias).foreseen()
    except Exception:  # a model that cannot even be built fails at its load, with its own message
        return None


def _refused_before_load(p: PlannedExperiment, foreseen: frozenset[Capability]) -> Result:
    exp = p.experiment
    try:
        refuse_unavailable(p.metric, exp.model.spec, foreseen)
    except BiasError as exc:
        reason = _reason(exc)
    return Result(
        **identity(exp),
        status=REFUSED,
        reason=reason,
        timings={"compute_s": 0.0},
        versions=versions(),
        meta={**_data_meta(p.data), **limited(exp)},
    )


def _check_available(metric: Metric, embedder: Embedder) -> None:
    """Refuse a metric the loaded model cannot serve (a folder without an MLM head, say), naming the
    metrics that would work with it."""
    refuse_unavailable(metric, embedder.spec, embedder.available())


def _data_meta(data: Any) -> dict[str, Any]:
    """What a result records of its word set even when no number came out (bias type, language)."""
    meta = getattr(data, "meta", None)
    if meta is None:
        return {}
    return {
        "bias_type": meta.bias_type,
        "language": meta.language,
        "expected_direction": meta.expected_direction,
        **variant_meta(meta),
    }


def _with_not_used(
    result: Result, metric: Metric, embedder: Embedder, given: Sequence[str]
) -> Result:
    """The result with a warning for each parameter the user set that this kind of language model
    does not read (a causal model given CrowS-Pairs' `masked_score`); a preset's values serve both
    kinds and are not said."""
    if not for_one_kind(metric):
        return result
    try:
        kind = lm_mode(embedder, metric.name)
    except BiasError:
        return result
    unused = not_used(metric, kind, given)
    return attrs.evolve(result, warnings=[*result.warnings, *unused]) if unused else result


def model_facts(embedder: Embedder) -> tuple[str, dict[str, Any]]:
    """The loaded model's fingerprint and description, as every result of the model records them:
    asked once per loaded model (describing a Hub model hashes its files). A service model that
    sent requests to load (a debiasing fit) records them as `sent_to_load`."""
    fingerprint, info = embedder.fingerprint(), embedder.describe()
    loaded = _sent(embedder)
    if loaded and any(loaded.values()):
        info = {**info, "sent_to_load": loaded}
    return fingerprint, info


def _sent(embedder: Embedder) -> dict[str, int] | None:
    """The model's counts of what it sent (`Embedder.sent`), or None: a plugin's that fails or
    gives no counts records nothing rather than stopping the run."""
    try:
        found = embedder.sent()
    except Exception:
        log.debug("%s: sent() failed", getattr(embedder, "spec", embedder), exc_info=True)
        return None
    if not isinstance(found, dict):
        return None
    return {str(k): v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _computed(
    p: PlannedExperiment,
    embedder: Embedder,
    debug: bool,
    input_models: InputModels | None,
) -> Result:
    """The metric's result, or the refusal or failure it raised, as a Result."""
    exp = p.experiment
    try:
        _check_available(p.metric, embedder)
        if p.inputs:
            inputs = (input_models if input_models is not None else InputModels()).resolve(
                p.inputs, embedder
            )
            result = p.metric.compute(embedder, p.data, seed=exp.seed, inputs=inputs)
        else:
            result = p.metric.compute(embedder, p.data, seed=exp.seed)
        result = _with_not_used(result, p.metric, embedder, p.given)
    except BiasError as exc:
        if debug:
            raise
        # A refusal is about the input (the same input is refused again); a BiasError with the
        # failure exit code (out of memory, ...) is about this attempt, so it is failed and --resume
        # redoes it. A service's refusal of the key or the model is the user's input (exit 2) but
        # redone by --resume.
        status = FAILED if exc.exit_code == FAILURE or exc.redo else REFUSED
        reason = _reason(exc)
        meta = {**_data_meta(p.data), **({"exit_code": exc.exit_code} if status == FAILED else {})}
        result = Result(**identity(exp), status=status, reason=reason, meta=meta)
    except Exception as exc:  # a failing experiment is recorded and the batch goes on
        if debug:
            raise
        log.debug("experiment %s failed", exp.key, exc_info=True)
        result = Result(
            **identity(exp), status=FAILED, reason=_reason(exc), meta=_data_meta(p.data)
        )
    return result


def run_one(
    p: PlannedExperiment,
    embedder: Embedder,
    *,
    debug: bool = False,
    input_models: InputModels | None = None,
    facts: tuple[str, dict[str, Any]] | None = None,
    load_s: float | None = None,
) -> Result:
    """One experiment on its loaded model, always as a Result: a refusal or a failure (of the
    metric, or of loading a model it asked for) is recorded, not raised (unless `debug`). `facts`
    are the model's `model_facts` when the caller has them already; `load_s`, the seconds its model
    took to load, is recorded in the timings when given."""
    exp = p.experiment
    # the model's facts as it stands before the experiment (what loading it sent, not this)
    fingerprint, info = facts if facts is not None else model_facts(embedder)
    started = time.perf_counter()
    sent_before = _sent(embedder)
    with collected() as said:  # what the model had to do to the input, kept with the result
        result = _computed(p, embedder, debug, input_models)
    if said and result.status == OK:  # a refusal or failure says its own story
        result = attrs.evolve(
            result, warnings=[*result.warnings, *(w for w in said if w not in result.warnings)]
        )
    elapsed = time.perf_counter() - started
    if sent_before is not None:
        sent_after = _sent(embedder) or {}
        info = {**info, "sent": {k: v - sent_before.get(k, 0) for k, v in sent_after.items()}}
    if exp.preset:
        # which conventions ran: the preset, and the parameters it gave this metric (those the
        # experiment file did not set otherwise)
        given = {
            k: v
            for k, v in PRESET_PARAMS.get(exp.preset, {}).items()
            if exp.params.get(k, object()) == v
        }
        result = attrs.evolve(
            result,
            convention={**result.convention, "run_preset": exp.preset, "run_preset_params": given},
        )
    return attrs.evolve(
        result,
        **identity(exp),
        timings={
            "compute_s": round(elapsed, 4),
            **({"model_load_s": round(load_s, 4)} if load_s is not None else {}),
        },
        versions=versions(embedder),
        meta={
            **result.meta,
            "model_fingerprint": fingerprint,
            "model_info": info,
            **({"model_name": exp.model.name} if exp.model.name else {}),
            **limited(exp),
            **({"threads": used} if (used := cpu_threads.in_use()) is not None else {}),
        },
    )
