"""Runs experiments: checks everything before work starts, loads each model once, writes each result
the moment it exists, and skips finished experiments on `resume`.

The runner knows nothing of the terminal: it reports through callbacks, and the CLI renders them.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from bias.core import budget
from bias.core.errors import FAILURE, BiasError
from bias.engine.experiments import Experiment
from bias.core.interfaces import Embedder, Metric, check_compatible, missing_capabilities, variant_meta
from bias.core.model import FAILED, REFUSED, Result
from bias.core.results import ResultStore
from bias.core.specs import parse_spec

log = logging.getLogger(__name__)


@attrs.define
class Prepared:
    """An experiment with its metric built and its data loaded, checked against its embedder type."""

    experiment: Experiment
    metric: Metric
    data: Any


def route_params(experiments: Sequence[Experiment]) -> list[Experiment]:
    """Give each metric only the parameters it declares, so one command can run WEAT and CrowS with
    options meant for one of them; a parameter no chosen metric has is a mistake, and is refused."""
    from bias.core.params import describe_params
    from bias.registry.entry_points import load

    declared: dict[str, set[str]] = {}
    for exp in experiments:
        if exp.metric not in declared:
            declared[exp.metric] = {p.name for p in describe_params(load("metrics", exp.metric))}
    given = {k.replace("-", "_") for exp in experiments for k in exp.params}
    known = set().union(*declared.values()) if declared else set()
    unknown = sorted(given - known)
    if unknown:
        from bias.registry.entry_points import suggestions

        names = ", ".join(sorted(declared))
        tips = " ".join(s for s in (suggestions(u, sorted(known)) for u in unknown) if s)
        if {"layer", "pooling"} & set(unknown):
            tips += (" The layer and pooling of word vectors (WEAT and other word-level metrics) are the model's:"
                     " --model-option layer=N, --model-option word_pooling=first.")
        raise BiasError(
            f"No metric of this run ({names}) has the parameter(s) {', '.join(unknown)}.",
            (tips.strip() + " " if tips.strip() else "") + "See `bias info METRIC` for the parameters of each metric.",
        )
    out = []
    for exp in experiments:
        params = {k.replace("-", "_"): v for k, v in exp.params.items()}
        out.append(attrs.evolve(exp, params={k: v for k, v in params.items() if k in declared[exp.metric]}))
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

    prepared: list[Prepared]
    skipped: list[Skipped] = attrs.Factory(list)
    merged: int = 0

    @property
    def fingerprint(self) -> str:
        """A hash of the experiment keys (runnable and skipped): the same configuration, however
        written, has the same fingerprint; a resumed run must match it."""
        keys = sorted(p.experiment.key for p in self.prepared) + sorted("skipped:" + s.key for s in self.skipped)
        return hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:16]

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint of the same configuration under the older experiment keys (see
        `Experiment.legacy_key`), accepted when resuming a folder written before."""
        keys = sorted(p.experiment.legacy_key for p in self.prepared) + sorted("skipped:" + s.key for s in self.skipped)
        return hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:16]


def plan(experiments: Sequence[Experiment]) -> Plan:
    """Build every metric and load every word set up front, so bad input fails before any model loads;
    set aside the combinations that cannot run, with their reason. Raises if nothing is left."""
    from bias import registry
    from bias.registry.resolve import embedder_class

    if not experiments:
        raise BiasError("Nothing to run: the grid has no experiments.", "Name at least one model, word set and metric.")
    from bias.core.params import coerce_params
    from bias.registry import entry_points as eps

    wordsets: dict[str, Any] = {}
    metric_classes: dict[str, Any] = {}
    embedder_types: dict[str, Any] = {}
    prepared: list[Prepared] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    merged = 0
    for exp in route_params(experiments):
        if exp.metric not in metric_classes:  # entry points are looked up once per name, not per experiment
            metric_classes[exp.metric] = eps.load("metrics", exp.metric)
        cls = metric_classes[exp.metric]
        try:
            metric = cls(**coerce_params(cls, exp.params, exp.metric))
        except BiasError as exc:
            # A combination of options that does not fit (cls pooling at word level): set aside with its
            # reason; if no combination fits, the error below names it.
            skipped.append(Skipped(exp.model.label(), exp.wordset, exp.metric, dict(exp.params), exc.message, exp.key))
            continue
        if exp.wordset not in wordsets:
            wordsets[exp.wordset] = registry.load_wordset(exp.wordset)
        data = wordsets[exp.wordset]
        full = attrs.evolve(exp, params=metric.params())
        if full.key in seen:  # the same experiment reached twice through a grid of another metric's options
            merged += 1
            continue
        seen.add(full.key)
        embedder_name = parse_spec(exp.model.spec).embedder
        if embedder_name not in embedder_types:
            embedder_types[embedder_name] = embedder_class(embedder_name)  # unknown names are errors
        embedder_type = embedder_types[embedder_name]
        try:
            check_compatible(metric, embedder_type, data.meta.kind)
            # A metric may know that one of its settings cannot work with a kind of model (cls pooling
            # of static vectors): `unfit(embedder_type)` gives the reason.
            unfit = getattr(metric, "unfit", None)
            reason = unfit(embedder_type) if callable(unfit) else None
            if reason:
                raise BiasError(reason)
        except BiasError as exc:
            skipped.append(Skipped(exp.model.label(), exp.wordset, exp.metric, full.params, exc.message, full.key))
            continue
        sizes = {k: len(getattr(data, k).words) for k in ("X", "Y", "A", "B") if hasattr(getattr(data, k, None), "words")}
        if sizes:
            budget.check(f"{exp.metric} on {exp.wordset}", full.params, sizes)
        prepared.append(Prepared(full, metric, data))
    prepared = _debias_languages(prepared)
    if not prepared:
        reasons = list(dict.fromkeys(s.reason for s in skipped))
        raise BiasError(
            f"Nothing to run: every combination was skipped ({len(skipped)}). " + " ".join(reasons[:3]),
            "Choose metrics that fit the models and word sets (see `bias list metrics` and `bias list wordsets`).",
        )
    return Plan(prepared, skipped, merged)


def _debias_languages(prepared: list[Prepared]) -> list[Prepared]:
    """A model debiased on load (`debias` without `debias_lists`) takes the debiasing lists of the
    language of the word sets it is measured on, so a Dutch model is not debiased with English lists.
    A model measured on word sets of several languages needs lists named by the user."""
    languages: dict[tuple[str, str], set[str]] = {}
    for p in prepared:
        options = p.experiment.model.options
        if options.get("debias") and not options.get("debias_lists") and not options.get("debias_language"):
            key = (p.experiment.model.spec, repr(sorted(options.items())))
            languages.setdefault(key, set()).add(str(getattr(p.data.meta, "language", "") or ""))
    if not languages:
        return prepared
    for (spec, _), found in languages.items():
        named = sorted(x for x in found if x)
        if len(named) != 1 or len(found) != 1:
            raise BiasError(
                f"Cannot choose the debiasing lists for {spec}: the run's word sets are in "
                + (f"several languages ({', '.join(named)})" if len(named) > 1 else "no stated language")
                + ", and each language has its own lists.",
                "Name the lists with --debias-lists (e.g. en/debias-gender, or a file), or run one language at a time.",
            )
    out = []
    for p in prepared:
        model = p.experiment.model
        key = (model.spec, repr(sorted(model.options.items())))
        if key in languages:
            language = next(iter(languages[key]))
            model = attrs.evolve(model, options={**model.options, "debias_language": language})
            p = attrs.evolve(p, experiment=attrs.evolve(p.experiment, model=model))
        out.append(p)
    return out


def check_models(prepared: Sequence[Prepared]) -> None:
    """Each model's cheap checks (files, device, Hub reachable) before any model is loaded, so a
    missing file or an impossible device is answered in seconds, not after the other models ran."""
    from bias import registry

    seen: set[str] = set()
    for p in prepared:
        model = p.experiment.model
        if model.label() in seen:
            continue
        seen.add(model.label())
        registry.build_embedder(model.spec, **model.options).check()


def prepare(experiments: Sequence[Experiment]) -> list[Prepared]:
    """The runnable experiments (see `plan`)."""
    return plan(experiments).prepared


def versions(embedder: Embedder | None = None) -> dict[str, str]:
    """Versions that could change a number: Python, the framework, numpy, and the model libraries
    loaded so far (read from package metadata once per set of loaded libraries)."""
    return dict(_versions(tuple(m for m in ("torch", "transformers", "gensim", "fasttext") if m in sys.modules)))


@functools.lru_cache(maxsize=16)
def _versions(loaded: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = {"python": platform.python_version()}
    for dist in ("bias-framework", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    for module, dist in (("torch", "torch"), ("transformers", "transformers"), ("gensim", "gensim"), ("fasttext", "fasttext-numpy2-wheel")):
        if module in loaded:
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


def run(
    prepared: Sequence[Prepared],
    *,
    out: Path | None = None,
    resume: bool = False,
    on_start: Callable[[Prepared], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    fail_fast: bool = False,
    debug: bool = False,
    manifest: Any = None,
) -> Iterator[Result]:
    """Yield each result as it is computed (and append it to `out/results.jsonl` first).

    Each model is loaded once for all its experiments. A model that fails to load gives a failed
    result for each of its experiments and the batch goes on (`fail_fast` stops it). On resume,
    experiments whose key already has a result other than "failed" are skipped. An interrupt
    (KeyboardInterrupt) simply ends the iteration: every result written so far is on disk.
    """
    from bias import registry

    store = ResultStore(out) if out is not None else None
    done = store.done_keys() if (store and resume and store.path.exists()) else set()
    todo = [p for p in prepared if p.experiment.key not in done and p.experiment.legacy_key not in done]
    if done:
        log.info("Resuming: %d of %d experiments already finished.", len(prepared) - len(todo), len(prepared))
    by_model: dict[tuple[str, str], list[Prepared]] = {}
    for p in todo:
        model = p.experiment.model
        by_model.setdefault((model.spec, repr(sorted(model.options.items()))), []).append(p)
    total, finished = len(todo), 0

    def emit(kind: str, model: str, experiment: Experiment | None = None, result: Result | None = None) -> None:
        if on_event:
            on_event(Event(kind, finished, total, model, experiment, result))

    for group in by_model.values():
        model = group[0].experiment.model
        emit("loading", model.label())
        started = time.perf_counter()
        try:
            embedder = registry.build_embedder(model.spec, **model.options)
            embedder.load()
        except Exception as exc:  # recorded for each of the model's experiments; the batch goes on
            if debug:
                raise
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
        if manifest is not None:
            manifest.model_loaded(model.label(), fingerprint=embedder.fingerprint(), info=embedder.describe(), load_s=load_seconds)
        for p in group:
            if on_start:
                on_start(p)
            emit("start", model.label(), p.experiment)
            result = run_one(p, embedder, debug=debug)
            result = attrs.evolve(result, timings={**result.timings, "model_load_s": round(load_seconds, 4)})
            if store:
                store.append(result)
            finished += 1
            emit("result", model.label(), p.experiment, result)
            yield result
            if fail_fast and result.status == FAILED:
                return


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BiasError):
        return exc.message + (f" {exc.hint}" if exc.hint else "")
    return f"{type(exc).__name__}: {exc}"


def failed_before_metric(exp: Experiment, reason: str, timings: dict[str, float], meta: dict[str, Any] | None = None) -> Result:
    """The failed result of an experiment whose metric never ran (its model did not open, or its Ray
    worker died): recorded under the experiment's own key so that --resume redoes it."""
    return Result(
        key=exp.key,
        model=exp.model.label(),
        wordset=exp.wordset,
        metric=exp.metric,
        status=FAILED,
        reason=reason,
        params=exp.params,
        seed=exp.seed,
        timings=timings,
        versions=versions(),
        meta=meta or {},
    )


def _load_failure(p: Prepared, exc: BaseException, load_seconds: float) -> Result:
    """The result of an experiment whose model could not be opened: failed (redone on resume)."""
    exp = p.experiment
    code = exc.exit_code if isinstance(exc, BiasError) else 1
    return failed_before_metric(
        exp,
        f"the model could not be loaded: {_reason(exc)}",
        {"compute_s": 0.0, "model_load_s": round(load_seconds, 4)},
        {"exit_code": code, **({"model_name": exp.model.name} if exp.model.name else {})},
    )


def _check_available(metric: Metric, embedder: Embedder) -> None:
    """Refuse a metric the loaded model cannot serve (a folder without an MLM head, say), naming the
    metrics that would work with it."""
    have = embedder.available()
    missing = missing_capabilities(metric, have)
    if not missing:
        return
    from bias.registry import entry_points as eps

    fitting = []
    for info in eps.entry_points("metrics"):
        try:
            cls = eps.load("metrics", info.name)
        except BiasError:
            continue
        if not missing_capabilities(cls, have):
            fitting.append(info.name)
    raise BiasError(
        f"The model {embedder.spec} offers no {', '.join(missing)}, which metric '{metric.name}' needs; "
        f"metrics that work with it: {', '.join(sorted(fitting)) or 'none installed'}.",
        "A Hugging Face folder gives masked-LM scores only with its MLM head (a *ForMaskedLM checkpoint).",
    )


def _data_meta(data: Any) -> dict[str, Any]:
    """What a result records of its word set even when no number came out (bias type, language)."""
    meta = getattr(data, "meta", None)
    if meta is None:
        return {}
    return {"bias_type": meta.bias_type, "language": meta.language, "expected_direction": meta.expected_direction,
            **variant_meta(meta)}


def run_one(p: Prepared, embedder: Embedder, *, debug: bool = False) -> Result:
    exp = p.experiment
    started = time.perf_counter()
    try:
        _check_available(p.metric, embedder)
        result = p.metric.compute(embedder, p.data, seed=exp.seed)
    except BiasError as exc:
        if debug:
            raise
        # A refusal is about the input (the same input is refused again); a BiasError with the failure
        # exit code (out of memory, ...) is about this attempt, so it is failed and --resume redoes it.
        status = FAILED if exc.exit_code == FAILURE else REFUSED
        reason = exc.message + (f" {exc.hint}" if status == FAILED and exc.hint else "")
        result = Result(key="", model=embedder.spec, wordset=exp.wordset, metric=exp.metric, status=status, reason=reason,
                        meta=_data_meta(p.data))
    except Exception as exc:  # a failing experiment is recorded and the batch goes on
        if debug:
            raise
        log.debug("experiment %s failed", exp.key, exc_info=True)
        result = Result(
            key="", model=embedder.spec, wordset=exp.wordset, metric=exp.metric, status=FAILED, reason=f"{type(exc).__name__}: {exc}",
            meta=_data_meta(p.data),
        )
    elapsed = time.perf_counter() - started
    return attrs.evolve(
        result,
        key=exp.key,
        model=exp.model.label(),
        wordset=exp.wordset,
        params=exp.params,
        seed=exp.seed,
        timings={"compute_s": round(elapsed, 4)},
        versions=versions(embedder),
        meta={
            **result.meta, "model_fingerprint": embedder.fingerprint(), "model_info": embedder.describe(),
            **({"model_name": exp.model.name} if exp.model.name else {}),
        },
    )
