"""Bad decisions files and bad parameters of the discrimination and retrieval metrics, as a hostile
or careless user writes them: each answered with exit 2, no traceback, at most two lines naming the
file and the field (or the parameter), and no file that existed before changed. The decisions file
and its names were written for these cases (tests/fixtures/decisions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.decisions import decisions_toml

from bad_input_helpers import (  # noqa: F401 (world is a fixture)
    Case,
    World,
    assert_answered,
    case_decorator,
    world,
)

CASES: list[Case] = []
case = case_decorator(CASES)


def damaged(folder: Path, old: str, new: str) -> str:
    path = decisions_toml(folder, scenarios=2)
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path.name


def retrieval(world: World, name: str, *extra: str) -> list[str]:
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", name, "--metric", "retrieval", *extra]


@case(
    "decisions-names-from-a-missing-file",
    names=("hiring.toml", "groups.ma.names[0]", "no file elsewhere.toml"),
)
def _(world, folder):
    return retrieval(world, damaged(folder, 'names = ["names.Y"]', 'names = ["elsewhere.Y"]'))


@case(
    "decisions-names-from-outside-the-folder",
    names=("hiring.toml", "groups.ma.names[0]", "without folder"),
)
def _(world, folder):
    return retrieval(
        world, damaged(folder, 'names = ["names.Y"]', 'names = ["../../etc/passwd.Y"]')
    )


@case(
    "decisions-names-from-a-file-that-is-no-association-test",
    names=("hiring.toml", "not an association test"),
)
def _(world, folder):
    name = damaged(folder, 'names = ["names.Y"]', 'names = ["notes.Y"]')
    (folder / "notes.toml").write_text('kind = "templates"\n', encoding="utf-8")
    return retrieval(world, name)


@case(
    "decisions-profile-without-the-applicant",
    names=("hiring.toml", "scenarios[0] (s0)", "names the applicant 0 times"),
)
def _(world, folder):
    return retrieval(
        world, damaged(folder, "De sollicitant, {name}, is 25", "De sollicitant is 25")
    )


@case(
    "decisions-a-pronoun-the-names-cannot-give",
    names=("hiring.toml", "scenario s0.question", "no value for 'Jan'"),
)
def _(world, folder):
    return retrieval(
        world,
        damaged(
            folder,
            "Moet het restaurant {name.object} uitnodigen?",
            "Moet het restaurant {name.bezit} uitnodigen?",
        ),
    )


@case("decisions-yes-and-no-share-a-word", names=("hiring.toml", "answers", "both a yes and a no"))
def _(world, folder):
    return retrieval(world, damaged(folder, 'no = ["nee"]', 'no = ["JA"]'))


@case("decisions-unknown-reference-group", names=("hiring.toml", "reference", "'nobody'"))
def _(world, folder):
    return retrieval(world, damaged(folder, 'reference = "nl"', 'reference = "nobody"'))


@case("decisions-prompt-runs-no-code", names=("hiring.toml", "prompt", "no other placeholders"))
def _(world, folder):
    return retrieval(
        world, damaged(folder, "\\nVraag: {question}", "\\nVraag: {question} {profile.__class__}")
    )


@case("decisions-prompt-repeats-a-field", names=("hiring.toml", "prompt", "at most 4 times"))
def _(world, folder):
    # P07: every copy of {profile} is a copy of a whole CV in every prompt
    return retrieval(
        world, damaged(folder, "\\nVraag: {question}", "\\nVraag: {question}" + " {profile}" * 5)
    )


@case("retrieval-param-variant", names=("variant", "names", "explicit"))
def _(world, folder):
    return retrieval(world, damaged(folder, "", ""), "--param", "variant=both")


@case("retrieval-param-top-zero", names=("top",))
def _(world, folder):
    return retrieval(world, damaged(folder, "", ""), "--param", "top=0")


@case("retrieval-param-pool", names=("pool", "job", "all"))
def _(world, folder):
    return retrieval(world, damaged(folder, "", ""), "--param", "pool=everyone")


@case("retrieval-param-permutations", names=("permutations",))
def _(world, folder):
    return retrieval(world, damaged(folder, "", ""), "--param", "permutations=0")


@case("discrimination-param-selection", names=("selection", "decision", "probability"))
def _(world, folder):
    return [
        "run",
        "-m",
        f"hf:{world.bert}",
        "-w",
        damaged(folder, "", ""),
        "--metric",
        "discrimination",
        "--param",
        "selection=maybe",
    ]


@case("discrimination-param-answer-template", names=("answer_template", "{answer}"))
def _(world, folder):
    return [
        "run",
        "-m",
        f"hf:{world.bert}",
        "-w",
        damaged(folder, "", ""),
        "--metric",
        "discrimination",
        "--param",
        "answer_template={answer.__class__}",
    ]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_decisions_bad_input(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")
