"""Bad values of the execution options (--threads, batch_size, --dtype), answered as a user must see
them: exit 2, no traceback, one or two lines naming the option, and no file changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_input_helpers import Case, World, assert_answered, case_decorator, world  # noqa: F401 (world is a fixture)

CASES: list[Case] = []
case = case_decorator(CASES)


@case("threads-zero", names=("--threads",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--threads", "0"]


@case("threads-not-a-number", names=("--threads",))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--threads", "all"]


@case("batch-size-a-word-other-than-auto", names=("batch_size", "auto"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--model-option", "batch_size=large"]


@case("batch-size-zero-for-hf", names=("batch_size",))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--model-option", "batch_size=0"]


@case("dtype-unknown", names=("dtype", "tf32"))
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--dtype", "float8"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_execution_option_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")
