"""examples/robustness.toml on the real MiniLM (the `demo` extra) and the README's table of it.

The README's numbers (24 specifications, 96% with the median's sign, 33% significant after Holm,
median +0.38, range -0.22 to +1.39; 8 significant, all SEAT, 7 with names) are recomputed here from
the run's results.jsonl with numpy and a written-out Holm correction, never read from the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def holm(p):
    m = len(p)
    order = np.argsort(p, kind="stable")
    out, running = np.empty(m), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_robustness_example_reproduces_the_readme(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    run = [sys.executable, "-m", "bias.cli.app"]
    proc = subprocess.run([*run, "run", str(ROOT / "examples" / "robustness.toml"), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(results) == 24 and all(r["status"] == "ok" and not r["lost"] for r in results)
    assert {r["meta"]["descriptor"] for r in results} == {"names", "terms"}
    d = np.array([r["effect_size"] for r in results])
    significant = holm(np.array([r["p_value"] for r in results])) < 0.05
    assert round(float(np.median(d)), 2) == 0.38
    assert (round(float(d.min()), 2), round(float(d.max()), 2)) == (-0.22, 1.39)
    assert round(float(np.mean(np.sign(d) == np.sign(np.median(d)))), 2) == 0.96
    assert significant.sum() == 8 and round(significant.mean(), 2) == 0.33
    chosen = [r for r, s in zip(results, significant) if s]
    assert all(r["metric"] == "seat" for r in chosen) and sum(r["meta"]["descriptor"] == "names" for r in chosen) == 7

    proc = subprocess.run([*run, "report", str(tmp_path), "--robustness"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in proc.stdout.splitlines() if "en/gender-career" in line)
    assert row.strip() in readme and "24" in row and "96%" in row and "33%" in row
    png = tmp_path / "robustness-en-gender-career-minilm.png"
    assert png.exists() and png.stat().st_size > 20_000
