"""Bad StereoSet files (the stereoset-json importer and the stereoset kind): each answered with exit
2, no traceback, at most two lines naming the file and the field, and no file that existed before
changed. The two examples were written for these cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bad_input_helpers import Case, World, assert_answered, case_decorator, world  # noqa: F401 (world is a fixture)

CASES: list[Case] = []
case = case_decorator(CASES)


# StereoSet's JSON layout, two intrasentence examples written for these cases; `change` damages the copy.
def stereoset_file(folder: Path, change) -> str:
    def example(eid: str, context: str, words: tuple[str, str, str]) -> dict:
        return {"id": eid, "bias_type": "profession", "target": "nurse", "context": context, "sentences": [
            {"id": f"{eid}-{label}", "sentence": context.replace("BLANK", word), "labels": [{"human_id": "h1", "label": label}],
             "gold_label": label}
            for label, word in zip(("stereotype", "anti-stereotype", "unrelated"), words)
        ]}

    data = {"version": "1", "data": {"intrasentence": [
        example("e1", "The nurse was BLANK.", ("gentle", "brash", "turnip")),
        example("e2", "A nurse is BLANK at work.", ("warm", "harsh", "window")),
    ]}}
    change(data)
    (folder / "ss.json").write_text(json.dumps(data), encoding="utf-8")
    return "ss.json"


def _stereoset_run(world: World, name: str) -> list[str]:
    return ["run", "-m", f"hf:{world.bert}", "-w", name, "--metric", "stereoset"]


@case("stereoset-json-without-intrasentence-part", names=("ss.json", "data.intrasentence", "no intrasentence part"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"].update(intersentence=d["data"].pop("intrasentence"))))


@case("stereoset-json-context-without-blank", names=("ss.json", "data.intrasentence[1] (id 'e2').context", "has no BLANK"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][1].update(context="A nurse is kind at work.")))


@case("stereoset-json-gold-label-missing", names=("ss.json", "data.intrasentence[1] (id 'e2').sentences", "no sentence has gold_label 'unrelated'"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][1]["sentences"].pop(2)))


@case("stereoset-json-gold-label-twice", names=("ss.json", "data.intrasentence[0] (id 'e1').sentences[2].gold_label", "both 'stereotype'"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][0]["sentences"][2].update(gold_label="stereotype")))


@case("stereoset-json-template-word-only-punctuation", names=("ss.json", "data.intrasentence[0] (id 'e1').sentences[1].sentence", "'--.'", "empty once punctuation is removed"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][0]["sentences"][1].update(sentence="The nurse was --.")))


@case("stereoset-json-target-not-a-string", names=("ss.json", "data.intrasentence[1] (id 'e2').target", "non-empty string"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][1].update(target=5)))


@case("stereoset-json-sentence-not-a-string", names=("ss.json", "data.intrasentence[0] (id 'e1').sentences[0].sentence", "non-empty string"))
def _(world, folder):
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][0]["sentences"][0].update(sentence=["The", "nurse"])))


@case("stereoset-json-lone-surrogate", names=("ss.json", "data.intrasentence[1] (id 'e2').target", "lone surrogate"))
def _(world, folder):
    # JSON's "\\udc80" escape is a lone surrogate, no character: the scores table could not be written
    return _stereoset_run(world, stereoset_file(folder, lambda d: d["data"]["intrasentence"][1].update(target="nurse\udc80")))



@case("stereoset-json-link-to-a-system-file", names=("ss.json", "malformed JSON"), absent=("root:",))
def _(world, folder):
    (folder / "ss.json").symlink_to("/etc/passwd")
    return _stereoset_run(world, "ss.json")


@case("stereoset-json-a-folder", names=("ss.json", "folder"))
def _(world, folder):
    (folder / "ss.json").mkdir()
    return _stereoset_run(world, "ss.json")

@case("stereoset-masked-score-unknown", names=("masked_score", "token-space", "bias-bench"))
def _(world, folder):
    name = stereoset_file(folder, lambda d: None)
    return [*_stereoset_run(world, name), "--param", "masked_score=bias-bnch"]


@case("stereoset-tokenizer-with-a-mask-token-the-model-lacks", names=("ss.json", "'[MASK9]' the id 110", "ids below 110 only", "does not belong to the model"))
def _(world, folder):
    # tokens added to a tokenizer, its model not resized: torch's IndexError named neither
    from transformers import AutoTokenizer

    from bad_input_helpers import copy_model

    model = copy_model(world, folder)
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.add_special_tokens({"mask_token": "[MASK9]"})
    tokenizer.save_pretrained(model)
    return ["run", "-m", f"hf:{model}", "-w", stereoset_file(folder, lambda d: None), "--metric", "stereoset"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_stereoset_bad_input(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")
