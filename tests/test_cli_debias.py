"""`bias debias` and `bias run --debias` as a user runs them: files written, records kept, exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import attrs
import numpy as np
import pytest
from bias.registry import build_embedder
from conftest import GENDER_CAREER, GENDER_FAMILY, GENDER_FEMALE, GENDER_MALE
from fixtures.in_process import completed


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


def words(ws) -> str:
    return "[" + ", ".join(f'"{w}"' for w in ws) + "]"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cli-debias")
    head = 'language = "en"\nbias_type = "gender"\nsource = "generated for the tests"\nlicence = "CC-BY-4.0"\n'
    pairs = "[" + ", ".join(f'["{m}", "{f}"]' for m, f in zip(GENDER_MALE, GENDER_FEMALE)) + "]"
    lists = folder / "lists.toml"
    lists.write_text(
        f'kind = "debias-lists"\n{head}definitional = {pairs}\nequalize = {pairs}\n'
        f'specific = {words(GENDER_MALE + GENDER_FEMALE)}\ndirection = ["he", "she"]\n',
        encoding="utf-8",
    )
    few = folder / "few.toml"
    few.write_text(f'kind = "debias-lists"\n{head}definitional = [["he", "she"], ["lad", "lass"], ["sir", "madam"]]\n', encoding="utf-8")
    test = folder / "gender-weat.toml"
    test.write_text(
        f'kind = "association"\n{head}'
        + "".join(f"[sets.{k}]\nwords = {words(ws)}\n" for k, ws in zip("XYAB", (GENDER_MALE, GENDER_FEMALE, GENDER_CAREER, GENDER_FAMILY))),
        encoding="utf-8",
    )
    return {"lists": lists, "few": few, "test": test, "folder": folder}


def effect(proc: subprocess.CompletedProcess) -> float:
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 1 and rows[0]["status"] == "ok"
    return rows[0]["effect_size"]


def test_debias_writes_vectors_and_record_that_bias_run_reads(planted_gender, files):
    out = files["folder"] / "hard"
    proc = bias("debias", "--model", f"word2vec:{planted_gender}", "--method", "hard", "--lists", str(files["lists"]), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    vectors = out / "vectors.bin"
    assert vectors.is_file() and f"word2vec:{vectors}" in proc.stdout.replace("\n", "")
    record = json.loads((out / "debias.json").read_text(encoding="utf-8"))
    assert record["method"] == "hard" and record["source_model"] == f"word2vec:{planted_gender}"
    assert record["parameters"]["components"] == 1 and record["lists"]["file"] == str(files["lists"])
    assert len(record["bias_direction"]["components"]) == 1 and record["bias_direction"]["explained_variance"][0] > 0.5
    original = build_embedder(f"word2vec:{planted_gender}")
    vocabulary = len(original.vocabulary())
    assert record["neutralised"] == vocabulary - 20 and len(record["equalised"]) == 10
    assert record["missing"]["definitional"] == [] and {"fit_s", "write_s"} <= set(record["timings"])
    assert "numpy" in record["versions"]
    written = build_embedder(f"word2vec:{vectors}")
    assert written.vocabulary() == original.vocabulary()
    g = np.array(record["bias_direction"]["components"][0])
    assert np.abs(written.word_vectors(GENDER_CAREER).vectors @ g).max() < 1e-5

    before = effect(bias("run", "--model", f"word2vec:{planted_gender}", "--wordset", str(files["test"]), "--permutations", "500", "--json"))
    after = effect(bias("run", "--model", f"word2vec:{vectors}", "--wordset", str(files["test"]), "--permutations", "500", "--json"))
    assert before > 1.0 and abs(after) < 0.2
    on_the_fly = bias(
        "run", "--model", f"word2vec:{planted_gender}", "--debias", "hard", "--debias-lists", str(files["lists"]),
        "--wordset", str(files["test"]), "--permutations", "500", "--json",
    )
    assert effect(on_the_fly) == pytest.approx(after, abs=1e-4)


def test_inlp_as_text_vectors(planted_gender, files):
    out = files["folder"] / "inlp"
    proc = bias(
        "debias", "--model", f"word2vec:{planted_gender}", "--method", "inlp", "--lists", str(files["lists"]),
        "--out", str(out), "--format", "text",
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out / "debias.json").read_text(encoding="utf-8"))
    assert record["method"] == "inlp" and 1 <= record["details"]["removed_rank"] <= 10
    assert record["details"]["accuracy_per_iteration"][0] > 0.9
    assert len(build_embedder(f"word2vec:{out / 'vectors.txt'}").vocabulary()) == record["details"]["vocabulary"]


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--language", "xx"], ["Language 'xx' has no debiasing lists", "en (bias-lang-en)"]),
        (["--lists", "FEW"], ["Only 1 definitional pair", "lad, lass, sir, madam"]),
        (["--language", "en", "--method", "sent"], ["no vectors to write", "--debias sent"]),
        (["--language", "en", "--lists", "en/debias-gender"], ["either --language"]),
        (["--lists", "en/weat6"], ["not debiasing lists"]),
    ],
)
def test_bad_input_exits_2_with_a_short_message(planted_gender, files, args, fragments):
    args = [str(files["few"]) if a == "FEW" else a for a in args]
    proc = bias("debias", "--model", f"word2vec:{planted_gender}", "--out", str(files["folder"] / "bad"), *args)
    assert proc.returncode == 2, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 4
    for fragment in fragments:
        assert fragment in text


def test_run_debiases_encoders_on_the_fly_and_refuses_methods_that_do_not_fit(tmp_path):
    from fixtures.tiny_bert import build_tiny_bert

    model = f"hf:{build_tiny_bert(tmp_path / 'bert')}"
    refused = bias("run", "--model", model, "--debias", "hard", "--wordset", "en/weat1", "--json")
    assert refused.returncode == 2
    assert "Hard-Debias needs a static model with a vocabulary" in refused.stdout + refused.stderr
    fitting = (refused.stdout + refused.stderr).split("Methods that fit")[-1]
    assert all(name in fitting for name in ("inlp", "sent", "leace")) and "hard" not in fitting
    # The tiny vocabulary sees some of the words only as [UNK]: those are lost, and a loss is allowed here.
    done = bias("run", "--model", model, "--debias", "sent", "--wordset", "en/weat1", "--permutations", "200", "--lost-threshold", "1", "--json")
    row = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert done.returncode == 0 and row["status"] == "ok" and "debias=sent" in row["model"]


def test_run_debias_takes_the_lists_of_the_word_sets_language(planted_gender, files, tmp_path, monkeypatch):
    """`--debias` without lists used the English lists for every language; now the lists follow the
    language of the run's word sets, and a run that mixes languages must name its lists."""
    from bias.engine import planning
    from bias.core.errors import BiasError
    from bias.engine.experiments import Experiment, ModelConfig
    import bias.registry.resolve as resolve
    from bias.core.specs import DebiasSettings
    from bias.registry.resolve import debiased_on_load

    model = ModelConfig(f"word2vec:{planted_gender}", {"debias": "hard"})
    german = tmp_path / "german.toml"
    german.write_text(files["test"].read_text(encoding="utf-8").replace('language = "en"', 'language = "de"'), encoding="utf-8")
    plan = planning.plan([Experiment(model, str(german), "weat", {"permutations": 100, "exact_limit": 0})])
    debias = plan.runnable[0].experiment.model.debias
    assert debias.language == "de"
    chosen = []
    real = resolve.debias_lists_for
    monkeypatch.setattr(resolve, "debias_lists_for", lambda language: chosen.append(language) or real(language))
    debiased_on_load(build_embedder(f"word2vec:{planted_gender}"), debias)
    assert chosen == ["de"]

    mixed = [Experiment(model, str(german), "weat", {}), Experiment(model, str(files["test"]), "weat", {})]
    with pytest.raises(BiasError, match=r"several languages \(de, en\)") as err:
        planning.plan(mixed)
    assert "--debias-lists" in (err.value.hint or "")
    named = ModelConfig(model.spec, {"debias": "hard", "debias_lists": str(files["lists"])})
    assert len(planning.plan([attrs.evolve(e, model=named) for e in mixed]).runnable) == 2
    with pytest.raises(BiasError, match="needs lists"):
        debiased_on_load(build_embedder(f"word2vec:{planted_gender}"), DebiasSettings("hard"))
