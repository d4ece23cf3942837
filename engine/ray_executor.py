"""The Ray executor: the same plan as the local runner, spread over a Ray cluster, one actor per model.

Why this shape: the cost of an audit is model forwards, and loading a model is the expensive,
stateful step; so each model gets one Ray actor that loads it once on its declared resources
(`resources = { cpus = 4, gpus = 1 }` of the model in the experiment file, fractional GPUs allowed)
and runs every experiment of that model, one at a time, in plan order. Actors of different models run
at the same time as far as the cluster's resources allow; the others wait for a free slot.

The driver (the `bias run` process) alone writes `results.jsonl`, through the same `ResultStore` and
with the same keys as the local runner, in the order results arrive; `--resume` works the same way.
Metrics are pure functions of their inputs and the experiment's seed (part of the experiment key),
so a result does not depend on the worker, the node or the order: a Ray run equals a local run, key by
key, apart from timings.

Faults: an actor whose process dies (killed, out of memory, node lost) is restarted by Ray up to
`max_restarts` times; it reloads its model and the experiments it had not finished are retried (each
at most `max_restarts` times). A result is written only when its experiment returns, so it is written
once. When the retries are spent, the remaining experiments of that model are recorded as failed
(redone by `--resume`). Ctrl-C (KeyboardInterrupt in the driver) kills the actors, leaves every
written result in place and, if the driver started Ray itself, stops it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias import registry
from bias.core.errors import USAGE, BiasError
from bias.core.model import FAILED, Result
from bias.core.runs.results import ResultStore
from bias.core.threads import apply_to_torch, use_threads
from bias.core.specs import DebiasSettings, ModelSpec
from bias.engine.inputs import InputModels
from bias.engine.spending import check_spending
from bias.engine.runner import Event, _load_failure, _reason, failed_before_metric, model_facts, run_one

log = logging.getLogger(__name__)

INSTALL_HINT = 'Install it with: pip install "bias-framework[ray]"  (or pip install -e ".[ray]" in a checkout).'
RESOURCE_KEYS = ("cpus", "gpus")
DEFAULT_RETRIES = 2


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BiasError("--executor ray needs Ray, which is not installed.", INSTALL_HINT, exit_code=USAGE) from None
    return ray


def actor_options(resources: dict[str, Any], label: str) -> dict[str, float]:
    """Ray actor options from a model's `resources` table; unknown keys and bad values are refused."""
    unknown = sorted(set(resources) - set(RESOURCE_KEYS))
    if unknown:
        raise BiasError(
            f"Model {label}: unknown resource(s) {', '.join(unknown)}.",
            "A model's resources are cpus and gpus, e.g. resources = { cpus = 4, gpus = 0.5 }.",
        )
    out = {"num_cpus": 1.0, "num_gpus": 0.0}
    for key, option in (("cpus", "num_cpus"), ("gpus", "num_gpus")):
        if key in resources:
            value = resources[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise BiasError(f"Model {label}: resources.{key} must be a number >= 0, not {value!r}.")
            out[option] = float(value)
    return out


class ModelWorker:
    """Holds one loaded model in a Ray worker process and runs that model's experiments.

    The model is loaded in `__init__`, so a restarted actor reloads it before its retried work; a
    model that cannot be loaded is not an error of the actor: each experiment then returns the same
    failed result the local runner records. The models the metrics ask for as inputs are loaded in the
    worker too, once each, at their first use."""

    def __init__(self, spec: ModelSpec, debias: DebiasSettings | None, debug: bool = False, threads: int | None = None) -> None:
        self.debug = debug
        if threads is not None:  # else Ray's own: as many as the actor's CPUs
            use_threads(threads)
        self.error: BaseException | None = None
        self.input_models = InputModels()
        started = time.perf_counter()
        try:
            self.embedder = registry.build_embedder(spec, debias)
            self.embedder.load()
            apply_to_torch()
        except Exception as exc:  # recorded for each experiment of the model, as in a local run
            self.error = exc
        self.load_s = time.perf_counter() - started
        self.facts: tuple[str, dict[str, Any]] | None = None

    def loaded(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": _reason(self.error), "load_s": self.load_s, "pid": os.getpid()}
        self.facts = model_facts(self.embedder)
        return {"fingerprint": self.facts[0], "info": self.facts[1], "load_s": self.load_s, "pid": os.getpid()}

    def run(self, planned: Any) -> Result:
        if self.error is not None:
            return _load_failure(planned, self.error, self.load_s)
        result = run_one(planned, self.embedder, debug=self.debug, input_models=self.input_models, facts=self.facts)
        return attrs.evolve(result, timings={**result.timings, "model_load_s": round(self.load_s, 4)})


# Ray enables token authentication by default: a cluster started with `ray start --head` accepts only
# drivers and nodes that hold its token, which `ray start` saved on the head as ~/.ray/auth_token.
JOIN_HINT = (
    "Check that the cluster runs there (`ray status` on its head) and that this machine holds the cluster's "
    "token: copy ~/.ray/auth_token from the head (or set RAY_AUTH_TOKEN to `ray get-auth-token` there); see docs/scaling.md."
)


@attrs.define
class Cluster:
    """A connection to Ray: joined (an address) or started here (stopped again by `close`)."""

    ray: Any
    started_here: bool
    address: str

    @classmethod
    def connect(cls, address: str | None, num_cpus: int | None = None) -> Cluster:
        ray = import_ray()
        if ray.is_initialized():  # a program (or a test) that already holds a connection
            return cls(ray, False, ray.get_runtime_context().gcs_address)
        if address and address != "auto":
            _check_reachable(address)
            _use_token_when_present()
        quiet = {"include_dashboard": False, "log_to_driver": False, "configure_logging": True, "logging_level": logging.ERROR}
        refused = (ConnectionError, RuntimeError, ValueError, getattr(ray.exceptions, "AuthenticationError", ConnectionError))
        try:
            if address:
                ray.init(address=address, log_to_driver=False, configure_logging=True, logging_level=logging.ERROR)
            else:
                ray.init(address="local", num_cpus=num_cpus, **quiet)
        except refused as exc:
            if not address:
                raise BiasError(
                    f"Could not start a local Ray instance: {exc}",
                    "Leave out --executor ray to run in this process, or start Ray with `ray start --head` and give --ray-address auto.",
                ) from None
            raise BiasError(
                f"Could not join the Ray cluster at {address}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                JOIN_HINT,
            ) from None
        joined = ray.get_runtime_context().gcs_address
        if address:  # `auto` finds whatever cluster runs on this machine: say which one it was
            log.warning("Joined the Ray cluster at %s (--ray-address %s).", joined, address)
        return cls(ray, not address, joined)

    def resources(self) -> dict[str, Any]:
        """What the manifest records: the cluster's total resources and its live nodes."""
        total = {k: v for k, v in self.ray.cluster_resources().items() if not k.startswith("node:")}
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        return {"address": self.address, "started_here": self.started_here, "nodes": len(nodes), "resources": total}

    def close(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()


def _use_token_when_present() -> None:
    """Ray sends the token it holds (~/.ray/auth_token, RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH) when it
    joins `auto`, but to HOST:PORT only with RAY_AUTH_MODE=token; switch that on when a token is there
    (and RAY_AUTH_MODE is not set), so both ways join a cluster that runs with Ray's defaults."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # a Ray without token authentication
        return
    if AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        os.environ["RAY_AUTH_MODE"] = "token"
        Config.initialize("")  # Ray reads its settings once; read them again with the mode set


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Ray retries an unreachable head for minutes, printing warnings; say it at once instead."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return
    except ValueError:
        raise BiasError(f"--ray-address '{address}' is not auto or HOST:PORT.", "For example --ray-address 10.0.0.5:6379.") from None
    except OSError as exc:
        raise BiasError(
            f"No Ray cluster answers at {address} ({exc.strerror or exc}).",
            "Check the address printed by `ray start --head`, or leave out --ray-address to start Ray here.",
        ) from None


def run(
    planned: Sequence[Any],
    *,
    out: Path | None = None,
    resume: bool = False,
    on_event: Callable[[Any], None] | None = None,
    fail_fast: bool = False,
    debug: bool = False,
    manifest: Any = None,
    address: str | None = None,
    max_retries: int = DEFAULT_RETRIES,
    num_cpus: int | None = None,
    max_cost: float | None = None,
    confirm_cost: bool = False,
    threads: int | None = None,
) -> Iterator[Result]:
    """Yield each result as it arrives from the cluster (and append it to `out/results.jsonl` first);
    the same contract as `bias.engine.runner.run`."""
    store = ResultStore(out) if out is not None else None
    done = store.done_keys() if (store and resume and store.path.exists()) else set()
    todo = [p for p in planned if p.experiment.key not in done]
    if done:
        log.info("Resuming: %d of %d experiments already finished.", len(planned) - len(todo), len(planned))
    groups: dict[str, list[Any]] = {}
    for p in todo:
        model = p.experiment.model
        groups.setdefault(model.label(), []).append(p)
    options = {key: actor_options(getattr(g[0].experiment.model, "resources", {}) or {}, g[0].experiment.model.label()) for key, g in groups.items()}
    if not todo:
        return
    for group in groups.values():  # paid models: the cost is checked here, before any worker starts
        model = group[0].experiment.model
        try:
            embedder = registry.build_embedder(model.parsed, model.debias)
        except Exception:  # the worker reports it, for each of the model's experiments
            continue
        quote = check_spending(embedder, group, model.label(), max_cost, confirm_cost, model)
        if quote and on_event:
            on_event(Event("quote", 0, len(todo), model.label(), note=quote))
    cluster = Cluster.connect(address, num_cpus=num_cpus)
    ray = cluster.ray
    if manifest is not None:
        manifest.executor("ray", **cluster.resources(), max_retries=max_retries)
    total, finished = len(todo), 0
    worker_class = ray.remote(ModelWorker)
    actors: dict[tuple[str, str], Any] = {}
    pending: dict[Any, tuple[tuple[str, str], Any]] = {}  # object ref -> (model group, planned experiment)
    left = {key: len(group) for key, group in groups.items()}
    load_refs: dict[Any, tuple[str, str]] = {}

    def emit(kind: str, model: str, experiment: Any = None, result: Result | None = None) -> None:
        if on_event:
            on_event(Event(kind, finished, total, model, experiment, result))

    try:
        for key, group in groups.items():
            model = group[0].experiment.model
            emit("loading", model.label())
            actor = worker_class.options(max_restarts=max_retries, max_task_retries=max_retries, **options[key]).remote(
                model.parsed, model.debias, debug, threads
            )
            actors[key] = actor
            load_refs[actor.loaded.remote()] = key
            for p in group:  # an actor runs its calls one at a time, in the order they were sent
                pending[actor.run.remote(p)] = (key, p)
        while pending or load_refs:
            ready, _ = ray.wait([*load_refs, *pending], num_returns=1)
            ref = ready[0]
            if ref in load_refs:
                key = load_refs.pop(ref)
                try:
                    state = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    state = {"error": f"the worker died: {type(exc).__name__}"}
                if manifest is not None:
                    label = groups[key][0].experiment.model.label()
                    manifest.model_loaded(label, fingerprint=state.get("fingerprint"), info=state.get("info"),
                                          load_s=state.get("load_s"), error=state.get("error"))
                continue
            key, p = pending.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as exc:  # retries spent: recorded as failed, redone by --resume
                result = _worker_failure(p, exc, max_retries)
            if store:
                store.append(result)
            finished += 1
            left[key] -= 1
            if left[key] == 0:  # free the model's resources for the models still waiting
                ray.kill(actors.pop(key))
            emit("result", p.experiment.model.label(), p.experiment, result)
            yield result
            if fail_fast and result.status == FAILED:
                return
    finally:
        if store:
            store.close()  # the last batch of lines fsynced
        for actor in actors.values():
            try:
                ray.kill(actor)
            except Exception:  # the cluster may already be gone; nothing is left to save
                pass
        cluster.close()


def _worker_failure(p: Any, exc: BaseException, retries: int) -> Result:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    reason = f"the Ray worker running it died and {retries} retries were spent ({type(exc).__name__}: {first_line[:200]})"
    return failed_before_metric(p.experiment, reason, {"compute_s": 0.0})
