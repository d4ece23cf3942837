"""The `bias` command as a user runs it: exit codes, one- or two-line errors. A run that writes,
resumes and reports, and --debug's traceback, start a fresh process as the user does; the other
commands run through the same entry point in this process (fixtures/in_process.py), without a start
of Python and gensim each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fixtures.in_process import completed
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

HEAVY = ("torch", "transformers", "gensim", "fasttext")


def bias(*args: str, cwd: Path | None = None, fresh: bool = False) -> subprocess.CompletedProcess:
    """`bias ARGS`: in this process, or with `fresh` in a process of its own."""
    if not fresh:
        return completed(*args, cwd=cwd)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "250", "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def wordset_toml(path: Path, X=X_WORDS, Y=Y_WORDS, A=A_WORDS, B=B_WORDS, extra: str = "") -> Path:
    def words(ws):
        return "[" + ", ".join(f'"{w}"' for w in ws) + "]"

    path.write_text(
        f"""kind = "association"
language = "en"
bias_type = "non-social"
source = "generated for the tests"
licence = "CC0-1.0"
{extra}
[sets.X]
words = {words(X)}
[sets.Y]
words = {words(Y)}
[sets.A]
words = {words(A)}
[sets.B]
words = {words(B)}
""",
        encoding="utf-8",
    )
    return path


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str, code: int = 2) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    text = proc.stderr + proc.stdout
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def test_help_list_and_info_import_no_heavy_library():
    code = (
        "import sys\n"
        "from bias.cli.app import main\n"
        "for argv in (['bias', '--help'], ['bias', 'list'], ['bias', 'info', 'hf'], ['bias', 'info', 'fasttext']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (argv, exc.code)\n"
        f"loaded = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY', loaded)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_list_groups_language_filter_and_json():
    proc = bias("list")
    assert proc.returncode == 0
    for group in ("embedders", "metrics", "wordsets", "debiasers"):
        assert group in proc.stdout
    rows = json.loads(bias("list", "wordsets", "--language", "en", "--json").stdout)
    weat = [r["name"] for r in rows if r["name"].startswith("en/weat")]
    assert weat[:3] == ["en/weat1", "en/weat2", "en/weat3"] and len(weat) == 10
    assert all(r["distribution"] == "bias-lang-en" and r["status"] == "ok" for r in rows)
    assert_user_error(bias("list", "gizmos"), "gizmos")


def test_info_shows_parameters_requirements_and_origin():
    proc = bias("info", "weat")
    assert proc.returncode == 0
    for fragment in ("permutations", "100000", "ddof", "lost_threshold", "word-vectors", "bias-framework", "bias.metrics"):
        assert fragment in proc.stdout
    data = json.loads(bias("info", "en/weat7", "--json").stdout)[0]
    assert data["bias_type"] == "gender" and data["licence"] and "Caliskan" in data["source"]
    assert_user_error(bias("info", "weet"), "weet", "weat")


def test_run_planted_model_writes_results_and_resumes(planted_files, tmp_path):
    ws = wordset_toml(tmp_path / "planted.toml")
    out = tmp_path / "run"
    args = ["run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws), "--seed", "3", "--seed", "4",
            "--ddof", "0", "--ddof", "1", "--out", str(out), "--json"]
    proc = bias(*args, fresh=True)
    assert proc.returncode == 0, proc.stderr
    printed = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(printed) == 4  # the cross product: 2 seeds x 2 ddof
    assert all(r["status"] == "ok" and r["effect_size"] > 0.8 and r["p_value"] < 0.01 for r in printed)
    assert {(r["seed"], r["convention"]["ddof"]) for r in printed} == {(3, 0), (3, 1), (4, 0), (4, 1)}
    d0 = next(r["effect_size"] for r in printed if r["convention"]["ddof"] == 0)
    d1 = next(r["effect_size"] for r in printed if r["convention"]["ddof"] == 1)
    assert d0 / d1 == pytest.approx(np.sqrt(16 / 15))
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4 and len({json.loads(l)["key"] for l in lines}) == 4
    assert "planted" in (out / "report.md").read_text()

    again = bias(*args[:-1], "--resume", fresh=True)
    assert again.returncode == 0, again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 4
    assert "already finished" in again.stdout

    report = bias("report", str(out), fresh=True)
    assert report.returncode == 0 and "planted" in report.stdout


def test_run_table_shows_convention_sizes_and_lost_words(planted_files, tmp_path):
    ws = wordset_toml(tmp_path / "lossy.toml", X=X_WORDS + ("zzunknownword",))
    proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws), "--permutations", "5000",
                "--exact-limit", "0", "--alternative", "two-sided")
    assert proc.returncode == 0, proc.stderr
    for fragment in ("sampled permutation test (5,000 permutations, seed 0)", "ddof=1", "two-sided", "8/8/8/8"):
        assert fragment in proc.stdout, fragment
    assert "zzunknownword" in proc.stdout  # lost words are listed under the table


def test_experiment_file_with_relative_wordset(planted_files, tmp_path):
    (tmp_path / "sets").mkdir()
    wordset_toml(tmp_path / "sets" / "planted.toml")
    config = tmp_path / "exp.toml"
    config.write_text(
        f'title = "t"\nseeds = [1, 2]\nwordsets = ["sets/planted.toml"]\nmetrics = [{{ name = "weat", permutations = 1000 }}]\n'
        f'out = "{tmp_path / "out"}"\n[[models]]\nspec = "word2vec:{planted_files.word2vec_bin}"\n[params]\nddof = 0\n'
    )
    proc = bias("run", str(config), "--json", cwd=tmp_path.parent)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(l) for l in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [1, 2] and all(r["params"]["ddof"] == 0 and r["params"]["permutations"] == 1000 for r in rows)


def test_unequal_targets_run_with_an_explanation(planted_files, tmp_path):
    ws = wordset_toml(tmp_path / "unequal.toml", Y=Y_WORDS[:6])
    proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws))
    assert proc.returncode == 0, proc.stderr
    assert "differ in size" in proc.stderr and "differ in size" not in proc.stdout  # a warning, on stderr
    row = json.loads(bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws), "--json").stdout)
    assert row["convention"]["partitions"] == "observed sizes 8/6" and row["sizes"] == {"X": 8, "Y": 6, "A": 8, "B": 8}
    assert row["convention"]["method"] == "exact" and row["convention"]["permutations"] == 3003  # C(14, 8)


# --- bad input: exit 2, a message naming what is wrong, no traceback ---------------------------


def test_unknown_names(planted_files):
    model = f"word2vec:{planted_files.word2vec_bin}"
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat11"), "en/weat11", "en/weat1")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--metric", "waet"), "waet", "weat")
    assert_user_error(bias("run", "--model", "word2vek:x.bin", "--wordset", "en/weat1"), "word2vek", "word2vec")
    assert_user_error(bias("run", "--model", "vectors.bin", "--wordset", "en/weat1"), "NAME:LOCATION")


def test_missing_and_wrong_model_files(tmp_path):
    assert_user_error(bias("run", "--model", f"word2vec:{tmp_path / 'nope.bin'}", "--wordset", "en/weat1"), "nope.bin")
    text = tmp_path / "vectors.txt"
    text.write_text("2 3\nrose 0.1 0.2 0.3\nant 0.3 0.2 0.1\n")
    assert_user_error(bias("run", "--model", f"fasttext:{text}", "--wordset", "en/weat1"), "vectors.txt")


def test_hub_id_while_offline():
    proc = bias("run", "--model", "hf:someone/not-a-local-model", "--wordset", "en/weat1")
    assert_user_error(proc, "someone/not-a-local-model")
    assert "offline" in (proc.stderr + proc.stdout).lower()


def test_malformed_toml_names_file_and_line(tmp_path):
    config = tmp_path / "broken.toml"
    config.write_text('wordsets = ["en/weat1"]\nmetrics = ["weat"\n')
    assert_user_error(bias("run", str(config)), "broken.toml", "line")
    ws = tmp_path / "bad-set.toml"
    ws.write_text("kind = association\n")
    assert_user_error(bias("run", "--model", "word2vec:x.bin", "--wordset", str(ws)), "bad-set.toml", "line 1")


def test_empty_set_and_duplicates(planted_files, tmp_path):
    empty = wordset_toml(tmp_path / "empty.toml", A=())
    assert_user_error(bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(empty)), "sets.A.words", "empty")
    dup = wordset_toml(tmp_path / "dup.toml", X=X_WORDS + ("Rose",))
    proc = bias("validate", str(dup))
    assert proc.returncode == 0 and "warning" in proc.stdout and "sets.X.words[8]" in proc.stdout
    # Case-sensitive by default: 'Rose' is a stimulus of its own (lost: the model's words are lower case) ...
    run = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(dup))
    assert run.returncode == 0 and "8/8/8/8" in run.stdout and "repeats" not in run.stderr
    # ... and a repeat of 'rose' when the run lowercases the words: dropped, with a warning.
    lowered = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(dup), "--param", "case=lower")
    assert lowered.returncode == 0 and "8/8/8/8" in lowered.stdout, lowered.stdout + lowered.stderr
    assert "repeat" in lowered.stderr


def test_all_words_lost_is_refused(planted_files, tmp_path):
    ws = wordset_toml(tmp_path / "alien.toml", Y=tuple(f"qqq{i}" for i in range(8)))
    proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(ws), "--out", str(tmp_path / "o"))
    assert_user_error(proc, "refused", "set Y")
    row = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert row["status"] == "refused" and "qqq0" in row["reason"]


def test_zero_and_non_finite_vectors_are_refused(tmp_path):
    words = X_WORDS + Y_WORDS + A_WORDS + B_WORDS
    rng = np.random.default_rng(0)
    rows = []
    for w in words:
        v = rng.normal(size=5)
        if w == "tulip":
            v[:] = 0.0
        rows.append(w + " " + " ".join(f"{x:.5f}" for x in v))
    path = tmp_path / "zero.txt"
    path.write_text(f"{len(words)} 5\n" + "\n".join(rows) + "\n")
    ws = wordset_toml(tmp_path / "set.toml")
    assert_user_error(bias("run", "--model", f"word2vec:{path}", "--wordset", str(ws)), "tulip", "zero or non-finite")
    path.write_text(path.read_text().replace(rows[words.index("tulip")], "tulip nan 1 2 3 4"))
    assert_user_error(bias("run", "--model", f"word2vec:{path}", "--wordset", str(ws)), "tulip")


def test_bad_options(planted_files, tmp_path):
    model = f"word2vec:{planted_files.word2vec_bin}"
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--permutations", "0"), "permutations")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--ddof", "2"), "ddof")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--alternative", "bigger"), "alternative")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--exact-limit", "-1"), "exact_limit")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--case", "upper"), "case", "lower")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--lost-threshold", "1.5"), "lost_threshold")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--model-option", "colour=red"), "colour")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert_user_error(bias("run", "--model", model, "--wordset", "en/weat1", "--out", str(blocker / "sub")), "output folder", "--out")


def test_debug_shows_the_traceback(tmp_path):
    proc = bias("--debug", "run", "--model", f"word2vec:{tmp_path / 'nope.bin'}", "--wordset", "en/weat1", fresh=True)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_validate_package_and_files(tmp_path):
    root = Path(__file__).resolve().parents[1]
    proc = bias("validate", str(root / "languages" / "en"))
    assert proc.returncode == 0, proc.stdout
    checked = len(list((root / "languages" / "en" / "bias_lang_en" / "data").glob("*.toml")))
    assert f"{checked} file(s) checked: 0 error(s)" in proc.stdout
    bad = tmp_path / "pkg"
    bad.mkdir()
    (bad / "one.toml").write_text('kind = "association"\nlanguage = "en"\n[sets.X]\nwords = ["a", 3]\n')
    proc = bias("validate", str(bad))
    assert proc.returncode == 2
    for fragment in ("one.toml: bias_type", "one.toml: licence", "one.toml: sets.X.words[1]", "one.toml: sets.Y"):
        assert fragment in proc.stdout, fragment
    assert_user_error(bias("validate", str(tmp_path / "missing")), "missing")


def test_community_formats_are_imported(planted_files, tmp_path):
    txt = tmp_path / "planted.txt"
    txt.write_text("# language: en\n" + "\n".join(f"{name}: " + ", ".join(ws) for name, ws in
                   (("Flowers", X_WORDS), ("Insects", Y_WORDS), ("Pleasant", A_WORDS), ("Unpleasant", B_WORDS))) + "\n")
    seat = tmp_path / "planted.jsonl"
    seat.write_text(json.dumps({k: {"category": k, "examples": list(ws)} for k, ws in
                                (("targ1", X_WORDS), ("targ2", Y_WORDS), ("attr1", A_WORDS), ("attr2", B_WORDS))}))
    for path in (txt, seat):
        assert bias("validate", str(path)).returncode == 0
        proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(path), "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.splitlines()[-1])["effect_size"] > 0.8
    short = tmp_path / "short.txt"
    short.write_text("a, b\nc, d\n")
    assert_user_error(bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(short)), "short.txt", "4 lines")
    broken = tmp_path / "broken.json"
    broken.write_text('{"targ1": ')
    assert_user_error(bias("run", "--model", "word2vec:x", "--wordset", str(broken)), "broken.json", "line 1")


def test_info_cites_the_method_documentation_of_every_first_party_metric():
    """`bias info` points at docs/methods.md, and that page has a section for every metric and
    debiaser the framework ships (a new metric without documentation fails here)."""
    import re

    from bias.cli.info import plugin_documentation
    from bias.registry import entry_points as eps

    root = Path(__file__).resolve().parents[1]
    headings = set(re.findall(r"^#{2,3} (\S+)$", (root / "docs" / "methods.md").read_text(encoding="utf-8"), re.M))
    for group in ("metrics", "debiasers"):
        for info in eps.entry_points(group):
            if info.distribution != "bias-framework":
                continue
            (entry,) = [e for e in plugin_documentation(info.name) if e["group"] == group]
            assert entry["method"].startswith(f"docs/methods.md#{info.name}")
            assert info.name in headings, f"docs/methods.md has no section for {info.name}"


def test_info_reflows_docstrings_and_prints_them_as_plain_text():
    """Source docstrings are wrapped at 100 columns: each paragraph becomes one line for the terminal to
    wrap, list items keep their breaks, and brackets are text, not markup."""
    import io

    from rich.console import Console

    from bias.cli.info import plugin_documentation, reflow, render

    doc = "Pools the [CLS] vector of\nthe sentence, as May et al.\n\nOptions:\n- cls: first token\n- mean: all tokens\n  of the text"
    assert reflow(doc) == (
        "Pools the [CLS] vector of the sentence, as May et al.\n\nOptions:\n- cls: first token\n- mean: all tokens\n  of the text"
    )
    out = io.StringIO()
    (entry,) = [e for e in plugin_documentation("weat") if e["group"] == "metrics"]
    render(Console(file=out, width=200), {**entry, "doc": doc})
    assert "Pools the [CLS] vector of the sentence, as May et al." in out.getvalue()
