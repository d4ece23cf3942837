"""The bad inputs of the security and bad-input review, each generated here and answered as a user
must see it: the right exit code, no traceback, one or two lines on stderr naming the input, and no
file that existed before changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bad_input_helpers import Case, Outcome, World, assert_answered, cli, copy_model, words_toml, world  # noqa: F401 (world is a fixture)
from bad_input_helpers import basic_experiment, case_decorator, local_wordset, write_experiment
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

CASES: list[Case] = []
case = case_decorator(CASES)


# 1. Settings that run code never come from an experiment file -------------------------------------


@case("toml-allow-pickle", names=("models[0]", "allow_pickle", "--allow-pickle"))
def _(world, folder):
    body = f'models = [{{ spec = "kv:{world.root / "x.kv"}", allow_pickle = true }}]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'
    return ["run", str(write_experiment(folder, body))]


@case("toml-trust-remote-code", names=("trust_remote_code", "--trust-remote-code"))
def _(world, folder):
    body = f'models = [{{ spec = "hf:{world.bert}", trust_remote_code = true }}]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'
    return ["run", str(write_experiment(folder, body))]


@case("toml-params-trust-remote-code", names=("[params]", "--trust-remote-code"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + "[params]\ntrust_remote_code = true\n"))]


# 2. A Hugging Face folder without tokenizer files --------------------------------------------------


@case("hf-without-tokenizer", names=("no tokenizer files", "tokenizer.json", "vocab.txt"))
def _(world, folder):
    model = copy_model(world, folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (model / name).unlink(missing_ok=True)
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


# 3. Parse errors of the command line: exit 2, the option named ------------------------------------


@case("batch-size-not-a-number", names=("--batch-size",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--batch-size", "abc"]


@case("seed-not-a-number", names=("--seed",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--seed", "x"]


@case("permutations-in-float-notation", names=("--permutations",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--permutations", "1e12"]


@case("misspelt-option", names=("--permutatons",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "--permutatons", "10"]


@case("validate-without-path", names=("path", "bias validate --help"))
def _(world, folder):
    return ["validate"]


@case("unknown-subcommand", names=("rnu",))
def _(world, folder):
    return ["rnu"]


# 4 and 5. Rich markup in user text: shown as written, never interpreted ----------------------------


@case("markup-closing-tag-in-wordset-path", names=("[/x]",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws/[/x]a.toml"]


@case("markup-tag-in-path-kept", names=("ws/[red]a.toml",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws/[red]a.toml"]


# The command line replaces a file's value of the same name, and says so (one line, on stderr).
@case("flag-over-a-files-param-says-so", code=0, names=("--ddof 0 replaces the experiment file's ddof = 1.",))
def _(world, folder):
    body = basic_experiment(world, folder) + "[params]\nddof = 1\nbootstrap = 0\n"
    return ["run", str(write_experiment(folder, body)), "--ddof", "0"]


def _markup_word_shown(result: Outcome, folder: Path) -> None:
    assert "[/x]" in result.out and "lost words" in result.out


@case("markup-in-a-word", code=0, check=_markup_word_shown)
def _(world, folder):
    ws = words_toml(folder / "ws.toml", X=(*X_WORDS, "[/x]"))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(ws), "--bootstrap", "0"]


# 6. The same model under two paths runs once --------------------------------------------------------


def _one_result(result: Outcome, folder: Path) -> None:
    lines = (folder / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["status"] == "ok"
    assert "runs once" in result.err


@case("same-model-two-spellings", code=0, check=_one_result)
def _(world, folder):
    (folder / "m").mkdir()
    import shutil

    shutil.copy(world.w2v_bin, folder / "m" / "w2v.bin")
    return ["run", "-m", "word2vec:m/w2v.bin", "-m", "word2vec:./m/../m/w2v.bin", "-w", str(world.wordset), "--bootstrap", "0", "--out", "out"]


@case("same-model-copied-file", code=0, check=_one_result)
def _(world, folder):
    import shutil

    shutil.copy(world.w2v_bin, folder / "copy.bin")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-m", "word2vec:copy.bin", "-w", str(world.wordset), "--bootstrap", "0", "--out", "out"]


# 7. word2vec text header against the rows, for every loader of the format -------------------------


def _short_header(world: World, folder: Path) -> Path:
    lines = world.w2v_txt.read_text(encoding="utf-8").splitlines()
    count, dim = lines[0].split()
    path = folder / "short.txt"
    path.write_text(f"{int(count) - 5} {dim}\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    return path


@case("w2v-header-count-too-small", names=("short.txt", "header line", "line 1"))
def _(world, folder):
    return ["run", "-m", f"word2vec:{_short_header(world, folder)}", "-w", str(world.wordset), "--lost-threshold", "0.9"]


@case("vec-header-count-too-small", names=("short.txt", "header line", "line 1"))
def _(world, folder):
    return ["run", "-m", f"vec:{_short_header(world, folder)}", "-w", str(world.wordset), "--lost-threshold", "0.9"]


@case("w2v-binary-header-count-too-small", names=("short.bin", "header line"))
def _(world, folder):
    data = world.w2v_bin.read_bytes()
    end = data.index(b"\n")
    count, dim = data[:end].split()
    (folder / "short.bin").write_bytes(f"{int(count) - 5} {int(dim)}".encode() + data[end:])
    return ["run", "-m", "word2vec:short.bin", "-w", str(world.wordset)]


# 8. Unbounded resampling counts ---------------------------------------------------------------------


@case("permutations-ten-to-the-twelve", names=("--permutations 1,000,000,000,000", "hours"))
def _(world, folder):
    ws = words_toml(folder / "ws.toml", X=X_WORDS + Y_WORDS, Y=A_WORDS + B_WORDS)
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(ws), "--permutations", "1000000000000"]


@case("bootstrap-ten-to-the-eleven", names=("--bootstrap 100,000,000,000",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "100000000000"]


# 9. transformers' and safetensors' messages translated ----------------------------------------------


@case("hf-corrupt-config", names=("config.json", "damaged"), absent=("trust_remote_code",))
def _(world, folder):
    model = copy_model(world, folder)
    (model / "config.json").write_text('{"model_type": "bert", ', encoding="utf-8")
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


@case("hf-truncated-safetensors", names=("truncated", "bert"))
def _(world, folder):
    model = copy_model(world, folder)
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


@case("hf-config-weights-mismatch", names=("do not fit", "config.json"), absent=("above report",))
def _(world, folder):
    model = copy_model(world, folder)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=64, intermediate_size=128)
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return ["run", "-m", f"hf:{model}", "-w", str(world.wordset)]


# 10. Paths in an experiment file ----------------------------------------------------------------------


@case("toml-out-outside", names=("out = '../../elsewhere'", "--out"))
def _(world, folder):
    (folder / "sub").mkdir()
    return ["run", str(write_experiment(folder / "sub", basic_experiment(world, folder / "sub") + 'out = "../../elsewhere"\n'))]


def _written_beside_the_file(result: Outcome, folder: Path) -> None:
    assert (folder / "exps" / "runs" / "r1" / "results.jsonl").is_file()
    assert not (folder / "runs").exists()


@case("toml-relative-paths-from-its-folder", code=0, check=_written_beside_the_file)
def _(world, folder):
    import shutil

    exps = folder / "exps"
    exps.mkdir()
    shutil.copy(world.w2v_bin, exps / "model.bin")
    words_toml(exps / "ws.toml")
    body = 'models = ["word2vec:model.bin"]\nwordsets = ["ws.toml"]\nmetrics = ["weat"]\nout = "runs/r1"\n[params]\nbootstrap = 0\n'
    write_experiment(exps, body)
    return ["run", "exps/exp.toml"]


# 11. Bad input is echoed with limits ----------------------------------------------------------------


@case("hundred-thousand-word-set", code=2, names=("big.toml", "sets.X.words: more than 5,000 words"), check=lambda r, f: (len(" ".join(r.both.split())) < 2000) or pytest.fail(r.err[:300]))
def _(world, folder):
    many = tuple(f"nonword{i}" for i in range(100_000))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(words_toml(folder / "big.toml", X=many))]


@case("megabyte-word", code=2, check=lambda r, f: (len(" ".join(r.both.split())) < 5000) or pytest.fail(f"{len(r.both)} characters echoed"))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "x" * 1_000_000 + ".toml"]


@case("right-to-left-override-in-name", names=("<U+202E>",), absent=("\u202e",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "evil\u202etxt.toml"]


@case("zero-width-space-in-word", code=0, check=lambda r, f: ("<U+200B>" in r.out and "\u200b" not in r.both) or pytest.fail(r.out))
def _(world, folder):
    ws = words_toml(folder / "ws.toml", X=(*X_WORDS, "ro\u200bse"))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(ws), "--bootstrap", "0"]


# 12. Conflicting option values ------------------------------------------------------------------------


@case("ddof-in-params-and-grid", names=("ddof", "[params]", "[grid]"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + "[params]\nddof = 0\n[grid]\nddof = [1]\n"))]


def _two_values_a_grid(result: Outcome, folder: Path) -> None:
    assert "permutations=10 " in result.out and "permutations=100 " in result.out, result.out


# --permutations is --param permutations: two values of one parameter are a grid, however written.
@case("param-and-its-flag-two-values-a-grid", code=0, check=_two_values_a_grid)
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--permutations", "100", "--param", "permutations=10",
            "--bootstrap", "0", "--exact-limit", "0"]


@case("file-model-option-and-command-line-disagree", names=("batch_size", "the command line"))
def _(world, folder):
    body = f'models = [{{ spec = "hf:{world.bert}", batch_size = 8 }}]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'
    return ["run", str(write_experiment(folder, body)), "--batch-size", "16"]


# 14. Refusals name the part at fault --------------------------------------------------------------------


@case("w2v-short-row", names=("short-row.txt", "line 11"))
def _(world, folder):
    lines = world.w2v_txt.read_text(encoding="utf-8").splitlines()
    lines[10] = " ".join(lines[10].split()[:-3])
    (folder / "short-row.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["run", "-m", "word2vec:short-row.txt", "-w", str(world.wordset)]


@case("binary-header-absurd-dimension", names=("absurd.bin", "header"))
def _(world, folder):
    data = world.w2v_bin.read_bytes()
    (folder / "absurd.bin").write_bytes(b"91 99999999" + data[data.index(b"\n"):])
    return ["run", "-m", "word2vec:absurd.bin", "-w", str(world.wordset)]


# 15. Load failures on stderr, before any table, never under an empty one ------------------------------


@case("missing-model-file", names=("nothere.bin",))
def _(world, folder):
    return ["run", "-m", "word2vec:nothere.bin", "-w", str(world.wordset)]


@case("impossible-device", names=("cuda:7",))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--device", "cuda:7"]


@case("every-experiment-refused-prints-no-table", names=("refused", "lost"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", "en/weat1"]


# Smaller findings -----------------------------------------------------------------------------------------


@case("report-on-garbage", names=("results.jsonl", "no valid result line"), lines=3)
def _(world, folder):
    (folder / "run").mkdir()
    (folder / "run" / "results.jsonl").write_bytes(bytes(range(256)) * 40)
    return ["report", "run"]


@case("validate-three-word-set", names=("small.toml", "3 stimuli", "minimum of 8"), lines=6, stream="out")
def _(world, folder):
    return ["validate", str(words_toml(folder / "small.toml", X=X_WORDS[:3]))]


@case("run-three-word-set-warns", code=0, check=lambda r, f: ("minimum of 8" in r.err) or pytest.fail(r.err))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(words_toml(folder / "small.toml", X=X_WORDS[:3])), "--bootstrap", "0"]


@case("wordset-without-extension", names=("noext", ".toml", ".csv"))
def _(world, folder):
    (folder / "noext").write_text("rose\n", encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "./noext"]


@case("wordset-is-a-folder", names=("adir", "folder"))
def _(world, folder):
    (folder / "adir").mkdir()
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", "./adir"]


@case("layer-given-to-weat", names=("--model-option",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--layer", "2"]


@case("damaged-manifest-on-resume", names=("manifest.json", "damaged"), absent=("Restore it",))
def _(world, folder):
    import shutil

    shutil.copytree(world.finished, folder / "run")
    (folder / "run" / "manifest.json").write_text("{broken", encoding="utf-8")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0", "--out", "run", "--resume"]


@case("batch-size-zero-for-word2vec", names=("--batch-size",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--batch-size", "0"]


@case("limit-zero", names=("--limit",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--limit", "0"]


@case("limit-not-a-number", names=("--limit",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--limit", "all"]


def _one_note(result: Outcome, folder: Path) -> None:
    assert result.err.count("924 partitions") == 1 and "fewer than the minimum" not in result.err


@case("published-small-sets-get-one-note", code=0, check=_one_note)
def _(world, folder):
    ws = words_toml(folder / "w9.toml", X=X_WORDS[:6], Y=Y_WORDS[:6], A=A_WORDS[:7], B=B_WORDS[:7], extra="published_small_sets = true")
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(ws), "--bootstrap", "0"]


def _weat9_valid(result: Outcome, folder: Path) -> None:
    assert "924 partitions" in result.out and "0 error(s), 0 warning(s)" in result.out


@case("validate-published-weat9", code=0, check=_weat9_valid)
def _(world, folder):
    from bias import registry

    return ["validate", registry.load_wordset("en/weat9").meta.path]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_review_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_cases_have_unique_names() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 45


def test_a_tampered_cache_row_is_rebuilt_with_a_note(world: World, tmp_path: Path) -> None:
    """A row whose checksum was recomputed over NaN numbers passes the CRC; it is still damaged."""
    import sqlite3
    import zlib

    import numpy as np

    args = ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--lost-threshold", "1", "--bootstrap", "0", "--model-option", f"cache_dir={tmp_path / 'cache'}"]
    first = cli(*args, "--out", str(tmp_path / "one"))
    assert first.code == 0, first.both
    [database] = list((tmp_path / "cache").rglob("*.sqlite"))
    with sqlite3.connect(database) as connection:
        key, dim = connection.execute("SELECT key, dim FROM rows LIMIT 1").fetchone()
        data = np.full(dim, np.nan).astype("<f8").tobytes()
        connection.execute("UPDATE rows SET data = ?, crc = ? WHERE key = ?", (data, zlib.crc32(data), key))
    again = cli(*args, "--out", str(tmp_path / "two"))
    assert again.code == 0 and "Traceback" not in again.both, again.both
    assert "damaged row" in again.err and "computed again" in again.err
    one = json.loads((tmp_path / "one" / "results.jsonl").read_text().splitlines()[0])
    two = json.loads((tmp_path / "two" / "results.jsonl").read_text().splitlines()[0])
    assert one["effect_size"] == pytest.approx(two["effect_size"], abs=1e-9)
