"""Bad decisions files and bad parameters of the discrimination and retrieval metrics, as a hostile
or careless user writes them: each answered with exit 2, no traceback, at most two lines naming the
file and the field (or the parameter), and no file that existed before changed. The decisions file
and its names were written for these cases (tests/fixtures/decisions.py)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from fixtures.decisions import decisions_toml

from bad_input_helpers import (  # noqa: F401 (world is a fixture)
    Case,
    World,
    assert_answered,
    case_decorator,
    cli,
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


def discrimination(world: World, folder: Path, *extra: str, model: str = "") -> list[str]:
    name = damaged(folder, "", "")
    return [
        "run",
        "-m",
        model or f"hf:{world.bert}",
        "-w",
        name,
        "--metric",
        "discrimination",
        *extra,
    ]


@case("discrimination-param-selection", names=("selection", "decision", "probability"))
def _(world, folder):
    return discrimination(world, folder, "--param", "selection=maybe")


@case(
    "discrimination-param-answer-template",
    names=("answer_template", "{answer}", "The default is ' {answer}'"),
    absent=("every combination was skipped", "Choose metrics that fit"),
)
def _(world, folder):
    return discrimination(world, folder, "--param", "answer_template={answer.__class__}")


@case("discrimination-param-mode", names=("mode", "auto", "loglik", "generate", "'chat'"))
def _(world, folder):
    return discrimination(world, folder, "--param", "mode=chat")


@case("discrimination-param-samples-zero", names=("samples", "positive whole number"))
def _(world, folder):
    return discrimination(world, folder, "--param", "samples=0")


@case("discrimination-param-temperature", names=("temperature", "2.0", "7.0"))
def _(world, folder):
    return discrimination(world, folder, "--param", "temperature=7")


@case("discrimination-param-max-tokens", names=("max_tokens",))
def _(world, folder):
    return discrimination(world, folder, "--param", "max_tokens=-3")


@case(
    "discrimination-log-likelihoods-asked-of-a-chat-model",
    names=("mode=loglik", "log-likelihoods", "chat", "mode=generate"),
)
def _(world, folder):
    # planned and refused before anything is sent: no server, no key needed
    chat = "chat:some-model[base_url=http://127.0.0.1:9/v1]"
    return discrimination(world, folder, "--param", "mode=loglik", model=chat)


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_decisions_bad_input(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_a_chat_audit_the_server_breaks_off_resumes_without_asking_anything_twice(
    tmp_path, monkeypatch
):
    # a fake server, for the failure mode: five replies, then the service is down
    from test_bad_input_chat import Fake, chat, reply

    from bias.core.data.wordsets import load_toml_wordset

    monkeypatch.setenv("OPENAI_API_KEY", "not-needed-locally")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    path = decisions_toml(tmp_path, scenarios=3)
    prompts = load_toml_wordset(path).prompts("names")
    args = ["-w", str(path), "--metric", "discrimination", "--param", "samples=2"]
    args += ["--param", "temperature=1", "--out", str(tmp_path / "out")]
    fake = Fake()

    def says(body: dict) -> tuple:
        """The reply to one prompt and seed, whichever order the requests arrive in (a reply by
        arrival order left a name group all "Ja." now and then: a singular mixed model)."""
        asked = f"{body['messages'][-1]['content']}|{body['seed']}".encode()
        return 200, reply(("Ja.", "Nee.")[zlib.crc32(asked) % 2]), {}

    try:
        fake.plan = [says] * 5 + [(503, {"error": {"message": "down"}}, {})] * 99
        first = cli("run", "--model", chat(fake), *args)
        assert first.code == 1 and "--resume" in first.both, first.both
        answered, fake.seen = fake.seen[:5], []
        fake.plan = [says] * (2 * len(prompts))
        again = cli("run", "--model", chat(fake), *args, "--resume")
        assert again.code == 0, again.both
        # what the cost check counted before sending: every reply, then those not cached
        assert f"will send {2 * len(prompts)} text(s)" in first.both
        assert f"will send {2 * len(prompts) - 5} text(s)" in again.both
    finally:
        fake.stop()
    asked = [(s["messages"][-1]["content"], s["seed"]) for s in answered + fake.seen]
    assert len(fake.seen) == 2 * len(prompts) - 5  # only the replies the first run did not get
    assert len(set(asked)) == len(asked) == 2 * len(prompts)
    assert {text for text, _ in asked} == {p.text for p in prompts}
