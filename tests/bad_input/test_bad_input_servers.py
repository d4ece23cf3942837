"""What a server can make a run do (review 2026-11-28, Z95, Z82, Z81, Z73, Z78-Z80, Z75, Z135, Z137): a
redirect never carries the key elsewhere, an answer too wide or malformed is refused before anything
is cached and named as the service's answer, a refused key is the user's to fix (exit 2), retries are
bounded, and Ctrl-C ends a run at once while its requests wait on a Retry-After. The servers are
hostile ones on 127.0.0.1 (tests/fixtures/hostile_server.py), each logging the keys it receives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bad_input_helpers import cli, words_toml
from fixtures.hostile_server import Answer, HostileServer
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

KEY = "sk-victim-SECRET-0123456789abcdef"


@pytest.fixture()
def victim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    words_toml(tmp_path / "ws.toml", X=X_WORDS[:8], Y=Y_WORDS[:8], A=A_WORDS[:8], B=B_WORDS[:8])
    return tmp_path


def run(folder: Path, url: str, *options: str) -> list[str]:
    given = dict(
        option.split("=", 1) for option in ("retries=0", *options)
    )  # an option given replaces retries=0
    spec = f"openai:text-embedding-3-small[{','.join([f'base_url={url}', *(f'{k}={v}' for k, v in given.items())])}]"
    return [
        "run",
        "--model",
        spec,
        "--wordset",
        str(folder / "ws.toml"),
        "--bootstrap",
        "0",
        "--permutations",
        "100",
    ]


def cached_rows(folder: Path) -> int:
    """The vectors in every encoding cache under the folder's cache (BIAS_CACHE_DIR)."""
    import sqlite3

    count = 0
    for db in (folder / "cache").rglob("*.sqlite"):
        with sqlite3.connect(db) as connection:
            count += connection.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
    return count


def test_Z95_Z82_a_redirect_is_refused_and_the_key_stays_with_its_address(victim: Path) -> None:
    with (
        HostileServer() as elsewhere,
        HostileServer(Answer(307, {"Location": "http://127.0.0.1:1/v1/embeddings"})) as server,
    ):
        server.answer = Answer(307, {"Location": f"{elsewhere.url}/embeddings"})
        done = cli(*run(victim, server.url))
        assert done.code == 2, done.both
        assert (
            "redirect" in done.err
            and f"{elsewhere.url}/embeddings" in done.err
            and "Traceback" not in done.both
        ), done.err
        assert elsewhere.log == [], "the redirect was followed"
        assert KEY not in done.both


def test_a_voyage_redirect_is_refused_too(victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    with HostileServer() as elsewhere, HostileServer() as server:
        server.answer = Answer(307, {"Location": f"{elsewhere.url}/embeddings"})
        spec = f"voyage:voyage-3[base_url={server.url},retries=0]"
        done = cli(
            "run",
            "--model",
            spec,
            "--wordset",
            str(victim / "ws.toml"),
            "--bootstrap",
            "0",
            "--permutations",
            "100",
        )
        assert done.code == 2 and "redirect" in done.err and KEY not in done.both, done.both
        assert elsewhere.log == [] and server.keys() == [f"Bearer {KEY}"] * len(server.log)


def test_Z95_a_completion_servers_redirect_is_refused(victim: Path) -> None:
    from bias.registry import build_embedder

    with HostileServer() as elsewhere, HostileServer(Answer(302, {"Location": f"{'x'}"})) as server:
        server.answer = Answer(302, {"Location": f"{elsewhere.url}/models"})
        embedder = build_embedder(f"completions:{server.url}[api_key_env=OPENAI_API_KEY]")
        from bias.core.errors import BiasError

        with pytest.raises(BiasError) as err:
            embedder.load()
        assert "redirect" in err.value.message and err.value.exit_code == 2
        assert elsewhere.log == [] and server.keys() == [f"Bearer {KEY}"]


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        # Z81: 20,000 numbers a vector, one text a request: within the bytes an answer may take, too wide
        (Answer(width=20_000), "more than any embedding model gives"),
        (
            Answer(width=384),
            "vectors of 384 numbers where this model gives 1,536",
        ),  # the known width of text-embedding-3-small
        (Answer(vector="abc"), "str 'abc' as vector 0"),  # Z73
        (Answer(vector=[[0.1, 0.2], [0.3]]), "a nested list inside vector 0"),  # Z78
        (Answer(vector=[None, 0.5]), "null inside vector 0"),  # Z79
        (Answer(body=b'{"data": [{"index": "x", "embedding": [1.0]}, 7]}'), "vector"),
        # W05: nested 200,000 deep, which the client's JSON parser gives up on
        (Answer(body=b"[" * 200_000 + b"]" * 200_000), "JSON nested too deeply"),
    ],
    ids=[
        "Z81-too-wide",
        "known-width",
        "Z73-string",
        "Z78-nested",
        "Z79-null",
        "bad-items",
        "W05-deep",
    ],
)
def test_a_malformed_or_wide_answer_is_refused_before_anything_is_cached(
    victim: Path, answer: Answer, words: str
) -> None:
    with HostileServer(answer) as server:
        options = {384: ("dimensions=1536",), 20_000: ("batch_size=1",)}.get(answer.width, ())
        done = cli(*run(victim, server.url, *options))
    assert done.code == 1, done.both
    assert "the service answered" in done.both and words in done.both, done.both
    assert (
        "Traceback" not in done.both
        and "ValueError" not in done.both
        and "TypeError" not in done.both
        and "RecursionError" not in done.both
    )
    assert cached_rows(victim) == 0, "vectors of a refused answer were cached"


@pytest.mark.parametrize(
    "body", [b"null", b"[]", b'"x"', b'{"data": null}', b'{"data": "no"}'], ids=str
)
def test_Z80_an_openai_answer_without_a_list_of_vectors_is_not_an_embeddings_answer(
    victim: Path, body: bytes
) -> None:
    """No list under `data` at all: the address is not an embeddings service (exit 2, as voyage
    says it), not a Python type name."""
    with HostileServer(Answer(body=body)) as server:
        done = cli(*run(victim, server.url))
    assert done.code == 2, done.both
    assert "is not an embeddings answer (no list under data)" in done.both, done.both
    assert "NoneType" not in done.both and "Traceback" not in done.both
    assert cached_rows(victim) == 0


def test_an_answer_longer_than_its_texts_can_explain_is_refused_unread(victim: Path) -> None:
    body = b'{"data": [], "padding": "' + b"x" * (3 * 2**20) + b'"}'
    with HostileServer(Answer(body=body)) as server:
        done = cli(*run(victim, server.url, "batch_size=1", "dimensions=8"))
    assert done.code == 1 and "longer than" in done.both and "bytes" in done.both, done.both


@pytest.mark.parametrize("status", [401, 403, 404])
def test_Z75_a_refused_key_or_model_is_the_users_to_fix(victim: Path, status: int) -> None:
    with HostileServer(Answer(status, body=b'{"error": {"message": "no"}}')) as server:
        done = cli(
            *run(victim, server.url, "batch_size=4", "concurrency=1"), "--out", str(victim / "out")
        )
    assert done.code == 2, done.both
    assert len(server.log) == 1, "batches were sent after one was refused for good"
    assert f"HTTP {status}" in done.both and KEY not in done.both
    line = json.loads((victim / "out" / "results.jsonl").read_text().splitlines()[0])
    assert line["status"] == "failed", (
        "a refusal of the key must be redone by --resume once it is fixed"
    )


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("retries=1000000", "retries must be at most 10"),
        ("backoff=100000", "backoff must be a number between 0 and 30"),
        ("timeout=1e9", "timeout must be a number between"),
        ("concurrency=100000", "concurrency must be at most 32"),
    ],
)
def test_Z135_retries_and_waits_are_bounded(victim: Path, option: str, words: str) -> None:
    done = cli(*run(victim, "http://127.0.0.1:9/v1", option))
    assert done.code == 2 and words in done.err and "Traceback" not in done.both, done.both


def test_Z137_ctrl_c_ends_a_run_whose_requests_wait_on_retry_after(victim: Path) -> None:
    """A server that answers 503 with Retry-After: 3600 to every request. After Ctrl-C the run ends
    with 130 and sends no retry: the waiting requests stop with it (before, the program waited for its
    request threads, whose retry then went out; the count of requests shows it, not the clock)."""
    with HostileServer(Answer(503, {"Retry-After": "3600"}, body=b"{}")) as server:
        command = [
            sys.executable,
            "-m",
            "bias.cli.app",
            *run(victim, server.url, "retries=10", "concurrency=2", "batch_size=4"),
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=victim,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
        )
        deadline = (
            time.monotonic() + 300
        )  # a guard against a hang only: the check below counts requests
        while len(server.log) < 2 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.log) == 2, (
            f"the run sent {len(server.log)} request(s): {process.communicate()}"
        )
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
        assert process.returncode == 130, err
        assert "Interrupted" in err and "Traceback" not in err, err
        assert len(server.log) == 2, "a request was retried after Ctrl-C"


@pytest.mark.parametrize(
    ("status", "code"), [(503, 1), (401, 2), (404, 2)], ids=["down", "key", "model"]
)
def test_D03_a_failed_model_fails_its_later_experiments_at_once(
    victim: Path, status: int, code: int
) -> None:
    """A server that answers every request with an error, and three experiments of one model: the
    first spends the retries, the others fail at once with the same reason. So the three send no
    more requests than one does (without this, each experiment retried in full: a grid of N
    experiments waited N times the retries)."""
    for name in ("ws2.toml", "ws3.toml"):
        (victim / name).write_bytes((victim / "ws.toml").read_bytes())
    sent = []
    reasons = []
    for wordsets in (["ws.toml"], ["ws.toml", "ws2.toml", "ws3.toml"]):
        with HostileServer(Answer(status=status, body=b'{"error": "no"}')) as server:
            args = run(victim, server.url, "retries=2", "backoff=0.01", "cache=false")
            args = [a for a in args if a != str(victim / "ws.toml")]
            at = args.index("--wordset")
            args[at : at + 1] = [x for w in wordsets for x in ("--wordset", str(victim / w))]
            done = cli(*args, cwd=victim)
            assert done.code == code and "Traceback" not in done.both, done.both
            sent.append(len(server.log))
            reasons.append(
                sorted(
                    {
                        line.split(": ", 1)[1]
                        for line in done.both.splitlines()
                        if line.startswith("failed ")
                    }
                )
            )
    assert sent[0] > 0 and sent[1] == sent[0], sent
    # every experiment of the three failed, all with the first one's reason
    assert len(reasons[1]) == 1 and f"HTTP {status}" in reasons[1][0], reasons


@pytest.mark.parametrize(
    ("answer", "words", "code"),
    [
        (Answer(status=503, body=b'{"error": "down"}'), "answered 503", 1),  # the server's trouble: --resume
        (Answer(status=401, body=b'{"error": "key"}'), "answered 401", 2),  # the user's key: theirs to fix
        (Answer(body=b'{"choices": []}' + b" " * 4000, trickle=0.002), "did not answer /completions within 1 s", 1),
    ],
    ids=["down", "key", "trickle"],
)
def test_N17_a_completion_server_that_failed_fails_the_later_requests_at_once(answer, words, code) -> None:
    """A completion server that failed one request (an error, or no whole answer within the timeout)
    is not asked again in the run: each later experiment would wait out the timeout once more."""
    from bias.api import BiasError, ChoiceRequest
    from bias.registry import build_embedder

    with HostileServer(answer) as server:
        model = build_embedder(f"completions:{server.url}[model=m,timeout=1]")
        failures = []
        for _ in range(3):
            with pytest.raises(BiasError) as err:
                model.choice_log_probs([ChoiceRequest("The answer is", (" yes", " no"))])
            failures.append((err.value.message, err.value.exit_code))
        assert len(server.log) == 1, server.log
    assert len(set(failures)) == 1 and words in failures[0][0] and failures[0][1] == code, failures
