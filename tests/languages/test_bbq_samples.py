"""The design of every language package's BBQ-style sample, checked on the raw files (not through
the loader): ten scenarios, each asked four ways over the same three answers; the ambiguous context
is the start of the disambiguated one and is answered by the unknown answer; five disambiguations
name the stereotyped group as the one who did the harmful thing and five the other group; neither
the unknown answer nor the stereotyped group's answer keeps one position; the six categories of the
notes with their counts."""

from __future__ import annotations

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
