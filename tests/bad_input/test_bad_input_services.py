"""Bad input to the embedding-service embedders (`openai:`, `voyage:`) and to --max-cost: a clear
message naming the option or variable, exit 2 for usage, 1 for a service that cannot be reached, and
the key never in what is printed. Nothing here leaves 127.0.0.1."""

from __future__ import annotations

import pytest

from bad_input_helpers import cli
from fixtures.ports import free_port

KEY = "sk-bad-input-KEY-0d9e8c7b6a5f4e3d"
WEAT = ["--wordset", "en/weat1", "--metric", "weat", "--permutations", "100", "--bootstrap", "0"]


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize(("spec", "variable"), [("openai:text-embedding-3-small", "OPENAI_API_KEY"), ("voyage:voyage-3", "VOYAGE_API_KEY")])
def test_missing_key_names_the_variable(monkeypatch, spec, variable):
    monkeypatch.delenv(variable)
    done = cli("run", "--model", spec, *WEAT)
    assert done.code == 2
    assert f"no API key: the environment variable {variable} is not set" in done.err
    assert len(done.err_lines()) <= 2 and "Traceback" not in done.both


def test_key_env_names_another_variable(monkeypatch):
    done = cli("run", "--model", "openai:m", "--model-option", "key_env=MY_EMBEDDING_KEY", *WEAT)
    assert done.code == 2 and "MY_EMBEDDING_KEY is not set" in done.err


def test_unreachable_url_fails_the_experiment_without_the_key(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = cli("run", "--model", "openai:m", "--model-option", f"base_url={url}", "--model-option", "retries=1",
               "--model-option", "backoff=0.01", *WEAT, "--out", str(tmp_path / "out"))
    assert done.code == 1
    assert "no connection to the service after 2 attempt(s)" in done.both
    assert "--resume" in done.both
    assert KEY not in done.both and KEY not in (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("dimensions=abc", "dimensions"),
        ("dimensions=0", "dimensions"),
        ("concurrency=0", "concurrency"),
        ("base_url=ftp://example.invalid/v1", "is not an http(s) URL"),
        ("timeout=0", "timeout must be a number between 0.001 and 600"),
        ("price=-1", "price must be a number >= 0"),
        ("no_such_option=1", "no_such_option"),
    ],
)
def test_bad_option_is_refused_before_any_request(option, words):
    done = cli("run", "--model", "openai:m", "--model-option", option, *WEAT)
    assert done.code == 2, done.both
    assert words in done.err and "Traceback" not in done.both and KEY not in done.both


def test_bad_voyage_input_type():
    done = cli("run", "--model", "voyage:voyage-3", "--model-option", "input_type=passage", *WEAT)
    assert done.code == 2 and "input_type" in done.err and "query" in done.err


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_bad_max_cost(value):
    done = cli("run", "--model", "openai:m", *WEAT, "--max-cost", value)
    assert done.code == 2 and "--max-cost" in done.err


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("openai:m[base_url=http://127.0.0.1:9/v1,2]", "'2' in the brackets is not an option"),
        ("openai:m[dimensions=8,dimensions=9]", "gives dimensions twice"),
        ("openai:m[dimensions=abc]", "dimensions"),
        ("openai:m[colour=blue]", "colour"),
        ("[base_url=http://127.0.0.1:9/v1]", "not of the form NAME:LOCATION"),
        ("openai:m[debias_lists=en/debias-gender]", "debias_lists given without --debias"),
    ],
)
def test_bad_options_in_the_spec_brackets_exit_2_naming_them(spec, words):
    """`NAME:LOCATION[KEY=VALUE,...]` is read like --model-option: a malformed or unknown option is
    refused before any request, naming it."""
    done = cli("run", "--model", spec, *WEAT)
    assert done.code == 2, done.both
    assert words in done.err
    assert len(done.err_lines()) <= 2 and "Traceback" not in done.both and KEY not in done.both
