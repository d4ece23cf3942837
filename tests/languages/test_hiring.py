"""The hiring decision sets of the seven language packages (`LANG/hiring`, kind decisions): at least
20 scenarios covering the six kinds of decision, names drawn from the package's own name sets by
origin and gender, an explicit variant for every group, prompts that name the language's answer
words, and the discrimination metric finding an effect planted in each language's real prompts."""

from __future__ import annotations

import re

import pytest
from fixtures.decisions import planted_for

from bias.core.data.decisions import DECISION_TYPES
from bias.registry.resolve import load_wordset

LANGUAGES = ("en", "nl", "de", "no", "is", "tr", "it")


@pytest.fixture(scope="module")
def sets():
    return {code: load_wordset(f"{code}/hiring") for code in LANGUAGES}


@pytest.mark.parametrize("code", LANGUAGES)
def test_twenty_scenarios_of_every_kind_of_decision(sets, code):
    data = sets[code]
    assert (
        data.meta.language == code
        and data.meta.licence == "CC-BY-4.0"
        and "DiscrimEval" in data.meta.source
    )
    assert len(data.scenarios) >= 20
    assert {s.decision for s in data.scenarios} == set(DECISION_TYPES)
    assert len({s.job for s in data.scenarios}) == len(data.scenarios), (
        "every scenario has its own job"
    )


@pytest.mark.parametrize("code", LANGUAGES)
def test_names_come_from_the_packages_own_name_sets_by_origin_and_gender(sets, code):
    data = sets[code]
    assert data.groups[0].key == data.reference and len(data.groups) >= 2
    for group in data.groups:
        if code == "de" and group.key == "deutsch":
            # listed in the file: de/weat3 X less Jan, Julia and Anna, as common in Poland, spelled
            # the same, so no mark of German origin against the Polish group
            assert group.sources == ("words",)
            assert not {a.text for a in group.names} & {"Jan", "Julia", "Anna"}
        else:
            assert group.sources and all(
                re.fullmatch(r"[a-z0-9-]+\.[XY]", s) for s in group.sources
            ), group.sources
        genders = [a.gender for a in group.names]
        if (
            code == "en"
        ):  # en/weat4 (Bertrand & Mullainathan) gives no gender: its templates use none
            assert len(genders) == 18 and set(genders) == {""} and len(group.explicit) == 1
        else:
            assert genders.count("m") == genders.count("f") == 8, (group.key, genders)
            assert sorted(a.gender for a in group.explicit) == ["f", "m"]
            assert {a.features.get("origin") for a in group.names} == {
                group.names[0].features.get("origin")
            }


@pytest.mark.parametrize("code", LANGUAGES)
def test_the_prompt_asks_for_the_answer_words_it_scores(sets, code):
    data = sets[code]
    prompt = data.prompt.casefold()
    for which in ("yes", "no"):
        assert all(word.casefold() in prompt for word in data.answers[which]), (which, data.prompt)
    assert data.prompt.rstrip().endswith(":")


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_applicant_gets_the_same_profile_but_the_name(sets, code):
    """With the applicant's name (or group, stated) cut out, the profiles of one scenario are one
    text per gender: only agreement with the name's gender may change besides the name."""
    data = sets[code]
    for variant in ("names", "explicit"):
        for scenario in data.scenarios:
            texts: dict[str, set[str]] = {}
            for p in (data.render(scenario, a) for a in data.applicants_of(variant)):
                who = p.applicant.text
                cut = p.cv.replace(who, "NAME", 1).replace(who[:1].upper() + who[1:], "NAME", 1)
                texts.setdefault(p.applicant.gender, set()).add(cut)
            assert all(len(t) == 1 for t in texts.values()), (code, scenario.id, variant, texts)


@pytest.mark.parametrize("code", LANGUAGES)
def test_the_metric_finds_an_effect_planted_in_the_real_prompts(sets, code):
    from bias.plugins.metrics.discrimination import Discrimination

    data = sets[code]
    other = data.groups[1].key
    result = Discrimination(selection="probability").compute(
        planted_for(data, "names", {other: -1.0}, noise=0.3), data, seed=0
    )
    assert result.status == "ok", result.reason
    assert result.effect_size == pytest.approx(-1.0, abs=0.15) and result.figures["ci_high"] < 0
    for group in data.groups[2:]:
        coefficient = result.figures["coefficients"][f"group:{group.key}"]
        assert coefficient["low"] < 0 < coefficient["high"], (code, group.key, coefficient)
