"""Runs experiments: checks everything before work starts, loads each model once, writes each result
the moment it exists, and skips finished experiments on `resume`.

The runner knows nothing of the terminal: it reports through callbacks, and the CLI renders them.
"""

from __future__ import annotations

import logging
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.experiments import Experiment
from bias.core.interfaces import Embedder, Metric, check_compatible
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
        names = ", ".join(sorted(declared))
        raise BiasError(
            f"No metric of this run ({names}) has the parameter(s) {', '.join(unknown)}.",
            "See `bias info METRIC` for the parameters of each metric.",
        )
    out = []
    for exp in experiments:
        params = {k.replace("-", "_"): v for k, v in exp.params.items()}
        out.append(attrs.evolve(exp, params={k: v for k, v in params.items() if k in declared[exp.metric]}))
    return out


def prepare(experiments: Sequence[Experiment]) -> list[Prepared]:
    """Build every metric and load every word set up front, so bad input fails before any model loads."""
    from bias import registry
    from bias.registry.resolve import embedder_class

    wordsets: dict[str, Any] = {}
    prepared = []
    seen: set[str] = set()
    for exp in route_params(experiments):
        metric = registry.build_metric(exp.metric, **exp.params)
        if exp.wordset not in wordsets:
            wordsets[exp.wordset] = registry.load_wordset(exp.wordset)
        data = wordsets[exp.wordset]
        check_compatible(metric, embedder_class(parse_spec(exp.model.spec).embedder), data.meta.kind)
        full = attrs.evolve(exp, params=metric.params())
        if full.key in seen:  # the same experiment reached twice through a grid of another metric's options
            continue
        seen.add(full.key)
        prepared.append(Prepared(full, metric, data))
    return prepared


def versions(embedder: Embedder | None = None) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("bias-framework", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    for module, dist in (("torch", "torch"), ("transformers", "transformers"), ("gensim", "gensim"), ("fasttext", "fasttext-numpy2-wheel")):
        if module in sys.modules:
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
    return out


def run(
    prepared: Sequence[Prepared],
    *,
    out: Path | None = None,
    resume: bool = False,
    on_start: Callable[[Prepared], None] | None = None,
    fail_fast: bool = False,
    debug: bool = False,
) -> Iterator[Result]:
    """Yield each result as it is computed (and append it to `out/results.jsonl` first)."""
    from bias import registry

    store = ResultStore(out) if out is not None else None
    done = store.done_keys() if (store and resume and store.path.exists()) else set()
    todo = [p for p in prepared if p.experiment.key not in done]
    if done:
        log.info("Resuming: %d of %d experiments already finished.", len(prepared) - len(todo), len(prepared))
    by_model: dict[tuple[str, str], list[Prepared]] = {}
    for p in todo:
        model = p.experiment.model
        by_model.setdefault((model.spec, repr(sorted(model.options.items()))), []).append(p)

    for group in by_model.values():
        model = group[0].experiment.model
        embedder = registry.build_embedder(model.spec, **model.options)
        started = time.perf_counter()
        embedder.load()
        load_seconds = time.perf_counter() - started
        for p in group:
            if on_start:
                on_start(p)
            result = run_one(p, embedder, debug=debug)
            result = attrs.evolve(result, timings={**result.timings, "model_load_s": round(load_seconds, 4)})
            if store:
                store.append(result)
            yield result
            if fail_fast and result.status == FAILED:
                return


def _check_available(metric: Metric, embedder: Embedder) -> None:
    """Refuse a metric the loaded model cannot serve (a folder without an MLM head, say), naming the
    metrics that would work with it."""
    have = embedder.available()
    missing = [c.value for c in metric.requires if c not in have]
    if not missing:
        return
    from bias.registry import entry_points as eps

    fitting = []
    for info in eps.entry_points("metrics"):
        try:
            cls = eps.load("metrics", info.name)
        except BiasError:
            continue
        if set(cls.requires) <= set(have):
            fitting.append(info.name)
    raise BiasError(
        f"The model {embedder.spec} offers no {', '.join(missing)}, which metric '{metric.name}' needs.",
        f"Metrics that work with it: {', '.join(sorted(fitting)) or 'none installed'}.",
    )


def run_one(p: Prepared, embedder: Embedder, *, debug: bool = False) -> Result:
    exp = p.experiment
    started = time.perf_counter()
    try:
        _check_available(p.metric, embedder)
        result = p.metric.compute(embedder, p.data, seed=exp.seed)
    except BiasError as exc:
        if debug:
            raise
        result = Result(key="", model=embedder.spec, wordset=exp.wordset, metric=exp.metric, status=REFUSED, reason=exc.message)
    except Exception as exc:  # a failing experiment is recorded and the batch goes on
        if debug:
            raise
        log.debug("experiment %s failed", exp.key, exc_info=True)
        result = Result(
            key="", model=embedder.spec, wordset=exp.wordset, metric=exp.metric, status=FAILED, reason=f"{type(exc).__name__}: {exc}"
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
        meta={**result.meta, "model_fingerprint": embedder.fingerprint(), "model_info": embedder.describe()},
    )
