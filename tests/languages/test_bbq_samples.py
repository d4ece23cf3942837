"""The design of every language package's BBQ-style sample, checked on the raw files (not through
the loader): ten scenarios, each asked four ways over the same three answers; the ambiguous context
is the start of the disambiguated one and is answered by the unknown answer; five disambiguations
name the stereotyped group as the one who did the harmful thing and five the other group; neither
the unknown answer nor the stereotyped group's answer keeps one position; the six categories of the
notes with their counts. Every package also names, for every scenario, where its stereotype
is attested (a survey, report or paper with its year), and names the other group first in about half
of the contexts."""

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


# Every package's scenarios name where each stereotype is attested and alternate the group named
# first.
ATTESTED = ("en", "nl", "de", "no", "is", "tr", "it")
WORD = re.compile(r"\w+")
CITATION = re.compile(r"\b(19|20)\d\d\b")  # the year of the survey, report or paper


def _words(text: str) -> list[str]:
    return [w.casefold() for w in WORD.findall(text)]


def _same_word(seen: str, word: str) -> int:
    """How well a word of a context is a word of an answer, perhaps inflected (kona / Konan,
    annesiyle / Anne, far / Faren): the length of their common beginning, 0 when they differ."""
    if seen == word:
        return 100 + len(word)
    common = len(os.path.commonprefix([seen, word]))
    if common >= 4 and len(seen) - common <= 4 and len(word) - common <= 4:
        return common
    if common >= 3 and common == min(len(seen), len(word)) and abs(len(seen) - len(word)) <= 3:
        return common
    if common == len(word) >= 4 and len(seen) - common <= 6:
        return common
    return 0


def first_named(text: str, stereotyped: str, other: str) -> str | None:
    """Which of two answers' groups a text names first, by the longest words in which the answers
    differ (Sextugu konunni / Tvítugu konunni: sextug- / tvítug-)."""
    def naming(answer: str, versus: str) -> list[str]:
        own = [w for w in _words(answer) if w not in _words(versus)]
        return [w for w in own if len(w) == max(map(len, own))]

    mine, theirs = naming(stereotyped, other), naming(other, stereotyped)
    for seen in _words(text):
        s, o = max(_same_word(seen, w) for w in mine), max(_same_word(seen, w) for w in theirs)
        if s != o:
            return "stereotyped" if s > o else "other"
    return None


def test_first_named_finds_inflected_and_agglutinated_group_words() -> None:
    cases = [
        ("A man with depression and a man without depression", "The man with depression",
         "The man without depression", "stereotyped"),
        ("Sextug kona og tvítug kona", "Sextugu konunni", "Tvítugu konunni", "stereotyped"),
        ("Elif'in annesiyle babası mutfak işini paylaştı", "Baba", "Anne", "other"),
        ("En mor og en far byttet på", "Faren", "Moren", "other"),
        ("Ein rumänischer und ein einheimischer Bauer", "Der einheimische Bauer",
         "Der rumänische Bauer", "other"),
        ("Two people met.", "The woman", "The man", None),
    ]
    for text, stereotyped, other, expected in cases:
        assert first_named(text, stereotyped, other) == expected, text


@pytest.mark.parametrize("code", ATTESTED)
def test_bbq_sample_names_where_each_stereotype_is_attested(code: str) -> None:
    """BBQ's design: every scenario's stereotype is documented by a survey, report or paper."""
    sources = set()
    for name, items in scenarios(code).items():
        attested = {i.get("attested", "") for i in items}
        assert len(attested) == 1, name  # one source for the four questions of a scenario
        (source,) = attested
        assert CITATION.search(source) and len(source) > 60, (name, source)
        sources.add(source)
    assert len(sources) >= 7  # ten scenarios, not one source for all


@pytest.mark.parametrize("code", ATTESTED)
def test_bbq_sample_alternates_the_group_named_first(code: str) -> None:
    """About half the contexts name the other group first, so that a preference for the first-named
    person does not line up with the stereotype (BBQ writes its contexts in both orders)."""
    in_context, in_disambiguation = Counter(), Counter()
    for items in scenarios(code).values():
        first = items[0]
        stereotyped = first["answers"][first["stereotyped"]]
        other = first["answers"][3 - first["unknown"] - first["stereotyped"]]
        ambiguous = next(i["context"] for i in items if i["context_condition"] == "ambiguous")
        stated = next(i["context"] for i in items if i["context_condition"] == "disambiguated")
        in_context[first_named(ambiguous, stereotyped, other)] += 1
        in_disambiguation[first_named(stated[len(ambiguous):], stereotyped, other)] += 1
    assert None not in in_context and None not in in_disambiguation, (in_context, in_disambiguation)
    assert 4 <= in_context["stereotyped"] <= 6, in_context
    assert 4 <= in_disambiguation["stereotyped"] <= 6, in_disambiguation
