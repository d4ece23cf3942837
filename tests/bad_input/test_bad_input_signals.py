"""Signals and concurrent runs, in real processes: SIGTERM and SIGHUP end a run like Ctrl-C (results
kept, manifest closed as interrupted, reports written, exit 128 + signal), and two runs into one folder
never interleave their lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bad_input_helpers import World, words_toml, world  # noqa: F401 (world is a fixture)
from fixtures.planted import A_WORDS, B_WORDS, FILLER, X_WORDS, Y_WORDS

SEEDS = [str(s) for s in range(1, 9)]


def slow_run(world: World, folder: Path, out: Path, seeds: list[str] = SEEDS) -> list[str]:
    """A run of sampled tests of about a second each on the planted model, one per seed."""
    ws = words_toml(folder / "slow.toml", X=X_WORDS + Y_WORDS, Y=A_WORDS + B_WORDS, A=FILLER[:8], B=FILLER[8:16])
    args = ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(ws), "--permutations", "1000000", "--bootstrap", "0", "--out", str(out)]
    for seed in seeds:
        args += ["--seed", seed]
    return [sys.executable, "-m", "bias.cli.app", *args]


def start(command: list[str]) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_results(path: Path, process: subprocess.Popen, lines: int = 1) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and len(path.read_text(encoding="utf-8").splitlines()) >= lines:
            return
        time.sleep(0.05)
    pytest.fail("the run wrote no result in time: " + (process.stderr.read() if process.poll() is not None else ""))


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_run_like_ctrl_c(name: str, world: World, tmp_path: Path) -> None:
    number = getattr(signal, name)
    out = tmp_path / "run"
    process = start(slow_run(world, tmp_path, out))
    wait_for_results(out / "results.jsonl", process)
    process.send_signal(number)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + number, stderr
    assert "Traceback" not in stdout + stderr
    assert "Interrupted" in stderr and "--resume" in stderr and len([l for l in stderr.splitlines() if l.strip()]) <= 2, stderr
    kept = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert 1 <= len(kept) < len(SEEDS) and all(r["status"] == "ok" for r in kept)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["sessions"][-1]["status"] == "interrupted"
    assert (out / "report.md").is_file()


def test_two_runs_into_one_folder_never_interleave(world: World, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = start(slow_run(world, tmp_path, out))
    wait_for_results(out / "results.jsonl", first)
    second = start(slow_run(world, tmp_path, out))
    _, second_err = second.communicate(timeout=120)
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    # Refused by the lock while the first runs (or, on a very slow start, because the folder then
    # holds a finished run); never a second writer.
    assert second.returncode == 2 and "Traceback" not in second_err, second_err
    assert "Another bias run is writing into" in second_err or "already holds the results" in second_err, second_err
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(SEEDS) and len({json.loads(line)["key"] for line in lines}) == len(SEEDS)
