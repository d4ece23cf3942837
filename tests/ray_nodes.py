"""Real Ray nodes for tests: `ray start --block` processes on this machine, each in a process group of
its own, with its own temporary folder, ports and HOME, so that nothing of another user's Ray is seen
or touched. A node is ended by its process group's id (never `ray stop`, which would end every Ray
process of the machine)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

# Ray's dashboard agent takes tens of seconds to start on a busy machine; the raylet would give up on it.
SLOW_MACHINE = {"RAY_agent_register_timeout_ms": "300000"}
# The control store declares a node dead after 5 missed health checks 1 s apart (default 3 s), each
# allowed Ray's 10 s to answer: a killed node is found in seconds, a slow one is not taken for dead.
HEALTH_CHECKS = '{"health_check_period_ms": 1000, "health_check_failure_threshold": 5}'


_GIVEN: set[int] = (
    set()
)  # ports handed out in this process: never twice (a node's worker ports bind late)


def free_ports(n: int) -> list[int]:
    """`n` ports that nothing listens on now and that this process has not handed out before."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            ports.append(port)
    return ports


@attrs.define
class Node:
    process: subprocess.Popen
    folder: Path  # its temporary folder (also where `ray start` ran)

    def running(self) -> bool:
        """True while `ray start` runs; a node that stopped fails the test with the end of its log."""
        if self.process.poll() is None:
            return True
        log = (self.folder / "node.log").read_text(errors="replace").splitlines()
        raise AssertionError(
            f"ray start ended with {self.process.returncode}: " + "\n".join(log[-15:])
        )

    def kill(self) -> None:
        """The whole node at once, as a lost machine: `ray start` and every process under it (the
        raylet, its agents and its workers, which run in sessions of their own), each by its PID."""
        for pid in [*descendants(self.process.pid), self.process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=60)


def descendants(pid: int) -> list[int]:
    """The PIDs of every process under `pid` (read from /proc), deepest first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # a process that just ended
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found[::-1]


def start_node(
    env: dict[str, str], *, head_port: int | None = None, cpus: int = 1, gpus: int = 0
) -> tuple[Node, int]:
    """A head (no `head_port`) or a node joining the head at 127.0.0.1:`head_port`; returns the node and
    the head's port. `env` is the environment of `ray start` (HOME, RAY_AUTH_MODE, PYTHONPATH)."""
    # A short folder name: Ray's socket paths have a length limit.
    folder = Path(tempfile.mkdtemp(prefix="rn", dir="/tmp"))
    ports = free_ports(10)
    options: dict[str, object] = {
        "--num-cpus": cpus,
        "--num-gpus": gpus,
        "--temp-dir": folder,
        "--node-manager-port": ports[1],
        "--object-manager-port": ports[2],
        "--dashboard-agent-listen-port": ports[3],
        "--dashboard-agent-grpc-port": ports[4],
        "--runtime-env-agent-port": ports[5],
        "--metrics-export-port": ports[6],
        "--worker-port-list": ",".join(map(str, free_ports(12))),
    }
    if head_port is None:
        head_port = ports[0]
        options.update(
            {
                "--head": None,
                "--port": head_port,
                "--include-dashboard": "false",
                "--dashboard-port": ports[7],
                "--ray-client-server-port": ports[8],
                "--system-config": HEALTH_CHECKS,
            }
        )
    else:
        options["--address"] = f"127.0.0.1:{head_port}"
    # the `ray` of this environment, whether or not its bin folder is on PATH
    args = [str(Path(sys.executable).parent / "ray"), "start", "--block", "--disable-usage-stats"]
    for flag, value in options.items():
        args += [flag] if value is None else [flag, str(value)]
    process = subprocess.Popen(
        args,
        env={**env, **SLOW_MACHINE, "RAY_TMPDIR": str(folder)},
        cwd=folder,
        start_new_session=True,
        stdout=open(folder / "node.log", "w"),
        stderr=subprocess.STDOUT,
    )
    return Node(process, folder), head_port


def alive_nodes(address: str) -> list[tuple[str, bool, dict[str, float]]]:
    """(node id, is head, total resources) of every live node, asked of the control store (no token)."""
    import grpc
    from ray.core.generated import gcs_pb2, gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        reply = stub.GetAllNodeInfo(gcs_service_pb2.GetAllNodeInfoRequest(), timeout=10)
    alive = gcs_pb2.GcsNodeInfo.GcsNodeState.ALIVE
    return [
        (n.node_id.hex(), n.is_head_node, dict(n.resources_total))
        for n in reply.node_info_list
        if n.state == alive
    ]


def wait_for(condition, what: str, timeout: float = 240.0, every: float = 0.2):
    """Wait on a condition (never on a duration): generous deadline, checked often."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            found = condition()
        except AssertionError:  # a node ended: said at once
            raise
        except Exception as exc:  # the cluster is still starting
            last, found = exc, None
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} ({last})")


def start_cluster(env: dict[str, str], nodes: int = 2, attempts: int = 3) -> tuple[list[Node], str]:
    """A head and `nodes - 1` more, started one after the other (each registered before the next
    starts), and the head's address. `ray start` gives a node 30 s to register, which a busy machine can
    exceed while the node's agents import: such a node is ended and started again, up to `attempts`."""
    started: list[Node] = []
    port: int | None = None
    try:
        for index in range(nodes):
            for attempt in range(attempts):
                node, port = start_node(env, head_port=port)
                address = f"127.0.0.1:{port}"
                try:
                    wait_for(
                        lambda node=node, address=address, index=index: (
                            node.running() and len(alive_nodes(address)) > index
                        ),
                        f"node {index + 1}",
                    )
                    break
                except AssertionError:
                    node.kill()
                    shutil.rmtree(node.folder, ignore_errors=True)
                    if index == 0:
                        port = None
                    if attempt == attempts - 1:
                        raise
            started.append(node)
    except BaseException:
        for node in started:
            node.kill()
            shutil.rmtree(node.folder, ignore_errors=True)
        raise
    return started, f"127.0.0.1:{port}"
