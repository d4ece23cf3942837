"""Experiment files and batches: grids, word-set selectors, skipped combinations, failures that do not
stop a batch, resume and its configuration check, interrupts, the manifest, and reproducibility."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

from bias.core import runner
from bias.core.errors import BiasError
from bias.core.experiments import load_config
from bias.core.manifest import Manifest, read_manifest

PAIRS = """kind = "pairs"
language = "en"
bias_type = "gender"
source = "generated for the tests"
licence = "CC0-1.0"
[[pairs]]
more = "The nurse said she was tired."
less = "The nurse said he was tired."
direction = "stereo"
bias_type = "gender"
"""


def write_sets(folder: Path) -> tuple[Path, Path]:
    def words(ws):
        return "[" + ", ".join(f'"{w}"' for w in ws) + "]"

    assoc = folder / "planted.toml"
    assoc.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "generated for the tests"\nlicence = "CC0-1.0"\n'
        + "".join(f"[sets.{k}]\nwords = {words(ws)}\n" for k, ws in (("X", X_WORDS), ("Y", Y_WORDS), ("A", A_WORDS), ("B", B_WORDS)))
    )
    pairs = folder / "pairs.toml"
    pairs.write_text(PAIRS)
    return assoc, pairs


def config(folder: Path, model: str, body: str, wordsets: str = '["planted.toml"]', name: str = "exp.toml") -> Path:
    path = folder / name
    path.write_text(f'title = "test batch"\nwordsets = {wordsets}\nmetrics = ["weat"]\nmodels = ["{model}"]\n{body}')
    return path


GRID = "[params]\npermutations = 500\nexact_limit = 0\nbootstrap = 200\n[grid]\nddof = [0, 1]\nalternative = [\"greater\", \"two-sided\"]\n"


@pytest.fixture()
def sets(tmp_path):
    return write_sets(tmp_path)


def test_grid_expands_and_the_fingerprint_ignores_how_it_is_written(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    experiments, settings = load_config(config(tmp_path, model, GRID))
    plan = runner.plan(experiments)
    combos = {(p.experiment.params["ddof"], p.experiment.params["alternative"]) for p in plan.prepared}
    assert combos == {(0, "greater"), (0, "two-sided"), (1, "greater"), (1, "two-sided")}
    assert settings["family"] == "run" and settings["title"] == "test batch" and "[grid]" in settings["text"]
    reordered = GRID.replace('["greater", "two-sided"]', '["two-sided", "greater"]').replace("[params]\n", "[params]\ncase = \"exact\"\n")
    again = runner.plan(load_config(config(tmp_path, model, reordered))[0])
    assert again.fingerprint == plan.fingerprint
    other = runner.plan(load_config(config(tmp_path, model, GRID.replace("[0, 1]", "[1]")))[0])
    assert other.fingerprint != plan.fingerprint and len(other.prepared) == 2


def test_incompatible_combinations_are_skipped_with_a_reason(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    plan = runner.plan(load_config(config(tmp_path, model, "", '["planted.toml", "pairs.toml"]'))[0])
    assert len(plan.prepared) == 1 and len(plan.skipped) == 1
    assert "pairs" in plan.skipped[0].reason and plan.skipped[0].metric == "weat"
    with pytest.raises(BiasError, match="Nothing to run"):
        runner.plan(load_config(config(tmp_path, model, "", '["pairs.toml"]'))[0])


def test_wordset_selectors(tmp_path, sets):
    experiments, _ = load_config(config(tmp_path, "word2vec:x.bin", "", '[{ language = "en", bias_type = "gender", kind = "association" }, "planted.toml"]'))
    names = [e.wordset for e in experiments]
    assert {"en/weat6", "en/weat7", "en/weat8"} <= set(names) and names[-1].endswith("planted.toml")
    assert all(not n.startswith("en/") or n in ("en/weat6", "en/weat7", "en/weat8") for n in names)
    with pytest.raises(BiasError, match="langauge") as err:
        load_config(config(tmp_path, "word2vec:x.bin", "", '[{ langauge = "en" }]'))
    assert "language" in err.value.hint
    with pytest.raises(BiasError, match="no installed word set"):
        load_config(config(tmp_path, "word2vec:x.bin", "", '[{ language = "xx" }]'))


def test_bad_experiment_files(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    path = config(tmp_path, model, "")
    path.write_text(path.read_text().replace("wordsets =", "wordset =", 1))
    with pytest.raises(BiasError, match="wordset") as err:
        load_config(path)
    assert "Did you mean 'wordsets'" in err.value.hint
    with pytest.raises(BiasError, match="ddoff") as err:
        runner.plan(load_config(config(tmp_path, model, "[grid]\nddoff = [0, 1]\n"))[0])
    assert "'ddof'" in err.value.hint
    with pytest.raises(BiasError, match="grid.ddof must be a non-empty list"):
        load_config(config(tmp_path, model, "[grid]\nddof = []\n"))
    with pytest.raises(BiasError, match="family"):
        load_config(config(tmp_path, model, 'family = "language"\n'))


def test_a_model_that_fails_to_load_is_recorded_and_the_batch_goes_on(planted_files, tmp_path, sets):
    body = '[params]\npermutations = 500\nbootstrap = 100\n'
    path = config(tmp_path, "x", body)
    path.write_text(path.read_text().replace('models = ["x"]', f'models = ["word2vec:{tmp_path / "missing.bin"}", "word2vec:{planted_files.word2vec_bin}"]'))
    plan = runner.plan(load_config(path)[0])
    out = tmp_path / "out"
    manifest = Manifest.begin(out, plan=plan, command=["bias", "run"], family="run")
    events = []
    results = list(runner.run(plan.prepared, out=out, manifest=manifest, on_event=events.append))
    assert [r.status for r in results] == ["failed", "ok"]
    assert "could not be loaded" in results[0].reason and "missing.bin" in results[0].reason
    assert [e.kind for e in events] == ["loading", "result", "loading", "start", "result"]
    assert events[-1].done == 2 and events[-1].total == 2
    models = read_manifest(out)["models"]
    assert "error" in models[f"word2vec:{tmp_path / 'missing.bin'}"]
    assert models[f"word2vec:{planted_files.word2vec_bin}"]["fingerprint"]
    stopped = list(runner.run(plan.prepared, fail_fast=True))
    assert [r.status for r in stopped] == ["failed"]


def _execute(config_path: Path, out: Path, *, resume: bool = False) -> tuple[int, str]:
    from bias.cli.run import execute

    buffer = io.StringIO()
    code = execute(
        config=config_path, models=[], wordsets=[], metrics=["weat"], seeds=[], params={}, grid={}, model_options={},
        out=out, resume=resume, fail_fast=False, as_json=False, console=Console(file=buffer, width=250), debug=False,
        argv=["bias", "run", "exp.toml"],
    )
    return code, buffer.getvalue()


def test_interrupt_keeps_results_and_resume_finishes(planted_files, tmp_path, sets, monkeypatch):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID)
    out = tmp_path / "out"
    real = runner.run_one
    calls = []

    def interrupted(p, embedder, debug=False):
        calls.append(p.experiment.key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(p, embedder, debug=debug)

    monkeypatch.setattr(runner, "run_one", interrupted)
    code, _ = _execute(path, out)
    assert code == 130
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    manifest = read_manifest(out)
    assert manifest["sessions"][-1]["status"] == "interrupted" and manifest["sessions"][-1]["computed"] == 2
    assert (out / "report.md").exists() and (out / "results.csv").exists()

    monkeypatch.setattr(runner, "run_one", real)
    code, text = _execute(path, out, resume=True)
    assert code == 0, text
    keys = [json.loads(line)["key"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(keys) == 4 == len(set(keys))
    assert "2 already finished" in text
    sessions = read_manifest(out)["sessions"]
    assert [s["status"] for s in sessions] == ["interrupted", "finished"] and sessions[1]["resume"] is True


def test_resume_refuses_another_configuration_and_reruns_are_refused_without_it(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    path = config(tmp_path, model, GRID)
    out = tmp_path / "out"
    assert _execute(path, out)[0] == 0
    with pytest.raises(BiasError, match="already holds") as err:
        _execute(path, out)
    assert "--resume" in err.value.hint
    changed = config(tmp_path, model, GRID.replace("[0, 1]", "[0]"), name="changed.toml")
    with pytest.raises(BiasError, match="different configuration"):
        _execute(changed, out, resume=True)
    code, text = _execute(path, out, resume=True)
    assert code == 0 and "4 already finished" in text


def test_manifest_records_the_run(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", 'seeds = [3, 4]\n[params]\npermutations = 500\nbootstrap = 0\n', '["planted.toml", "pairs.toml"]')
    out = tmp_path / "out"
    assert _execute(path, out)[0] == 0
    m = read_manifest(out)
    assert m["config_text"] == path.read_text() and m["seeds"] == [3, 4] and m["experiments"] == 2
    assert m["skipped"] and "pairs" in m["skipped"][0]["reason"]
    session = m["sessions"][0]
    assert session["command"] == ["bias", "run", "exp.toml"] and session["status"] == "finished"
    assert session["started"] <= session["ended"]
    assert "bias-framework" in session["plugins"] and "numpy" in session["libraries"]
    assert session["machine"]["cpu_count"] and session["machine"]["python"]
    assert list(m["models"].values())[0]["fingerprint"]


def test_identical_reruns_give_identical_results_apart_from_timings(planted_files, tmp_path, sets):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID)
    rows = []
    for name in ("one", "two"):
        assert _execute(path, tmp_path / name)[0] == 0
        lines = (tmp_path / name / "results.jsonl").read_text().splitlines()
        rows.append([{k: v for k, v in json.loads(line).items() if k != "timings"} for line in lines])
    assert rows[0] == rows[1] and len(rows[0]) == 4
    assert all("ci_low" in r["figures"] for r in rows[0])
    csvs = [(tmp_path / name / "results.csv").read_text() for name in ("one", "two")]
    assert csvs[0] == csvs[1]
