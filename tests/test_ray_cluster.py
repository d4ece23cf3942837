"""A grid on a real two-node Ray cluster started here (`ray start` twice: a head and a second node, each
with one CPU, its own temporary folder and ports, no token authentication), driven by `bias run` as a
user runs it, from another folder than the nodes', with relative paths in the file and on the
command line, by a driver that holds a token of its own.

Proves: the relative paths of the file reach the workers (which run in the folder of `ray start`;
relative paths on the command line: tests/test_ray_executor.py); SIGTERM ends a
Ray run as it ends a local one (143, `interrupted`, resumable); a node lost mid-run has its
experiments retried on the surviving node, said in the summary, and every experiment ends done
exactly once, equal to a local run key by key (versions included) and in the same report order; a
cluster without authentication is joined by a driver that holds a token; a GPU request that no node
can meet and a Ray release that differs are refused in seconds, with the reason.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray import __version__ as ray_version

from ray_nodes import alive_nodes, start_cluster, wait_for
from test_ray_executor import WORDS, write_model
from test_registry import make_distribution


# At seed 0, while its gate file exists, the metric leaves a marker (its node and model) and waits: the
# test acts (SIGTERM, a node killed) while both models are mid-run, however busy the machine.
GATE_PLUGIN = '''
import os
import time
from pathlib import Path
from typing import ClassVar

import attrs

from bias.core.interfaces import Capability, Metric
from bias.core.model import ASSOCIATION, Result
from bias.core.params import param


@attrs.define
class Gate(Metric):
    """Waits at seed 0 while its gate file exists, after leaving a marker that names node and model."""

    name: ClassVar[str] = "gate"
    summary: ClassVar[str] = "Waits at seed 0 while a gate file exists (synchronisation for tests)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    gate: str = param("", "the file whose existence holds seed 0")

    def compute(self, embedder, data, *, seed=None):
        gate = Path(self.gate)
        if seed == 0 and gate.exists():
            import ray

            node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
            (gate.parent / f"reached-{os.getpid()}").write_text(f"{node} {embedder.spec}")
            deadline = time.monotonic() + 600
            while gate.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        found = embedder.word_vectors(data.X.words).as_dict()
        return Result(key="", model=embedder.spec, wordset=data.name, metric=self.name, effect_size=float(len(found)))
'''


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    """A head and a second node, one CPU each, started in a folder of their own; the driver's files
    and environment (its HOME holds a token, the cluster runs without one)."""
    root = tmp_path_factory.mktemp("cluster")
    (root / "bias_gate.py").write_text(GATE_PLUGIN)
    site = make_distribution(
        root / "site",
        "bias-gate",
        {"bias.metrics": {"gate": "bias_gate:Gate"}},
        root / "bias_gate.py",
    )
    python_path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    (root / "cluster-home").mkdir()
    node_env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    node_env.update(HOME=str(root / "cluster-home"), PYTHONPATH=python_path, HF_HUB_OFFLINE="1")
    (head, second), address = start_cluster(node_env)
    try:
        nodes = alive_nodes(address)
        (root / "driver-home" / ".ray").mkdir(parents=True)
        (root / "driver-home" / ".ray" / "auth_token").write_text(
            "a" * 32
        )  # a token this cluster never asked for
        driver_env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        driver_env.update(
            HOME=str(root / "driver-home"), PYTHONPATH=python_path, HF_HUB_OFFLINE="1", COLUMNS="80"
        )
        project = root / "project"
        (project / "exp" / "models").mkdir(parents=True)
        for i in range(2):
            write_model(project / "exp" / "models" / f"m{i}.txt", i)
        (project / "exp" / "flowers.toml").write_text(
            'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "test"\nlicence = "CC0-1.0"\n'
            + "".join(f"[sets.{k}]\nwords = {ws!r}\n".replace("'", '"') for k, ws in WORDS.items())
        )
        second_id = next(node for node, is_head, _ in nodes if not is_head)
        yield {
            "address": address,
            "project": project,
            "env": driver_env,
            "second": second,
            "second_id": second_id,
            "root": root,
        }
    finally:
        for node in (second, head):
            if node is not None:
                node.kill()
                shutil.rmtree(node.folder, ignore_errors=True)


def bias(cluster, args: list[str], **kwargs) -> subprocess.Popen:
    """`bias ...` started in the project folder, as a terminal starts it (SIGINT and SIGTERM delivered)."""
    runner = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['bias', *sys.argv[1:]]; runpy.run_module('bias.cli.app', run_name='__main__')"
    )
    return subprocess.Popen(
        [sys.executable, "-c", runner, *args],
        cwd=cluster["project"],
        env=cluster["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def markers(gate: Path, driver: subprocess.Popen | None = None) -> list[tuple[str, str]]:
    """(node id, model) of each experiment waiting at the gate (a driver that ended fails the test)."""
    if driver is not None and driver.poll() is not None:
        raise AssertionError(f"the run ended early: {driver.communicate()}")
    return [
        tuple(p.read_text().split(" ", 1)) for p in gate.parent.glob("reached-*") if p.read_text()
    ]


def test_grid_survives_sigterm_and_a_lost_node_and_equals_a_local_run(two_nodes):
    project, gate = two_nodes["project"], two_nodes["root"] / "gate" / "closed"
    gate.parent.mkdir()
    gate.write_text("")
    models = "".join(
        f'\n[[models]]\nspec = "word2vec:models/m{i}.txt"\nresources = {{ cpus = 1 }}\n'
        for i in range(2)
    )
    (project / "exp" / "exp.toml").write_text(
        'executor = "ray"\nwordsets = ["flowers.toml"]\nseeds = [0, 1, 2]\n'
        f'metrics = [{{ name = "weat", permutations = 2000, exact_limit = 0, bootstrap = 0 }}, {{ name = "gate", gate = "{gate}" }}]\n'
        + models
    )
    run = ["run", "exp/exp.toml", "--out", "runs/ray", "--ray-address", two_nodes["address"]]

    first = bias(
        two_nodes, run
    )  # both models reach the gate, one on each node; then SIGTERM, as a scheduler's time limit
    reached = wait_for(
        lambda: len(markers(gate, first)) == 2 and markers(gate), "both models at the gate"
    )
    nodes = {node for node, _ in reached}
    assert len(nodes) == 2 and two_nodes["second_id"] in nodes, reached  # one model on each node
    out = project / "runs" / "ray"
    wait_for(lambda: len(rows(out / "results.jsonl")) == 6, "the results before the gate written")
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 143, err
    assert "Interrupted" in err and "--resume" in err and "runs without token authentication" in err
    kept = rows(out / "results.jsonl")
    assert len(kept) == 6 and all(r["status"] == "ok" and r["metric"] == "weat" for r in kept)
    assert (
        json.loads((out / "manifest.json").read_text())["sessions"][-1]["status"] == "interrupted"
    )

    for marker in gate.parent.glob("reached-*"):
        marker.unlink()
    resumed = bias(
        two_nodes, [*run, "--resume"]
    )  # the gate holds both models again; node 2 is lost there
    reached = wait_for(
        lambda: len(markers(gate, resumed)) == 2 and markers(gate), "both models at the gate again"
    )
    lost_model = next(model for node, model in reached if node == two_nodes["second_id"])
    two_nodes["second"].kill()
    gate.unlink()
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    said = " ".join(err.split())
    lost_label = f"word2vec:exp/models/{Path(lost_model.split(':', 1)[1]).name}"  # the label keeps the path as written
    assert f"retried 3 experiment(s) of {lost_label} on Ray, after losing its worker:" in said, said
    assert "became unreachable" in said or "was lost" in said, said
    written = rows(out / "results.jsonl")
    keys = [r["key"] for r in written]
    assert len(keys) == 12 and len(set(keys)) == 12 and all(r["status"] == "ok" for r in written)
    session = json.loads((out / "manifest.json").read_text())["sessions"][-1]
    assert session["status"] == "finished" and session["executor"]["retried"][0]["experiments"] == 3

    local = subprocess.run(
        [
            sys.executable,
            "-m",
            "bias.cli.app",
            "run",
            "exp/exp.toml",
            "--executor",
            "local",
            "--out",
            "runs/local",
        ],
        cwd=project,
        env=two_nodes["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert local.returncode == 0, local.stderr
    by_key = {r["key"]: r for r in rows(project / "runs" / "local" / "results.jsonl")}
    assert by_key.keys() == set(keys)
    def computed(result: dict) -> dict:
        """A result without how long it took and how many CPU threads its process used (Ray gives its
        workers one unless told otherwise; the numbers do not depend on it)."""
        meta = {k: v for k, v in result["meta"].items() if k != "threads"}
        return {**{k: v for k, v in result.items() if k != "timings"}, "meta": meta}

    for r in written:
        assert computed(r) == computed(by_key[r["key"]]), r["key"]
    for name in ("results.csv", "report.md"):  # plan order, whatever order the results arrived in
        assert (out / name).read_text() == (project / "runs" / "local" / name).read_text(), name


def test_a_gpu_no_node_has_and_another_ray_release_are_refused_in_seconds(two_nodes, tiny_bert_dir):
    project = two_nodes["project"]
    (project / "gpu.toml").write_text(
        'executor = "ray"\nwordsets = ["exp/flowers.toml"]\nmetrics = ["weat"]\n'
        '[[models]]\nspec = "word2vec:exp/models/m0.txt"\nresources = { gpus = 1 }\n'
    )
    cases = {
        "gpus = 1": ["run", "gpu.toml"],
        "--device cuda": [
            "run",
            "-m",
            f"hf:{tiny_bert_dir}",
            "-w",
            "exp/flowers.toml",
            "--device",
            "cuda",
            "--executor",
            "ray",
        ],
    }
    for case, args in cases.items():
        started = time.monotonic()
        proc = bias(two_nodes, [*args, "--ray-address", two_nodes["address"]])
        _, err = proc.communicate(timeout=120)
        said = " ".join(err.split())
        assert proc.returncode == 2 and "Traceback" not in err, (case, err)
        assert (
            "asks for 1 CPU and 1 GPU, and no node of the Ray cluster at" in said
            and "has a GPU (" in said
        ), case
        assert time.monotonic() - started < 120  # a generous bound, only against waiting for ever
    # a driver of another Ray release: what the cluster's control store says, compared before joining
    from bias.core.errors import BiasError
    from bias.engine.ray_cluster import check_versions, probe

    facts = probe(two_nodes["address"])
    assert facts.auth == "disabled" and facts.ray_version == ray_version
    with pytest.raises(BiasError) as err:
        check_versions(facts, "2.59.0")
    said = err.value.message
    assert f"runs Ray {ray_version} on Python {platform.python_version()}" in said
    assert f"this machine has Ray 2.59.0 on Python {platform.python_version()}" in said
