"""A shared file never runs code or sends a secret (review 2026-11-28, Z126-Z136, Z63, Z95): every way a
file reaches a model's options (a spec's brackets in [[models]] and [[experiments]], a metric's model
parameter, a converted framework config, the debias.json beside a model) is refused with exit 2 when
it switches on code or names where requests, keys or data go without the command line's --allow;
nothing runs and nothing reaches the server the file names. With --allow the same run goes ahead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bad_input_helpers import (
    Case,
    Outcome,
    World,
    assert_answered,
    cli,
    copy_model,
    write_experiment,
    world,
)  # noqa: F401
from bad_input_helpers import case_decorator, evil_kv, local_wordset, nothing_ran, remote_code_model
from fixtures.hostile_server import HostileServer

CASES: list[Case] = []
case = case_decorator(CASES)
KEY = "sk-victim-SECRET-0123456789abcdef"
DB_PASSWORD = "db-victim-SECRET-42"


def _weat(world: World, folder: Path, model: str) -> str:
    return f'[[experiments]]\nwordset = "{local_wordset(world, folder)}"\nmetric = "weat"\nmodel = {json.dumps(model)}\nparams = {{ bootstrap = 0 }}\n'


# Code in a spec's brackets, however the value is written ------------------------------------------


@case(
    "Z126-models-spec-brackets-allow-pickle",
    names=("exp.toml", "allow_pickle", "--allow-pickle"),
    check=nothing_ran,
)
def _(world, folder):
    body = f'models = ["kv:{evil_kv(folder)}[allow_pickle=true]"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'
    return ["run", str(write_experiment(folder, body))]


@case(
    "Z126-models-table-spec-brackets-allow-pickle-TRUE",
    names=("exp.toml", "allow_pickle", "--allow-pickle"),
    check=nothing_ran,
)
def _(world, folder):
    body = f'wordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n[[models]]\nspec = "kv:{evil_kv(folder)}[ allow_pickle = TRUE ]"\n'
    return ["run", str(write_experiment(folder, body))]


@case(
    "Z127-experiments-model-brackets-allow-pickle-1",
    names=("exp.toml", "allow_pickle", "--allow-pickle"),
    check=nothing_ran,
)
def _(world, folder):
    return [
        "run",
        str(
            write_experiment(folder, _weat(world, folder, f"kv:{evil_kv(folder)}[allow_pickle=1]"))
        ),
    ]


@case(
    "Z128-experiments-model-brackets-trust-remote-code",
    names=("exp.toml", "trust_remote_code", "--trust-remote-code"),
    check=nothing_ran,
)
def _(world, folder):
    return [
        "run",
        str(
            write_experiment(
                folder,
                _weat(
                    world, folder, f"hf:{remote_code_model(world, folder)}[trust_remote_code=on]"
                ),
            )
        ),
    ]


@case(
    "code-option-in-a-metrics-model-parameter",
    names=("exp.toml", "allow_pickle", "--allow-pickle"),
    check=nothing_ran,
)
def _(world, folder):
    body = (
        f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["en/debias-gender"]\nmetrics = ["clustering"]\n'
        f'[params]\noriginal = "kv:{evil_kv(folder)}[allow_pickle=yes]"\n'
    )
    return ["run", str(write_experiment(folder, body))]


# The source_model of a debias.json keeps the options in its brackets, and they are judged as any
# file's: a code option is refused naming the record, the option and the flag (G01).
@case(
    "code-option-in-a-debias-json-source-model",
    names=("debias.json", "allow_pickle", "--allow-pickle"),
    check=nothing_ran,
)
def _(world, folder):
    model = folder / "debiased"
    model.mkdir()
    (model / "vectors.bin").write_bytes(world.w2v_bin.read_bytes())
    (model / "debias.json").write_text(
        json.dumps({"source_model": f"kv:{evil_kv(folder)}[allow_pickle=true]"})
    )
    return [
        "run",
        "-m",
        f"word2vec:{model / 'vectors.bin'}",
        "-w",
        "en/debias-gender",
        "--metric",
        "clustering",
    ]


# G03: an address in a debias.json's source_model was dropped, and the run announced the default host
@case("route-in-a-debias-json-source-model", names=("debias.json", "--allow base_url="))
def _(world, folder):
    model = folder / "debiased"
    model.mkdir()
    (model / "vectors.bin").write_bytes(world.w2v_bin.read_bytes())
    (model / "debias.json").write_text(
        json.dumps({"source_model": "openai:m[base_url=http://127.0.0.1:9/v1]"})
    )
    return ["run", "-m", f"word2vec:{model / 'vectors.bin'}", "-w", "en/debias-gender"] + [
        "--metric",
        "clustering",
    ]


@case(
    "code-option-in-a-framework-config-model-name",
    names=("config.txt", "trust_remote_code", "--trust-remote-code"),
    check=nothing_ran,
)
def _(world, folder):
    _framework(
        world,
        folder,
        "weat1,WEAT,bert,en,remote\nweat1,WEAT,bert,en,remote[trust_remote_code=true]\n",
    )
    return ["run", "config.txt"]


def _framework(world: World, folder: Path, config: str) -> None:
    """A BIAS Detection Framework layout: a WEAT dataset, a model folder whose code would run, and
    `config.txt`."""
    weat = folder / "datasets" / "en" / "WEAT"
    weat.mkdir(parents=True)
    (weat / "weat1.txt").write_text("a, b\nc, d\ne, f\ng, h\n")
    (folder / "models").mkdir()
    remote_code_model(world, folder / "models")
    (folder / "config.txt").write_text(config)


# F01: the same line first in the file was taken for TOML ("--datasets ... not a TOML one")
@case(
    "code-option-in-a-framework-configs-first-line",
    names=("config.txt", "trust_remote_code", "--trust-remote-code"),
    check=nothing_ran,
)
def _(world, folder):
    _framework(world, folder, "weat1,WEAT,bert,en,remote[trust_remote_code=true]\n")
    return ["run", "config.txt", "--datasets", "datasets", "--models", "models"]


# Where requests, keys and data go ------------------------------------------------------------------


def _service(folder: Path, spec: str, extra: str = "") -> str:
    from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

    from bad_input_helpers import words_toml

    words_toml(folder / "ws.toml", X=X_WORDS[:8], Y=Y_WORDS[:8], A=A_WORDS[:8], B=B_WORDS[:8])
    return f'wordsets = ["ws.toml"]\nmetrics = [{{ name = "weat", bootstrap = 0, permutations = 100 }}]\n[[models]]\nspec = "{spec}"\n{extra}'


@pytest.fixture()
def victim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("VICTIM_DB_PASSWORD", DB_PASSWORD)
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


ROUTES = [
    # Z129: base_url in a models table
    (
        "openai:text-embedding-3-small",
        'base_url = "{url}"\n',
        "base_url",
        "--allow base_url={url}",
        KEY,
    ),
    # Z131: base_url inside the spec's brackets
    (
        "openai:text-embedding-3-small[base_url={url}]",
        "",
        "base_url",
        "--allow base_url={url}",
        KEY,
    ),
    # Z130: any variable of the victim as the key (the base_url confirmed, key_env not)
    (
        "openai:text-embedding-3-small",
        'base_url = "{url}"\nkey_env = "VICTIM_DB_PASSWORD"\n',
        "key_env",
        "--allow key_env=VICTIM_DB_PASSWORD",
        DB_PASSWORD,
    ),
]


@pytest.mark.parametrize(
    ("spec", "extra", "field", "allow", "secret"),
    ROUTES,
    ids=["Z129-base-url", "Z131-brackets", "Z130-key-env"],
)
def test_a_files_route_needs_the_command_line_and_nothing_leaves_before(
    victim: Path, spec: str, extra: str, field: str, allow: str, secret: str
) -> None:
    with HostileServer() as server:
        url = server.url
        body = _service(victim, spec.format(url=url), extra.format(url=url))
        config = write_experiment(victim, body)
        confirm_url = ["--allow", f"base_url={url}"] if field == "key_env" else []
        refused = cli("run", str(config), *confirm_url, cwd=victim)
        assert refused.code == 2, refused.both
        assert "Traceback" not in refused.both and len(refused.err_lines()) <= 2, refused.err
        assert (
            str(config) in refused.err
            and field in refused.err
            and allow.format(url=url) in refused.err
        ), refused.err
        assert server.log == [], "a request reached the file's server without confirmation"
        flag, value = allow.format(url=url).split(" ", 1)
        ran = cli("run", str(config), *confirm_url, flag, value, cwd=victim)
        assert ran.code == 0, ran.both
        assert f"sends requests to {url}" in ran.err, ran.err  # said before anything was sent
        assert server.keys() and all(k == f"Bearer {secret}" for k in server.keys())


def test_Z132_a_completion_servers_address_and_key_variable_need_the_command_line(
    victim: Path, world: World
) -> None:
    from bad_input_helpers import write_experiment as write

    with HostileServer() as server:
        body = (
            f'[[experiments]]\nwordset = "{local_wordset(world, victim)}"\nmetric = "bbq"\n'
            f'model = "completions:{server.url}[api_key_env=OPENAI_API_KEY]"\n'
        )
        config = write(victim, body)
        first = cli("run", str(config), cwd=victim)
        assert (
            first.code == 2
            and "api_key_env" in first.err
            and "--allow api_key_env=OPENAI_API_KEY" in first.err
        ), first.both
        second = cli("run", str(config), "--allow", "api_key_env=OPENAI_API_KEY", cwd=victim)
        assert (
            second.code == 2
            and "location" in second.err
            and f"--allow location={server.url}" in second.err
        ), second.both
        assert server.log == []


def test_Z136_a_debiasing_corpus_outside_the_files_folder_needs_the_command_line(
    victim: Path,
) -> None:
    notes = victim / "victim_notes.txt"
    notes.write_text("he said the door code is 4711-SECRET\n")
    shared = victim / "shared"
    shared.mkdir()
    with HostileServer() as server:
        body = _service(
            shared,
            f"openai:text-embedding-3-small[base_url={server.url}]",
            'debias = "sent"\ndebias_corpus = "../victim_notes.txt"\n',
        )
        config = write_experiment(shared, body)
        refused = cli("run", str(config), "--allow", f"base_url={server.url}", cwd=victim)
        assert refused.code == 2 and "debias_corpus" in refused.err, refused.both
        assert f"--allow debias_corpus={notes.resolve()}" in refused.err, refused.err
        assert server.log == []


def test_Z133_a_files_cache_dir_is_read_against_the_file_and_needs_the_command_line(
    victim: Path,
) -> None:
    shared = victim / "shared"
    shared.mkdir()
    with HostileServer() as server:
        body = _service(
            shared,
            f"openai:text-embedding-3-small[base_url={server.url}]",
            'cache_dir = "../outside_cache"\n',
        )
        config = write_experiment(shared, body)
        refused = cli("run", str(config), "--allow", f"base_url={server.url}", cwd=shared)
        outside = (victim / "outside_cache").resolve()
        assert refused.code == 2 and f"--allow cache_dir={outside}" in refused.err, refused.both
        assert not outside.exists() and server.log == []
        ran = cli(
            "run",
            str(config),
            "--allow",
            f"base_url={server.url}",
            "--allow",
            f"cache_dir={outside}",
            cwd=shared,
        )
        assert ran.code == 0 and outside.is_dir(), ran.both


def test_Z134_a_files_price_never_lowers_the_estimate(victim: Path) -> None:
    """price = 0 in a shared file for a model with a list price: the list price counts, so the victim's
    --max-cost stops the run before anything is sent (requests would go to the provider's address,
    which the local proxy variables point at a server that records them)."""
    with HostileServer() as server:
        body = _service(victim, "openai:text-embedding-3-large", "price = 0\n")
        config = write_experiment(victim, body)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{server.port}")
            patch.setenv("NO_PROXY", "")
            done = cli("run", str(config), "--max-cost", "0.0000001", cwd=victim)
        assert done.code == 2, done.both
        assert (
            "above --max-cost" in done.err
            and "the list price of text-embedding-3-large" in done.err
        ), done.err
        assert "price = 0 from" in done.err and "is lower and not used" in done.err, done.err
        assert server.log == []


def test_Z63_an_ipv6_base_url_in_brackets_is_the_address_used() -> None:
    from bias.core.specs import parse_spec, split_options

    bare, options = split_options(
        "openai:text-embedding-3-small[base_url=http://[::1]:47410/v1,retries=0]"
    )
    assert bare == "openai:text-embedding-3-small" and options == {
        "base_url": "http://[::1]:47410/v1",
        "retries": "0",
    }
    assert (
        parse_spec("completions:http://[::1]:8000/v1[api_key_env=K]").location
        == "http://[::1]:8000/v1"
    )
    assert parse_spec("completions:http://[::1]:8000/v1").options == {}


@pytest.mark.parametrize(
    "spec",
    [
        "openai:m[base_url=http://[::1:47410/v1]",
        "openai:m[base_url=http://[::1]]:1/v1]",
        # V03: the closing bracket missing: the whole spec was taken as a model id at OpenAI
        "openai:m[base_url=http://[::1]:47410/v1",
        "openai:m[base_url=http://127.0.0.1:8000/v1",
        # V05: a second bracket after the options: the first was left in the model id
        "openai:m[base_url=http://[::1]:47410/v1][retries=0]",
        "openai:m[base_url=http://127.0.0.1:8000/v1]]",
    ],
)
def test_option_brackets_that_do_not_pair_up_are_refused_never_dropped(spec: str) -> None:
    done = cli("run", "--model", spec, "--wordset", "en/weat1")
    assert done.code == 2 and "do not pair up" in done.err and spec in done.err, done.both
    assert "Traceback" not in done.both and "sends requests" not in done.both, done.both


def test_an_ipv6_base_url_is_where_the_client_sends(victim: Path) -> None:
    """The model built from the spec sends to [::1]: its endpoint, the line said before sending and the
    official client's base URL (this machine may have no IPv6 loopback to answer, so no request)."""
    from bias.registry import build_embedder

    embedder = build_embedder(
        "openai:text-embedding-3-small[base_url=http://[::1]:47410/v1,retries=0]"
    )
    assert embedder.endpoint == "http://[::1]:47410/v1"
    assert [c.line(embedder.spec) for c in embedder.contacts()] == [
        "openai:text-embedding-3-small sends requests to http://[::1]:47410/v1 with the key in OPENAI_API_KEY"
    ]
    embedder.load()
    assert str(embedder._client_object.base_url).rstrip("/") == "http://[::1]:47410/v1"


def test_a_file_may_route_inside_what_the_command_line_allows_only(victim: Path) -> None:
    """Confirming one address does not confirm another: a file with two servers needs both."""
    with HostileServer() as first, HostileServer() as second:
        body = (
            _service(victim, f"openai:text-embedding-3-small[base_url={first.url}]")
            + f'[[models]]\nspec = "openai:m[base_url={second.url}]"\n'
        )
        config = write_experiment(victim, body)
        done = cli("run", str(config), "--allow", f"base_url={first.url}", cwd=victim)
        assert done.code == 2 and f"--allow base_url={second.url}" in done.err, done.both
        assert first.log == [] and second.log == []


@pytest.mark.parametrize("value", ["nonsense", "=x", "base_url=", " = "])
def test_a_malformed_allow_is_refused(value: str) -> None:
    done = cli("run", "--model", "word2vec:x.bin", "--wordset", "en/weat1", "--allow", value)
    assert done.code == 2 and "is not NAME=VALUE" in done.err and "--allow base_url=" in done.err, (
        done.both
    )
    assert len(done.err_lines()) <= 2 and "Traceback" not in done.both


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_guard_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


@pytest.mark.parametrize(
    ("spec", "options"),
    [
        # a dashed key was left in the model id, and the requests went to the provider's own host
        ("openai:m[base-url=http://127.0.0.1:9/v1,retries=0]", {"base-url": "http://127.0.0.1:9/v1", "retries": "0"}),
        ("openai:m[\u200bbase_url=http://127.0.0.1:9/v1]", {"\u200bbase_url": "http://127.0.0.1:9/v1"}),
    ],
)
def test_an_option_key_of_any_spelling_opens_the_options_never_the_model_id(spec, options, monkeypatch) -> None:
    from bias.core.specs import parse_spec

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    parsed = parse_spec(spec)
    assert parsed.location == "m" and parsed.options == options
    done = cli("run", "--model", spec, "--wordset", "en/weat1", "--confirm-cost")
    assert "api.openai.com" not in done.both and "Traceback" not in done.both, done.both
    if "\u200b" in spec:  # no such option: named, with the invisible letter shown
        assert done.code == 2 and "<U+200B>base_url" in done.err, done.both
    else:  # read as base_url: the requests go where it says (nothing listens there)
        assert "sends requests to http://127.0.0.1:9/v1" in done.both, done.both


@pytest.mark.parametrize(
    "spec",
    [
        "openai:m[base url=http://127.0.0.1:9/v1]",  # a space in the key
        "openai:m[base\u00a0url=http://127.0.0.1:9/v1]",  # a no-break space
        "openai:m[base:url=http://127.0.0.1:9/v1]",
        "openai:m[base/url=http://127.0.0.1:9/v1]",
        "openai:m[a[b]=1,base_url=http://127.0.0.1:9/v1]",  # a nested bracket hid the real option
        "openai:m[base_url: http://127.0.0.1:9/v1]",
        "openai:m[base_url\uff1dhttp://127.0.0.1:9/v1]",  # a fullwidth equals sign
        "openai:m[http://127.0.0.1:9/v1]",  # base_url= forgotten
        "openai:m[http://x=1]",
    ],
)
def test_a_bracket_that_looks_like_options_but_is_none_is_refused(spec: str, monkeypatch) -> None:
    """Each of these was left in the model id, and the key and texts went to the provider's own
    host; a bracket with an equals sign, a "key: value" or an address must be options or nothing."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    done = cli("run", "--model", spec, "--wordset", "en/weat1", "--confirm-cost")
    assert done.code == 2 and "something like an option" in done.err, done.both
    assert "sends requests" not in done.both and "Traceback" not in done.both, done.both


@pytest.mark.parametrize(
    "spec",
    [
        "openai:m[base url=http://127.0.0.1:9/v1]/",  # text after the bracket
        "voyage:voyage-3[base url=http://127.0.0.1:9/v1] # local",
        "openai:m\uff3bbase_url=http://127.0.0.1:9/v1\uff3d",  # fullwidth brackets
        "openai:m[base_url:127.0.0.1:9/v1]",
        "openai:m[base url=http://127.0.0.1:9/v1]\u200b",  # an invisible letter after it
        "chat:m[base url=http://127.0.0.1:9/v1]/",
        "openai:m@http://127.0.0.1:9/v1",  # an address in the id: the requests went to the provider
        "chat:m@127.0.0.1:9/v1",  # an address without its scheme
        "openai:m@api.example.com",
        "voyage:localhost:9/v1",
        "openai:127.0.0.1:9",
        "openai:m@127.0.0.1.",  # a trailing dot
        "openai:m@LOCALHOST",
        "openai:m@host.lan:8080",
        "openai:evil.example:8000",
        "openai://evil.example/v1",
    ],
)
def test_a_service_model_id_is_a_plain_id_never_an_unread_option(spec: str, monkeypatch) -> None:
    """Whatever the spec's brackets hide, a provider's model id holds no bracket, equals sign or space:
    sent as an id, the requests and the key would go to the provider's own host."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-not-a-key")
    metric = ("--wordset", "en/bbq-sample", "--metric", "bbq") if spec.startswith("chat:") else ("--wordset", "en/weat1")
    done = cli("run", "--model", spec, *metric, "--confirm-cost")
    refusals = ("is not a model id", "something like an option", "holds an address")
    assert done.code == 2 and any(r in done.err for r in refusals), done.both
    assert "sends requests" not in done.both and "Traceback" not in done.both, done.both


def test_a_stray_bracket_in_a_command_line_base_url_is_refused(monkeypatch) -> None:
    """`--model-option base_url=http://HOST/v1]`: the bracket was kept, and the requests went to
    /v1]/embeddings; an address holds no bracket after its host (an IPv6 host keeps its own)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    for url in ("http://127.0.0.1:9/v1]", "http://[::1]]:9/v1", "http://127.0.0.1:9/v1?x=]"):
        done = cli("run", "--model", "openai:m", "--model-option", f"base_url={url}", "--wordset", "en/weat1", "--confirm-cost")
        assert done.code == 2 and "is not an IPv6 address's" in done.err and url in done.err, done.both
        assert "sends requests" not in done.both and "Traceback" not in done.both, done.both
    from bias.registry import build_embedder

    build_embedder("openai:m[base_url=http://[::1]:9/v1]").check()  # an IPv6 host keeps its brackets


@pytest.mark.parametrize("model_id", ["ft:gpt-4o-mini:org:name:id1", "ft:gpt-4o-mini-2024-07-18:org:suffix:12345", "meta-llama/Llama-3.1-8B-Instruct", "voyage-3.5-lite", "gpt-4o@2024-08-06", "model@v1.5", "intfloat/e5-large:2024/05", "llama3.1:8b", "hf.co/org/Model-GGUF:Q4_K_M"])
def test_the_model_ids_providers_use_pass_the_check(model_id: str, monkeypatch) -> None:
    from bias.registry import build_embedder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    model = build_embedder(f"openai:{model_id}")
    model.check()  # sends nothing; refuses an id that is no model id
    assert model.location == model_id
