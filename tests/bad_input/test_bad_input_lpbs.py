"""Bad inputs to LPBS with the BIAS Detection Framework's parameters: bad values in an experiment
file's params, and a framework file whose content the parameters cannot score. Each is answered with
exit 2, no traceback, at most two lines naming the input, and no file that existed before changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bad_input_helpers import Case, World, assert_answered, case_decorator, world, write_experiment  # noqa: F401 (world is a fixture)
from fixtures.planted import X_WORDS, Y_WORDS

CASES: list[Case] = []
case = case_decorator(CASES)


def _framework_lpbs(folder: Path) -> str:
    """An LPBS file in the BIAS Detection Framework's format whose targets are all plural."""
    path = folder / "LPBS" / "LPBS_9.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "targ1": {"singular": [], "plural": [f"{w}s" for w in X_WORDS]}, "targ2": {"singular": [], "plural": [f"{w}s" for w in Y_WORDS]},
        "attr1": ["joy", "love", "peace", "happy", "gentle", "lucky", "honest", "warm"],
        "attr2": ["pain", "hatred", "war", "ugly", "filthy", "rotten", "poison", "grief"],
        "templates": {"singular": ["the TARGET is ATTRIBUTE ."], "plural": ["TARGET are ATTRIBUTE ."]},
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@case("lpbs-framework-file-plural-only", names=("target_number = singular", "targ1", "target_number = any"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", _framework_lpbs(folder), "--metric", "lpbs", "--param", "target_number=singular"]


@case("lpbs-experiment-pairing-unknown", names=("pairing", "i-th", "'pairs'"))
def _(world, folder):
    body = f'[[experiments]]\nwordset = "en/lpbs-gender"\nmetric = "lpbs"\nmodel = "hf:{world.bert}"\nparams = {{ pairing = "pairs" }}\n'
    return ["run", str(write_experiment(folder, body))]


@case("lpbs-experiment-target-number-not-a-string", names=("target_number", "singular"))
def _(world, folder):
    body = f'preset = "bias-framework"\n[[experiments]]\nwordset = "en/lpbs-gender"\nmetric = "lpbs"\nmodel = "hf:{world.bert}"\nparams = {{ target_number = 1 }}\n'
    return ["run", str(write_experiment(folder, body))]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_lpbs_bad_input(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")
