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


def prepare(experiments: Sequence[Experiment]) -> list[Prepared]:
    """Build every metric and load every word set up front, so bad input fails before any model loads."""
    from bias import registry
    from bias.registry.resolve import embedder_class

    wordsets: dict[str, Any] = {}
    prepared = []
    for exp in experiments:
        metric = registry.build_metric(exp.metric, **exp.params)
        if exp.wordset not in wordsets:
            wordsets[exp.wordset] = registry.load_wordset(exp.wordset)
        data = wordsets[exp.wordset]
        check_compatible(metric, embedder_class(parse_spec(exp.model.spec).embedder), data.meta.kind)
        full = attrs.evolve(exp, params=metric.params())
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


def run_one(p: Prepared, embedder: Embedder, *, debug: bool = False) -> Result:
    exp = p.experiment
    started = time.perf_counter()
    try:
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
