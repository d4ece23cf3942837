"""The Ray executor on a real local Ray cluster (started once for this module, 2 CPUs, no dashboard).

Proves: results equal a local run key by key; a worker process killed mid-run has its unfinished
experiments retried and every result written once; retries are bounded; a driver killed and
restarted with --resume continues; Ctrl-C stops the run and keeps the results; the manifest records
the executor and the cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
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


@attrs.define
class Devices(Metric):
    """Records the GPUs its worker sees; a worker that sees one waits (at most two minutes) until
    `share` workers that see one have arrived in `barrier`: they hold the GPU at the same time."""

    name: ClassVar[str] = "devices"
    summary: ClassVar[str] = "Records CUDA_VISIBLE_DEVICES (a test of GPU shares)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    barrier: str = param("", "folder where the workers that see a GPU meet")
    share: int = param(1, "how many workers must meet there")

    def compute(self, embedder, data, *, seed=None):
        import time

        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        met = 0
        if visible:
            folder = Path(self.barrier)
            (folder / str(os.getpid())).write_text(visible)
            deadline = time.monotonic() + 120
            while len(list(folder.iterdir())) < self.share and time.monotonic() < deadline:
                time.sleep(0.05)
            met = len(list(folder.iterdir()))
        return Result(key="", model=embedder.spec, wordset=data.name, metric=self.name, effect_size=float(met),
                      figures={"visible": visible, "met": met})
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
    site = make_distribution(root / "site", "bias-kill-worker", {"bias.metrics": {"kill-worker": "bias_kill_worker:KillWorker", "hold": "bias_kill_worker:Hold", "devices": "bias_kill_worker:Devices"}}, plugin)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), old) if p)
    sys.path.insert(0, str(site))
    from bias.registry import entry_points

    entry_points.refresh()
    # One GPU declared (none is there): Ray hands out its shares and sets CUDA_VISIBLE_DEVICES as on a GPU node.
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
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


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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
        for m in cluster["models"][:1]
        for seed in range(2)
    ]
    planned = planning.plan(experiments)
    local = {r.key: (r.status, r.effect_size, r.figures) for r in runner.run(planned.runnable, input_models=planned.input_models)}
    on_ray = {r.key: (r.status, r.effect_size, r.figures) for r in ray_executor.run(planned.runnable)}
    assert len(local) == 2 and on_ray == local
    assert all(status == OK and figures["original"] == f"word2vec:{other}" for status, _, figures in on_ray.values())


def test_a_killed_worker_is_retried_the_retries_are_bounded_and_each_result_written_once(cluster, tmp_path):
    """Two models at once, one retry allowed. On the first, one experiment kills its worker on its
    first attempt: Ray restarts the worker, the driver sends the experiment again, and it succeeds. On
    the second, every attempt kills the worker: after the one retry the failure is recorded."""
    once, always = tmp_path / "once", tmp_path / "always"
    once.write_text("1")
    always.write_text("100")
    first, second = grid(cluster, seeds=range(2))[:2], grid(cluster, seeds=[5], metric="kill-worker", params={})
    experiments = [
        *first,
        attrs.evolve(second[0], params={"marker": str(once)}),
        attrs.evolve(second[1], params={"marker": str(always)}),
    ]
    prepared = planning.plan(experiments).runnable
    events = []
    results = {r.key: r for r in ray_executor.run(prepared, out=tmp_path / "out", max_retries=1, on_event=events.append)}
    assert once.read_text() == "0"  # the worker really was killed once
    assert 100 - int(always.read_text()) == 2  # the first attempt and one retry, no more
    statuses = [results[p.experiment.key].status for p in prepared]
    assert statuses == [OK, OK, OK, FAILED], [r.reason for r in results.values()]
    assert "1 retries were spent" in results[prepared[3].experiment.key].reason
    # Said for the two experiments sent again (once per reason), as a worker death, not as memory;
    # an experiment still waiting on the first model's actor when it died is sent again too (which
    # ones were waiting depends on how fast the actor got through them)
    retries = [e for e in events if e.kind == "retry"]
    killers = {(p.experiment.model.label(), p.experiment.key) for p in prepared[2:]}
    sent_again = {(e.model, e.experiment.key) for e in retries}
    assert killers <= sent_again, sent_again
    for model, key in sent_again - killers:  # sent again only while it had no result yet
        said = [e.kind for e in events if e.experiment is not None and e.experiment.key == key]
        assert said.index("retry") < said.index("result") and said.count("result") == 1, (model, said)
    assert all("out of memory" not in e.note for e in retries), [e.note for e in retries]
    written = [r["key"] for r in lines(tmp_path / "out" / "results.jsonl")]
    assert sorted(written) == sorted(results) and len(written) == 4


def test_gpu_shares_are_held_together_and_other_models_see_no_gpu_or_wait(cluster, tmp_path):
    """Two models asking for half of the one GPU hold it at the same time and see it; a model
    asking for no GPU sees none (CUDA_VISIBLE_DEVICES empty, not the machine's GPUs); a model that
    needs more CPUs than are free is announced as waiting for resources, then runs."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    models = [write_model(tmp_path / f"share{i}.txt", 10 + i) for i in range(3)]
    resources = [{"gpus": 0.5, "cpus": 0.5}] * 2 + [{"cpus": 2}]
    experiments = [
        Experiment(ModelConfig(f"word2vec:{m}", resources=r), str(cluster["wordset"]), "devices", {"barrier": str(barrier), "share": 2}, 0)
        for m, r in zip(models, resources)
    ]
    events = []
    results = {r.model: r for r in ray_executor.run(planning.plan(experiments).runnable, on_event=events.append)}
    assert [results[f"word2vec:{m}"].status for m in models] == [OK] * 3
    assert [results[f"word2vec:{m}"].figures["visible"] for m in models] == ["0", "0", ""]
    assert [results[f"word2vec:{m}"].figures["met"] for m in models] == [2, 2, 0]
    last = f"word2vec:{models[-1]}"
    kinds = [e.kind for e in events if e.model == last]
    assert kinds[:2] == ["waiting", "loading"] and kinds[-1] == "result"
    waiting = next(e for e in events if e.kind == "waiting" and e.model == last)
    assert waiting.note == f"waiting for resources: {last} needs 2 CPU"


def test_a_model_file_a_worker_cannot_read_fails_naming_the_node_and_the_path(cluster, tmp_path):
    model = write_model(tmp_path / "gone.txt", 3)
    planned = planning.plan([Experiment(ModelConfig(f"word2vec:{model}"), str(cluster["wordset"]), "weat", {"permutations": 1000}, 0)])
    model.unlink()  # read on this machine while planning; not there where the worker runs
    results = list(ray_executor.run(planned.runnable))
    assert len(results) == 1 and results[0].status == FAILED
    reason = results[0].reason
    assert reason.startswith("the model could not be loaded on Ray node ") and str(model) in reason, reason


def write_config(cluster, folder: Path, seeds: int, permutations: int, gate: Path | None = None) -> Path:
    """WEAT on both models for every seed; with `gate`, also the `hold` metric, whose seed-0 experiment
    on the first model waits while the gate file exists."""
    models = "".join(f'\n[[models]]\nspec = "word2vec:{m}"\nresources = {{ cpus = 1 }}\n' for m in cluster["models"])
    hold = f', {{ name = "hold", gate = "{gate}", held = "{cluster["models"][0].name}" }}' if gate is not None else ""
    config = folder / "exp.toml"
    wordset = folder / Path(cluster["wordset"]).name  # a file reads word sets from its own folder
    wordset.write_bytes(Path(cluster["wordset"]).read_bytes())
    config.write_text(
        f'executor = "ray"\nwordsets = ["{wordset}"]\nseeds = {list(range(seeds))}\n'
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


def bias_cli(args: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    env = {**(os.environ if env is None else env), "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
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


def test_joined_with_relative_paths_on_the_command_line_and_ctrl_c_keeps_results(cluster, tmp_path):
    """`bias run` in a folder of its own joins the cluster (token authentication, with the token this
    machine holds) with relative model and word-set paths on the command line: the workers, which run
    in another folder, read them. Ctrl-C mid-run (the held experiment cannot end before it) ends the
    run as it ends a local one: 130, the session `interrupted`, every result written kept."""
    (tmp_path / "models").mkdir()
    for i, model in enumerate(cluster["models"]):
        shutil.copy(model, tmp_path / "models" / f"m{i}.txt")
    shutil.copy(cluster["wordset"], tmp_path / "flowers.toml")
    gate = tmp_path / "gate"
    gate.write_text("closed")  # never opened: the run cannot end on its own
    args = ["run", "-m", "word2vec:models/m0.txt", "-m", "word2vec:models/m1.txt", "-w", "flowers.toml"]
    args += ["--metric", "hold", "--param", f"gate={gate}", "--param", "held=m0.txt", "--seed", "0"]
    args += ["--seed", "1", "--out", "out", "--executor", "ray", "--ray-address", cluster["address"]]
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # a fresh shell: Ray's defaults
    interrupted = bias_cli(args, cwd=tmp_path, env=env)
    wait_for_results(tmp_path / "out" / "results.jsonl", 1, interrupted)
    interrupted.send_signal(signal.SIGINT)
    _, err = interrupted.communicate(timeout=120)
    assert interrupted.returncode == 130, err
    said = " ".join(err.split())
    assert "Interrupted" in said and "--resume" in said, said
    assert f"Joined the Ray cluster at {cluster['address']}" in said, said
    kept = lines(tmp_path / "out" / "results.jsonl")
    assert kept and all(r["status"] == OK and r["model"] == "word2vec:models/m1.txt" for r in kept), kept
    session = json.loads((tmp_path / "out" / "manifest.json").read_text())["sessions"][-1]
    assert session["status"] == "interrupted"
    executor = session["executor"]
    assert executor["name"] == "ray" and executor["authentication"] == "token"
    assert executor["resources"]["CPU"] == 2.0


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
    proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "run", str(config), "--executor", "ray"], capture_output=True, text=True, env=env, timeout=120)
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
    # --device cuda asks for a whole GPU unless the model says how much; Ray, not cuda:N, picks the GPU
    assert ray_executor.actor_options({}, "m", "cuda") == {"num_cpus": 1.0, "num_gpus": 1.0}
    assert ray_executor.actor_options({"gpus": 0.25}, "m", "cuda") == {"num_cpus": 1.0, "num_gpus": 0.25}
    with pytest.raises(BiasError, match="cuda:1 names one GPU of one machine"):
        ray_executor.actor_options({}, "m", "cuda:1")
    # checked against the live nodes, one node at a time: 2 + 2 CPUs on two nodes are not 4 on one
    nodes = [{"Resources": {"CPU": 2.0}}, {"Resources": {"CPU": 2.0, "GPU": 1.0}}]
    ray_executor.check_resources(nodes, {"m": {"num_cpus": 2.0, "num_gpus": 1.0}}, "h:1")
    with pytest.raises(BiasError) as err:
        ray_executor.check_resources(nodes, {"big": {"num_cpus": 4.0, "num_gpus": 0.0}}, "h:1")
    assert err.value.exit_code == 2 and "Model big asks for 4 CPU" in err.value.message and "the most is 2" in err.value.message
    with pytest.raises(BiasError) as err:
        ray_executor.check_resources(nodes, {"two": {"num_cpus": 1.0, "num_gpus": 2.0}}, "h:1")
    assert "2 GPU on one node (the most is 1)" in err.value.message


def test_waiting_and_retries_are_said_off_a_terminal(capsys):
    """Off a terminal the progress says, once, that a model waits for resources (a long wait is never
    silent), and the run ends with one line per model whose experiments were retried, and why."""
    from rich.console import Console

    from bias.cli.run import _progress
    from bias.engine.runner import Event

    progress = _progress(Console(), enabled=False, plain=True)
    progress.event(Event("waiting", 4, 8, "hf:big", note="waiting for resources: hf:big needs 1 CPU and 1 GPU"))
    exp = [Experiment(ModelConfig("word2vec:v.txt"), "en/weat1", "weat", {}, seed) for seed in range(3)]
    for e, why in zip([*exp, exp[0]], ["its worker on Ray node n2 became unreachable"] * 2 + ["Ray node n2 was lost"] * 2):
        progress.event(Event("retry", 4, 8, "word2vec:v.txt", e, note=why))
    said = " ".join(capsys.readouterr().err.split())
    assert "[4/8] waiting for resources: hf:big needs 1 CPU and 1 GPU" in said
    assert progress.retried_lines() == [
        "retried 3 experiment(s) of word2vec:v.txt on Ray, after losing its worker: its worker on Ray node n2 "
        "became unreachable; Ray node n2 was lost"
    ]


def test_executor_and_resources_in_the_experiment_file(tmp_path):
    from bias.core.errors import BiasError
    from bias.engine.experiment_file import load_config, read_experiment_file

    config = tmp_path / "exp.toml"
    config.write_text(
        'executor = "ray"\nwordsets = ["en/weat6"]\nmetrics = ["weat"]\n'
        '[[models]]\nspec = "word2vec:v.txt"\nresources = { gpus = 0.25 }\nlimit = 1000\n'
    )
    spec = read_experiment_file(config)
    assert spec.executor == "ray"  # (a cluster to join is the command line's: tests/bad_input)
    model = spec.experiments()[0].model
    assert model.resources == {"gpus": 0.25} and model.options == {"limit": 1000}
    # Resource declarations do not enter the key: the same experiment, wherever it runs.
    bare = Experiment(ModelConfig("word2vec:v.txt"), "en/weat6", "weat", {}, 0)
    assert bare.key == attrs.evolve(bare, model=attrs.evolve(bare.model, resources={"gpus": 1, "cpus": 4})).key
    config.write_text('executor = "slurm"\nwordsets = ["en/weat6"]\nmetrics = ["weat"]\nmodels = ["word2vec:v.txt"]\n')
    with pytest.raises(BiasError) as err:  # checked where every run option is, as `bias run FILE` does
        load_config(config)
    assert "executor" in err.value.message and "slurm" in err.value.message


def test_ray_started_here_sends_no_usage_statistics(tmp_path):
    """Ray's usage statistics ask the cloud's metadata address (169.254.169.254) which machine this
    is, an address no user gave: a Ray instance that bias starts has them off, unless the user's own
    environment turns them on."""
    script = (
        "import os\nfrom bias.engine.ray_cluster import Cluster\n"
        "cluster = Cluster.connect(None, num_cpus=1)\n"
        "print('started', cluster.started_here, os.environ.get('RAY_USAGE_STATS_ENABLED'))\n"
        "cluster.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_USAGE_STATS_ENABLED"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "started True 0" in proc.stdout, proc.stdout


def test_unreachable_cluster_is_said_at_once(cluster, tmp_path):
    config = write_config(cluster, tmp_path, seeds=1, permutations=1000)
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "No Ray cluster answers at 127.0.0.1:1" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_or_wrong_token_is_said_in_one_line(cluster, tmp_path):
    """Ray's token authentication is on by default. A machine that holds no token, or another token,
    is told so in one line with what to set, before Ray's own join (which retries for tens of seconds
    and prints pages of C++ warnings); joining with the right token is the test above."""
    config = write_config(cluster, tmp_path, seeds=1, permutations=1000)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_AUTH_MODE", None)  # as in a fresh shell: nothing but Ray's defaults and its token file
    started = time.monotonic()
    none = subprocess.run(  # a machine that holds no token at all (an empty HOME, no RAY_AUTH_TOKEN)
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", cluster["address"]],
        capture_output=True, text=True, timeout=180, env={**env, "HOME": str(tmp_path)},
    )
    said = " ".join(none.stderr.split())
    assert none.returncode == 2 and "Traceback" not in none.stderr, none.stderr
    assert f"The Ray cluster at {cluster['address']} asks for a token, and this machine holds none." in said
    assert "RAY_AUTH_TOKEN" in said and "InvalidAuthToken" not in said and "gcs_client" not in said  # none of Ray's C++ lines
    assert time.monotonic() - started < 120  # a generous bound, only against Ray's minutes of retries
    wrong = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(config), "--ray-address", cluster["address"]],
        capture_output=True, text=True, timeout=180, env={**env, "RAY_AUTH_TOKEN": "0" * 32},
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr
    said = " ".join(wrong.stderr.split())
    assert f"The Ray cluster at {cluster['address']} refused this machine's token (from RAY_AUTH_TOKEN)" in said
    assert "auth_token" in said and "ray start --head" not in said
