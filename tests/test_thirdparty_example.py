"""The example third-party distribution (examples/thirdparty/bias-example-eo) installs as a user would
install it, is listed, validates, passes its own tests, and its metric runs on a real word2vec model
trained on a corpus of the package's own words; it is uninstalled afterwards."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "thirdparty" / "bias-example-eo"
DISTRIBUTION = "bias-example-eo"

pytestmark = pytest.mark.slow


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout)


def bias(*args: str) -> subprocess.CompletedProcess:
    return run("-m", "bias.cli.app", *args)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The example installed into this environment as a user installs it (pip, no build isolation, so
    nothing is downloaded: the test extra brings `wheel`), from a copy so that the build leaves nothing
    in the repository."""
    copy = tmp_path_factory.mktemp("example") / EXAMPLE.name
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = run("-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet", str(copy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        yield
    finally:
        removed = run("-m", "pip", "uninstall", "--yes", "--quiet", DISTRIBUTION)
        assert removed.returncode == 0, removed.stderr


def test_listed_validated_and_its_own_tests_pass(installed):
    listed = bias("list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {(r["group"], r["name"]): r for r in json.loads(listed.stdout)}
    metric = rows[("metrics", "centroid-gap")]
    assert metric["distribution"] == DISTRIBUTION
    assert metric["status"] == "ok", metric
    assert rows[("wordsets", "eo/weat1")]["distribution"] == DISTRIBUTION

    checked = bias("validate", str(EXAMPLE))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 file(s) checked: 0 error(s), 0 warning(s)" in " ".join(checked.stdout.split())

    own = run("-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests"))
    assert own.returncode == 0, own.stdout + own.stderr
    assert "4 passed" in own.stdout


def _corpus(sets: dict[str, list[str]], sentences: int = 2500) -> list[list[str]]:
    """X words in sentences with A words, Y words with B words, plus filler: a planted association."""
    rng = random.Random(11)
    filler = [f"f{i}" for i in range(40)]
    out = []
    for _ in range(sentences):
        from_x = rng.random() < 0.5
        pool = sets["A"] if from_x else sets["B"]
        sentence = [rng.choice(sets["X"] if from_x else sets["Y"]), rng.choice(pool), rng.choice(pool)]
        sentence += [rng.choice(filler) for _ in range(4)]
        rng.shuffle(sentence)
        out.append(sentence)
    return out


def test_its_metric_runs_on_a_word2vec_model(installed, tmp_path):
    from fixtures.planted import save_word2vec_binary, train_word2vec

    from bias.core.data.file_reading import read_toml

    record = read_toml(EXAMPLE / "bias_example_eo" / "data" / "weat1.toml")
    sets = {k: record["sets"][k]["words"] for k in "XYAB"}
    kv = train_word2vec(_corpus(sets)).wv
    model = save_word2vec_binary(kv, tmp_path / "eo.bin")
    proc = bias("run", "--model", f"word2vec:{model}", "--wordset", "eo/weat1", "--metric", "centroid-gap",
                "--param", "scale=100", "--json", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "ok" and result["metric"] == "centroid-gap"
    assert result["params"]["scale"] == 100.0
    # the gap written out here from the trained vectors: unit centroids of the unit word vectors
    centre = {}
    for key, words in sets.items():
        rows = np.array([kv[w] for w in words], dtype=np.float64)
        mean = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).mean(axis=0)
        centre[key] = mean / np.linalg.norm(mean)
    x, y, a, b = (centre[k] for k in "XYAB")
    expected = 100 * ((x @ a - x @ b) - (y @ a - y @ b))
    assert result["effect_size"] == pytest.approx(expected, rel=1e-5)  # float32 file, float64 arithmetic
    assert result["effect_size"] > 0  # the planted direction
    assert not result["lost"]
    assert result["meta"]["value"] == {"label": "gap", "name": "centroid cosine gap", "unit": "", "reference": 0.0, "signed": True,
                                       "digits": 3, "scale": "", "more_biased": "", "meaning": "", "figures": []}
    # eo/weat1 is 8 + 8: its other metric's own parameter `permutations` is its own business
    relabelled = bias("run", "--model", f"word2vec:{model}", "--wordset", "eo/weat1", "--metric", "relabelled-gap",
                      "--param", "permutations=199", "--json")
    assert relabelled.returncode == 0, relabelled.stdout + relabelled.stderr
    row = json.loads(relabelled.stdout.splitlines()[-1])
    assert row["effect_size"] == pytest.approx(expected / 100, rel=1e-5) and 0 < row["p_value"] <= 1
    # its debiaser, through bias debias, then measured before and after
    debiased = bias("debias", "--model", f"word2vec:{model}", "--method", "centroid-projection", "--lists", str(_lists(tmp_path)),
                    "--out", str(tmp_path / "debiased"), "--wordset", "eo/weat1", "--metric", "centroid-gap")
    assert debiased.returncode == 0, debiased.stdout + debiased.stderr
    assert (tmp_path / "debiased" / "vectors.bin").is_file()
    assert json.loads((tmp_path / "debiased" / "debias.json").read_text())["method"] == "centroid-projection"


def _lists(folder: Path) -> Path:
    """Debiasing lists of the example's own words (flowers as one pole, insects as the other)."""
    path = folder / "lists.toml"
    path.write_text(
        'kind = "debias-lists"\nlanguage = "eo"\nbias_type = "gender"\nsource = "made for this test"\nlicence = "CC0-1.0"\n'
        'definitional = [["rozo", "formiko"], ["tulipo", "vespo"], ["lilio", "pulo"]]\n',
        encoding="utf-8",
    )
    return path
