"""The Ray executor: the same plan as the local runner, spread over a Ray cluster, one actor per
model.

Why this shape: the cost of an audit is model forwards, and loading a model is the expensive,
stateful step; so each model gets one Ray actor that loads it once on its declared resources
(`resources = { cpus = 4, gpus = 1 }` of the model in the experiment file, fractional GPUs allowed)
and runs every experiment of that model, one at a time. Actors of different models run at the same
time as far as the cluster's resources allow; the others wait for a free slot (said as "waiting for
resources"). A request no node could ever meet is refused before anything runs.

The driver (the `bias run` process) alone writes `results.jsonl`, through the same `ResultStore` and
with the same keys as the local runner, as results arrive; `--resume` works the same way. Metrics
are pure functions of their inputs and the experiment's seed (part of the experiment key), so a
result does not depend on the worker, the node or the order: a Ray run equals a local run, key by
key, apart from timings.

Faults: the driver, not Ray, retries. An actor whose process dies (killed, out of memory, its node
lost) is restarted by Ray, on a surviving node, up to `max_retries` times; the experiments that the
death cost are sent again, each at most `max_retries` times, and reload the model. While an actor's
node is unreachable but not yet declared dead ("temporarily unavailable", tens of seconds), its
experiments are sent again every second without spending a retry, for up to
`UNREACHABLE_PATIENCE_S`. A result is written only when its experiment returns, so it is written
once. When the retries are spent, the remaining experiments of that model are recorded as failed
(redone by `--resume`). What was retried, and why, is reported (events of kind "retry") and kept in
the manifest. Ctrl-C or SIGTERM kills the actors, leaves every written result in place and, if the
driver started Ray itself, stops it."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias import registry
from bias.core.errors import USAGE, BiasError
from bias.core.model import FAILED, Result
from bias.core.runs.results import ResultStore
from bias.engine.ray_cluster import Cluster, import_ray, noticed_interrupts
from bias.engine.ray_worker import ModelWorker
from bias.engine.runner import Event, failed_before_metric
from bias.engine.spending import check_spending

__all__ = ["Cluster", "ModelWorker", "actor_options", "check_resources", "import_ray", "run"]

log = logging.getLogger(__name__)

RESOURCE_KEYS = ("cpus", "gpus")
DEFAULT_RETRIES = 2
# How long a model's node may stay unreachable (not yet declared dead) before that costs a retry.
UNREACHABLE_PATIENCE_S = 300.0
RESEND_PAUSE_S = 1.0
POLL_S = 0.5  # the longest wait for a result before the loop looks for a Ctrl-C again


def actor_options(resources: dict[str, Any], label: str, device: Any = None) -> dict[str, float]:
    """Ray actor options from a model's `resources` table; unknown keys and bad values are refused.
    A model asked to run on `cuda` holds one GPU unless its resources say how much (`gpus =
    0.25`)."""
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
                raise BiasError(
                    f"Model {label}: resources.{key} must be a number >= 0, not {value!r}."
                )
            out[option] = float(value)
    wanted = str(device or "").strip().lower()
    if wanted.startswith("cuda"):
        if wanted not in ("cuda", "cuda:0"):
            raise BiasError(
                f"Model {label}: device {device} names one GPU of one machine; on Ray, Ray "
                "chooses the GPU.",
                "Give device cuda (or auto) and say how much of a GPU the model needs: "
                "resources = { gpus = 1 }.",
            )
        if "gpus" not in resources:
            out["num_gpus"] = 1.0
    return out


def describe_request(options: dict[str, float]) -> str:
    gpus = options["num_gpus"]
    return f"{options['num_cpus']:g} CPU" + (f" and {gpus:g} GPU" if gpus else "")


def check_resources(
    nodes: Sequence[dict[str, Any]], requests: dict[str, dict[str, float]], address: str
) -> None:
    """Refuse, before anything is scheduled, a model whose request no live node of the cluster could
    meet (Ray would keep it waiting for ever, in silence)."""
    have = [
        (float(n.get("Resources", {}).get("CPU", 0)), float(n.get("Resources", {}).get("GPU", 0)))
        for n in nodes
    ]
    for label, options in requests.items():
        need_cpu, need_gpu = options["num_cpus"], options["num_gpus"]
        if any(cpu >= need_cpu and gpu >= need_gpu for cpu, gpu in have):
            continue
        total = (
            f"{len(have)} node(s), {sum(c for c, _ in have):g} CPU, "
            f"{sum(g for _, g in have):g} GPU in all"
        )
        most_gpu = max((g for _, g in have), default=0.0)
        if need_gpu > most_gpu:
            lack = (
                "a GPU"
                if most_gpu == 0
                else f"{need_gpu:g} GPU on one node (the most is {most_gpu:g})"
            )
            hint = (
                "Run it where the cluster has GPUs, or without resources.gpus and --device "
                "cuda to run it on CPUs."
            )
        else:
            lack = (
                f"{need_cpu:g} CPU on one node (the most is "
                f"{max((c for c, _ in have), default=0.0):g})"
            )
            hint = (
                "Ask for fewer CPUs in the model's resources = { cpus = ... }, or add a larger "
                "node."
            )
        raise BiasError(
            f"Model {label} asks for {describe_request(options)}, and no node of the Ray "
            f"cluster at {address} has {lack} "
            f"({total}).",
            hint,
            exit_code=USAGE,
        )


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
    """Yield each result as it arrives from the cluster (and append it to `out/results.jsonl`
    first); the same contract as `bias.engine.runner.run`. `threads`: the CPU threads of torch and
    BLAS in each worker (None: Ray's own, as many as the actor's CPUs)."""
    store = ResultStore(out) if out is not None else None
    done = store.done_keys() if (store and resume and store.path.exists()) else set()
    todo = [
        p for p in planned if p.experiment.key not in done and p.experiment.legacy_key not in done
    ]
    if done:
        log.info(
            "Resuming: %d of %d experiments already finished.",
            len(planned) - len(todo),
            len(planned),
        )
    groups: dict[str, list[Any]] = {}
    for p in todo:
        groups.setdefault(p.experiment.model.label(), []).append(p)
    options = {}
    for label, group in groups.items():
        model = group[0].experiment.model
        options[label] = actor_options(
            getattr(model, "resources", {}) or {}, label, model.parsed.options.get("device")
        )
    if not todo:
        return
    # Paid models: the cost is checked here, before any worker starts.
    for label, group in groups.items():
        model = group[0].experiment.model
        try:
            embedder = registry.build_embedder(model.parsed, model.parsed_debias)
        except Exception:  # the worker reports it, for each of the model's experiments
            continue
        quote = check_spending(embedder, group, label, max_cost, confirm_cost, model)
        if quote and on_event:
            on_event(Event("quote", 0, len(todo), label, note=quote))
    cluster = Cluster.connect(address, num_cpus=num_cpus)
    try:
        check_resources(cluster.nodes(), options, cluster.address)
        details = {**cluster.resources(), "max_retries": max_retries}
        if manifest is not None:
            manifest.executor("ray", **details)
        grid = _Grid(
            cluster.ray, groups, options, max_retries, debug, on_event, manifest, store, threads
        )
        try:
            for result in grid.results():
                yield result
                if fail_fast and result.status == FAILED:
                    return
        finally:
            if manifest is not None and grid.retried:
                manifest.executor("ray", **details, retried=grid.retried_summary())
            grid.stop()
    finally:
        if store:
            store.close()  # the last batch of lines fsynced
        cluster.close()


@attrs.define
class _Grid:
    """The experiments of every model on the cluster: one actor per model, results as they arrive,
    experiments lost with a worker sent again (see the module's docstring)."""

    ray: Any
    groups: dict[str, list[Any]]
    options: dict[str, dict[str, float]]
    max_retries: int
    debug: bool
    on_event: Callable[[Any], None] | None
    manifest: Any
    store: ResultStore | None
    threads: int | None = None  # CPU threads of torch and BLAS in each worker (None: Ray's own)
    actors: dict[str, Any] = attrs.Factory(dict)
    # object ref -> (model, planned experiment)
    pending: dict[Any, tuple[str, Any]] = attrs.Factory(dict)
    # `where` ref -> (model, whether it waits for resources)
    placing: dict[Any, tuple[str, bool]] = attrs.Factory(dict)
    attempts: dict[str, int] = attrs.Factory(dict)  # experiment key -> retries spent
    # model -> when its actor became unreachable
    unreachable_since: dict[str, float] = attrs.Factory(dict)
    resend: list[tuple[float, str, Any]] = attrs.Factory(list)  # (when, model, planned experiment)
    # experiments sent again while their node is unreachable; those said to be retried
    unreachable: set[str] = attrs.Factory(set)
    announced: set[str] = attrs.Factory(set)
    # model -> ((node id, pid), node) of its first worker; the node its worker was last seen on
    workers: dict[str, Any] = attrs.Factory(dict)
    nodes: dict[str, str] = attrs.Factory(dict)
    retried: list[dict[str, Any]] = attrs.Factory(list)
    finished: int = 0
    order: dict[str, int] = attrs.Factory(dict)

    def emit(
        self,
        kind: str,
        model: str,
        experiment: Any = None,
        result: Result | None = None,
        note: str = "",
    ) -> None:
        if self.on_event:
            total = sum(len(g) for g in self.groups.values())
            self.on_event(Event(kind, self.finished, total, model, experiment, result, note))

    def start(self) -> None:
        worker_class = self.ray.remote(ModelWorker)
        free = {k: float(v) for k, v in self.ray.available_resources().items()}
        for index, p in enumerate(p for g in self.groups.values() for p in g):
            self.order[p.experiment.key] = index
        for label, group in self.groups.items():
            model, options = group[0].experiment.model, self.options[label]
            fits = (
                free.get("CPU", 0.0) >= options["num_cpus"]
                and free.get("GPU", 0.0) >= options["num_gpus"]
            )
            actor = worker_class.options(
                max_restarts=self.max_retries, max_task_retries=0, **options
            ).remote(model.parsed, model.parsed_debias, self.debug, self.threads)
            self.actors[label] = actor
            self.placing[actor.where.remote()] = (label, not fits)  # runs first: the first worker
            if fits:
                free["CPU"] = free.get("CPU", 0.0) - options["num_cpus"]
                free["GPU"] = free.get("GPU", 0.0) - options["num_gpus"]
                self.emit("loading", label)
            else:  # the cluster's free resources are held by other models (or other users)
                self.emit(
                    "waiting",
                    label,
                    note=f"waiting for resources: {label} needs {describe_request(options)}",
                )
            for p in group:  # an actor runs its calls one at a time, in the order they were sent
                self.pending[actor.run.remote(p)] = (label, p)

    def results(self) -> Iterator[Result]:
        with noticed_interrupts() as interrupts:
            yield from self._results(interrupts)

    def _results(self, interrupts: list[int]) -> Iterator[Result]:
        self.start()
        left = {label: len(group) for label, group in self.groups.items()}
        while self.pending or self.resend:
            if interrupts:  # a Ctrl-C whose KeyboardInterrupt Python dropped (see below)
                raise KeyboardInterrupt
            self._send_due()
            refs = [*self.placing, *self.pending]
            wait = max(
                0.0,
                min((when for when, _, _ in self.resend), default=time.monotonic() + 3600)
                - time.monotonic(),
            )
            if not refs:
                time.sleep(min(wait, RESEND_PAUSE_S))
                continue
            ready, _ = self.ray.wait(
                refs, num_returns=1, timeout=min(wait, POLL_S) if self.resend else POLL_S
            )
            if not ready:
                continue
            ref = ready[0]
            if ref in self.placing:
                label, waited = self.placing.pop(ref)
                try:
                    state = self.ray.get(ref)
                    self.workers.setdefault(
                        label, ((state["node_id"], state["pid"]), state["node"])
                    )
                    self.nodes[label] = state["node"]
                except self.ray.exceptions.RayError:  # lost before it answered: its results tell
                    pass
                if waited:
                    self.emit("loading", label)
                continue
            label, p = self.pending.pop(ref)
            result = self._outcome(ref, label, p)
            if result is None:  # sent again
                continue
            if self.store:
                self.store.append(result)
            self.finished += 1
            left[label] -= 1
            if left[label] == 0:  # free the model's resources for the models still waiting
                self.ray.kill(self.actors.pop(label))
            self.emit("result", label, p.experiment, result)
            yield result

    def _outcome(self, ref: Any, label: str, p: Any) -> Result | None:
        """The experiment's result; None when it was lost with its worker and is sent again."""
        ray = self.ray
        try:
            result, state = ray.get(ref)
        # Its node unreachable, not (yet) declared dead: sent again, no retry spent for a while.
        except ray.exceptions.ActorUnavailableError as exc:
            since = self.unreachable_since.setdefault(label, time.monotonic())
            if time.monotonic() - since < UNREACHABLE_PATIENCE_S:
                if p.experiment.key not in self.unreachable:  # said once, however often it is sent
                    self.unreachable.add(p.experiment.key)
                    self._announce(label, p, _why(exc, self._node(label)))
                self.resend.append((time.monotonic() + RESEND_PAUSE_S, label, p))
                return None
            self.unreachable_since.pop(label, None)
            return self._retry(
                label,
                p,
                f"{_why(exc, self._node(label))}, for {UNREACHABLE_PATIENCE_S:g} s",
            )
        except (
            ray.exceptions.RayActorError,
            ray.exceptions.OutOfMemoryError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.ObjectLostError,
        ) as exc:
            self.unreachable_since.pop(label, None)
            return self._retry(label, p, _why(exc, self._node(label)))
        # Not a lost worker (a task that could not run): not retried.
        except ray.exceptions.RayError as exc:
            return failed_before_metric(
                p.experiment,
                f"Ray could not run it ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})",
                {"compute_s": 0.0},
            )
        self.unreachable_since.pop(label, None)
        self.unreachable.discard(p.experiment.key)
        self._restarted(label, p, state)
        loaded = state.get("loaded")
        if loaded is not None and self.manifest is not None:
            self.manifest.model_loaded(label, **loaded)
        return result

    def _restarted(self, label: str, p: Any, state: dict[str, Any]) -> None:
        """Ray restarts a lost worker and may run the experiments it held again by itself: a result
        from another worker than the model's first is such a retry, said like the driver's own."""
        worker = (state["node_id"], state["pid"])
        self.nodes[label] = state["node"]
        first = self.workers.setdefault(label, (worker, state["node"]))
        if worker == first[0] or p.experiment.key in self.announced:
            return
        alive = {n.get("NodeID") for n in self.ray.nodes() if n.get("Alive")}
        lost = (
            f"Ray node {first[1]} was lost"
            if first[0][0] not in alive
            else f"its worker process on Ray node {first[1]} died"
        )
        self._announce(label, p, f"{lost}; restarted on Ray node {state['node']}")

    def _retry(self, label: str, p: Any, why: str) -> Result | None:
        key = p.experiment.key
        spent = self.attempts.get(key, 0)
        if spent >= self.max_retries:
            reason = (
                f"the Ray worker running it was lost and {self.max_retries} retries were spent "
                f"(last: {why})"
            )
            return failed_before_metric(p.experiment, reason, {"compute_s": 0.0})
        self.attempts[key] = spent + 1
        self._announce(label, p, why)
        self.resend.append((time.monotonic(), label, p))
        return None

    def _node(self, label: str) -> str:
        """The node the model's worker was last known on."""
        return self.nodes.get(label, "")

    def _announce(self, label: str, p: Any, why: str) -> None:
        self.announced.add(p.experiment.key)
        self.retried.append({"model": label, "key": p.experiment.key, "reason": why})
        self.emit("retry", label, p.experiment, note=why)

    def _send_due(self) -> None:
        """Send again, in plan order, the experiments whose pause is over."""
        now = time.monotonic()
        due = sorted(
            (x for x in self.resend if x[0] <= now), key=lambda x: self.order[x[2].experiment.key]
        )
        self.resend = [x for x in self.resend if x[0] > now]
        for _, label, p in due:
            self.pending[self.actors[label].run.remote(p)] = (label, p)

    def retried_summary(self) -> list[dict[str, Any]]:
        """What the manifest keeps: per model, how many experiments were sent again, and why."""
        keys: dict[str, set[str]] = {}
        reasons: dict[str, dict[str, None]] = {}
        for entry in self.retried:
            keys.setdefault(entry["model"], set()).add(entry["key"])
            reasons.setdefault(entry["model"], {})[entry["reason"]] = None
        return [
            {"model": model, "experiments": len(keys[model]), "reasons": list(reasons[model])}
            for model in keys
        ]

    def stop(self) -> None:
        for actor in self.actors.values():
            try:
                self.ray.kill(actor)
            except Exception:  # the cluster may already be gone; nothing is left to save
                pass


def _why(exc: BaseException, node: str = "") -> str:
    """What happened to the worker, in a few words, with the node it ran on (Ray's own message is
    pages long; `--debug` keeps Ray's logging)."""
    text = " ".join(str(exc).split())
    if not node:
        found = re.search(r"\bip: ([0-9a-fA-F.:]+)", text)
        node = found.group(1) if found else ""
    where = f"Ray node {node}" if node else "its Ray node"
    name = type(exc).__name__
    if name == "ActorUnavailableError":
        return f"its worker on {where} became unreachable"
    # Ray's message for any worker death lists "killed by the OOM killer" among common causes: only
    # Ray's own memory monitor's kill (OutOfMemoryError, exit type NODE_OUT_OF_MEMORY) is.
    if name == "OutOfMemoryError" or "NODE_OUT_OF_MEMORY" in text:
        return f"its worker on {where} ran out of memory"
    if name == "NodeDiedError" or re.search(
        r"node\b[^.]*\b(dead|died|lost)\b", text, re.IGNORECASE
    ):
        return f"{where} was lost"
    return f"its worker process on {where} died ({name})"
