"""Experiment files and batches: grids, word-set selectors, skipped combinations, failures that do not
stop a batch, resume and its configuration check, interrupts, the manifest, and reproducibility."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

from bias.engine import planning, runner
from bias.core.errors import BiasError
from bias.engine.experiment_file import load_config
from bias.core.runs.manifest import read_manifest
from bias.engine.manifest import Manifest

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
    plan = planning.plan(experiments)
    combos = {(p.experiment.params["ddof"], p.experiment.params["alternative"]) for p in plan.runnable}
    assert combos == {(0, "greater"), (0, "two-sided"), (1, "greater"), (1, "two-sided")}
    assert settings["family"] == "run" and settings["title"] == "test batch" and "[grid]" in settings["text"]
    reordered = GRID.replace('["greater", "two-sided"]', '["two-sided", "greater"]').replace("[params]\n", "[params]\ncase = \"exact\"\n")
    again = planning.plan(load_config(config(tmp_path, model, reordered))[0])
    assert again.fingerprint == plan.fingerprint
    other = planning.plan(load_config(config(tmp_path, model, GRID.replace("[0, 1]", "[1]")))[0])
    assert other.fingerprint != plan.fingerprint and len(other.runnable) == 2


def test_incompatible_combinations_are_skipped_with_a_reason(planted_files, tmp_path, sets):
    model = f"word2vec:{planted_files.word2vec_bin}"
    plan = planning.plan(load_config(config(tmp_path, model, "", '["planted.toml", "pairs.toml"]'))[0])
    assert len(plan.runnable) == 1 and len(plan.skipped) == 1
    assert "pairs" in plan.skipped[0].reason and plan.skipped[0].metric == "weat"
    with pytest.raises(BiasError, match="Nothing to run"):
        planning.plan(load_config(config(tmp_path, model, "", '["pairs.toml"]'))[0])


def test_wordset_selectors(tmp_path, sets):
    experiments, _ = load_config(config(tmp_path, "word2vec:x.bin", "", '[{ language = "en", bias_type = "gender", kind = "association" }, "planted.toml"]'))
    names = [e.wordset for e in experiments]
    gender = ("en/weat6", "en/weat7", "en/weat8", "en/gender-career-terms")
    assert set(gender) <= set(names) and names[-1].endswith("planted.toml")
    assert all(not n.startswith("en/") or n in gender for n in names)
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
        planning.plan(load_config(config(tmp_path, model, "[grid]\nddoff = [0, 1]\n"))[0])
    assert "'ddof'" in err.value.hint
    with pytest.raises(BiasError, match="grid.ddof must be a non-empty list"):
        load_config(config(tmp_path, model, "[grid]\nddof = []\n"))
    with pytest.raises(BiasError, match="family"):
        load_config(config(tmp_path, model, 'family = "language"\n'))


def test_a_model_that_fails_to_load_is_recorded_and_the_batch_goes_on(planted_files, tmp_path, sets):
    body = '[params]\npermutations = 500\nbootstrap = 100\n'
    path = config(tmp_path, "x", body)
    path.write_text(path.read_text().replace('models = ["x"]', f'models = ["word2vec:{tmp_path / "missing.bin"}", "word2vec:{planted_files.word2vec_bin}"]'))
    plan = planning.plan(load_config(path)[0])
    out = tmp_path / "out"
    manifest = Manifest.begin(out, plan=plan, command=["bias", "run"], family="run")
    events = []
    results = list(runner.run(plan.runnable, out=out, manifest=manifest, on_event=events.append))
    assert [r.status for r in results] == ["failed", "ok"]
    assert "could not be loaded" in results[0].reason and "missing.bin" in results[0].reason
    assert [e.kind for e in events] == ["loading", "result", "loading", "start", "result"]
    assert events[-1].done == 2 and events[-1].total == 2
    models = read_manifest(out)["models"]
    assert "error" in models[f"word2vec:{tmp_path / 'missing.bin'}"]
    assert models[f"word2vec:{planted_files.word2vec_bin}"]["fingerprint"]
    stopped = list(runner.run(plan.runnable, fail_fast=True))
    assert [r.status for r in stopped] == ["failed"]


def _execute(config_path: Path, out: Path, *, resume: bool = False) -> tuple[int, str]:
    from bias.cli.run import execute
    from bias.engine.front_door import from_options, spec_for_run

    buffer = io.StringIO()
    spec = spec_for_run(from_options({"out": out, "resume": resume} if resume else {"out": out}), config_path)
    code = execute(spec, console=Console(file=buffer, width=250), debug=False, argv=["bias", "run", "exp.toml"])
    return code, buffer.getvalue()


def test_interrupt_keeps_results_and_resume_finishes(planted_files, tmp_path, sets, monkeypatch):
    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID)
    out = tmp_path / "out"
    real = runner.run_one
    calls = []

    def interrupted(p, embedder, **kwargs):
        calls.append(p.experiment.key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(p, embedder, **kwargs)

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


def test_execution_options_are_not_part_of_the_experiment_key():
    """Batch size, device and cache location change how a result is computed, not its value: resuming
    with a smaller --batch-size or on another device must find the experiments already done."""
    from bias.engine.experiments import Experiment, ModelConfig

    def key(**options):
        return Experiment(ModelConfig("hf:some/folder", options), "en/weat1", "seat", {"ddof": 1}, 0).key

    base = key(batch_size=32, device="cpu")
    assert key(batch_size=8, device="cuda", cache="off", cache_dir="elsewhere") == base == key()
    assert key(dtype="float16") != base  # half precision changes the numbers
    assert key(layer="-2") != base


def test_a_failure_that_is_not_the_input_is_failed_and_resume_redoes_it(planted_files, tmp_path, sets, monkeypatch):
    """Out of memory (a BiasError with the failure exit code) is not a refusal: it is recorded as
    failed, and --resume computes it again; a refusal of the input stays done."""
    from bias.core.errors import FAILURE
    from bias.plugins.metrics.weat import Weat

    path = config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID)
    out = tmp_path / "out"
    real = Weat.compute
    calls = []

    def flaky(self, embedder, data, *, seed=None):
        calls.append(self.ddof)
        if len(calls) == 1:
            raise BiasError("The device ran out of memory while scoring a batch.", "Use a smaller --batch-size.", exit_code=FAILURE)
        if len(calls) == 2:
            raise BiasError("Too many words lost.")  # a refusal: the same input is refused again
        return real(self, embedder, data, seed=seed)

    monkeypatch.setattr(Weat, "compute", flaky)
    _execute(path, out)
    first = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in first] == ["failed", "refused", "ok", "ok"]
    assert "smaller --batch-size" in first[0]["reason"]
    assert first[0]["meta"]["language"] == "en" and first[1]["meta"]["bias_type"] == "non-social"
    code, text = _execute(path, out, resume=True)
    assert len(calls) == 5, "only the failed experiment is computed again"
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[-1]["key"] == first[0]["key"] and rows[-1]["status"] == "ok"


def test_resume_with_another_batch_size_keeps_what_was_done_also_in_older_folders(tmp_path, sets):
    """An experiment's key leaves out batch size and device: a run resumed with a smaller
    --batch-size finds its experiments done. A folder written by a version that still keyed them
    (results and manifest under the old keys, written out here) resumes too."""
    import hashlib

    from fixtures.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bert")

    def write(batch: int, name: str) -> Path:
        path = tmp_path / name
        path.write_text(
            'title = "batch"\nwordsets = ["planted.toml"]\nmetrics = ["seat"]\n'
            f'[[models]]\nspec = "hf:{folder}"\nbatch_size = {batch}\ndevice = "cpu"\n'
            "[params]\npermutations = 200\nexact_limit = 0\nbootstrap = 0\n[grid]\nlevel = [\"sentence\", \"word\"]\n"
        )
        return path

    out = tmp_path / "out"
    assert _execute(write(16, "a.toml"), out)[0] == 0
    code, text = _execute(write(4, "b.toml"), out, resume=True)
    assert code == 0 and "2 already finished" in text, text

    # the same folder as the older versions wrote it: keys over every model option
    def old_key(row):
        canonical = {"model": f"hf:{folder}", "model_options": {"batch_size": 16, "device": "cpu"}, "wordset": row["wordset"],
                     "metric": row["metric"], "params": row["params"], "seed": row["seed"]}
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    (out / "results.jsonl").write_text("".join(json.dumps({**r, "key": old_key(r)}) + "\n" for r in rows))
    manifest = read_manifest(out)
    manifest["config_fingerprint"] = hashlib.sha256("\n".join(sorted(old_key(r) for r in rows)).encode("utf-8")).hexdigest()[:16]
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, text = _execute(write(16, "a.toml"), out, resume=True)
    assert code == 0 and "2 already finished" in text, text


def test_model_spec_brackets_are_options_and_debiasing_is_its_own_value():
    from bias.core.errors import BiasError
    from bias.core.specs import DebiasSettings, ModelSpec, parse_spec
    from bias.engine.experiments import Experiment, ModelConfig

    assert parse_spec("openai:text-embedding-3-small[base_url=http://h:8000/v1, dimensions=256]") == ModelSpec(
        "openai", "text-embedding-3-small", {"base_url": "http://h:8000/v1", "dimensions": "256"}
    )
    assert parse_spec("HF:./models/run[1]") == ModelSpec("hf", "./models/run[1]", {})  # a folder name, not options
    with pytest.raises(BiasError, match="'2' in the brackets is not an option"):
        parse_spec("hf:m[dtype=float16,2]")
    with pytest.raises(BiasError, match="gives dtype twice"):
        parse_spec("hf:m[dtype=float16,dtype=float32]")

    written = ModelConfig("word2vec:v.bin[debias=hard,debias_lists=l.toml,limit=5]")
    split = ModelConfig("word2vec:v.bin", {"limit": "5", "debias": "hard", "debias_lists": "l.toml"})
    assert written == split and written.spec == "word2vec:v.bin"
    assert written.options == {"limit": "5"} and written.debias == DebiasSettings("hard", lists="l.toml")
    assert written.parsed == ModelSpec("word2vec", "v.bin", {"limit": "5"})
    assert written.label() == "word2vec:v.bin[debias=hard,debias_lists=l.toml,limit=5]"
    # the key is the one the options always gave: debiasing settings among the model's options
    assert Experiment(written, "en/weat1", "weat").canonical()["model_options"] == {"limit": "5", "debias": "hard", "debias_lists": "l.toml"}
    assert Experiment(written, "en/weat1", "weat").key == Experiment(split, "en/weat1", "weat").key
    with pytest.raises(BiasError, match="debias_lists given without --debias"):
        ModelConfig("word2vec:v.bin", {"debias_lists": "l.toml"})
    with pytest.raises(BiasError, match="limit is given twice"):
        ModelConfig("word2vec:v.bin[limit=5]", {"limit": "6"})


def test_files_in_a_spec_s_brackets_are_read_against_the_experiment_file(tmp_path):
    from bias.engine.experiment_file import load_config

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "v.bin").write_bytes(b"")
    (folder / "lists.toml").write_text("", encoding="utf-8")
    path = folder / "grid.toml"
    path.write_text('models = ["word2vec:v.bin[debias=hard,debias_lists=lists.toml]"]\nwordsets = ["en/weat1"]\nmetrics = ["weat"]\n', encoding="utf-8")
    experiments, _ = load_config(path)
    model = experiments[0].model
    assert model.parsed.location == str(folder / "v.bin")
    assert model.debias is not None and model.debias.lists == str(folder / "lists.toml")
