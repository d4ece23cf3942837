"""A hostile second reading of the chat path: `chat:` options given empty or with a password in the
address, an unpriced model at the provider's own (paid) address, a server's JSON nested too deep, a
reply cache altered on disk, and bbq-prompts files whose letters do not label the answers they list.
Every case exits 2 (or 1 for a failing service) with a one- or two-line message naming the option,
file or field, and sends nothing where it should not: requests to the provider's address go through
the proxy variables to a sink on 127.0.0.1 that records them."""

from __future__ import annotations

import json
import socketserver
import sqlite3
import threading
import zlib

import pytest

from bad_input_helpers import BBQ_PROMPTS_FILE as PROMPTS
from bad_input_helpers import GOOD_BBQ_VARIANT as GOOD
from bad_input_helpers import cli
from test_bad_input_chat import Fake

KEY = "sk-chat-hostile-KEY-0a1b2c3d4e5f6789"
BBQ = ["--wordset", "en/bbq-sample", "--metric", "bbq", "--param", "mode=generate"]
SMALL = [*BBQ, "--param", "bootstrap=0", "--limit", "1"]


class ProxySink:
    """Where the proxy variables send requests for the provider's own address: it records each
    request's first line (`CONNECT api.openai.com:443 ...`) and lets nothing through."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                sink.lines.append(self.rfile.readline(4096))
                self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def sink(monkeypatch):
    proxy = ProxySink()
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "")
    yield proxy
    proxy.stop()


@pytest.fixture
def fake():
    server = Fake()
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("chat:m[base_url=]", "base_url is empty"),
        ("chat:m[base_url=http://127.0.0.1:9/v1,key_env=]", "key_env is empty"),
        (["chat:m", "--model-option", "base_url=http://[::1:9/v1"], "is not a well-formed URL"),
        ("chat:m[base_url=http://127.0.0.1:port/v1]", "is not a well-formed URL"),
    ],
)
def test_an_empty_or_malformed_address_option_is_refused_not_dropped(sink, spec, words):
    """An empty base_url would send the key to the provider's own address, an empty key_env the
    provider's usual key: refused before anything is sent."""
    given = spec if isinstance(spec, list) else [spec]
    done = cli("run", "--model", *given, *SMALL)
    assert done.code == 2, done.both
    assert words in done.err and len(done.err_lines()) <= 3 and "Traceback" not in done.both
    assert sink.lines == []


def test_a_password_in_base_url_is_refused_and_never_printed(fake, tmp_path):
    """The client would send user:password in place of the key, and the spec holding it would be
    written into results.jsonl, the manifest and the report."""
    address = fake.url.replace("http://", "http://alice:hunter2secret@")
    done = cli(
        "run", "--model", f"chat:m[base_url={address}]", *SMALL, "--out", str(tmp_path / "o")
    )
    assert done.code == 2, done.both
    assert "user name or password" in done.err and "hunter2secret" not in done.both
    assert fake.seen == [] and not (tmp_path / "o" / "results.jsonl").exists()


def _many_replies(folder, spec, extra=""):
    folder.mkdir(exist_ok=True)
    config = folder / "run.toml"
    config.write_text(
        'wordsets = ["en/bbq-sample"]\n'
        'metrics = [{ name = "bbq", mode = "generate", bootstrap = 0, samples = 1000, '
        "temperature = 1.0, max_tokens = 32768 }]\n"
        f'[[models]]\nspec = "{spec}"\n{extra}',
        encoding="utf-8",
    )
    return config


@pytest.mark.parametrize("extra", ["", "price = 0\nprice_output = 0\n"])
def test_a_file_cannot_spend_on_an_unpriced_model_at_the_providers_address(sink, tmp_path, extra):
    """A shared file names a model without a list price at the provider's own address, with 1,000
    samples of 32,768 tokens (its own price of 0, or none): --max-cost cannot be checked, so the
    run stops before anything is sent unless the user confirms the cost."""
    config = _many_replies(tmp_path / "shared", "chat:unpriced-model", extra)
    done = cli("run", str(config), "--limit", "1", cwd=tmp_path / "shared")
    assert done.code == 2, done.both
    assert "price is not known" in done.err and "--confirm-cost" in done.err, done.err
    assert sink.lines == []


def test_json_nested_too_deep_is_not_a_chat_completion(fake, tmp_path):
    """A server's body nested 100,000 deep: Python's parser gives up (RecursionError); the user
    reads that the answer is no chat completion, and no further request is sent."""
    deep = b"[" * 100_000 + b"]" * 100_000
    fake.plan = [(200, deep, {})] * 12
    spec = f"chat:m[base_url={fake.url},retries=0,concurrency=1]"
    done = cli("run", "--model", spec, *SMALL, "--out", str(tmp_path / "o"))
    assert done.code == 2, done.both
    assert "not a chat completion" in done.both and "RecursionError" not in done.both
    assert len(fake.seen) == 1


def test_a_reply_altered_in_the_cache_beyond_max_tokens_is_asked_again(fake, tmp_path):
    """A cached reply rewritten on disk (checksum kept) into 50,000 characters for 16 tokens: read,
    it would be scored and copied into the per-item file; it is asked again instead."""
    spec = f"chat:m[base_url={fake.url},max_tokens=16]"
    first = cli("run", "--model", spec, *SMALL, "--out", str(tmp_path / "a"))
    assert first.code == 0, first.both
    asked = len(fake.seen)
    (database,) = (tmp_path / "cache").rglob("*.sqlite")
    with sqlite3.connect(database) as db:
        for (key,) in db.execute("SELECT key FROM rows").fetchall():
            data = json.dumps({"text": "(C)" + " x" * 25_000, "finish": "stop"}).encode()
            db.execute(
                "UPDATE rows SET dim = ?, crc = ?, data = ? WHERE key = ?",
                (len(data), zlib.crc32(data), data, key),
            )
    again = cli("run", "--model", spec, *SMALL, "--out", str(tmp_path / "b"))
    assert again.code == 0, again.both
    assert len(fake.seen) == 2 * asked  # every altered reply asked again
    rows = next((tmp_path / "b").glob("predictions-*.csv")).read_text(encoding="utf-8")
    assert " x x x" not in rows


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        # replies "(A)" would be read as the answer the prompt listed under another letter
        (
            GOOD.replace("(A) {ans0} (B) {ans1}", "(A) {ans1} (B) {ans0}"),
            "variants[0].prompt",
            "without its letter 'B'",
        ),
        ('letters = ["B", "C", "A"]\n' + GOOD, "variants[0].prompt", "without its letter 'B'"),
        ('letters = ["X", "Y", "Z"]\n' + GOOD, "variants[0].prompt", "without its letter 'X'"),
        ('letters = ["A", "B", "\\u202e"]\n' + GOOD, "letters", "labels of printable characters"),
        (GOOD.replace("{ans2}", "{ans2} " + "x" * 5000), "variants[0].prompt", "characters long"),
        (GOOD + 'system = "' + "y" * 5000 + '"\n', "variants[0].system", "characters long"),
    ],
)
def test_a_prompts_file_whose_letters_do_not_label_its_answers_is_refused(
    tmp_path, extra, field, words
):
    path = tmp_path / "prompts.toml"
    path.write_text(PROMPTS.format(extra=extra), encoding="utf-8")
    done = cli(
        "run",
        "--model",
        "chat:m[base_url=http://127.0.0.1:9/v1]",
        *SMALL,
        "--param",
        f"prompts={path}",
    )
    assert done.code == 2, done.both
    assert path.name in done.err and field in done.err and words in done.err, done.err
    assert len(done.err_lines()) <= 3 and "Traceback" not in done.both


def test_prompts_of_another_language_are_said_in_the_result(fake, tmp_path):
    path = tmp_path / "prompts.toml"
    path.write_text(PROMPTS.format(extra=GOOD).replace('"en"', '"de"'), encoding="utf-8")
    out = tmp_path / "o"
    done = cli(
        "run",
        "--model",
        f"chat:m[base_url={fake.url}]",
        *SMALL,
        "--param",
        f"prompts={path}",
        "--out",
        str(out),
    )
    assert done.code == 0, done.both
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert any("questions are in 'en'" in w and "'de'" in w for w in result["warnings"])


def test_a_reply_with_a_lone_surrogate_is_written_not_fatal(fake, tmp_path):
    """JSON may escape a lone surrogate ("\\ud800"), which UTF-8 cannot hold: the reply is kept with
    U+FFFD in its place, so the result and its per-item file are written (before, the run stopped
    with exit 2 after every reply had been received)."""
    body = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "@@ (A)"},
                }
            ]
        }
    )
    fake.plan = [(200, body.replace("@@", "\\ud800").encode(), {})] * 5
    out = tmp_path / "o"
    done = cli("run", "--model", f"chat:m[base_url={fake.url}]", *SMALL, "--out", str(out))
    assert done.code == 0, done.both
    rows = next(out.glob("predictions-*.csv")).read_text(encoding="utf-8")
    assert "\ufffd (A)" in rows
