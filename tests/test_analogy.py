"""Analogy accuracy (3CosAdd), the `analogies` word-set kind and the word2vec questions importer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bias import registry
from bias.core.data import analogies
from bias.core.errors import BiasError
from bias.core.model import OK, REFUSED, Result
from bias.engine.validate import validate_path
from bias.plugins.formats.analogy_txt import AnalogyTxtFormat
from bias.plugins.metrics.analogy import solve_3cosadd, unit_matrix

from fixtures.in_process import completed
# target of "man woman king ?" = e2 - e1 + (e1 + e3)/sqrt2 = (-0.293, 1, 0.707):
# cos with queen (0,1,1)/sqrt2 = 0.959, with apple (1,1,1)/sqrt3 = 0.648; princess lies almost on it.
HAND = {
    "man": (1.0, 0.0, 0.0),
    "woman": (0.0, 1.0, 0.0),
    "king": (1.0, 0.0, 1.0),
    "queen": (0.0, 1.0, 1.0),
    "apple": (1.0, 1.0, 1.0),
    "pear": (2.0, 2.0, 1.9),
    "princess": (-0.3, 1.0, 0.7),
}


def write_vectors(path: Path, table: dict[str, tuple[float, ...]]) -> str:
    dim = len(next(iter(table.values())))
    lines = [f"{len(table)} {dim}"] + [f"{w} " + " ".join(repr(float(x)) for x in v) for w, v in table.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"word2vec:{path}"


def analogy_set(sections: dict[str, list[str]], name: str = "test/analogies") -> analogies.Analogies:
    record = {
        "kind": "analogies", "language": "en", "bias_type": "non-social", "source": "test", "licence": "CC-BY-4.0",
        "sections": [{"name": k, "questions": v} for k, v in sections.items()],
    }
    return analogies.build(record, name, "test.toml")


def accuracy(spec: str, data: analogies.Analogies, **params) -> Result:
    return registry.build_metric("analogy", **params).compute(registry.build_embedder(spec), data, seed=0)


# --- 3CosAdd ---------------------------------------------------------------------------------------


def test_solver_matches_a_loop_over_the_vocabulary() -> None:
    rng = np.random.default_rng(0)
    vocab = rng.normal(size=(300, 12))
    questions = rng.choice(300, size=(50, 3), replace=True)
    unit = unit_matrix(vocab, np.float64)
    found = solve_3cosadd(unit, questions[:, 0], questions[:, 1], questions[:, 2], batch_size=7)
    for (a, b, c), got in zip(questions, found):
        target = unit[b] - unit[a] + unit[c]
        cos = [(-np.inf if i in (a, b, c) else float(row @ target / np.linalg.norm(row) / np.linalg.norm(target))) for i, row in enumerate(vocab)]
        assert got == int(np.argmax(cos))


def test_accuracy_by_hand_and_the_vocabulary_limit(tmp_path: Path) -> None:
    spec = write_vectors(tmp_path / "hand.txt", HAND)
    data = analogy_set({"royal": ["man woman king queen"], "fruit": ["man woman apple pear", "man woman king unicorn"]})
    everything = accuracy(spec, data, vocabulary_limit=0)
    # princess lies almost on the target, so the royal question is answered wrongly
    assert everything.figures["sections"]["royal"]["accuracy"] == 0.0
    assert everything.figures["errors"][0].endswith("king:princess (expected queen)")
    # without princess (the 7th word), queen wins. "man woman apple ?": target e2 - e1 + (1,1,1)/sqrt3
    # = (-0.42, 1.58, 0.58), |t| = 1.73: cos with queen 0.88 beats pear (0.59, 0.59, 0.56) at 0.58
    limited = accuracy(spec, data, vocabulary_limit=6)
    assert limited.figures["errors"] == ["man:woman :: apple:queen (expected pear)"]
    assert limited.figures["sections"]["royal"] == {"correct": 1, "answered": 1, "skipped": 0, "accuracy": 1.0}
    assert limited.figures["sections"]["fruit"]["answered"] == 1 and limited.figures["sections"]["fruit"]["skipped"] == 1
    assert limited.lost == {"fruit": ["unicorn"]}
    assert limited.figures["answered"] == 2 and limited.figures["skipped"] == 1
    assert limited.effect_size == 0.5 and limited.figures["correct"] == 1
    assert any("not counted" in w for w in limited.warnings)


def test_case_policies(tmp_path: Path) -> None:
    table = {"Man": HAND["man"], "woman": HAND["woman"], "King": HAND["king"], "queen": HAND["queen"], "WOMAN": (-0.29, 1.0, 0.71)}
    spec = write_vectors(tmp_path / "cased.txt", table)
    data = analogy_set({"royal": ["man woman king queen"]})
    exact = accuracy(spec, data, case="exact")
    assert exact.status == REFUSED and "man" in exact.reason
    # case-insensitive: WOMAN is a variant of b and may not be the answer, as in word2vec/gensim
    folded = accuracy(spec, data, case="insensitive")
    assert folded.effect_size == 1.0
    # written as in the vocabulary, exact matching lets the variant WOMAN win
    assert accuracy(spec, analogy_set({"royal": ["Man woman King queen"]}), case="exact").effect_size == 0.0
    lower = accuracy(write_vectors(tmp_path / "lower.txt", {k.lower(): v for k, v in HAND.items()}), analogy_set({"r": ["Man Woman King Queen"]}), case="lower", vocabulary_limit=6)
    assert lower.effect_size == 1.0


# --- the kind and the importer ---------------------------------------------------------------------

QUESTIONS = """# language: en
# source: test questions
: capital-country
Paris France Berlin Germany
Berlin Germany Rome Italy

: family
father mother brother sister
"""


def test_importer_reads_word2vec_questions(tmp_path: Path) -> None:
    path = tmp_path / "questions.txt"
    path.write_text(QUESTIONS, encoding="utf-8")
    data = registry.load_wordset(str(path))
    assert isinstance(data, analogies.Analogies)
    assert [s.name for s in data.sections] == ["capital-country", "family"]
    assert data.sections[0].questions[1] == analogies.Question("Berlin", "Germany", "Rome", "Italy")
    assert data.meta.language == "en" and data.meta.source == "test questions" and data.meta.kind == "analogies"


def test_sniff_tells_analogy_files_from_weat_files(tmp_path: Path) -> None:
    analogy = tmp_path / "a.txt"
    analogy.write_text(QUESTIONS, encoding="utf-8")
    weat = tmp_path / "w.txt"
    weat.write_text("Flowers: rose, tulip\nInsects: ant, wasp\nPleasant: joy, love\nUnpleasant: pain, war\n", encoding="utf-8")
    assert AnalogyTxtFormat().sniff(analogy) and not AnalogyTxtFormat().sniff(weat)
    assert registry.load_wordset(str(weat)).meta.kind == "association"


@pytest.mark.parametrize(
    "text, line",
    [
        (": s\nParis France Berlin\n", 2),
        ("Paris France Berlin Germany\n", 1),
        (": s\na b c d\n\n:\n", 4),
        (": s\na b c d\na b c d e\n", 3),
    ],
)
def test_malformed_lines_are_reported_with_their_number(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BiasError, match=f"line {line}"):
        AnalogyTxtFormat().record(path)


def test_house_format_problems_name_their_field() -> None:
    record = {
        "kind": "analogies", "language": "en", "bias_type": "non-social", "source": "s", "licence": "CC-BY-4.0",
        "sections": [{"name": "s", "questions": ["a b c d", "a b c", "a b a d"]}, {"questions": []}],
    }
    errors = {(p.field, p.severity) for p in analogies.check(record, "f.toml")}
    assert ("sections[0].questions[1]", "error") in errors
    assert ("sections[0].questions[2]", "error") in errors
    assert ("sections[1].name", "error") in errors and ("sections[1].questions", "error") in errors
    with pytest.raises(BiasError, match="sections"):
        analogies.build(record, "x", "f.toml")


def test_english_analogies_are_valid() -> None:
    data = registry.load_wordset("en/analogies")
    assert len(data.questions()) >= 60 and len(data.sections) == 4
    entry = Path(data.meta.path)
    assert not [p for p in validate_path(entry)[0] if p.severity == "error"]


# --- command line ----------------------------------------------------------------------------------


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


def test_cli_refuses_a_malformed_analogy_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(": s\nParis France Berlin\n", encoding="utf-8")
    done = bias("run", "--model", f"word2vec:{tmp_path / 'none.bin'}", "--analogies", str(path), "--metric", "analogy")
    assert done.returncode == 2 and "line 2" in done.stderr and "Traceback" not in done.stderr


def test_cli_runs_analogies_from_a_questions_file(tmp_path: Path) -> None:
    spec = write_vectors(tmp_path / "hand.txt", HAND)
    path = tmp_path / "q.txt"
    path.write_text(": royal\nman woman king queen\n", encoding="utf-8")
    done = bias("run", "--model", spec, "--analogies", str(path), "--metric", "analogy", "--param", "vocabulary_limit=6", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == OK and result["effect_size"] == 1.0
