"""Every way a file reaches a model's options, generated (hypothesis): a spec with brackets in
[[models]] (string or table), in [[experiments]] (string or table), table keys beside the spec, the
values written as TOML booleans or in any spelling the parameters read as true, and a converted BIAS
Detection Framework config. No option declared guard="code" ever reaches a built model from a file,
and no option declared guard="route" (nor a network LOCATION) reaches one without the command line's
`--allow NAME=VALUE` for exactly that value: the check runs on the parsed options, not on the text."""

from __future__ import annotations

import shlex

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bias.core.errors import BiasError
from bias.engine import guards
from bias.engine.front_door import read_run_file
from bias.registry import build_embedder

FLAGS = {"allow_pickle": "--allow-pickle", "trust_remote_code": "--trust-remote-code"}
TRUE_TEXTS = st.sampled_from(["true", "TRUE", "True", "1", "yes", "on", " on ", "Yes"])
CODE = st.sampled_from(
    [("kv", "model.kv", "allow_pickle"), ("hf", "bert-folder", "trust_remote_code")]
)
HOSTS = st.sampled_from(
    ["127.0.0.1", "localhost", "[::1]", "evil.example", "10.0.0.7", "[fe80::1]"]
)
PORTS = st.integers(min_value=1, max_value=65535)
ENV_NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,15}", fullmatch=True)


def _toml_value(value: Any) -> str:
    return json.dumps(value)  # a TOML value: a string, true/false, a number


def _file(
    folder: Path,
    form: str,
    embedder: str,
    location: str,
    option: str,
    value: Any,
    in_brackets: bool,
) -> Path:
    """An experiment file giving `option = value` to one model, in one of the four forms."""
    spec = f"{embedder}:{location}" + (f"[{option}={value}]" if in_brackets else "")
    key = "" if in_brackets else f"{option} = {_toml_value(value)}"
    if form == "models-string" and in_brackets:
        body = f'models = [{json.dumps(spec)}]\nwordsets = ["en/weat1"]\nmetrics = ["weat"]\n'
    elif form.startswith("models"):
        body = f'wordsets = ["en/weat1"]\nmetrics = ["weat"]\n[[models]]\nspec = {json.dumps(spec)}\n{key}\n'
    elif form == "experiments-string" and in_brackets:
        body = (
            f'[[experiments]]\nwordset = "en/weat1"\nmetric = "weat"\nmodel = {json.dumps(spec)}\n'
        )
    else:
        model = "{ spec = " + json.dumps(spec) + (f", {key}" if key else "") + " }"
        body = f'[[experiments]]\nwordset = "en/weat1"\nmetric = "weat"\nmodel = {model}\n'
    path = folder / "exp.toml"
    path.write_text(body, encoding="utf-8")
    return path


FORMS = st.sampled_from(
    ["models-string", "models-table", "experiments-string", "experiments-table"]
)


def _checked(path: Path, allow: tuple[str, ...] = ()) -> list[Any]:
    """The experiments of a file as `bias run` reads them, held to what a file may decide."""
    experiments = read_run_file(path, None, None, lambda _: None, FLAGS).experiments()
    guards.check_file_experiments(experiments, guards.Allowed.parse(allow), FLAGS)
    return experiments


def _built(experiments: list[Any]) -> list[Any]:
    return [build_embedder(e.model.parsed, e.model.debias) for e in experiments]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    code=CODE,
    form=FORMS,
    in_brackets=st.booleans(),
    text=TRUE_TEXTS,
    as_bool=st.booleans(),
    dashed=st.booleans(),
)
def test_no_code_option_from_a_file_reaches_a_model(
    tmp_path: Path, code, form, in_brackets, text, as_bool, dashed
) -> None:
    embedder, location, option = code
    written = (
        option.replace("_", "-") if dashed and not in_brackets else option
    )  # brackets take identifiers only
    value: Any = True if (as_bool and not in_brackets) else text
    path = _file(tmp_path, form, embedder, location, written, value, in_brackets)
    try:
        experiments = _checked(path)
    except BiasError as exc:
        assert exc.exit_code == 2
        assert str(path) in exc.message and written in exc.message and "run code" in exc.message, (
            exc.message
        )
        assert FLAGS[option] in (exc.hint or ""), exc.hint
        return
    for model in _built(
        experiments
    ):  # had it not been refused, the model would have the option off
        assert not getattr(model, option, False), (
            f"{option} reached the model from {path.read_text()}"
        )
    pytest.fail(f"a truthy {option} in a file was not refused:\n{path.read_text()}")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    form=FORMS,
    in_brackets=st.booleans(),
    host=HOSTS,
    port=PORTS,
    variable=ENV_NAMES,
    which=st.sampled_from(["base_url", "key_env"]),
)
def test_no_route_option_from_a_file_reaches_a_model_unconfirmed(
    tmp_path: Path, form, in_brackets, host, port, variable, which
) -> None:
    value = f"http://{host}:{port}/v1" if which == "base_url" else variable
    path = _file(tmp_path, form, "openai", "text-embedding-3-small", which, value, in_brackets)
    with pytest.raises(BiasError) as refused:
        _checked(path)
    assert str(path) in refused.value.message and which in refused.value.message
    # quoted for a shell where the value needs it (an IPv6 host's brackets)
    assert f"--allow {shlex.quote(f'{which}={value}')}" in (refused.value.hint or ""), refused.value.hint
    with pytest.raises(BiasError):  # another value confirmed is no confirmation
        _checked(path, (f"{which}={value}x",))
    experiments = _checked(
        path, (f"{which}={value}",)
    )  # confirmed: the value reaches the model as written
    assert [getattr(m, which) for m in _built(experiments)] == [value]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(form=FORMS, host=HOSTS, port=PORTS)
def test_a_network_location_from_a_file_needs_the_command_line(
    tmp_path: Path, form, host, port
) -> None:
    url = f"http://{host}:{port}/v1"
    path = _file(
        tmp_path, form, "completions", url, "batch_size", 2, in_brackets=form.endswith("string")
    )
    with pytest.raises(BiasError) as refused:
        _checked(path)
    assert "location" in refused.value.message and f"--allow {shlex.quote(f'location={url}')}" in (
        refused.value.hint or ""
    )
    assert [m.location for m in _built(_checked(path, (f"location={url}",)))] == [url]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=TRUE_TEXTS,
    embedding=st.sampled_from(["bert", "bert_pooling", "bert_first"]),
    upper=st.booleans(),
)
def test_a_framework_configs_model_name_cannot_switch_on_code(
    tmp_path: Path, text, embedding, upper
) -> None:
    """A converted BIAS Detection Framework config: the model name (its fifth field, so no comma)
    reaches the spec as written, brackets included, and is held to the same rule."""
    weat = tmp_path / "datasets" / "en" / "WEAT"
    weat.mkdir(parents=True, exist_ok=True)
    (weat / "weat1.txt").write_text("a, b\nc, d\ne, f\ng, h\n")
    (tmp_path / "models").mkdir(exist_ok=True)
    key = "TRUST_REMOTE_CODE" if upper else "trust_remote_code"
    config = tmp_path / "config.txt"
    config.write_text(
        "# a first line without '=', so the file reads as a framework config\n"
        f"weat1,WEAT,{embedding},en,bert\nweat1,WEAT,{embedding},en,folder[{key}={text.strip()}]\n"
    )
    with pytest.raises(BiasError) as refused:
        spec = read_run_file(config, tmp_path / "datasets", tmp_path / "models", lambda _: None, FLAGS)
        experiments = spec.experiments()
        guards.check_file_experiments(experiments, guards.Allowed(), FLAGS)
    assert "trust_remote_code" in refused.value.message and "--trust-remote-code" in (
        refused.value.hint or ""
    )


def test_the_command_line_may_do_what_a_file_may_not() -> None:
    """A model given on the command line is the user's: its code and route options are not checked."""
    from bias.engine.experiments import Experiment, ModelConfig

    model = ModelConfig("openai:m[base_url=http://127.0.0.1:9/v1,key_env=MY_KEY]")
    guards.check_file_experiments([Experiment(model, "en/weat1", "weat")], guards.Allowed(), FLAGS)
    assert model.origin == "" and model.options["base_url"] == "http://127.0.0.1:9/v1"


def test_default_values_route_nowhere_new(tmp_path: Path) -> None:
    """A file that writes a route option's own default (api_key_env = "": no key sent) decides nothing;
    a code option's key is refused whatever its value (allow_pickle = false too: the file has no such key)."""
    url = "http://127.0.0.1:9/v1"
    path = _file(tmp_path, "models-table", "completions", url, "api_key_env", "", in_brackets=False)
    assert len(_checked(path, (f"location={url}",))) == 1
    path = _file(
        tmp_path, "models-table", "kv", "model.kv", "allow_pickle", False, in_brackets=False
    )
    with pytest.raises(BiasError):
        _checked(path)


def test_paths_a_file_reads_stay_in_its_folder_unless_allowed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "notes.txt").write_text("a secret line\n")
    (shared / "corpus.txt").write_text("a shared line\n")
    path = shared / "exp.toml"
    for value in ("../notes.txt", str(tmp_path / "notes.txt")):
        path.write_text(
            f'models = ["word2vec:v.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["ceat"]\n[params]\ncorpus = {json.dumps(value)}\n'
        )
        with pytest.raises(BiasError) as refused:
            _checked(path)
        assert f"--allow corpus={(tmp_path / 'notes.txt').resolve()}" in (refused.value.hint or "")
        _checked(path, (f"corpus={tmp_path / 'notes.txt'}",))
    path.write_text(
        'models = ["word2vec:v.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["ceat"]\n[params]\ncorpus = "corpus.txt"\n'
    )
    assert _checked(path)[0].params["corpus"] == str(shared / "corpus.txt")


def test_a_link_in_the_files_folder_that_leads_out_counts_as_outside(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "notes.txt").write_text("a secret line\n")
    (shared / "corpus.txt").symlink_to(tmp_path / "notes.txt")
    path = shared / "exp.toml"
    path.write_text(
        'models = ["word2vec:v.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["ceat"]\n[params]\ncorpus = "corpus.txt"\n'
    )
    with pytest.raises(BiasError):
        _checked(path)


def test_guards_are_read_from_declarations() -> None:
    """The first-party options carry their guard where they are declared; the engine names none."""
    from bias.core.params import describe_params, guarded
    from bias.registry.resolve import embedder_class

    assert set(guarded(embedder_class("kv"), "code")) == {"allow_pickle"}
    assert set(guarded(embedder_class("hf"), "code")) == {"trust_remote_code"}
    assert set(guarded(embedder_class("openai"), "route")) == {"base_url", "key_env", "cache_dir"}
    assert set(guarded(embedder_class("completions"), "route")) == {"api_key_env"}
    assert (
        embedder_class("completions").location_is_address
        and not embedder_class("openai").location_is_address
    )
    assert [p.guard for p in describe_params(embedder_class("openai")) if p.name == "price"] == [
        "cost"
    ]
    engine = (Path(guards.__file__).parent).glob("*.py")
    for module in engine:
        text = module.read_text(encoding="utf-8")
        for name in ("allow_pickle", "trust_remote_code", "base_url", "api_key_env"):
            assert f'"{name}"' not in text, f"{module.name} names the plugin option {name}"


def test_param_refuses_an_unknown_guard() -> None:
    from bias.core.params import param

    with pytest.raises(ValueError):
        param(None, "x", guard="network")
