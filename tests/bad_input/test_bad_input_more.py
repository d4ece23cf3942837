"""More bad inputs, thought up as an attacker and as a tired user: each answered with the right exit
code, no traceback, at most two lines naming the input, and no file that existed before changed."""

from __future__ import annotations


import json
import re
import shutil
from pathlib import Path

import pytest

from bad_input_helpers import Case, Outcome, World, assert_answered, cli, copy_model, words_toml, world  # noqa: F401 (world is a fixture)
from bad_input_helpers import basic_experiment, case_decorator, local_wordset, write_experiment
from fixtures.planted import X_WORDS

CASES: list[Case] = []
case = case_decorator(CASES)


def w2v(world: World) -> list[str]:
    return ["-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset)]


# An attacker's experiment files --------------------------------------------------------------------------


@case("toml-allow-pickle-with-dash", names=("allow-pickle", "--allow-pickle"))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'models = [{{ spec = "kv:{world.root}/x.kv", allow-pickle = true }}]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'))]


@case("toml-metric-entry-trust-remote-code", names=("metrics[0]", "--trust-remote-code"))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = [{{ name = "weat", trust_remote_code = true }}]\n'))]


@case("toml-grid-allow-pickle", names=("[grid]", "--allow-pickle"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + "[grid]\nallow_pickle = [true]\n"))]


@case("pickle-without-flag", names=("--allow-pickle",))
def _(world, folder):
    from gensim.models import KeyedVectors

    KeyedVectors.load_word2vec_format(str(world.w2v_bin), binary=True).save(str(folder / "m.kv"))
    return ["run", "-m", "kv:m.kv", "-w", str(world.wordset)]


def _ran(result: Outcome, folder: Path) -> None:
    # the results table holds the test's effect size (a signed number such as +0.47)
    assert "Results" in result.out and re.search(r"[+-]\d\.\d\d", result.out), result.out


@case("pickle-with-flag-on-the-command-line", code=0, check=_ran)
def _(world, folder):
    from gensim.models import KeyedVectors

    KeyedVectors.load_word2vec_format(str(world.w2v_bin), binary=True).save(str(folder / "m.kv"))
    return ["run", "-m", "kv:m.kv", "-w", str(world.wordset), "--allow-pickle", "--bootstrap", "0"]


@case("toml-absolute-out-elsewhere", names=("/", "--out"))
def _(world, folder):
    (folder / "a").mkdir()
    return ["run", str(write_experiment(folder / "a", basic_experiment(world, folder / "a") + f'out = "{folder.parent / "stolen"}"\n'))]


def _out_confirmed(result: Outcome, folder: Path) -> None:
    assert (folder / "mine" / "results.jsonl").is_file() and not (folder.parent / "far").exists()


@case("toml-out-outside-but-command-line-out", code=0, check=_out_confirmed)
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + 'out = "../far"\n[params]\nbootstrap = 0\n')), "--out", "mine"]


@case("toml-nul-in-path", names=("<U+0000>",))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["a\\u0000b.toml"]\nmetrics = ["weat"]\n'))]


@case("toml-wordset-escaping-package", names=("../../etc/passwd",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "en/../../etc/passwd"]


@case("ansi-escape-in-path", names=("<U+001B>",), absent=("\x1b[31m",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "\x1b[31mred.toml"]


@case("ten-thousand-character-option", names=("characters",), check=lambda r, f: (len(" ".join(r.both.split())) < 3000) or pytest.fail(r.err[:200]))
def _(world, folder):
    return ["run", "-m", "word2vec:" + "m" * 10_000 + ".bin", "-w", str(world.wordset)]


@case("results-file-is-a-folder", names=("results.jsonl",), lines=2)
def _(world, folder):
    (folder / "run" / "results.jsonl").mkdir(parents=True)
    return ["report", "run"]


@case("mostly-garbage-results-still-report", code=0, lines=8, check=lambda r, f: ("more damaged line(s)" in r.err) or pytest.fail(r.err))
def _(world, folder):
    (folder / "run").mkdir()
    shutil.copy(world.finished / "results.jsonl", folder / "run" / "results.jsonl")
    with open(folder / "run" / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write("".join(f"garbage {i}\n" for i in range(50)))
    return ["report", "run", "--format", "md"]


# A tired user's experiment files -------------------------------------------------------------------------


@case("toml-is-a-folder", names=("exp.toml", "folder"))
def _(world, folder):
    (folder / "exp.toml").mkdir()
    return ["run", "exp.toml"]


@case("toml-malformed", names=("exp.toml", "malformed TOML", "line"))
def _(world, folder):
    return ["run", str(write_experiment(folder, 'models = ["word2vec:x.bin"\nwordsets = ["a"]\n'))]


@case("toml-not-utf8", names=("exp.toml", "UTF-8"))
def _(world, folder):
    (folder / "exp.toml").write_bytes('title = "Gr\u00fc\u00dfe"\n'.encode("latin-1"))
    return ["run", "exp.toml"]


@case("toml-empty", names=("exp.toml", "models"))
def _(world, folder):
    return ["run", str(write_experiment(folder, ""))]


@case("toml-empty-models", names=("exp.toml", "models", "non-empty"))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'models = []\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'))]


@case("toml-misspelt-field", names=("modles", "models"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder).replace("models", "modles")))]


@case("toml-negative-seed", names=("exp.toml", "seed"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + "seeds = [-1]\n"))]


@case("toml-selector-matches-nothing", names=("exp.toml", "no installed word set"))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = [{{ language = "xx" }}]\nmetrics = ["weat"]\n'))]


@case("toml-and-model-option-together", names=("experiment file",))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder))), "-m", f"word2vec:{world.w2v_bin}"]


# A tired user's word sets ---------------------------------------------------------------------------------


def _accepted(result: Outcome, folder: Path) -> None:
    assert "Results" in result.out and re.search(r"[+-]\d\.\d\d", result.out), result.out


@case("wordset-with-bom", code=0, check=_accepted)
def _(world, folder):
    path = words_toml(folder / "ws.toml")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(path), "--bootstrap", "0"]


@case("wordset-with-crlf", code=0, check=_accepted)
def _(world, folder):
    path = words_toml(folder / "ws.toml")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(path), "--bootstrap", "0"]


@case("wordset-set-without-words", names=("ws.toml", "sets.X"))
def _(world, folder):
    path = words_toml(folder / "ws.toml")
    path.write_text(path.read_text(encoding="utf-8").replace("[sets.X]\nwords =", "[sets.X]\nwordz ="), encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(path)]


@case("wordset-unknown-kind", names=("ws.toml", "kind"))
def _(world, folder):
    path = words_toml(folder / "ws.toml")
    path.write_text(path.read_text(encoding="utf-8").replace('kind = "association"', 'kind = "asociation"'), encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(path)]


@case("wordset-numbers-as-words", names=("ws.toml", "sets.X.words[0]"))
def _(world, folder):
    path = words_toml(folder / "ws.toml")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('words = ["rose"', 'words = [42, "rose"', 1), encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(path)]


@case("wordset-binary-garbage", names=("ws.toml",))
def _(world, folder):
    (folder / "ws.toml").write_bytes(bytes(range(256)) * 4)
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws.toml"]


@case("wordset-unknown-name", names=("en/weat99",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "en/weat99"]


@case("crows-csv-without-columns", names=("pairs.csv",))
def _(world, folder):
    (folder / "pairs.csv").write_text("a,b\nx,y\n", encoding="utf-8")
    return ["run", "-m", f"hf:{world.bert}", "--pairs", "pairs.csv", "--metric", "crows"]


@case("labelled-csv-without-label-column", names=("reviews.csv", "label"))
def _(world, folder):
    (folder / "reviews.csv").write_text("text,score\nfine,1\ndull,0\n", encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "reviews.csv", "--metric", "probe"]


@case("labelled-csv-empty", names=("reviews.tsv", "empty"))
def _(world, folder):
    (folder / "reviews.tsv").write_text("", encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "reviews.tsv", "--metric", "probe"]


@case("labelled-csv-one-label", names=("reviews.csv", "2 labels"))
def _(world, folder):
    (folder / "reviews.csv").write_text("text,label\nfine,pos\ngood,pos\ngreat,pos\n", encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "reviews.csv", "--metric", "probe"]


def bbq_line(example_id: int, **change) -> str:
    """One line of a BBQ JSONL file (the published fields), with `change` applied."""
    row = {
        "example_id": example_id, "question_index": "1", "question_polarity": "neg", "context_condition": "ambig",
        "category": "Age", "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["grandson", "nonOld"], "ans2": ["Unknown", "unknown"]},
        "additional_metadata": {"stereotyped_groups": ["old"]}, "context": "A grandfather and his grandson met.",
        "question": "Who forgot?", "ans0": "The grandfather", "ans1": "The grandson", "ans2": "Unknown", "label": 2,
    }
    row.update(change)
    return json.dumps({k: v for k, v in row.items() if v is not None})


def bbq_file(folder: Path, line: str) -> str:
    (folder / "age.jsonl").write_text(bbq_line(0) + "\n" + line + "\n", encoding="utf-8")
    return "age.jsonl"


@case("bbq-jsonl-missing-field", names=("age.jsonl", "line 2", "example_id 5", "ans1"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", bbq_file(folder, bbq_line(5, ans1=None)), "--metric", "bbq"]


@case("bbq-jsonl-stereotyped-answer-not-among-the-answers", names=("age.jsonl", "line 2", "example_id 5", "not among the answers"))
def _(world, folder):
    meta = {"stereotyped_groups": ["F"]}
    return ["run", "-m", f"hf:{world.bert}", "-w", bbq_file(folder, bbq_line(5, additional_metadata=meta)), "--metric", "bbq"]


@case("bbq-jsonl-empty-context", names=("age.jsonl", "line 2", "Age-5", "context", "missing or empty"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", bbq_file(folder, bbq_line(5, context=" ")), "--metric", "bbq"]


def mbbq_file(folder: Path, name: str, example_id: int, **change) -> str:
    """An MBBQ-named file (`<Category>[_control]_<language>.jsonl`): a good line, then one with `change`."""
    (folder / name).write_text(bbq_line(0) + "\n" + bbq_line(example_id, **change) + "\n", encoding="utf-8")
    return name


@case("mbbq-jsonl-group-answers-share-one-label", names=("Gender_identity_es.jsonl", "line 2", "example_id 3", "both group answers", "'chico'"))
def _(world, folder):
    info = {"ans0": ["chica", "chico"], "ans1": ["chico", "chico"], "ans2": ["No se sabe", "unknown"]}
    name = mbbq_file(folder, "Gender_identity_es.jsonl", 3, answer_info=info, additional_metadata={"stereotyped_groups": ["F"]})
    return ["run", "-m", f"hf:{world.bert}", "-w", name, "--metric", "bbq"]


@case("mbbq-jsonl-gender-noun-of-neither-group", names=("Gender_identity_nl.jsonl", "line 2", "example_id 4", "not among the answers"))
def _(world, folder):
    info = {"ans0": ["vrouw", "vrouw"], "ans1": ["persoon", "persoon"], "ans2": ["Onbekend", "unknown"]}
    name = mbbq_file(folder, "Gender_identity_nl.jsonl", 4, answer_info=info, additional_metadata={"stereotyped_groups": ["M"]})
    return ["run", "-m", f"hf:{world.bert}", "-w", name, "--metric", "bbq"]


@case("mbbq-control-jsonl-missing-field", names=("Age_control_tr.jsonl", "line 2", "example_id 6", "answer_info"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", mbbq_file(folder, "Age_control_tr.jsonl", 6, answer_info=None), "--metric", "bbq"]


@case("bbq-toml-stereotyped-answer-is-the-unknown-one", names=("q.toml", "items[0]", "stereotyped", "unknown answer"))
def _(world, folder):
    (folder / "q.toml").write_text(
        'kind = "bbq"\nlanguage = "en"\nbias_type = "age"\nsource = "written by the tests"\nlicence = "CC0-1.0"\n'
        '[[items]]\ncategory = "age"\ncontext = "A grandfather and his grandson met."\ncontext_condition = "ambiguous"\n'
        'question = "Who forgot?"\npolarity = "negative"\nanswers = ["The grandfather", "The grandson", "Unknown"]\n'
        'unknown = 2\nstereotyped = 2\ntarget = "old"\nlabel = 2\n', encoding="utf-8")
    return ["run", "-m", f"hf:{world.bert}", "-w", "q.toml", "--metric", "bbq"]


@case("completion-server-not-a-url", names=("localhost:8000", "http://"))
def _(world, folder):
    return ["run", "-m", "completions:localhost:8000", "-w", "en/bbq-sample", "--metric", "bbq"]


@case("completion-server-unreachable", names=("http://127.0.0.1:9/v1", "cannot be reached"))
def _(world, folder):
    return ["run", "-m", "completions:http://127.0.0.1:9/v1", "-w", "en/bbq-sample", "--metric", "bbq", "--out", "run"]


@case("probe-finetune-on-static-vectors", names=("mode=finetune", "mode=probe"))
def _(world, folder):
    (folder / "reviews.csv").write_text("text,label\n" + "".join(f"w{i} x,{'a' if i % 2 else 'b'}\n" for i in range(10)), encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "reviews.csv", "--metric", "probe", "--param", "mode=finetune"]


@case("validate-unknown-extension", names=("list.docx", ".toml"), stream="out")
def _(world, folder):
    (folder / "list.docx").write_text("rose\n", encoding="utf-8")
    return ["validate", "list.docx"]


# A tired user's models ---------------------------------------------------------------------------------------


@case("spec-without-colon", names=("NAME:LOCATION",))
def _(world, folder):
    return ["run", "-m", str(world.w2v_bin), "-w", str(world.wordset)]


@case("unknown-embedder", names=("wordtovec",))
def _(world, folder):
    return ["run", "-m", f"wordtovec:{world.w2v_bin}", "-w", str(world.wordset)]


@case("empty-model-file", names=("empty.bin", "empty"))
def _(world, folder):
    (folder / "empty.bin").write_bytes(b"")
    return ["run", "-m", "word2vec:empty.bin", "-w", str(world.wordset)]


@case("model-path-is-a-folder", names=("adir",))
def _(world, folder):
    (folder / "adir").mkdir()
    return ["run", "-m", "word2vec:adir", "-w", str(world.wordset)]


@case("glove-given-word2vec-text", names=("planted.txt", "word2vec"))
def _(world, folder):
    return ["run", "-m", f"glove:{world.w2v_txt}", "-w", str(world.wordset)]


@case("hf-empty-folder", names=("config.json",))
def _(world, folder):
    (folder / "m").mkdir()
    return ["run", "-m", "hf:m", "-w", str(world.wordset)]


@case("hf-config-without-weights", names=("no model weights",))
def _(world, folder):
    model = copy_model(world, folder)
    (model / "model.safetensors").unlink()
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


@case("hf-only-pytorch-bin", code=0, lines=3, check=lambda r, f: ("safetensors" in r.err) or pytest.fail(r.err))
def _(world, folder):
    import torch
    from safetensors.torch import load_file

    model = copy_model(world, folder)
    torch.save(load_file(model / "model.safetensors"), model / "pytorch_model.bin")
    (model / "model.safetensors").unlink()
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset), "--lost-threshold", "1", "--bootstrap", "0", "--model-option", "cache=false"]


@case("hf-code-in-config-without-flag", names=("--trust-remote-code",))
def _(world, folder):
    model = copy_model(world, folder)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config.update(model_type="evil-model", auto_map={"AutoModel": "evil.EvilModel"})
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (model / "evil.py").write_text("raise SystemExit('code ran')\n", encoding="utf-8")
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


# A tired user's options --------------------------------------------------------------------------------------


@case("negative-seed", names=("--seed",))
def _(world, folder):
    return ["run", *w2v(world), "--seed", "-3"]


@case("alternative-sideways", names=("sideways",))
def _(world, folder):
    return ["run", *w2v(world), "--alternative", "sideways"]


@case("ci-level-two", names=("ci_level",))
def _(world, folder):
    return ["run", *w2v(world), "--ci-level", "2"]


@case("format-pdf", names=("pdf",))
def _(world, folder):
    return ["run", *w2v(world), "--format", "pdf"]


@case("family-unknown", names=("--family",))
def _(world, folder):
    return ["run", *w2v(world), "--family", "everything"]


@case("model-option-without-equals", names=("--model-option", "KEY=VALUE"))
def _(world, folder):
    return ["run", *w2v(world), "--model-option", "batch_size"]


@case("param-nobody-has", names=("colour",))
def _(world, folder):
    return ["run", *w2v(world), "--param", "colour=blue"]


@case("permutations-zero", names=("--permutations",))
def _(world, folder):
    return ["run", *w2v(world), "--permutations", "0"]


@case("resume-without-out", names=("--resume", "--out"))
def _(world, folder):
    return ["run", *w2v(world), "--resume"]


@case("out-is-a-file", names=("taken",))
def _(world, folder):
    (folder / "taken").write_text("mine\n", encoding="utf-8")
    return ["run", *w2v(world), "--out", "taken"]


@case("out-inside-a-file", names=("taken",))
def _(world, folder):
    (folder / "taken").write_text("mine\n", encoding="utf-8")
    return ["run", *w2v(world), "--out", "taken/sub"]


@case("run-into-finished-folder-without-resume", names=("already holds", "--resume"))
def _(world, folder):
    shutil.copytree(world.finished, folder / "run")
    return ["run", *w2v(world), "--out", "run"]


@case("resume-another-configuration", names=("run",))
def _(world, folder):
    shutil.copytree(world.finished, folder / "run")
    return ["run", *w2v(world), "--ddof", "0", "--out", "run", "--resume"]


@case("corpus-missing", names=("nocorpus.txt",))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--metric", "ceat", "--corpus", "nocorpus.txt"]


@case("report-folder-without-results", names=("empty",))
def _(world, folder):
    (folder / "empty").mkdir()
    return ["report", "empty"]


@case("compare-missing-folder", names=("before",))
def _(world, folder):
    return ["compare", "before", str(world.finished)]


@case("info-unknown-name", names=("nosuchthing",))
def _(world, folder):
    return ["info", "nosuchthing"]


@case("list-unknown-group", names=("gadgets",))
def _(world, folder):
    return ["list", "gadgets"]


@case("preset-unknown", names=("exp.toml", "sentbias", "sent-bias"))
def _(world, folder):
    return ["run", str(write_experiment(folder, f'preset = "sentbias"\nmodels = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'))]


@case("ties-unknown", names=("ties", "counted", "strict"))
def _(world, folder):
    return ["run", *w2v(world), "--param", "ties=sometimes"]


@case("static-sentence-unknown", names=("static_sentence", "word-mean"))
def _(world, folder):
    return ["run", *w2v(world), "--metric", "seat", "--param", "static_sentence=raw"]


@case("causal-start-unknown", names=("causal_start", "bos-first-token"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--metric", "crows", "--param", "causal_start=eos"]


@case("lpbs-pairing-unknown", names=("pairing", "i-th"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", "en/lpbs-gender", "--metric", "lpbs", "--param", "pairing=zip"]


@case("lpbs-multi-token-unknown", names=("multi_token", "one-mask"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", "en/lpbs-gender", "--metric", "lpbs", "--param", "multi_token=product"]


@case("lpbs-target-number-unknown", names=("target_number", "singular"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", "en/lpbs-gender", "--metric", "lpbs", "--param", "target_number=plural"]


@case("preset-flag-unknown", names=("--preset", "wefee", "bias-framework, bias-bench, sent-bias, wefe"))
def _(world, folder):
    return ["run", *w2v(world), "--preset", "wefee"]


@case("preset-unknown-over-an-experiment-file", names=("--preset", "wefee", "bias-framework"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder))), "--preset", "wefee"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_more_bad_input(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_at_least_forty_own_cases() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 40


def test_a_folder_another_run_holds_is_refused_and_left_alone(world: World, tmp_path: Path) -> None:
    """A second run into a folder being written is refused, naming the holder; nothing is touched."""
    from bias.core.runs.lock import RunLock

    shutil.copytree(world.finished, tmp_path / "run")
    held = RunLock(tmp_path / "run").acquire()
    try:
        bad = Case("locked", lambda w, f: ["run", *w2v(w), "--bootstrap", "0", "--out", str(tmp_path / "run"), "--resume"],
                   names=("Another bias run", f"process {__import__('os').getpid()}"))
        assert_answered(bad, world, tmp_path / "case")
    finally:
        held.release()
    again = cli("run", *w2v(world), "--bootstrap", "0", "--out", str(tmp_path / "run"), "--resume")
    assert again.code == 0, again.both


def test_debug_shows_the_whole_chain(world: World, tmp_path: Path) -> None:
    """--debug prints the chained traceback down to the library's own error, then the same two lines."""
    model = copy_model(world, tmp_path)
    (model / "config.json").write_text("{", encoding="utf-8")
    plain = cli("run", "-m", f"hf:{model}", "-w", str(world.wordset), "--fail-fast")
    debug = cli("--debug", "run", "-m", f"hf:{model}", "-w", str(world.wordset), "--fail-fast")
    assert plain.code == debug.code == 2
    assert "Traceback" not in plain.both
    assert "Traceback" in debug.err and "JSONDecodeError" in debug.err
    assert "The above exception was the direct cause" in debug.err and "config.json" in debug.err


def test_an_unexpected_failure_exits_1_and_says_how_to_report_it(monkeypatch: pytest.MonkeyPatch, world: World) -> None:
    from bias.engine import planning

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(planning, "check_models", broken)
    result = cli("run", *w2v(world))
    assert result.code == 1 and "Traceback" not in result.both
    assert "ZeroDivisionError: a bug" in result.err and "report it" in result.err and "--debug" in result.err


def test_a_model_from_the_hub_cache_records_its_revision_and_file_hashes(world: World, tmp_path: Path) -> None:
    """A snapshot folder of the Hugging Face cache (models--org--name/snapshots/<commit>/) is what a
    Hub id resolves to; the manifest says which commit and which bytes were used."""
    import hashlib

    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "0123abcd"
    shutil.copytree(world.bert, snapshot)
    done = cli("run", "-m", f"hf:{snapshot}", "-w", str(world.wordset), "--lost-threshold", "1", "--bootstrap", "0", "--out", str(tmp_path / "run"))
    assert done.code == 0, done.both
    [entry] = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))["models"].values()
    assert entry["info"]["revision"] == "0123abcd" and entry["info"]["source"] == "huggingface-hub"
    expected = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in snapshot.iterdir() if p.is_file()}
    assert entry["info"]["file_sha256"] == expected


def test_out_on_the_command_line_replaces_the_files_and_says_so(world: World, tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(basic_experiment(world, tmp_path) + 'out = "fromfile"\n[params]\nbootstrap = 0\n', encoding="utf-8")
    done = cli("run", "exp.toml", "--out", "fromcli", cwd=tmp_path)
    assert done.code == 0, done.both
    assert "--out fromcli replaces the experiment file's out = 'fromfile'" in done.err
    assert (tmp_path / "fromcli" / "results.jsonl").is_file() and not (tmp_path / "fromfile").exists()


@case("report-agreement-with-one-method", names=("--agreement", "only WEAT"))
def _(world, folder):
    shutil.copytree(world.finished, folder / "run")
    return ["report", "run", "--agreement"]


@case("bbq-toml-prompt-without-question", names=("questions.toml", "prompt", "{context} and {question}"))
def _(world, folder):
    (folder / "questions.toml").write_text(
        'kind = "bbq"\nlanguage = "nl"\nbias_type = "age"\nsource = "written by the tests"\nlicence = "CC0-1.0"\n'
        'prompt = "{context}\\nAntwoord:"\n'
        '[[items]]\ncategory = "age"\ncontext = "Een opa en zijn kleinzoon kwamen elkaar tegen."\ncontext_condition = "ambiguous"\n'
        'question = "Wie was vergeetachtig?"\npolarity = "negative"\nanswers = ["De opa", "De kleinzoon", "Onbekend"]\n'
        'unknown = 2\nstereotyped = 0\ntarget = "ouderen"\nlabel = 2\n',
        encoding="utf-8",
    )
    return ["run", "-m", f"hf:{world.bert}", "-w", str(folder / "questions.toml"), "--metric", "bbq"]
