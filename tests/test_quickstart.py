"""The README's quickstart on the real pretrained MiniLM encoder (the `demo` extra), and its table.

The numbers below are the README's table, written out: every effect size to 0.01, every bootstrap
interval end to 0.01, every p within the rounding of the README's two significant digits, and the
Holm stars. They are read from the run's results.jsonl, never from the printed table. The MiniLM
package is a test dependency installed by the README's command: without it this test fails.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# wordset -> {metric/level: (d, ci low, ci high, p as printed, Holm stars)}, from the README.
README_TABLE = {
    "en/weat1": {"weat": (1.44, 1.14, 1.69, "1e-05", "***"), "sentence": (1.37, 1.19, 1.54, "1e-05", "***"), "word": (1.54, 1.40, 1.67, "1e-05", "***")},
    "en/weat2": {"weat": (1.11, 0.58, 1.56, "4e-05", "***"), "sentence": (1.41, 1.18, 1.59, "1e-05", "***"), "word": (1.21, 0.97, 1.43, "1e-05", "***")},
    "en/weat3": {"weat": (0.46, -0.17, 1.09, "0.034", ""), "sentence": (0.58, 0.35, 0.80, "1e-05", "***"), "word": (0.53, 0.27, 0.78, "1e-05", "***")},
    "en/weat6": {"weat": (0.36, -0.88, 1.34, "0.24", ""), "sentence": (1.39, 1.08, 1.61, "1e-05", "***"), "word": (0.43, -0.05, 0.82, "0.012", "")},
    "en/weat7": {"weat": (0.75, -0.40, 1.48, "0.069", ""), "sentence": (0.00, -0.47, 0.48, "0.50", ""), "word": (0.52, 0.01, 1.04, "0.011", "")},
    "en/weat8": {"weat": (0.73, -0.40, 1.51, "0.075", ""), "sentence": (0.16, -0.33, 0.65, "0.23", ""), "word": (0.52, 0.03, 0.91, "0.0074", "")},
}

pytestmark = pytest.mark.slow


def p_band(printed: str) -> tuple[float, float]:
    """The p-values that print as `printed` (two significant digits): half a unit of its last digit."""
    value = float(printed)
    digits = printed.split("e")[0].replace(".", "").lstrip("0") or "0"
    unit = 10 ** (math.floor(math.log10(value)) - (len(digits) - 1))
    return value - unit / 2, value + unit / 2


def stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def test_p_band_reads_the_printed_digits():
    assert p_band("0.034") == pytest.approx((0.0335, 0.0345))
    assert p_band("1e-05") == pytest.approx((0.5e-5, 1.5e-5))
    assert p_band("0.50") == pytest.approx((0.495, 0.505))
    assert p_band("0.0075") == pytest.approx((0.00745, 0.00755))


def test_quickstart_reproduces_the_readme_table(tmp_path):
    from bias.core.model import Result
    from bias.core.statistics.multiple_testing import adjust

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "run", str(ROOT / "examples" / "quickstart.toml"), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    # The README's layout: tests as rows with their titles, WEAT / s-SEAT / w-SEAT side by side.
    header = next(line for line in proc.stdout.splitlines() if line.lstrip().startswith("Test"))
    assert header.index("WEAT d") < header.index("s-SEAT d") < header.index("w-SEAT d")
    assert "en/weat1" in proc.stdout and "Flowers vs insects" in proc.stdout and "model: MiniLM" in proc.stdout
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(results) == 18 and all(r["status"] == "ok" and not r["lost"] for r in results)
    holm = adjust([Result.from_dict(r) for r in results])
    seen = set()
    for r in results:
        column = r["metric"] if r["metric"] == "weat" else r["params"]["level"]
        d, low, high, printed, marks = README_TABLE[r["wordset"]][column]
        where = f"{r['wordset']} {column}"
        seen.add((r["wordset"], column))
        assert abs(r["effect_size"] - d) <= 0.01, where
        assert abs(r["figures"]["ci_low"] - low) <= 0.01 and abs(r["figures"]["ci_high"] - high) <= 0.01, where
        lo, hi = p_band(printed)
        assert lo <= r["p_value"] <= hi, (where, r["p_value"], printed)
        assert stars(holm[r["key"]].holm) == marks, where
        assert holm[r["key"]].size == 18
    assert len(seen) == 18
    weat1 = next(r for r in results if r["wordset"] == "en/weat1" and r["metric"] == "weat")
    assert weat1["convention"]["ddof"] == 1 and weat1["convention"]["method"] == "sampled"
    assert weat1["convention"]["permutations"] == 100_000 and weat1["figures"]["ci_resamples"] == 2000
    assert weat1["meta"]["model_info"]["hidden_size"] == 384
    exact = next(r for r in results if r["wordset"] == "en/weat6" and r["metric"] == "weat")
    assert exact["convention"]["method"] == "exact" and exact["convention"]["permutations"] == 12_870
    seat = next(r for r in results if r["wordset"] == "en/weat1" and r["metric"] == "seat")
    assert seat["sizes"]["X"] > 25  # several sentences per word

    # The README's agreement table, as `bias report --agreement` prints it at 80 columns from this run.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.rindex("\n", 0, readme.index("Agreement between methods")) + 1
    shown = readme[start : readme.index("```", start)].rstrip().splitlines()
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "report", str(tmp_path), "--agreement", "--format", "md"],
        capture_output=True, text=True, env={**env, "COLUMNS": "80"}, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    printed = [line.rstrip() for line in proc.stdout.splitlines()]
    assert [line.rstrip() for line in shown] == printed[: len(shown)]
