"""The connection to Ray for `bias run --executor ray`: a local instance started here, or a running
cluster joined with the settings it runs with.

Why a probe before `ray.init`: Ray's own join, when something is wrong, retries for 20 s or more and
prints pages of C++ warnings, and a driver whose authentication mode differs from the cluster's
joins but then loses every worker ("worker died"). One gRPC call to the cluster's control store
(GCS) answers in well under a second whether the cluster asks for a token, whether ours is accepted,
and which Ray and Python it runs, so each of these cases is said in one line, in seconds, before Ray
starts; the mode found is the one the driver then joins with."""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from bias.core.errors import USAGE, BiasError

log = logging.getLogger(__name__)

INSTALL_HINT = (
    'Install it with: pip install "bias-framework[ray]"  (or pip install -e ".[ray]" in a '
    "checkout)."
)
PROBE_TIMEOUT_S = 5.0
TOKEN, NO_AUTH = "token", "disabled"  # the cluster's authentication, as RAY_AUTH_MODE names it
TOKEN_HINT = (
    "Set RAY_AUTH_TOKEN to the output of `ray get-auth-token` on the cluster's head, or "
    "copy the head's "
    "~/.ray/auth_token to this machine; see docs/scaling.md."
)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BiasError(
            "--executor ray needs Ray, which is not installed.", INSTALL_HINT, exit_code=USAGE
        ) from None
    return ray


@attrs.frozen
class ClusterFacts:
    """What the cluster's control store says before joining it."""

    address: str  # HOST:PORT, as Ray resolved it
    auth: str  # TOKEN or NO_AUTH
    ray_version: str
    python_version: str


@attrs.define
class Cluster:
    """A connection to Ray: joined (an address) or started here. `close` disconnects what `connect`
    opened (and stops a local instance) and puts back the authentication mode it changed."""

    ray: Any
    started_here: bool
    address: str
    auth: str = ""
    owned: bool = True  # False: a connection the program held before; left open
    _restore_env: dict[str, str | None] = attrs.field(factory=dict, repr=False)

    @classmethod
    def connect(cls, address: str | None, num_cpus: int | None = None) -> Cluster:
        ray = import_ray()
        if ray.is_initialized():  # a program (or a test) that already holds a connection
            return cls(ray, False, ray.get_runtime_context().gcs_address, owned=False)
        restore: dict[str, str | None] = {}
        facts = None
        if address and not address.startswith("ray://"):
            facts = probe(resolve_address(address), address)
            check_versions(facts, ray.__version__)
            restore = _join_with(facts.auth)
        try:
            # ray.init replaces SIGTERM's handler: put ours back, so a run ends the same with Ray
            with _keep_signal_handlers():
                _init(ray, facts.address if facts else address, num_cpus)
        except BaseException:
            _restore(restore)
            raise
        joined = ray.get_runtime_context().gcs_address
        if address:  # `auto` finds whatever cluster runs on this machine: say which one it was
            log.warning("Joined the Ray cluster at %s (--ray-address %s).", joined, address)
            if facts is not None and facts.auth == NO_AUTH:
                log.warning(
                    "The Ray cluster at %s runs without token authentication: anyone who "
                    "reaches its port can run code "
                    "on it (see docs/scaling.md).",
                    joined,
                )
        return cls(ray, not address, joined, facts.auth if facts else "", True, restore)

    def nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.ray.nodes() if n.get("Alive")]

    def resources(self) -> dict[str, Any]:
        """What the manifest records: the cluster's total resources and its live nodes."""
        total = {k: v for k, v in self.ray.cluster_resources().items() if not k.startswith("node:")}
        found = {
            "address": self.address,
            "started_here": self.started_here,
            "nodes": len(self.nodes()),
            "resources": total,
        }
        return {**found, "authentication": self.auth} if self.auth else found

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        _restore(self._restore_env)


def _init(ray: Any, address: str | None, num_cpus: int | None) -> None:
    quiet = {"log_to_driver": False, "configure_logging": True, "logging_level": logging.ERROR}
    refused = (
        ConnectionError,
        RuntimeError,
        ValueError,
        getattr(ray.exceptions, "AuthenticationError", ConnectionError),
    )
    # Ray's usage statistics ask the cloud's metadata address which machine this is: an address no
    # user gave. A user who wants them sets the variable.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **quiet)
    except refused as exc:
        # Ray's message spans lines (a version mismatch names the versions on the next ones): keep
        # it whole
        said = " ".join(str(exc).split())[:400] or type(exc).__name__
        if not address:
            raise BiasError(
                f"Could not start a local Ray instance: {said}",
                "Leave out --executor ray to run in this process, or start Ray with `ray "
                "start --head` and give --ray-address auto.",
            ) from None
        raise BiasError(
            f"Could not join the Ray cluster at {address}: {said}",
            "Check the cluster with `ray status` on its head.",
        ) from None


def resolve_address(address: str) -> str:
    """HOST:PORT of `auto` (the cluster running on this machine) or of a given address."""
    from ray._private import services

    try:
        found = services.canonicalize_bootstrap_address(address)
    except (ConnectionError, ValueError) as exc:
        if address == "auto":
            raise BiasError(
                "--ray-address auto found no Ray cluster on this machine "
                f"({' '.join(str(exc).split())[:200]}).",
                "Start one with `ray start --head`, give its HOST:PORT, or leave out "
                "--ray-address to start Ray here.",
            ) from None
        raise BiasError(
            f"--ray-address '{address}' is not auto or HOST:PORT.",
            "For example --ray-address 10.0.0.5:6379.",
        ) from None
    if not found:
        raise BiasError(
            f"--ray-address '{address}' is not auto or HOST:PORT.",
            "For example --ray-address 10.0.0.5:6379.",
        )
    return found


def probe(address: str, given: str = "", timeout: float = PROBE_TIMEOUT_S) -> ClusterFacts:
    """Ask the cluster's control store at `address` (HOST:PORT, the `given` --ray-address resolved)
    for its metadata, first without a token, then with the one this machine holds when the cluster
    asks for one; each way it can fail is said at once."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise BiasError(
            f"--ray-address '{address}' is not auto or HOST:PORT.",
            "For example --ray-address 10.0.0.5:6379.",
        )
    where = address if given in ("", address) else f"{given} ({address})"
    request = gcs_service_pb2.InternalKVGetRequest(key=b"CLUSTER_METADATA", namespace=b"cluster")

    def ask(token: str | None) -> Any:
        with grpc.insecure_channel(address) as channel:
            stub = gcs_service_pb2_grpc.InternalKVGcsServiceStub(channel)
            return stub.InternalKVGet(
                request,
                timeout=timeout,
                metadata=[("authorization", f"Bearer {token}")] if token else None,
            )

    auth = NO_AUTH
    try:
        try:
            reply = ask(None)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAUTHENTICATED:
                raise
            auth = TOKEN
            token = held_token()
            if not token:
                raise BiasError(
                    f"The Ray cluster at {where} asks for a token, and this machine holds none.",
                    TOKEN_HINT,
                ) from None
            try:
                reply = ask(token)
            except grpc.RpcError as again:
                if again.code() == grpc.StatusCode.UNAUTHENTICATED:
                    raise BiasError(
                        f"The Ray cluster at {where} refused this machine's token (from "
                        f"{token_source()}).",
                        TOKEN_HINT,
                    ) from None
                raise
    except grpc.RpcError as exc:
        said = " ".join(str(exc.details() or exc.code()).split())[:160]
        raise BiasError(
            f"No Ray cluster answers at {where} ({exc.code().name.lower()}: {said}).",
            "Check the address printed by `ray start --head` (`ray status` on the head), "
            "or leave out --ray-address to start Ray here.",
        ) from None
    try:
        metadata = json.loads(reply.value.decode("utf-8")) if reply.value else {}
    except (UnicodeDecodeError, ValueError):
        metadata = {}
    return ClusterFacts(
        address, auth, str(metadata.get("ray_version", "")), str(metadata.get("python_version", ""))
    )


def held_token() -> str:
    """The token Ray would send: RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names, or
    ~/.ray/auth_token."""
    from ray._raylet import AuthenticationTokenLoader

    loader = AuthenticationTokenLoader.instance()
    loader.reset_cache()  # the environment may have changed since Ray last looked
    return loader.get_raw_token(ignore_auth_mode=True).strip()


def token_source() -> str:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    return os.environ.get("RAY_AUTH_TOKEN_PATH") or "~/.ray/auth_token"


def check_versions(facts: ClusterFacts, ray_version: str) -> None:
    """Ray joins only a cluster of the same Ray and Python release; say both, not Ray's cut
    message."""
    python = platform.python_version()
    if facts.ray_version and (facts.ray_version, facts.python_version) != (ray_version, python):
        raise BiasError(
            f"The Ray cluster at {facts.address} runs Ray {facts.ray_version} on Python "
            f"{facts.python_version}; "
            f"this machine has Ray {ray_version} on Python {python}, and they must match.",
            "Install the cluster's releases here (or start the cluster with this machine's).",
        )


def _join_with(auth: str) -> dict[str, str | None]:
    """Set RAY_AUTH_MODE to the cluster's mode for the join (Ray reads it once, so its settings are
    read again); return what to put back afterwards."""
    if os.environ.get("RAY_AUTH_MODE") == auth:
        return {}
    previous = {"RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE")}
    os.environ["RAY_AUTH_MODE"] = auth
    _reload_ray_config()
    return previous


def _restore(previous: dict[str, str | None]) -> None:
    if not previous:
        return
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _reload_ray_config()


def _reload_ray_config() -> None:
    try:
        from ray._raylet import Config
    except ImportError:  # a Ray without token authentication
        return
    Config.initialize("")


@contextmanager
def _keep_signal_handlers() -> Iterator[None]:
    """Put back the handlers of SIGTERM and SIGINT that `ray.init` replaces (its SIGTERM handler
    exits with status 15 and skips the run's own ending: `interrupted`, exit 143, resumable)."""
    names = ("SIGTERM", "SIGINT")
    try:
        saved = {name: signal.getsignal(getattr(signal, name)) for name in names}
    except ValueError:  # pragma: no cover - not the main thread
        saved = {}
    try:
        yield
    finally:
        for name, handler in saved.items():
            try:
                signal.signal(getattr(signal, name), handler)
            except (ValueError, TypeError):  # not the main thread, or a handler set outside Python
                pass


@contextmanager
def noticed_interrupts() -> Iterator[list[int]]:
    """SIGINT noted as well as raised. Python prints and drops an exception raised inside an
    object's `__del__`: a Ctrl-C that lands while an actor handle let go mid-wait is being
    collected would be lost, and a run waiting on an experiment that cannot end would wait for
    ever. The results loop raises the noted interrupt itself."""
    seen: list[int] = []
    try:
        previous = signal.getsignal(signal.SIGINT)

        def note(signum: int, frame: Any) -> None:
            if previous == signal.SIG_IGN:
                return
            seen.append(signum)
            if callable(previous):
                previous(signum, frame)
            else:
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main thread: signals are not ours to handle there
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
