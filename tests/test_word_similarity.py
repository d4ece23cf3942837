"""word-similarity: Spearman's rho against scipy, the bootstrap against a brute-force loop, pairs lost
reported, and SimLex/WordSim-style files read (or refused) as a user gives them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bias.core.statistics.bootstrap import generator
from bias.core.errors import BiasError
from bias.plugins.metrics.word_similarity import WordSimilarity, bootstrap_rho, spearman_rows
from bias.registry import build_embedder, load_wordset
from scipy.stats import spearmanr

from fixtures.in_process import completed
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "word-similarity-en.tsv"


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    for n in (5, 17, 200):
        x = np.round(rng.normal(size=n), 1)  # rounding makes ties
        y = np.round(x + rng.normal(size=n), 0)
        assert spearman_rows(x, y)[0] == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("n, resamples", [(12, 300), (1000, 2100)])  # the second is drawn in several chunks
def test_bootstrap_matches_a_brute_force_loop(n, resamples):
    rng = np.random.default_rng(1)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    boot = bootstrap_rho(x, y, resamples, seed=7)
    draws = generator(7).integers(0, n, size=(resamples, n))  # the documented draw, all at once
    brute = np.array([spearmanr(x[row], y[row]).statistic for row in draws])
    assert np.allclose(boot, brute, atol=1e-12, equal_nan=True)


def vectors_file(tmp_path: Path, words: list[str], seed: int = 3, dim: int = 12) -> tuple[Path, dict[str, np.ndarray]]:
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(seed)
    table = {w: rng.normal(size=dim) for w in words}
    kv = KeyedVectors(vector_size=dim)
    kv.add_vectors(words, np.array([table[w] for w in words], dtype=np.float32))
    path = tmp_path / "vectors.bin"
    kv.save_word2vec_format(str(path), binary=True)
    return path, {w: np.asarray(v, dtype=np.float32).astype(np.float64) for w, v in table.items()}


def pairs_file(tmp_path: Path, rows: list[tuple[str, str, float]], header: str | None = "word1\tword2\tscore") -> Path:
    path = tmp_path / "pairs.tsv"
    lines = ["# language: en", "# source: generated for the tests", "# licence: CC0-1.0"]
    lines += [header] if header else []
    lines += [f"{a}\t{b}\t{s}" for a, b, s in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_metric_on_a_static_model_reports_rho_interval_and_lost_pairs(tmp_path):
    words = [f"w{i}" for i in range(30)]
    model, table = vectors_file(tmp_path, words)
    rng = np.random.default_rng(4)
    rows = [(words[i], words[j], float(np.round(rng.uniform(0, 10), 2))) for i, j in rng.integers(0, 30, size=(40, 2)) if i != j]
    rows = list({(a, b): (a, b, s) for a, b, s in rows}.values())
    rows += [("w1", "absent", 5.0), ("missing", "w2", 1.0)]
    data = load_wordset(str(pairs_file(tmp_path, rows)))
    result = WordSimilarity(resamples=500).compute(build_embedder(f"word2vec:{model}"), data, seed=11)

    scored = [(a, b, s) for a, b, s in rows if a in table and b in table]
    cos = [table[a] @ table[b] / np.linalg.norm(table[a]) / np.linalg.norm(table[b]) for a, b, _ in scored]
    expected = spearmanr(cos, [s for *_, s in scored]).statistic
    assert result.ok and result.effect_size == pytest.approx(expected, abs=1e-6)
    assert result.figures["pairs_scored"] == len(scored) and result.figures["pairs_lost"] == 2
    assert set(result.lost["pairs"]) == {"absent", "missing"} and "w1 absent" in result.figures["lost_pairs"]
    assert result.figures["ci_low"] < expected < result.figures["ci_high"] and result.figures["ci_method"] == "percentile"
    assert any("not scored" in w for w in result.warnings)
    again = WordSimilarity(resamples=500).compute(build_embedder(f"word2vec:{model}"), data, seed=11)
    assert again.figures["ci_low"] == result.figures["ci_low"]  # seeded


def test_perfectly_ordered_scores_give_rho_one(tmp_path):
    words = [f"w{i}" for i in range(12)]
    model, table = vectors_file(tmp_path, words, seed=5)
    pairs = [(words[i], words[i + 1]) for i in range(11)]
    cos = [table[a] @ table[b] / np.linalg.norm(table[a]) / np.linalg.norm(table[b]) for a, b in pairs]
    rows = [(a, b, round(10 * (c + 1) / 2, 6)) for (a, b), c in zip(pairs, cos)]  # a monotone map of the cosine
    data = load_wordset(str(pairs_file(tmp_path, rows, header=None)))
    result = WordSimilarity(resamples=0).compute(build_embedder(f"word2vec:{model}"), data, seed=0)
    assert result.effect_size == pytest.approx(1.0) and "ci_low" not in result.figures


def test_simlex_layout_reads_the_named_score_column_and_spaces(tmp_path):
    simlex = tmp_path / "simlex.txt"
    simlex.write_text("word1\tword2\tPOS\tSimLex999\tconc(w1)\nold\tnew\tA\t1.58\t2.72\nsmart\tintelligent\tA\t9.2\t1.75\nhard\tdifficult\tA\t8.77\t3.76\n", encoding="utf-8")
    data = load_wordset(str(simlex))
    assert data.meta.kind == "similarity-pairs"
    assert [(p.first, p.second, p.score) for p in data.pairs] == [("old", "new", 1.58), ("smart", "intelligent", 9.2), ("hard", "difficult", 8.77)]
    spaces = tmp_path / "ws.txt"
    spaces.write_text("tiger cat 7.35\nbook paper 7.46\ncomputer keyboard 7.62\n", encoding="utf-8")
    assert [p.score for p in load_wordset(str(spaces)).pairs] == [7.35, 7.46, 7.62]
    example = load_wordset(str(EXAMPLE))
    assert len(example.pairs) >= 30 and example.meta.language == "en" and example.meta.licence == "Apache-2.0"


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("a\tb\t1\nc\td\tmuch\n", "line 2: the score 'much' is not a number"),
        ("a\tb\t1\nc\td\n", "line 2: expected 'word1 word2 score'"),
        ("a\tb\t1\nc\td\t2\n", "at least 3 are needed"),
    ],
)
def test_bad_pair_files_are_refused_with_the_line(tmp_path, content, fragment):
    path = tmp_path / "bad.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BiasError) as err:
        load_wordset(str(path))
    assert fragment in str(err.value.message)
    done = bias("run", "--model", f"word2vec:{tmp_path / 'none.bin'}", "--wordset", str(path), "--metric", "word-similarity")
    assert done.returncode == 2 and "Traceback" not in done.stderr and fragment in " ".join(done.stderr.split())


def test_cli_run_word_similarity(tmp_path):
    words = sorted({w for line in EXAMPLE.read_text(encoding="utf-8").splitlines()[9:] for w in line.split("\t")[:2]})
    model, _ = vectors_file(tmp_path, words[:-3])  # three words have no vector
    done = bias("run", "--model", f"word2vec:{model}", "--metric", "word-similarity", "--wordset", str(EXAMPLE), "--json", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    row = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert row["status"] == "ok" and -1 <= row["effect_size"] <= 1
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert record["figures"]["pairs_lost"] >= 3 and sorted(record["lost"]["pairs"]) == sorted(words[-3:])


def test_run_with_original_reports_bias_and_similarity_before_and_after(planted_gender, tmp_path):
    """`bias run --debias METHOD --with-original`: one table with the bias test and the utility on the
    original and the debiased model. The values are checked against runs of each model alone and
    against rho computed here with scipy from the vectors `bias debias` writes."""
    import csv

    from conftest import GENDER_CAREER, GENDER_FAMILY, GENDER_FEMALE, GENDER_MALE
    from gensim.models import KeyedVectors

    def words(ws) -> str:
        return "[" + ", ".join(f'"{w}"' for w in ws) + "]"

    head = 'language = "en"\nbias_type = "gender"\nsource = "generated for the tests"\nlicence = "CC0-1.0"\n'
    pairs = "[" + ", ".join(f'["{m}", "{f}"]' for m, f in zip(GENDER_MALE, GENDER_FEMALE)) + "]"
    lists = tmp_path / "lists.toml"
    lists.write_text(f'kind = "debias-lists"\n{head}definitional = {pairs}\nequalize = {pairs}\nspecific = {words(GENDER_MALE + GENDER_FEMALE)}\n', encoding="utf-8")
    weat = tmp_path / "weat.toml"
    weat.write_text(
        f'kind = "association"\n{head}'
        + "".join(f"[sets.{k}]\nwords = {words(ws)}\n" for k, ws in zip("XYAB", (GENDER_MALE, GENDER_FEMALE, GENDER_CAREER, GENDER_FAMILY))),
        encoding="utf-8",
    )
    rows = [
        ("small", "little", 9), ("big", "high", 6), ("good", "right", 6), ("day", "time", 5), ("old", "long", 3),
        ("children", "parents", 6), ("business", "career", 7), ("home", "family", 7), ("wedding", "marriage", 9),
        ("office", "management", 6), ("cousins", "relatives", 8), ("one", "other", 2), ("he", "she", 4), ("salary", "money", 7),
    ]
    sim = pairs_file(tmp_path, rows)
    out = tmp_path / "run"
    done = bias(
        "run", "--model", f"word2vec:{planted_gender}", "--debias", "hard", "--debias-lists", str(lists), "--with-original",
        "--wordset", str(weat), "--wordset", str(sim), "--metric", "weat", "--metric", "word-similarity",
        "--permutations", "200", "--out", str(out),
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "debias=hard" in text and "Change" in text
    table = {row["metric"]: row for row in csv.DictReader((out / "compare.csv").open(encoding="utf-8"))}
    assert set(table) == {"weat", "word-similarity"}

    def value(row: dict, side: str) -> float:
        return float(row[f"{side}_effect"])

    # the bias measure: the same as runs of each model alone
    alone = [json.loads(line) for line in bias("run", "--model", f"word2vec:{planted_gender}", "--wordset", str(weat), "--permutations", "200", "--json").stdout.splitlines() if line.startswith("{")]
    assert value(table["weat"], "before") == pytest.approx(alone[0]["effect_size"], abs=1e-3)
    assert value(table["weat"], "after") < value(table["weat"], "before") - 1.0  # Hard-Debias removes the planted bias
    # the utility: rho from the vectors themselves (original file; debiased vectors written by `bias debias`)
    # `bias debias --wordset` measures the written vectors beside the original: the same table
    written = bias(
        "debias", "--model", f"word2vec:{planted_gender}", "--method", "hard", "--lists", str(lists), "--out", str(tmp_path / "hard"),
        "--wordset", str(weat), "--wordset", str(sim),
    )
    assert written.returncode == 0, written.stderr
    measured = {row["metric"]: row for row in csv.DictReader((tmp_path / "hard" / "measures" / "compare.csv").open(encoding="utf-8"))}
    assert set(measured) == {"weat", "word-similarity"}
    for metric in measured:
        for side in ("before", "after"):
            assert value(measured[metric], side) == pytest.approx(value(table[metric], side), abs=1e-4)

    def rho(path: Path) -> float:
        kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
        kept = [(a, b, s) for a, b, s in rows if a in kv.key_to_index and b in kv.key_to_index]
        cos = [float(np.dot(kv[a], kv[b]) / np.linalg.norm(kv[a]) / np.linalg.norm(kv[b])) for a, b, _ in kept]
        return spearmanr(cos, [s for *_, s in kept]).statistic

    assert value(table["word-similarity"], "before") == pytest.approx(rho(planted_gender), abs=1e-3)
    assert value(table["word-similarity"], "after") == pytest.approx(rho(tmp_path / "hard" / "vectors.bin"), abs=1e-3)
    assert float(table["word-similarity"]["change"]) == pytest.approx(value(table["word-similarity"], "after") - value(table["word-similarity"], "before"), abs=2e-3)


def test_with_original_needs_one_debiased_model(tmp_path):
    done = bias("run", "--model", "word2vec:none.bin", "--wordset", "en/weat6", "--with-original")
    assert done.returncode == 2 and "Give one --model and --debias METHOD" in " ".join(done.stderr.split())


def test_debias_measure_options_refused_clearly(planted_gender, tmp_path):
    lone = bias("debias", "--model", f"word2vec:{planted_gender}", "--language", "en", "--out", str(tmp_path / "a"), "--metric", "weat")
    assert lone.returncode == 2 and "--metric goes with --wordset" in " ".join(lone.stderr.split())
    no_default = bias("debias", "--model", f"word2vec:{planted_gender}", "--language", "en", "--out", str(tmp_path / "b"), "--wordset", "en/debias-gender")
    assert no_default.returncode == 2 and "No default metric for the word set en/debias-gender" in " ".join(no_default.stderr.split())
