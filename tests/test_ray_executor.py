"""The Ray executor on a real local Ray cluster (started once for this module, 2 CPUs, no dashboard).

Proves: results equal a local run key by key; a worker process killed mid-run has its unfinished
experiments retried and every result written once; retries are bounded; a driver killed and
restarted with --resume continues; Ctrl-C stops the run and keeps the results; the manifest records
the executor and the cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ray  # the test extra installs it, so these tests run in CI and never skip

from bias.engine import planning, ray_executor, runner
from bias.engine.experiments import Experiment, ModelConfig
from bias.core.model import FAILED, OK
from test_registry import make_distribution

WORDS = {
    "X": ["rose", "tulip", "daisy", "lily", "orchid", "violet", "poppy", "iris"],
    "Y": ["ant", "wasp", "beetle", "moth", "flea", "hornet", "gnat", "spider"],
    "A": ["joy", "love", "peace", "happy", "gentle", "lucky", "honest", "warm"],
    "B": ["pain", "hatred", "war", "ugly", "filthy", "rotten", "poison", "grief"],
}

# A metric that kills the worker process running it while "tickets" are left in its marker file:
# a real process death, the way an out-of-memory kill or a lost node ends a worker.
CRASH_PLUGIN = '''
import os
from pathlib import Path
from typing import ClassVar

import attrs

from bias.core.interfaces import Capability, Metric
from bias.core.model import ASSOCIATION, Result
from bias.core.params import param


@attrs.define
class KillWorker(Metric):
    """Ends its own process (os._exit) while its marker file holds a count above zero."""

    name: ClassVar[str] = "kill-worker"
    summary: ClassVar[str] = "Kills the process running it while tickets are left (fault injection)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    marker: str = param("", "file holding how many more times to kill the worker")

    def compute(self, embedder, data, *, seed=None):
        tickets = Path(self.marker)
        left = int(tickets.read_text()) if tickets.exists() else 0
        if left > 0:
            tickets.write_text(str(left - 1))
            os._exit(1)
        found = embedder.word_vectors(data.X.words).as_dict()
        return Result(key="", model=embedder.spec, wordset=data.name, metric=self.name, effect_size=float(len(found)))


@attrs.define
class Hold(Metric):
    """Holds one experiment (seed 0 on the model whose spec contains `held`) while its gate file exists:
    a run holding it cannot end before the test lets it, however busy the machine."""

    name: ClassVar[str] = "hold"
    summary: ClassVar[str] = "Waits while a gate file exists (synchronisation for tests)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    gate: str = param("", "the file whose existence holds the experiment")
    held: str = param("", "part of the spec of the model whose seed-0 experiment is held")

    def compute(self, embedder, data, *, seed=None):
        import time

        deadline = time.monotonic() + 600
        while seed == 0 and self.held and self.held in embedder.spec and Path(self.gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        found = embedder.word_vectors(data.X.words).as_dict()
        return Result(key="", model=embedder.spec, wordset=data.name, metric=self.name, effect_size=float(len(found)))
'''


def write_model(path: Path, seed: int) -> Path:
    import numpy as np

    rng = np.random.default_rng(seed)
    words = [w for ws in WORDS.values() for w in ws]
    path.write_text(f"{len(words)} 20\n" + "".join(w + " " + " ".join(f"{v:.5f}" for v in rng.normal(size=20)) + "\n" for w in words))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One local Ray cluster for the module; workers see the fault-injection plugin on PYTHONPATH."""
    root = tmp_path_factory.mktemp("ray")
    plugin = root / "bias_kill_worker.py"
    plugin.write_text(CRASH_PLUGIN)
    site = make_distribution(root / "site", "bias-kill-worker", {"bias.metrics": {"kill-worker": "bias_kill_worker:KillWorker", "hold": "bias_kill_worker:Hold"}}, plugin)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), old) if p)
    sys.path.insert(0, str(site))
    from bias.registry import entry_points

    entry_points.refresh()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    wordset = root / "flowers.toml"
    wordset.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "test"\nlicence = "CC0-1.0"\n'
        + "".join(f"[sets.{k}]\nwords = {ws!r}\n".replace("'", '"') for k, ws in WORDS.items())
    )
    models = [write_model(root / f"model{i}.txt", i) for i in range(2)]
    yield {"address": ray.get_runtime_context().gcs_address, "root": root, "wordset": wordset, "models": models, "site": site}
    ray.shutdown()
    sys.path.remove(str(site))
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old
    entry_points.refresh()


def grid(cluster, seeds=range(3), metric="weat", params=None) -> list[Experiment]:
    params = params if params is not None else {"permutations": 2000, "exact_limit": 0, "bootstrap": 200}
    return [
        Experiment(ModelConfig(f"word2vec:{m}", resources={"cpus": 0.5}), str(cluster["wordset"]), metric, dict(params), seed)
        for m in cluster["models"]
        for seed in seeds
    ]


def comparable(result) -> dict:
    d = result.to_dict()
    for volatile in ("timings", "versions"):
        d.pop(volatile, None)
    return d


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_ray_run_equals_local_run_key_by_key(cluster, tmp_path):
    prepared = planning.plan(grid(cluster)).runnable
    local = {r.key: comparable(r) for r in runner.run(prepared, out=tmp_path / "local")}
    on_ray = {r.key: comparable(r) for r in ray_executor.run(prepared, out=tmp_path / "ray")}
    assert len(local) == 6 and local.keys() == on_ray.keys()
    for key in local:
        assert on_ray[key] == local[key], key
    assert all(r["status"] == OK and r["p_value"] is not None for r in local.values())
    written = [r["key"] for r in lines(tmp_path / "ray" / "results.jsonl")]
    assert sorted(written) == sorted(local)  # each result written once, by the driver
    # Resource declarations do not enter the key: the same experiment, wherever it runs.
    bare = Experiment(ModelConfig(f"word2vec:{cluster['models'][0]}"), str(cluster["wordset"]), "weat", {}, 0)
    assert bare.key == attrs_evolve_resources(bare).key


def test_secondary_inputs_reach_the_workers_and_match_a_local_run(cluster, tmp_path):
    """A metric asking for a word set and another model gets them on Ray as in a local run."""
    from bias.registry import entry_points
    from test_engine_inputs import INPUTS_PLUGIN

    (cluster["site"] / "bias_needs_inputs.py").write_text(INPUTS_PLUGIN)  # on the workers' PYTHONPATH
    make_distribution(cluster["site"], "bias-needs-inputs", {"bias.metrics": {"needs-inputs": "bias_needs_inputs:NeedsInputs"}})
    entry_points.refresh()
    other = write_model(tmp_path / "other.txt", 9)
    experiments = [
        Experiment(ModelConfig(f"word2vec:{m}", resources={"cpus": 0.5}), str(cluster["wordset"]), "needs-inputs", {"original": f"word2vec:{other}"}, seed)
        for m in cluster["models"]
        for seed in range(2)
    ]
    planned = planning.plan(experiments)
    local = {r.key: (r.status, r.effect_size, r.figures) for r in runner.run(planned.runnable, input_models=planned.input_models)}
    on_ray = {r.key: (r.status, r.effect_size, r.figures) for r in ray_executor.run(planned.runnable)}
    assert len(local) == 4 and on_ray == local
    assert all(status == OK and figures["original"] == f"word2vec:{other}" for status, _, figures in on_ray.values())


def attrs_evolve_resources(exp: Experiment) -> Experiment:
    import attrs

    return attrs.evolve(exp, model=attrs.evolve(exp.model, resources={"gpus": 1, "cpus": 4}))


def test_killed_worker_is_retried_and_each_result_written_once(cluster, tmp_path):
    marker = tmp_path / "tickets"
    marker.write_text("1")  # the first attempt kills its worker; the restarted actor succeeds
    experiments = grid(cluster, seeds=range(2))[:2] + grid(cluster, seeds=[5], metric="kill-worker", params={"marker": str(marker)})[:1]
    prepared = planning.plan(experiments).runnable
    results = list(ray_executor.run(prepared, out=tmp_path / "out"))
    assert marker.read_text() == "0"  # the worker really was killed once
    assert [r.status for r in results] == [OK, OK, OK], [r.reason for r in results]
    written = [r["key"] for r in lines(tmp_path / "out" / "results.jsonl")]
    assert sorted(written) == sorted(p.experiment.key for p in prepared) and len(set(written)) == len(written)


def test_retries_are_bounded_and_the_failure_is_recorded(cluster, tmp_path):
    marker = tmp_path / "tickets"
    marker.write_text("100")  # always kills: the retries run out
    experiments = grid(cluster, seeds=[7], metric="kill-worker", params={"marker": str(marker)})[:1]
    prepared = planning.plan(experiments).runnable
    results = list(ray_executor.run(prepared, out=tmp_path / "out", max_retries=1))
    assert len(results) == 1 and results[0].status == FAILED and "retries" in results[0].reason
    assert 100 - int(marker.read_text()) == 2  # the first attempt and one retry, no more
    assert len(lines(tmp_path / "out" / "results.jsonl")) == 1


def write_config(cluster, folder: Path, seeds: int, permutations: int, gate: Path | None = None) -> Path:
    """WEAT on both models for every seed; with `gate`, also the `hold` metric, whose seed-0 experiment
    on the first model waits while the gate file exists."""
    models = "".join(f'\n[[models]]\nspec = "word2vec:{m}"\nresources = {{ cpus = 1 }}\n' for m in cluster["models"])
    hold = f', {{ name = "hold", gate = "{gate}", held = "{cluster["models"][0].name}" }}' if gate is not None else ""
    config = folder / "exp.toml"
    config.write_text(
        f'executor = "ray"\nwordsets = ["{cluster["wordset"]}"]\nseeds = {list(range(seeds))}\n'
        f'metrics = [{{ name = "weat", permutations = {permutations}, exact_limit = 0, bootstrap = 0 }}{hold}]\n' + models
    )
    return config


# `bias` as a terminal starts it: Ctrl-C delivered. A process started in the background by a
# non-interactive shell (`pytest ... &`) ignores SIGINT, and Python then leaves it ignored in its
# children; the Ctrl-C below would never arrive.
_AS_IN_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv = ['bias', *sys.argv[1:]]; runpy.run_module('bias.cli.app', run_name='__main__')"
)


def bias_cli(args: list[str], **kwargs) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    return subprocess.Popen([sys.executable, "-c", _AS_IN_A_TERMINAL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def wait_for_results(path: Path, at_least: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(lines(path)) >= at_least:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("no results appeared")


def test_driver_killed_then_resume_continues_and_ctrl_c_keeps_results(cluster, tmp_path):
    # The gate holds one experiment until the last run: the first two runs cannot end on their own,
    # so the kill and the Ctrl-C always land mid-run, on a quiet machine or a busy one.
    gate = tmp_path / "gate"
    gate.write_text("closed")
    config = write_config(cluster, tmp_path, seeds=30, permutations=400_000, gate=gate)
    out = tmp_path / "out"
    args = ["run", str(config), "--out", str(out), "--ray-address", cluster["address"]]
    total = 2 * 30 * 2  # models x seeds x (weat, hold)

    killed = bias_cli(args)
    wait_for_results(out / "results.jsonl", 1, killed)
    killed.kill()  # the driver dies without any chance to clean up
    killed.wait(timeout=60)
    after_kill = lines(out / "results.jsonl")
    assert 1 <= len(after_kill) < total

    interrupted = bias_cli([*args, "--resume"])
    wait_for_results(out / "results.jsonl", len(after_kill) + 1, interrupted)
    interrupted.send_signal(signal.SIGINT)
    _, err = interrupted.communicate(timeout=120)
    assert interrupted.returncode == 130, err
    assert "Interrupted" in err and "--resume" in err
    after_interrupt = lines(out / "results.jsonl")
    assert len(after_interrupt) > len(after_kill)

    gate.unlink()  # the held experiment may finish now
    finished = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", *args, "--resume", "--json"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert finished.returncode == 0, finished.stderr
    keys = [r["key"] for r in lines(out / "results.jsonl")]
    assert len(keys) == total and len(set(keys)) == total  # every experiment once, none lost, none twice
    assert all(r["status"] == OK for r in lines(out / "results.jsonl"))
    manifest = json.loads((out / "manifest.json").read_text())
    session = manifest["sessions"][-1]
    assert session["executor"]["name"] == "ray" and session["executor"]["resources"]["CPU"] == 2.0
    assert [s["status"] for s in manifest["sessions"]][1:] == ["interrupted", "finished"]


def test_missing_ray_says_how_to_install(tmp_path, cluster):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _NoRay:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n            raise ImportError('blocked for this test')\n"
        "sys.meta_path.insert(0, _NoRay())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    config = write_config(cluster, tmp_path, seeds=1, permutations=1000)
    proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "run", str(config)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "needs Ray" in proc.stderr and 'bias-framework[ray]' in proc.stderr and "Traceback" not in proc.stderr


def test_resources_are_checked_and_become_actor_options():
    assert ray_executor.actor_options({"gpus": 0.5, "cpus": 4}, "m") == {"num_cpus": 4.0, "num_gpus": 0.5}
    assert ray_executor.actor_options({}, "m") == {"num_cpus": 1.0, "num_gpus": 0.0}
    from bias.core.errors import BiasError

    with pytest.raises(BiasError) as err:
        ray_executor.actor_options({"gpu": 1}, "hf:x")
    assert "hf:x" in err.value.message and "gpu" in err.value.message and "gpus" in (err.value.hint or "")
    with pytest.raises(BiasError) as err:
        ray_executor.actor_options({"cpus": -1}, "hf:x")
    assert "resources.cpus" in err.value.message


def test_executor_and_resources_in_the_experiment_file(tmp_path):
    from bias.core.errors import BiasError
    from bias.engine.experiment_file import load_config

    config = tmp_path / "exp.toml"
    config.write_text(
        'executor = "ray"\nray_address = "auto"\nwordsets = ["en/weat6"]\nmetrics = ["weat"]\n'
        '[[models]]\nspec = "word2vec:v.txt"\nresources = { gpus = 0.25 }\nbinary = false\n'
    )
    experiments, settings = load_config(config)
    assert settings["executor"] == "ray" and settings["ray_address"] == "auto"
    model = experiments[0].model
    assert model.resources == {"gpus": 0.25} and model.options == {"binary": False}
    config.write_text('executor = "slurm"\nwordsets = ["en/weat6"]\nmetrics = ["weat"]\nmodels = ["word2vec:v.txt"]\n')
    with pytest.raises(BiasError) as err:
        load_config(config)
    assert "executor" in err.value.message and "slurm" in err.value.message


def test_unreachable_cluster_is_said_at_once(cluster, tmp_path):
    config = write_config(cluster, tmp_path, seeds=1, permutations=1000)
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "No Ray cluster answers at 127.0.0.1:1" in proc.stderr and "Traceback" not in proc.stderr


def test_joining_says_which_cluster_and_a_wrong_token_is_said_as_such(cluster, tmp_path):
    """Ray's token authentication is on by default: HOST:PORT joins with the token this machine holds
    (and says where it joined); with another token the join fails with the address and what to check,
    not with advice to start a cluster."""
    config = write_config(cluster, tmp_path, seeds=1, permutations=1000)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_AUTH_MODE", None)  # as in a fresh shell: nothing but Ray's defaults and its token file
    joined = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", cluster["address"]],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert joined.returncode == 0, joined.stderr
    assert f"Joined the Ray cluster at {cluster['address']}" in " ".join(joined.stderr.split())
    wrong = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", cluster["address"]],
        capture_output=True, text=True, timeout=180, env={**env, "RAY_AUTH_TOKEN": "0" * 32},
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr
    said = " ".join(wrong.stderr.split())
    assert f"Could not join the Ray cluster at {cluster['address']}" in said and "auth_token" in said
    assert "ray start --head" not in said
