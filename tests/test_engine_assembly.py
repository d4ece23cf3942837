"""Options into a plan without the command line: the grid of models, word sets, metrics and seeds, the
experiment file and the flags that may go with it, and the combinations refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_experiments import config, write_sets

from bias.core.errors import BiasError
from bias.engine.assembly import RunOptions, assemble, checked_executor, out_of_file, with_original
from bias.engine.experiments import ModelConfig


@pytest.fixture()
def sets(tmp_path):
    return write_sets(tmp_path)


def test_the_grid_of_options_becomes_one_planned_experiment_per_combination(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    options = RunOptions(models=[model], wordsets=[str(sets[0])], metrics=["weat"], seeds=[3, 4], params={"permutations": 100}, grid={"ddof": [0, 1]})
    assembly = assemble(options)
    planned = [(p.experiment.seed, p.experiment.params["ddof"], p.experiment.params["permutations"]) for p in assembly.plan.runnable]
    assert sorted(planned) == [(3, 0, 100), (3, 1, 100), (4, 0, 100), (4, 1, 100)]
    assert {p.experiment.model.spec for p in assembly.plan.runnable} == {model}
    assert (assembly.family, assembly.executor, assembly.ray_address, assembly.out, assembly.after_model) == ("run", "local", None, None, None)
    assert assembly.settings == {}


def test_an_experiment_file_takes_its_settings_and_the_seeds_of_the_command_line(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", 'family = "metric"\nout = "results"\n')
    assembly = assemble(RunOptions(config=path, seeds=[7, 8]))
    assert sorted(p.experiment.seed for p in assembly.plan.runnable) == [7, 8]
    assert assembly.family == "metric" and assembly.settings["title"] == "test batch"
    assert assembly.out == tmp_path / "results"


def test_out_on_the_command_line_replaces_the_files_out_and_says_so(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", 'out = "results"\n')
    notices: list[str] = []
    assembly = assemble(RunOptions(config=path, out=tmp_path / "elsewhere"), on_notice=notices.append)
    assert assembly.out == tmp_path / "elsewhere"
    assert notices == [f"--out {tmp_path / 'elsewhere'} replaces the experiment file's out = 'results'."]
    notices.clear()
    assemble(RunOptions(config=path, out=tmp_path / "results"), on_notice=notices.append)
    assert notices == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(models=["word2vec:x.bin"], metrics=["weat"]), "No word set given."),
        (dict(wordsets=["weat1"], metrics=["weat"]), "No model given."),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], metrics=["weat"], datasets=Path("d")), "--datasets and --models go with"),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], metrics=["weat"], resume=True), "--resume needs --out"),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], metrics=["weat"], with_original=True), "--with-original compares one model"),
        (dict(config=Path("exp.toml"), with_original=True), "--with-original goes with --model"),
        (dict(config=Path("exp.toml"), models=["word2vec:x.bin"]), "either an experiment file or --model"),
    ],
)
def test_combinations_that_cannot_run_are_refused(options, message):
    with pytest.raises(BiasError, match=message.replace("(", r"\(")):
        assemble(RunOptions(**options))


def test_with_original_puts_the_model_without_its_debias_options_first():
    debiased = ModelConfig("word2vec:v.bin", {"debias": "hard", "debias_lists": "l.toml", "allow_pickle": "true"})
    assert with_original([debiased]) == [ModelConfig("word2vec:v.bin", {"allow_pickle": "true"}), debiased]


def test_the_executor_and_its_address_are_checked():
    assert checked_executor("ray", "auto") == ("ray", "auto")
    assert checked_executor("local", None) == ("local", None)
    with pytest.raises(BiasError, match="--executor must be one of local, ray, not 'dask'"):
        checked_executor("dask", None)
    with pytest.raises(BiasError, match="--ray-address needs --executor ray"):
        checked_executor("local", "auto")


def test_an_out_outside_the_files_folder_and_the_working_directory_needs_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = tmp_path / "exp" / "exp.toml"
    assert out_of_file(tmp_path / "exp" / "out", "out", exp) == tmp_path / "exp" / "out"
    outside = tmp_path.parent / "elsewhere"
    with pytest.raises(BiasError, match="outside the experiment file's folder") as err:
        out_of_file(outside, "../elsewhere", exp)
    assert f"--out {outside.resolve()}" in err.value.hint
