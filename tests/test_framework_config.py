"""A BIAS Detection Framework experiment file, run unchanged end to end (`bias run CONFIG.txt
--datasets --models`) on a fastText model and on a Hugging Face model built here, and converted to
the equivalent TOML (`bias convert`)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bias.engine.experiment_file import load_config
from bias.core.framework.config import is_framework_config, plan, read_lines
from fixtures.framework_data import CONFIG, WORDS, all_words, build_datasets

pytestmark = pytest.mark.slow


def bias(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # No service key: the config's service lines are skipped, never sent to a real service.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "VOYAGE_API_KEY")}
    env.update({"HF_HUB_OFFLINE": "1", "COLUMNS": "80", "PYTHONWARNINGS": "ignore"})
    return subprocess.run([sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """datasets/ in the framework's layout (Dutch under the README's code `ne`), models/ with a fastText
    .bin per language and two tiny BERTs under their Hub ids, and the config file."""
    from fixtures.planted import save_fasttext_bin, train_fasttext
    from fixtures.tiny_bert import build_tiny_bert

    root = tmp_path_factory.mktemp("framework-run")
    build_datasets(root / "datasets")
    (root / "datasets" / "nl").rename(root / "datasets" / "ne")
    models = root / "models"
    models.mkdir()
    words = all_words()
    rng = random.Random(3)
    model = train_fasttext([[rng.choice(words) for _ in range(8)] for _ in range(2000)], dim=16)
    save_fasttext_bin(model, models / "cc.de.300.bin")
    for code in ("en", "is", "it", "nl", "no", "tr"):  # fastText names Turkish tr, the framework's folder tk
        shutil.copy(models / "cc.de.300.bin", models / f"cc.{code}.300.bin")
    # The data's words join the tokenizers' corpus: a word the model sees only as [UNK] is lost.
    known = [" ".join(words[i : i + 20]) for i in range(0, len(words), 20)]
    build_tiny_bert(models / "google-bert" / "bert-base-uncased", vocab_size=300, extra_text=known)
    build_tiny_bert(models / "google-bert" / "bert-base-multilingual-cased", lowercase=False, vocab_size=300, extra_text=known)
    (root / "fasttext.txt").write_text(CONFIG, encoding="utf-8")
    return root


def test_lines_with_the_wrong_number_of_fields_are_reported_and_skipped(workspace: Path) -> None:
    lines, problems = read_lines(workspace / "fasttext.txt")
    assert [l.number for l in lines][:2] == [5, 6]
    assert len(problems) == 1 and "line 15: 4 field(s)" in problems[0]
    planned, problems = plan(workspace / "fasttext.txt", workspace / "datasets", workspace / "models")
    assert len(planned) == 10
    assert any("line 16: no dataset T2" in p for p in problems)
    assert is_framework_config(workspace / "fasttext.txt")


def test_convert_gives_a_toml_file_that_plans_the_same_experiments(workspace: Path) -> None:
    done = bias("convert", "fasttext.txt", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "line 15" in done.stderr and "skipped" in done.stderr
    text = done.stdout
    assert 'preset = "bias-framework"' in text
    # absolute paths: the printed file may be saved in any folder (a file's relative paths are its folder's)
    root = workspace.resolve()
    assert f'wordset = "{root}/datasets/tk/WEAT/T1.txt"' in text and f'model = "fasttext:{root}/models/cc.tr.300.bin"' in text
    assert f'wordset = "{root}/datasets/tk/genSEAT/genSEAT_T1.jsonl"' in text
    assert f'wordset = "{root}/datasets/ne/WEAT/T1.txt"' in text and "cc.nl.300.bin" in text
    toml = workspace / "converted.toml"
    toml.write_text(text, encoding="utf-8")
    experiments, settings = load_config(toml)
    assert len(experiments) == 10
    weat = [e for e in experiments if e.metric == "weat"]
    assert all(e.params == {"ddof": 0, "duplicates": "keep"} for e in weat)
    assert [e for e in experiments if e.metric == "fise"][0].params == {}
    assert "p = (k+1)/m" in settings["notes"][0]


def _results(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def test_run_a_config_file_on_fasttext(workspace: Path) -> None:
    done = bias("run", "fasttext.txt", "--datasets", "datasets", "--models", "models", "--out", "out-ft", cwd=workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "line 15" in done.stderr and "line 16" in done.stderr
    results = _results(workspace / "out-ft")
    assert len(results) == 10 and all(r["status"] == "ok" for r in results), [r["reason"] for r in results]
    languages = {r["meta"]["language"] for r in results}
    assert languages == {"de", "en", "is", "it", "nl", "no", "tr"}
    weat = [r for r in results if r["metric"] == "weat"]
    # The preset: population std and the repeated attribute counted twice (A has 5 stimuli).
    assert all(r["convention"]["ddof"] == 0 and r["sizes"]["A"] == 5 for r in weat)
    seat = [r for r in results if r["metric"] == "seat"]
    assert {r["params"]["pooling"] for r in seat} == {"mean"} and len(seat) == 2
    report = (workspace / "out-ft" / "report.md").read_text(encoding="utf-8")
    assert "Preset bias-framework" in report and "can exceed 1" in report


def test_preset_effect_size_is_the_population_std_one(workspace: Path) -> None:
    """The WEAT effect size with ddof 0 over the kept duplicates, recomputed here from the model."""
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    model = fasttext.load_model(str(workspace / "models" / "cc.de.300.bin"))
    x, y, a, b = WORDS["de"]
    a = [*a, a[0]]  # the file repeats its first attribute

    def vec(w):
        v = model.get_word_vector(w).astype(np.float64)
        return v / np.linalg.norm(v)

    def s(w):
        return np.mean([vec(w) @ vec(t) for t in a]) - np.mean([vec(w) @ vec(t) for t in b])

    sx, sy = [s(w) for w in x], [s(w) for w in y]
    expected = (np.mean(sx) - np.mean(sy)) / np.std(sx + sy)  # numpy's default: ddof 0
    if not (workspace / "out-ft" / "results.jsonl").exists():  # the run test did not run first
        done = bias("run", "fasttext.txt", "--datasets", "datasets", "--models", "models", "--out", "out-ft", cwd=workspace)
        assert done.returncode == 0, done.stdout + done.stderr
    results = _results(workspace / "out-ft")
    de = [r for r in results if r["wordset"].endswith("de/WEAT/T1.txt")][0]
    assert de["effect_size"] == pytest.approx(expected, rel=1e-6)


def test_run_a_config_file_on_a_hugging_face_model(workspace: Path) -> None:
    config = workspace / "bert.txt"
    config.write_text(
        "# BERT experiments in the framework's format\n"
        "SEAT_T1,SEAT,bert,en,google-bert/bert-base-uncased\n"
        "T1,WEAT,bert_pooling,en,google-bert/bert-base-uncased\n"
        "T1,WEAT,bert_first,de,google-bert/bert-base-uncased\n"
        "T1,WEAT,mBERT,tk,None\n"
        "LPBS_1,LPBS,bert,no,google-bert/bert-base-uncased\n"
        "crows_en,CROWS,bert,en,google-bert/bert-base-uncased\n"
        "crows_it,CROWS,bert,it,google-bert/bert-base-uncased\n"
        "FISE_T1,FISE,bert_pooling,it,google-bert/bert-base-uncased\n"
        "T1,WEAT,OpenAI_large,en,None\n",
        encoding="utf-8",
    )
    done = bias("run", "bert.txt", "--datasets", "datasets", "--models", "models", "--out", "out-hf", cwd=workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "line 10: embedding OpenAI_large (openai:text-embedding-3-large) needs an API key in the environment variable OPENAI_API_KEY, which is not set (skipped)" in done.stderr
    results = {(r["wordset"].split("datasets/")[-1], r["metric"]): r for r in _results(workspace / "out-hf")}
    assert len(results) == 8 and all(r["status"] == "ok" for r in results.values()), [r["reason"] for r in results.values()]
    bert = str(Path("models") / "google-bert" / "bert-base-uncased")
    assert results[("en/SEAT/SEAT_T1.jsonl", "seat")]["convention"]["pooling"] == "cls"
    assert results[("en/WEAT/T1.txt", "weat")]["model"] == f"hf:{bert}[word_pooling=mean]"
    assert results[("de/WEAT/T1.txt", "weat")]["model"] == f"hf:{bert}[word_pooling=first]"
    assert "bert-base-multilingual-cased[word_pooling=cls]" in results[("tk/WEAT/T1.txt", "weat")]["model"]
    crows = results[("en/CROWS/crows_en.csv", "crows")]
    assert crows["sizes"]["pairs"] == 5
    assert any("2 row(s) of the file left out: line 6" in w for w in crows["warnings"])
    assert results[("it/FISE/FISE_T1.json", "fise")]["convention"]["encoding"] == "contextual"
