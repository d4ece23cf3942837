"""`--limit N`: a smoke run on the first N items of each list of each test, for every data kind,
recorded in the result, the manifest and the experiment's key."""

from __future__ import annotations

import json

import pytest

from bias import registry
from bias.core.data.limit import first_items
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS
from test_cli import bias, wordset_toml


@pytest.mark.unit
def test_every_kind_keeps_the_first_items_of_each_list():
    weat = first_items(registry.load_wordset("en/weat6"), 3)
    full = registry.load_wordset("en/weat6")
    for s in "XYAB":
        assert getattr(weat, s).words == getattr(full, s).words[:3]
    assert weat.meta == full.meta
    pairs, all_pairs = first_items(registry.load_wordset("en/crows-sample"), 2), registry.load_wordset("en/crows-sample")
    assert pairs.pairs == all_pairs.pairs[:2] and pairs.pairs[0].more == all_pairs.pairs[0].more  # sentences whole
    analogies, all_analogies = first_items(registry.load_wordset("en/analogies"), 2), registry.load_wordset("en/analogies")
    assert [s.name for s in analogies.sections] == [s.name for s in all_analogies.sections[:2]]
    assert all(s.questions == t.questions[:2] for s, t in zip(analogies.sections, all_analogies.sections))
    assert first_items(full, None) is full


def test_limit_runs_the_first_items_and_is_recorded(tmp_path, planted_files):
    test = wordset_toml(tmp_path / "planted.toml")
    runs, runs_stderr = {}, {}
    for name, extra in (("limited", ["--limit", "4"]), ("full", [])):
        out = tmp_path / name
        proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(test), "--metric", "weat",
                    "--permutations", "200", "--bootstrap", "0", "--out", str(out), *extra)
        assert proc.returncode == 0, proc.stderr
        runs_stderr[name] = proc.stdout + proc.stderr
        runs[name] = (json.loads((out / "results.jsonl").read_text().splitlines()[0]), json.loads((out / "manifest.json").read_text()))
    (limited, manifest), (full, full_manifest) = runs["limited"], runs["full"]
    assert limited["sizes"] == {"X": 4, "Y": 4, "A": 4, "B": 4}
    assert full["sizes"] == {"X": len(X_WORDS), "Y": len(Y_WORDS), "A": len(A_WORDS), "B": len(B_WORDS)}
    assert limited["meta"]["limit"] == 4 and "limit" not in full["meta"]
    assert manifest["limit"] == 4 and full_manifest["limit"] is None
    said = "Smoke run: only the first 4 items of each list of each test (--limit 4); not a result to report."
    assert said in runs_stderr["limited"] and "moke run" not in runs_stderr["full"]
    assert runs_stderr["limited"].count("moke run") == 1  # in the table's notes, not again below it
    for name in ("limited", "full"):  # every report of the run says it, in its notes
        assert bias("report", str(tmp_path / name), "--format", "md,html").returncode == 0
        for report in ("report.md", "report.html"):
            text = (tmp_path / name / report).read_text(encoding="utf-8")
            assert (said in text) == (name == "limited") and ("moke run" in text) == (name == "limited")
    assert limited["key"] != full["key"]  # --resume never takes a smoke run for the full one


@pytest.mark.unit
def test_the_smoke_note_says_which_results_were_limited():
    from bias.core.model import Result
    from bias.core.reports.tables import smoke_notes

    def result(limit):
        return Result(key=str(limit), model="m", wordset="en/weat6", metric="weat", meta={} if limit is None else {"limit": limit})

    assert smoke_notes([result(None)]) == []
    assert smoke_notes([result(4), result(4)]) == [
        "Smoke run: only the first 4 items of each list of each test (--limit 4); not a result to report."
    ]
    assert smoke_notes([result(None), result(2), result(5)]) == [
        "Smoke run: 2 of 3 results used only the first 2 or 5 items of each list of their test (--limit); "
        "not results to report."
    ]


@pytest.mark.unit
def test_a_result_whose_model_never_loaded_records_the_limit_too():
    """A smoke run of two models, one failing to load: both results are smoke runs, and the note says
    "each test", not "1 of 2 results"."""
    from bias.core.reports.tables import smoke_notes
    from bias.engine.experiments import Experiment, ModelConfig
    from bias.engine.runner import failed_before_metric

    limited = Experiment(ModelConfig("word2vec:missing.bin"), "en/weat6", "weat", {}, 0, limit=2)
    failed = failed_before_metric(limited, "the model could not be loaded", {"compute_s": 0.0})
    assert failed.meta["limit"] == 2
    full = Experiment(ModelConfig("word2vec:missing.bin"), "en/weat6", "weat", {}, 0)
    assert "limit" not in failed_before_metric(full, "x", {}).meta
    assert smoke_notes([failed, failed]) == [
        "Smoke run: only the first 2 items of each list of each test (--limit 2); not a result to report."
    ]
