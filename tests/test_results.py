"""The results file survives an interrupted writer, and experiment keys are stable."""

from __future__ import annotations

import json

import pytest

from bias.core.errors import BiasError
from bias.core.experiments import Experiment, ModelConfig, load_config
from bias.core.model import Result
from bias.core.results import ResultStore, read_results
from bias.core.runner import prepare


def result(key: str, d: float = 0.5) -> Result:
    return Result(key=key, model="word2vec:x.bin", wordset="en/weat1", metric="weat", effect_size=d, p_value=0.01)


def test_torn_last_line_is_ignored_then_repaired(tmp_path):
    store = ResultStore(tmp_path)
    store.append(result("a"))
    store.append(result("b"))
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write(result("c").to_json()[:40])  # a writer killed mid-line
    assert [r.key for r in store.read()] == ["a", "b"]
    assert store.done_keys() == {"a", "b"}
    store.append(result("c"))
    lines = store.path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["a", "b", "c"]


def test_corruption_in_the_middle_is_an_error_not_silent_loss(tmp_path):
    store = ResultStore(tmp_path)
    store.append(result("a"))
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    store.append(result("b"))
    with pytest.raises(BiasError, match="line 2"):
        read_results(tmp_path)


def test_failed_experiments_are_redone_on_resume(tmp_path):
    store = ResultStore(tmp_path)
    store.append(result("ok"))
    store.append(Result(key="boom", model="m", wordset="w", metric="weat", status="failed", reason="RuntimeError"))
    assert store.done_keys() == {"ok"}


def test_key_is_the_same_whether_defaults_are_written_or_not():
    model = ModelConfig("word2vec:x.bin")
    implicit = prepare([Experiment(model, "en/weat1", "weat", {}, 0)])[0].experiment
    explicit = prepare([Experiment(model, "en/weat1", "weat", {"permutations": 100_000, "ddof": 1}, 0)])[0].experiment
    other = prepare([Experiment(model, "en/weat1", "weat", {"ddof": 0}, 0)])[0].experiment
    assert implicit.key == explicit.key != other.key
    assert implicit.params["exact_limit"] == 100_000


def test_config_errors_name_the_file_and_field(tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text('wordsets = ["en/weat1"]\nmetrics = ["weat"]\nmodels = [{ path = "x" }]\n')
    with pytest.raises(BiasError, match=r"exp.toml: models\[0\]"):
        load_config(config)
    config.write_text('wordsets = ["en/weat1"]\nmetrics = ["weat"]\nmodels = ["word2vec:x"]\nsead = 1\n')
    with pytest.raises(BiasError, match="sead"):
        load_config(config)
