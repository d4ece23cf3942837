"""Bad input to the chat path: the `chat:` options, bbq-prompts files, the bbq parameters of generation,
and a chat server that answers badly (a fake one on 127.0.0.1, for failure modes only: 429 with
Retry-After, 5xx, a refused key, a body that is no chat completion, a reply without text, a reply longer
than max_tokens allows). Each gives a one- or two-line message naming the option, file or field, exit 2
for bad usage or input and 1 for a service that fails; the key is never printed or written."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from bad_input_helpers import BBQ_PROMPTS_FILE as PROMPTS
from bad_input_helpers import GOOD_BBQ_VARIANT as GOOD
from bad_input_helpers import cli
from fixtures.quiet_server import QuietHTTPServer

KEY = "sk-chat-bad-input-KEY-5e4d3c2b1a09"
BBQ = [
    "--wordset",
    "en/bbq-sample",
    "--metric",
    "bbq",
    "--param",
    "mode=generate",
    "--param",
    "bootstrap=0",
    "--limit",
    "2",
]


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))


class Fake:
    """A chat server that answers each request with the next planned (status, body, headers), or
    with what a planned function of the request's body returns (requests arrive in any order)."""

    def __init__(self) -> None:
        self.plan: list[tuple[int, object, dict]] = []
        self.seen: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                fake.seen.append({"auth": self.headers.get("Authorization", ""), **body})
                planned = fake.plan.pop(0) if fake.plan else (200, reply("(A)"), {})
                status, answer, headers = planned(body) if callable(planned) else planned
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def reply(content, finish="stop"):
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


@pytest.fixture
def fake():
    server = Fake()
    yield server
    server.stop()


def chat(fake, *options):
    return f"chat:m[base_url={fake.url},retries=1,backoff=0.01{''.join(',' + o for o in options)}]"


def test_a_busy_server_is_waited_out_and_every_reply_sent_once(fake, tmp_path):
    fake.plan = [(429, {"error": {"message": "busy"}}, {"Retry-After": "0.05"})]
    done = cli("run", "--model", chat(fake), *BBQ, "--out", str(tmp_path / "out"))
    assert done.code == 0, done.both
    assert (
        len(fake.seen) == 2 * 5 + 1
    )  # 2 questions x 5 variants, and the one refused for being busy
    assert all(s["auth"] == f"Bearer {KEY}" for s in fake.seen)
    assert {s["model"] for s in fake.seen} == {"m"} and all("n" not in s for s in fake.seen)
    assert KEY not in done.both and KEY not in (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize(
    ("planned", "words"),
    [
        ([(500, {"error": {"message": "down"}}, {})] * 12, "HTTP 500 after 2 attempt(s)"),
        ([(401, {"error": {"message": f"bad key {KEY}"}}, {})] * 12, "refused the API key"),
        ([(200, b"<html>not json</html>", {})] * 12, "not a chat completion"),
        ([(200, {"choices": []}, {})] * 12, "without a reply text"),
        (
            [(200, reply(None), {})] * 12,
            "",
        ),  # no content and no refusal: an empty reply, read as unparsed
        ([(200, reply("B" * 5000), {})] * 12, "did not honour max_tokens"),
    ],
)
def test_a_bad_answer_fails_the_experiment_with_its_reason(fake, tmp_path, planned, words):
    fake.plan = list(planned)
    done = cli("run", "--model", chat(fake, "max_tokens=16"), *BBQ, "--out", str(tmp_path / "out"))
    if not words:
        assert (
            done.code == 2 and "0 of 10 replies to the ambiguous questions answered: 10 empty" in done.both
        )  # every reply empty: nothing to score
        # ... and every reply is in the per-item CSV all the same: it is how a user sees why
        (table,) = (tmp_path / "out").glob("predictions-*.csv")
        rows = table.read_text(encoding="utf-8").splitlines()
        assert len(rows) == 1 + 10 and "reply" in rows[0], rows[:2]
        return
    # A refused key and a body that is no chat completion are the user's to fix (the key, base_url:
    # exit 2, as the README says); a server that keeps failing is a failure (exit 1).
    user_to_fix = words in ("refused the API key", "not a chat completion")
    assert done.code == (2 if user_to_fix else 1), done.both
    assert words in done.both and "Traceback" not in done.both
    assert KEY not in done.both and KEY not in (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--model-option", "base_url=ftp://example.invalid/v1"], "is not an http(s) URL"),
        (["--model-option", "temperature=3"], "temperature must lie between 0.0 and 2.0"),
        (["--model-option", "rate=-1"], "rate must be 0 (no limit) or from 1 to 1000000"),
        (["--model-option", "rate=0.001"], "rate must be 0 (no limit) or from 1 to 1000000"),
        (["--model-option", "samples=0"], "samples must be a positive whole number"),
        (["--param", "mode=chatty"], "mode must be one of auto, loglik, generate"),
        (["--param", "preset=lm_eval"], "preset must be one of"),
        (["--param", "samples=0"], "samples must be a positive whole number"),
        (["--param", "temperature=-0.5"], "temperature must lie between 0.0 and 2.0"),
    ],
)
def test_bad_chat_and_generation_options_exit_2(options, words):
    asked = [a for a in BBQ if a != "mode=generate"]
    asked.remove("--param")
    spec = (
        "chat:m[retries=0]"
        if "base_url" in options[1]
        else "chat:m[base_url=http://127.0.0.1:9/v1,retries=0]"
    )
    done = cli("run", "--model", spec, *asked, *options)
    assert done.code == 2, done.both
    assert words in done.both and len(done.err_lines()) <= 3 and "Traceback" not in done.both


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    done = cli("run", "--model", "chat:m[base_url=http://127.0.0.1:9/v1]", *BBQ)
    assert done.code == 2 and "OPENAI_API_KEY is not set" in done.err


def test_a_chat_model_cannot_be_asked_for_log_likelihoods():
    done = cli(
        "run",
        "--model",
        "chat:m[base_url=http://127.0.0.1:9/v1]",
        "--wordset",
        "en/bbq-sample",
        "--metric",
        "bbq",
        "--param",
        "mode=loglik",
    )
    assert done.code == 2 and "mode=loglik needs answer log-likelihoods" in done.both


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        (GOOD.replace("{context}", "{context!r}"), "variants[0].prompt", "holds {context!r}"),
        (GOOD.replace("{context}", "{context:>9}"), "variants[0].prompt", "holds {context:>9}"),
        (  # P07: {context} 5 times (20,000 times filled memory)
            GOOD.replace("{context}", "{context}" * 5),
            "variants[0].prompt",
            "holds {context} more than 4 times",
        ),
        (
            GOOD.replace("{context}", "x" * 10_001 + "{context}"),
            "variants[0].prompt",
            "at most 10,000",
        ),
        (
            GOOD.replace("{ans2}", "{ans2.__class__}"),
            "variants[0].prompt",
            "only the plain placeholders",
        ),
        (GOOD.replace("{ans2}", "{answer}"), "variants[0].prompt", "only the plain placeholders"),
        (GOOD.replace(" (C) {ans2}", ""), "variants[0].prompt", "lacks {ans2}"),
        (GOOD.replace("{context}", "{context"), "variants[0].prompt", "not a well-formed template"),
        (GOOD + GOOD, "variants[1].name", "repeats the variant name"),
        (GOOD.replace('"v"', '"a b"'), "variants[0].name", "short name"),
        ('letters = ["A", "A", "C"]\n' + GOOD, "letters", "three different short labels"),
        (GOOD + '[rules]\nunknown = "cannot say"\n', "rules.unknown", "list of non-empty texts"),
        (
            GOOD + '[rules]\nrefusal = ["' + "x" * 300 + '"]\n',
            "rules.refusal",
            "a rule is a phrase",
        ),
        # a one-letter phrase is found in almost any reply: every reply would read as unknown
        (GOOD + '[rules]\nunknown = ["a"]\n', "rules.unknown", "shorter than 3 characters"),
        (GOOD + '[rules]\nrefusal = [" no "]\n', "rules.refusal", "shorter than 3 characters"),
        ("", "variants", "missing or empty"),
    ],
)
def test_a_bad_prompts_file_names_the_file_and_field(tmp_path, extra, field, words):
    path = tmp_path / "prompts.toml"
    path.write_text(PROMPTS.format(extra=extra), encoding="utf-8")
    done = cli(
        "run",
        "--model",
        "chat:m[base_url=http://127.0.0.1:9/v1]",
        *BBQ,
        "--param",
        f"prompts={path}",
    )
    assert done.code == 2, done.both
    assert str(path.name) in done.both and field in done.both and words in done.both, done.both
    assert "Traceback" not in done.both


def test_a_prompts_file_of_another_kind_is_refused(tmp_path):
    done = cli(
        "run",
        "--model",
        "chat:m[base_url=http://127.0.0.1:9/v1]",
        *BBQ,
        "--param",
        "prompts=en/weat1",
    )
    assert done.code == 2 and "of kind bbq-prompts" in done.both


def test_a_variant_that_does_not_exist_is_refused_naming_the_ones_that_do(fake, tmp_path):
    done = cli(
        "run",
        "--model",
        chat(fake),
        *BBQ,
        "--param",
        "variant=nope",
        "--out",
        str(tmp_path / "out"),
    )
    assert (
        "no prompt variant 'nope'" in done.both
        and "options, instruction, system, question-first, short" in done.both
    )
    assert not fake.seen


def test_a_run_the_server_breaks_off_resumes_without_sending_a_reply_twice(fake, tmp_path):
    fake.plan = [(200, reply("(A)"), {})] * 3 + [(503, {"error": {"message": "down"}}, {})] * 40
    out = str(tmp_path / "out")
    first = cli("run", "--model", chat(fake), *BBQ, "--out", out)
    assert first.code == 1 and "--resume" in first.both
    fake.plan, sent = [], len(fake.seen)
    again = cli("run", "--model", chat(fake), *BBQ, "--out", out, "--resume")
    assert again.code == 0, again.both
    assert len(fake.seen) - sent == 2 * 5 - 3  # only the replies the first run did not receive


def _rate_file(tmp_path, fake, limit, extra=""):
    experiment = tmp_path / "audit.toml"
    experiment.write_text(
        f'wordsets = ["en/bbq-sample"]\nmetrics = ["bbq"]\nlimit = {limit}\n\n'
        '[params]\nmode = "generate"\nbootstrap = 0\n\n'
        f'[[models]]\nspec = "chat:m"\nbase_url = "{fake.url}"\nrate = 400\n{extra}'
    )
    return ["run", str(experiment), "--allow", f"base_url={fake.url}"]


def test_a_files_rate_limit_is_said_with_the_time_it_adds_before_the_first_request(fake, tmp_path):
    """A shared file can space a run's requests out (rate = 1: one a minute, hours for a few hundred
    replies); the run says so, and how long it makes the run, before it sends anything."""
    paced = "At most 400 request(s) a minute (its rate option): the last is sent about "
    # 2 questions x 5 variants: the last of 10 requests 9 x 60 / 400 = 1.35 s after the first
    # (10 x 0.15 = 1.5 s would say "about 2 seconds"); a price above --max-cost stops the run
    # before any request, with the line said
    args = _rate_file(tmp_path, fake, 2) + ["--out", str(tmp_path / "o")]
    prices = ["--model-option", "price=1000", "--model-option", "price_output=1000"]
    stopped = cli(*args, *prices, "--max-cost", "0.001")
    assert stopped.code == 2 and paced + "1 second after the first" in stopped.both, stopped.both
    assert "above --max-cost 0.001" in stopped.both and fake.seen == []
    # the prices are the command line's, not the file's
    assert "($1000 / $1000 per million input / output tokens" in stopped.both
    assert "from " + str(tmp_path / "audit.toml") not in stopped.both
    done = cli(*args)
    assert done.code == 0 and paced + "1 second after the first" in done.both, done.both
    assert "will send 10 text(s)" in done.both and len(fake.seen) == 10
    # 4 questions, 2 cached: only the 10 new replies are spaced (20 would say "about 3 seconds")
    more = cli(*_rate_file(tmp_path, fake, 4), "--out", str(tmp_path / "o4"))
    assert more.code == 0 and "will send 10 text(s)" in more.both, more.both
    assert "(10 already cached)" in more.both and paced + "1 second after" in more.both
    assert len(fake.seen) == 20


def test_without_the_cache_a_reply_two_experiments_ask_is_counted_twice(fake, tmp_path):
    """Without the reply cache each experiment sends its own requests: two headlines over the same
    10 prompts send 20, and the estimate (its cost, its time) counts 20."""
    args = _rate_file(tmp_path, fake, 2, "cache = false\n")
    args += ["--param", "headline=ambiguous", "--param", "headline=bias-a"]
    done = cli(*args, "--out", str(tmp_path / "o"))
    assert done.code == 0 and "will send 20 text(s)" in done.both, done.both
    assert len(fake.seen) == 20


def test_every_send_retries_included_waits_for_its_turn_under_a_rate(fake, tmp_path, monkeypatch):
    """`rate` counts every request sent: a retry after a 429 waits for its turn as a first try does.
    The first retry is said as a warning, later ones only with -v."""
    from bias.core.models.chat_service import ChatServiceModel

    paced = []
    real = ChatServiceModel._pace
    monkeypatch.setattr(ChatServiceModel, "_pace", lambda self, stop: (paced.append(1), real(self, stop)))
    busy = (429, {"error": {"message": "busy"}}, {"Retry-After": "0.05"})
    fake.plan = [busy, busy]
    done = cli("run", "--model", chat(fake, "rate=6000"), *BBQ, "--out", str(tmp_path / "o"))
    assert done.code == 0, done.both
    assert len(fake.seen) == 12 and len(paced) == 12  # 10 replies and 2 sent again
    assert done.both.count("sending again in") == 1
    assert "Later retries of this model are said with bias -v." in done.both


def test_each_result_records_the_requests_its_experiment_sent(fake, tmp_path):
    """model_info.sent is each experiment's share of what the model sent (a count taken when the
    model loaded said 0 requests for every run): the first of two headlines over the same prompts
    sends 10, the second finds them cached."""
    args = ["--param", "headline=ambiguous", "--param", "headline=bias-a"]
    done = cli("run", "--model", chat(fake), *BBQ, *args, "--out", str(tmp_path / "o"))
    assert done.code == 0, done.both
    results = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    sent = [r["meta"]["model_info"]["sent"] for r in results]
    assert sorted(s["requests"] for s in sent) == [0, 10] and len(fake.seen) == 10
    assert sorted(s["cached"] for s in sent) == [0, 10]
    assert sum(s["prompt_tokens"] for s in sent) == 10 * 10  # the fake says 10 prompt tokens a reply
    assert all("sampling" not in r["meta"]["model_info"] for r in results)  # the defaults are named so
    assert results[0]["meta"]["model_info"]["default_sampling"]["max_tokens"] == 256


@pytest.mark.parametrize(
    ("planned", "words"),
    [
        # a FastAPI server's body: openai's own message is only "Error code: 400"
        ((400, {"detail": "Server is pinned to 'tiny'; requested 'm'."}, {}), "requested 'm'"),
        ((400, {"error": {"message": "unknown option frobnicate"}}, {}), "unknown option"),
        ((404, {"detail": "Not Found"}, {}), "usually ends in /v1"),
        # OpenAI's answer to a mistyped model at an address with /v1: no /v1 hint
        ((404, {"error": {"message": "The model `gpt-5x` does not exist"}}, {}), "does not exist"),
    ],
)
def test_a_refused_request_says_the_servers_words(fake, tmp_path, planned, words):
    fake.plan = [planned] * 12
    model = chat(fake)
    if words == "usually ends in /v1":  # the address without its /v1
        model = model.replace(fake.url, fake.url.removesuffix("/v1"))
    done = cli("run", "--model", model, *BBQ, "--out", str(tmp_path / "out"))
    assert done.code == 2 and words in done.both, done.both
    assert "HTTP " + str(planned[0]) in done.both
    assert ("usually ends in /v1" in done.both) == (words == "usually ends in /v1")


def test_a_server_that_is_not_running_is_said_so(tmp_path):
    """Nothing listening at base_url: after the retries, the hint is where to look (the server, the
    address), not --resume (nothing was received to resume from)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = f"chat:m[base_url=http://127.0.0.1:{port}/v1,retries=1,backoff=0.01]"
    done = cli("run", "--model", spec, *BBQ, "--out", str(tmp_path / "out"))
    assert done.code == 1 and "no connection to the service after 2 attempt(s)" in done.both
    assert "is the server running, and is base_url right? Then run again with --resume" in done.both
    assert "received so far is cached" not in done.both  # nothing was


def test_a_long_batch_of_requests_says_how_far_it_has_got(fake, tmp_path, monkeypatch):
    """A run of thousands of chat requests printed nothing for minutes: every PROGRESS_EVERY seconds
    (0 here: after every reply) a line says how many were answered, unless -q."""
    from bias.core.models import services

    monkeypatch.setattr(services, "PROGRESS_EVERY", 0.0)
    done = cli("run", "--model", chat(fake, "concurrency=1"), *BBQ, "--out", str(tmp_path / "o"))
    assert done.code == 0, done.both
    told = [line for line in done.err.splitlines() if "requests answered after" in line]
    assert len(told) == 9 and "1 of 10 requests answered after" in told[0], done.err  # not after the last
    assert "9 of 10 requests answered after" in told[-1] and "left at this pace." in told[-1]
    quiet = cli("-q", "run", "--model", chat(fake, "concurrency=1", "cache=false"), *BBQ, "--out", str(tmp_path / "q"))
    assert quiet.code == 0 and "requests answered" not in quiet.both and len(fake.seen) == 20
