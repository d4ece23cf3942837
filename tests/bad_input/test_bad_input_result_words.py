"""A results file is outside input: the words a result carries for reports (how its p was computed,
its floor, the declaration of its number, the figures a declared quadrant plot is drawn from) and the
keys of results written by earlier versions are read defensively. Hostile or broken values give a
report without them, never a crash, a bound from nowhere or text that rewrites the terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bias.core.model import OK, Result
from bias.core.reports import load_report, write_report
from bias.core.reports.quadrant_figure import quadrant_results

BASE = {
    "key": "k",
    "model": "word2vec:v.bin",
    "wordset": "en/weat6",
    "metric": "weat",
    "status": OK,
    "effect_size": 0.5,
    "p_value": 0.01,
}
POINTS = {
    "axes": ["x", "y"],
    "groups": {"x": ["a", "b"], "y": ["c", "d"]},
    "points": [["t", 0.1, 0.2]],
}
QUADRANTS = {"label": "z", "figures": ["quadrants"]}

HOSTILE = [
    # (what, the result's fields)
    (
        "p words with a terminal escape and a bidi override",
        {"convention": {"p_value": "\x1b[2J\u202eevil" + "x" * 5000}},
    ),
    ("p words that are not text", {"convention": {"p_value": ["a", "list"]}}),
    ("a floor that is text", {"convention": {"p_value": "a test", "p_floor": "0.5"}}),
    ("a floor above 1", {"convention": {"p_value": "a test", "p_floor": 7}}),
    ("a floor that is true", {"convention": {"p_value": "a test", "p_floor": True}}),
    (
        "old keys of the wrong types",
        {"convention": {"method": "sampled", "permutations": "many", "seed": 0, "alternative": 3}},
    ),
    (
        "old keys with a boolean count",
        {"convention": {"method": "exact", "permutations": True, "seed": 0, "alternative": "less"}},
    ),
    (
        "a declaration of the wrong types",
        {"meta": {"value": {"label": 5, "figures": "quadrants", "digits": -1}}},
    ),
    ("a declared figure of unknown name", {"meta": {"value": {"label": "z", "figures": ["pie"]}}}),
    (
        "quadrants without axes",
        {"meta": {"value": QUADRANTS}, "figures": {"points": [["t", 1, 2]]}},
    ),
    (
        "quadrants with text for numbers",
        {"meta": {"value": QUADRANTS}, "figures": {**POINTS, "points": [["t", "1", None]]}},
    ),
    (
        "quadrants with a group missing",
        {"meta": {"value": QUADRANTS}, "figures": {**POINTS, "groups": {"x": ["a", "b"]}}},
    ),
    (
        "quadrants with broken extras",
        {
            "meta": {"value": QUADRANTS},
            "figures": {
                **POINTS,
                "valence": {"t": "high"},
                "quadrants": {"a c": {"share": "x", "top": [5, [None]]}},
            },
        },
    ),
]


def _write(folder: Path, fields: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    record = {**BASE, **fields}
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return folder


def test_hostile_words_in_a_results_file_give_a_plain_report(tmp_path):
    for i, (what, fields) in enumerate(HOSTILE):
        folder = _write(tmp_path / f"case{i}", fields)
        report = load_report(folder)
        notes = " ".join(report.notes())
        assert "\x1b" not in notes and "\u202e" not in notes, what
        assert "p <=" not in notes and "<=" not in report.rows()[0]["p_value"], (
            what
        )  # no bound from a bad floor
        if isinstance((fields.get("convention") or {}).get("p_value"), str):
            assert "<U+001B>" in notes or "a test" in notes, what  # shown, made visible
            assert len(notes) < 3000, what
        drawable = (
            what == "quadrants with broken extras"
        )  # the scatter is there; the broken extras are not
        assert len(quadrant_results(report)) == drawable, what
        (folder / "out").mkdir()
        written = write_report(
            report, folder / "out", ("md", "png") if what.startswith("quadrants") else ("md",)
        )
        assert (folder / "out" / "report.md").is_file(), what
        assert len([p for p in written if p.name.startswith("weat-en-weat6-")]) == drawable, what


def test_bias_report_on_a_hostile_results_file_exits_0_without_a_traceback(tmp_path):
    folder = _write(tmp_path / "run", HOSTILE[0][1])
    done = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "report", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "80", "HF_HUB_OFFLINE": "1", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert (
        "Traceback" not in done.stderr
        and "\x1b[2J" not in done.stdout
        and "<U+001B>" in done.stdout
    )
    assert (
        Result.from_json((folder / "results.jsonl").read_text().splitlines()[0])
        .convention["p_value"]
        .startswith("\x1b")
    )
