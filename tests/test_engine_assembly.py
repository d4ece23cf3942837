"""Options into a plan without the command line: the grid of models, word sets, metrics and seeds, the
experiment file and the flags that may go with it, and the combinations refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_experiments import config, write_sets

from bias.core.errors import BiasError
from bias.engine.assembly import assemble
from bias.engine.experiments import ModelConfig
from bias.engine.front_door import from_options, spec_for_run
from bias.engine.run_spec import with_original


@pytest.fixture()
def sets(tmp_path):
    return write_sets(tmp_path)


def _assemble(config=None, on_notice=lambda text: None, **options):
    return assemble(spec_for_run(from_options(options), config, on_notice=on_notice))


def test_the_grid_of_options_becomes_one_planned_experiment_per_combination(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    assembly = _assemble(models=[model], wordsets=[str(sets[0])], metrics=["weat"], seeds=[3, 4], permutations=[100], ddof=[0, 1])
    planned = [(p.experiment.seed, p.experiment.params["ddof"], p.experiment.params["permutations"]) for p in assembly.plan.runnable]
    assert sorted(planned) == [(3, 0, 100), (3, 1, 100), (4, 0, 100), (4, 1, 100)]
    assert {p.experiment.model.spec for p in assembly.plan.runnable} == {model}
    assert (assembly.family, assembly.executor, assembly.ray_address, assembly.out, assembly.after_model) == ("run", "local", None, None, None)
    assert assembly.settings == {"grid": {"ddof": [0, 1]}}  # the manifest records the command line's grid too


def test_an_experiment_file_takes_its_settings_and_the_seeds_of_the_command_line(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", 'family = "metric"\nout = "results"\n')
    assembly = _assemble(path, seeds=[7, 8])
    assert sorted(p.experiment.seed for p in assembly.plan.runnable) == [7, 8]
    assert assembly.family == "metric" and assembly.settings["title"] == "test batch"
    assert assembly.out == tmp_path / "results"


def test_out_on_the_command_line_replaces_the_files_out_and_says_so(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", 'out = "results"\n')
    notices: list[str] = []
    assembly = _assemble(path, notices.append, out=tmp_path / "elsewhere")
    assert assembly.out == tmp_path / "elsewhere"
    assert notices == [f"--out {tmp_path / 'elsewhere'} replaces the experiment file's out = 'results'."]
    notices.clear()
    _assemble(path, notices.append, out=tmp_path / "results")
    assert notices == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(models=["word2vec:x.bin"], metrics=["weat"]), "No word set given."),
        (dict(wordsets=["weat1"], metrics=["weat"]), "No model given."),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], metrics=["weat"], resume=True), "--resume needs --out"),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], metrics=["weat"], with_original=True), "--with-original compares one model"),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], executor="dask"), "--executor must be one of local, ray, not 'dask'"),
        (dict(models=["word2vec:x.bin"], wordsets=["weat1"], ray_address="auto"), "--ray-address needs --executor ray"),
    ],
)
def test_combinations_that_cannot_run_are_refused(options, message):
    with pytest.raises(BiasError, match=message.replace("(", r"\(")):
        spec_for_run(from_options(options))


def test_a_file_and_its_folders_are_refused_where_they_do_not_go(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", "")
    with pytest.raises(BiasError, match="--datasets and --models go with"):
        spec_for_run(from_options({"models": ["word2vec:x.bin"], "wordsets": ["weat1"]}), datasets=Path("d"))
    with pytest.raises(BiasError, match="either an experiment file or --model"):
        spec_for_run(from_options({"models": ["word2vec:x.bin"]}), path)
    with pytest.raises(BiasError, match="--with-original compares one model"):  # the file's one model has no --debias
        spec_for_run(from_options({"with_original": True}), path)


def test_with_original_puts_the_model_without_its_debias_options_first():
    debiased = ModelConfig("word2vec:v.bin", {"debias": "hard", "debias_lists": "l.toml", "allow_pickle": "true"})
    assert with_original([debiased]) == [ModelConfig("word2vec:v.bin", {"allow_pickle": "true"}), debiased]


def test_an_out_outside_the_files_folder_and_the_working_directory_needs_the_command_line(planted_files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp").mkdir()
    write_sets(tmp_path / "exp")
    inside = config(tmp_path / "exp", f"word2vec:{planted_files.word2vec_bin}", 'out = "out"\n')
    assert spec_for_run(from_options({}), inside).out == tmp_path / "exp" / "out"
    path = config(tmp_path / "exp", f"word2vec:{planted_files.word2vec_bin}", 'out = "../../elsewhere"\n')
    outside = (tmp_path.parent / "elsewhere").resolve()
    with pytest.raises(BiasError, match="outside the experiment file's folder") as err:
        spec_for_run(from_options({}), path)
    assert f"--out {outside}" in err.value.hint
    assert spec_for_run(from_options({"out": outside}), path).out == outside
