"""The contract checks of bias.testing pass on every registered plugin (class checks, one test per
check) and on the third-party example, and the example's plugins run through `bias run` and
`bias debias` exactly as first-party ones do."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
import numpy as np
import pytest

from bias import testing as bt
from bias.registry import entry_points as eps
from bias.registry.resolve import build_embedder, load_wordset

from test_cli import wordset_toml
from test_registry import make_distribution, run_bias

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "thirdparty" / "bias-example-eo"
GROUPS = ("metrics", "embedders", "debiasers", "formats")
EVERY_PLUGIN = [
    eps.load(group, name)
    for group in GROUPS
    for name in sorted({i.name for i in eps.entry_points(group)})
]


@bt.parametrize_with_checks(EVERY_PLUGIN)
def test_every_registered_plugin_passes_its_class_checks(check):
    assert check() >= 1


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example's package on the import path, with its entry points declared as an installed
    distribution would declare them (a dist-info beside it), for this process and for `bias` commands."""
    root = make_distribution(
        tmp_path_factory.mktemp("site"),
        "bias-example-eo",
        {
            "bias.metrics": {
                "centroid-gap": "bias_example_eo.metric:CentroidGap",
                "relabelled-gap": "bias_example_eo.relabelling:RelabelledGap",
            },
            "bias.debiasers": {
                "centroid-projection": "bias_example_eo.debiaser:CentroidProjection"
            },
        },
    )
    shutil.copytree(
        EXAMPLE / "bias_example_eo",
        root / "bias_example_eo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    sys.path.insert(0, str(root))
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m.startswith("bias_example_eo")]:
            del sys.modules[module]


def test_the_example_plugins_pass_on_a_real_model(
    example, planted_files, planted_test, planted_gender
):
    from bias_example_eo.debiaser import CentroidProjection
    from bias_example_eo.metric import CentroidGap
    from bias_example_eo.relabelling import RelabelledGap

    vectors = build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    assert bt.check_metric(CentroidGap, embedder=vectors, data=planted_test) > 5
    assert bt.check_metric(RelabelledGap, embedder=vectors, data=planted_test, seed=3) > 5
    gender = build_embedder(f"word2vec:{planted_gender}")
    assert (
        bt.check_debiaser(
            CentroidProjection, embedder=gender, lists=load_wordset("en/debias-gender")
        )
        > 5
    )


# First-party plugins in run mode and the planted defects: test_plugin_contracts_run.py.


# --- the example through the command line -------------------------------------------------------


def test_a_third_party_parameter_named_permutations_runs_on_an_eight_and_eight_test(
    example, planted_files, tmp_path
):
    """An 8 + 8 test: C(16, 8) partitions is below the framework's own exact limit, which once made the
    budget check read this metric's `permutations` as if it were WEAT's, and crash."""
    test = wordset_toml(tmp_path / "flowers.toml")
    model = f"word2vec:{planted_files.word2vec_bin}"
    done = run_bias(
        [
            "run",
            "--model",
            model,
            "--wordset",
            str(test),
            "--metric",
            "relabelled-gap",
            "--param",
            "permutations=99",
            "--json",
            "--out",
            str(tmp_path / "run"),
        ],
        extra_path=example,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads(done.stdout.splitlines()[-1])
    assert row["status"] == "ok" and row["params"] == {
        "case": "exact",
        "lost_threshold": 0.2,
        "permutations": 99,
    }
    assert row["meta"]["value"]["label"] == "gap*"
    k = round(row["p_value"] * 100) - 1  # p = (k + 1) / (99 + 1)
    assert 0 <= k <= 99 and row["p_value"] == pytest.approx((k + 1) / 100)
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "relabelled-gap: gap* = centroid gap, relabelling test (0 = no bias" in report
    refused = run_bias(
        [
            "run",
            "--model",
            model,
            "--wordset",
            str(test),
            "--metric",
            "relabelled-gap",
            "--param",
            "permutations=10000000000",
        ],
        extra_path=example,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "permutations = 10,000,000,000" in refused.stderr and "Traceback" not in refused.stderr


def test_bias_debias_writes_a_third_party_debiasers_vectors(example, planted_gender, tmp_path):
    out = tmp_path / "projected"
    done = run_bias(
        [
            "debias",
            "--model",
            f"word2vec:{planted_gender}",
            "--method",
            "centroid-projection",
            "--language",
            "en",
            "--out",
            str(out),
        ],
        extra_path=example,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((out / "debias.json").read_text(encoding="utf-8"))
    assert record["method"] == "centroid-projection" and record["parameters"] == {"limit": 0}
    # By hand: g = unit mean of (first - second) over the definitional pairs; every vector loses its g part.
    original = build_embedder(f"word2vec:{planted_gender}")
    lists = load_wordset("en/debias-gender")
    found = original.word_vectors([w for pair in lists.definitional for w in pair]).as_dict()
    g = np.mean(
        [
            found[a].astype(np.float64) - found[b]
            for a, b in lists.definitional
            if a in found and b in found
        ],
        axis=0,
    )
    g /= np.linalg.norm(g)
    written = build_embedder(f"word2vec:{out / 'vectors.bin'}").all_vectors()
    before = original.all_vectors()
    assert written.words == before.words
    v = before.vectors.astype(np.float64)
    assert np.allclose(written.vectors, v - np.outer(v @ g, g), atol=1e-5)  # written as float32
    assert np.abs(written.vectors @ g).max() < 1e-4
    wrong = run_bias(
        [
            "debias",
            "--model",
            f"word2vec:{planted_gender}",
            "--method",
            "centroid-projection",
            "--language",
            "en",
            "--components",
            "2",
            "--out",
            str(tmp_path / "bad"),
        ],
        extra_path=example,
    )
    assert (
        wrong.returncode == 2
        and "--components is not a parameter of centroid-projection" in wrong.stderr
    )
