"""What runs in a Ray worker for `bias run --executor ray`: one model, loaded once, and its
experiments.

Kept apart from the driver's loop (`bias.engine.ray_executor`) because it is the part that runs on
another machine: it reads the model's files there, on the device Ray gave it, and names that node
when it cannot.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bias import registry
from bias.core.model import Result
from bias.core.specs import DebiasSettings, ModelSpec
from bias.engine.inputs import InputModels
from bias.core.threads import apply_to_torch, use_threads
from bias.engine.runner import _load_failure, model_facts, run_one


class ModelWorker:
    """Holds one model in a Ray worker process and runs that model's experiments.

    The model is loaded at the first experiment, so an actor restarted by Ray on another node loads
    it again before its retried work; a model that cannot be loaded is not an error of the actor:
    each experiment then returns the failed result the local runner records, naming the node. A
    worker given no GPU by Ray is kept off the machine's GPUs (Ray no longer hides them itself)."""

    def __init__(
        self,
        spec: ModelSpec,
        debias: DebiasSettings | None,
        debug: bool = False,
        threads: int | None = None,
    ) -> None:
        import ray

        if threads is not None:  # else Ray's own: as many as the actor's CPUs
            use_threads(threads)
        if not ray.get_gpu_ids():
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        self.spec, self.debias, self.debug = spec, debias, debug
        self.node = node_name()
        self.node_id = ray.get_runtime_context().get_node_id()
        self.embedder: Any = None
        self.error: BaseException | None = None
        self.load_s = 0.0
        self.reported = False
        self.input_models = InputModels()
        self.facts: tuple[str, dict[str, Any]] | None = (
            None  # the model's fingerprint and description
        )

    def where(self) -> dict[str, Any]:
        """Answered as soon as the actor is placed (the model loads at its first experiment)."""
        return {"node": self.node, "node_id": self.node_id, "pid": os.getpid()}

    def _load(self) -> None:
        if self.embedder is not None or self.error is not None:
            return
        started = time.perf_counter()
        try:
            embedder = registry.build_embedder(self.spec, self.debias)
            embedder.check()  # the files and the device as this node has them
            embedder.load()
            apply_to_torch()  # loading imported torch after the count was set
            self.embedder = embedder
            self.facts = model_facts(embedder)
        except Exception as exc:  # recorded for each experiment of the model, as in a local run
            self.error = exc
        self.load_s = time.perf_counter() - started

    def run(self, planned: Any) -> tuple[Result, dict[str, Any]]:
        """The experiment's result and which worker computed it (a worker restarted by Ray is
        another one); with the worker's first result, how its model loaded."""
        self._load()
        state: dict[str, Any] = {"node": self.node, "node_id": self.node_id, "pid": os.getpid()}
        if not self.reported:
            self.reported = True
            state["loaded"] = {"load_s": self.load_s}
            if self.error is None:
                state["loaded"].update(fingerprint=self.facts[0], info=self.facts[1])
            else:
                state["loaded"]["error"] = f"on Ray node {self.node}: {self.error}"
        if self.error is not None:
            return _load_failure(
                planned, self.error, self.load_s, where=f" on Ray node {self.node}"
            ), state
        result = run_one(
            planned,
            self.embedder,
            debug=self.debug,
            input_models=self.input_models,
            facts=self.facts,
            load_s=self.load_s,
        )
        return result, state


def node_name() -> str:
    import socket

    import ray

    try:
        address = ray.util.get_node_ip_address()
    except Exception:  # outside a Ray worker
        address = ""
    host = socket.gethostname()
    return f"{host} ({address})" if address and address != host else host
