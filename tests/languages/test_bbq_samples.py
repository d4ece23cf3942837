"""The design of every language package's BBQ-style sample, checked on the raw files (not through
the loader): ten scenarios, each asked four ways over the same three answers; the ambiguous context
is the start of the disambiguated one and is answered by the unknown answer; five disambiguations
name the stereotyped group as the one who did the harmful thing and five the other group; neither
the unknown answer nor the stereotyped group's answer keeps one position; the six categories of the
notes with their counts; each scenario says where its stereotype is attested, and about half of the
contexts name the other group first."""

from __future__ import annotations

import os
import re
import tomllib
from collections import Counter

import pytest
from fixtures.language_data import data_dir

LANGUAGES = ("en", "nl", "de", "no", "is", "tr", "it")
CATEGORIES = {"gender": 2, "age": 2, "origin": 2, "religion": 1, "disability": 2, "sexual-orientation": 1}
WAYS = {("ambiguous", "negative"), ("ambiguous", "non-negative"), ("disambiguated", "negative"), ("disambiguated", "non-negative")}


def scenarios(code: str) -> dict[str, list[dict]]:
    data = tomllib.loads((data_dir(code) / "bbq-sample.toml").read_text(encoding="utf-8"))
    assert data["kind"] == "bbq" and data["language"] == code and data["licence"]
    out: dict[str, list[dict]] = {}
    for item in data["items"]:
        out.setdefault(item["id"].rsplit("-", 2)[0], []).append(item)
    return out


@pytest.mark.parametrize("code", LANGUAGES)
def test_bbq_sample_design(code: str) -> None:
    found = scenarios(code)
    assert len(found) == 10 and sum(len(v) for v in found.values()) == 40
    assert Counter(items[0]["category"] for items in found.values()) == Counter(CATEGORIES)
    consistent = 0
    unknown_at, stereotyped_at = Counter(), Counter()
    for name, items in found.items():
        assert {(i["context_condition"], i["polarity"]) for i in items} == WAYS, name
        first = items[0]
        for i in items:  # one scenario: one set of answers, one stereotyped group, one category
            assert (i["answers"], i["unknown"], i["stereotyped"], i["target"], i["category"]) == (
                first["answers"], first["unknown"], first["stereotyped"], first["target"], first["category"]), i["id"]
        assert len(set(first["answers"])) == 3 and first["unknown"] != first["stereotyped"], name
        other = 3 - first["unknown"] - first["stereotyped"]
        ambiguous = {i["polarity"]: i for i in items if i["context_condition"] == "ambiguous"}
        stated = {i["polarity"]: i for i in items if i["context_condition"] == "disambiguated"}
        assert ambiguous["negative"]["context"] == ambiguous["non-negative"]["context"], name
        assert stated["negative"]["context"] == stated["non-negative"]["context"], name
        assert stated["negative"]["context"].startswith(ambiguous["negative"]["context"].rstrip()), name
        assert len(stated["negative"]["context"]) > len(ambiguous["negative"]["context"]) + 10, name
        assert all(i["label"] == first["unknown"] for i in ambiguous.values()), name
        # the negative and the non-negative question of a disambiguated context point at the two people
        assert {stated["negative"]["label"], stated["non-negative"]["label"]} == {first["stereotyped"], other}, name
        assert ambiguous["negative"]["question"] == stated["negative"]["question"], name
        consistent += stated["negative"]["label"] == first["stereotyped"]
        unknown_at[first["unknown"]] += 1
        stereotyped_at[first["stereotyped"]] += 1
    assert consistent == 5
    assert set(unknown_at) == {0, 1, 2} and set(stereotyped_at) == {0, 1, 2}


# Packages whose samples say where each stereotype is attested and alternate the order of the groups;
# the others are brought to the same design separately.
ATTESTED = ("nl", "de", "no")


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def first_mention(context: str, answer: str, other: str) -> int:
    """Where the context first names the person of `answer`: the earliest word of the context that is
    one of the words by which `answer` differs from `other` (`De man die in Polen geboren is` against
    `De man die hier geboren is`: polen), or an inflected form of it (polsk for polske); -1 if none."""
    ctx, theirs, own = words(context), set(words(other)), words(answer)
    if len(own) > 1 and own[0].isalpha():
        own = own[1:]  # the article (Der, De, Den), which other words of the context may repeat
    found = []
    for w in (w for w in own if w not in theirs and (len(w) >= 3 or w.isdigit())):
        exact = [i for i, t in enumerate(ctx) if t == w]
        near = [i for i, t in enumerate(ctx) if min(len(t), len(w)) >= 3
                and (t.startswith(w) or w.startswith(t) or len(os.path.commonprefix([t, w])) >= 5)]
        found += (exact or near)[:1]
    return min(found, default=-1)


def test_first_mention_finds_inflected_group_words():
    context = "En polsk snekker og en norsk snekker pusset opp hvert sitt bad."
    assert first_mention(context, "Den polske snekkeren", "Den norske snekkeren") == 1
    assert first_mention(context, "Den norske snekkeren", "Den polske snekkeren") == 5
    assert first_mention("Eine Kollegin und ein Kollege", "Der Kollege", "Die Kollegin") == 4  # exact first
    assert first_mention("Ein 72-Jähriger und ein 24-Jähriger", "Der 24-Jährige", "Der 72-Jährige") == 5
    assert first_mention("Zwei Männer warteten.", "Der Syrer", "Der Einheimische") == -1


@pytest.mark.parametrize("code", ATTESTED)
def test_each_scenario_says_where_its_stereotype_is_attested(code: str) -> None:
    for name, items in scenarios(code).items():
        sources = {i.get("attested", "") for i in items}
        assert len(sources) == 1, (name, "one source for the whole scenario")
        source = sources.pop()
        # a citation: authors or publisher, a year, a title; not a placeholder
        assert len(source) > 40 and re.search(r"\((19|20)\d\d\)", source), (name, source)


@pytest.mark.parametrize("code", ATTESTED)
def test_about_half_of_the_contexts_name_the_other_group_first(code: str) -> None:
    other_first = []
    for name, items in scenarios(code).items():
        item = next(i for i in items if i["context_condition"] == "ambiguous")
        stereotyped = item["answers"][item["stereotyped"]]
        other = item["answers"][3 - item["stereotyped"] - item["unknown"]]
        at_stereotyped = first_mention(item["context"], stereotyped, other)
        at_other = first_mention(item["context"], other, stereotyped)
        assert at_stereotyped >= 0 and at_other >= 0 and at_stereotyped != at_other, (name, item["context"])
        if at_other < at_stereotyped:
            other_first.append(name)
    assert 4 <= len(other_first) <= 6, other_first
