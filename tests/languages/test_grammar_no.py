"""Norwegian Bokmål templates are grammatical for every word of the Norwegian package.

Renders every SEAT template with every word of every association test of `languages/no`, and every
LPBS template with every (target, attribute) pair, then checks Norwegian agreement on the sentences
themselves: the indefinite article (en/et) matches the noun's gender, definite sentences use the
suffixed definite form and never a separate article, predicative adjectives take their neuter form
after det/dette and the base form after a common-gender subject, plural templates use plural forms,
sentences start with a capital, and no placeholder is left.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from pathlib import Path

import pytest

from fixtures import language_data

from bias.core import grammar, lpbs_data, templates
from bias.core.wordsets import SET_KEYS, word_list

DATA = Path(__file__).resolve().parents[2] / "languages" / "no" / "bias_lang_no" / "data"
# Indefinite article by gender in the two-gender Bokmål used by this package, written out independently
INDEFINITE = {"m": "en", "f": "en", "n": "et"}
ARTICLES = {"en", "ei", "et", "den", "det", "de"}


def load(path: Path) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def association_files() -> list[Path]:
    return language_data.association_files("no")


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def words_before(text: str, start: int) -> list[str]:
    return tokens(text[:start])


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("no", "seat-templates")


@pytest.fixture(scope="module")
def rendered(seat):
    """(file, key, word, features, sentence, template text) for every sentence of every word of every test."""
    out, lost = [], []
    for path in association_files():
        data = load(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            for word in wl.words:
                features = {**seat.defaults, **wl.features(word)}
                found = 0
                for template in seat.templates:
                    r = grammar.render(template.text, {"word": (word, features)}, seat.forms, template.when)
                    if r is None:
                        continue
                    found += 1
                    out.append((path.name, key, word, features, templates.Sentence(r.text, r.spans["word"], word), template.text))
                if not found:
                    lost.append(f"{path.name} {key} {word}")
                assert found == len(seat.render(word, wl.features(word)))  # same as TemplateSet.render
    return out, lost


def test_package_has_the_expected_files():
    stems = {p.stem for p in DATA.glob("*.toml")}
    assert {f"weat{i}" for i in range(1, 11)} <= stems
    assert len([s for s in stems if s.startswith("labour-")]) >= 4
    assert {"seat-templates", "lpbs-gender", "debias-gender", "crows-sample", "analogies"} <= stems


def test_every_word_gets_a_sentence(rendered):
    sentences, lost = rendered
    assert sentences
    assert lost == []


def test_sentences_are_complete_and_capitalised(rendered):
    for file, key, word, _, s, _t in rendered[0]:
        assert "{" not in s.text and "}" not in s.text, (file, word, s.text)
        assert s.text[0].isupper() and s.text.endswith("."), (file, word, s.text)
        assert "  " not in s.text and unicodedata.is_normalized("NFC", s.text)


def test_nouns_and_adjectives_carry_their_forms():
    for path in association_files():
        data = load(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            for word in wl.words:
                f = wl.features(word)
                assert f.get("class") in {"name", "person", "thing", "concept", "group", "adjective"}, (path.name, word)
                if f["class"] in ("person", "thing"):
                    assert f.get("gender") in INDEFINITE, (path.name, word)
                    # the suffixed definite: -en for common gender, -et for neuter (after the stem)
                    ending = "et" if f["gender"] == "n" else "en"
                    assert f.get("definite", "").endswith(ending), (path.name, word, f.get("definite"))
                if f["class"] == "adjective":
                    neuter = f.get("neuter", "")
                    assert neuter == word or neuter.endswith("t"), (path.name, word, neuter)
                if f["class"] == "name":
                    assert word[0].isupper(), (path.name, word)


def test_indefinite_article_agrees_with_gender(rendered):
    checked = 0
    for file, key, word, features, s, text in rendered[0]:
        before = words_before(s.text, s.span[0])
        if "{word.indefinite}" in text:
            assert before[-1] == INDEFINITE[features["gender"]], (file, word, s.text)
            checked += 1
    assert checked > 200


def test_definite_sentences_use_the_suffixed_form_without_an_article(rendered):
    checked = 0
    for file, key, word, features, s, text in rendered[0]:
        inside = s.text[s.span[0] : s.span[1]]
        if ":definite}" in text:
            assert inside.lower() == features["definite"].lower() and inside != word, (file, word, s.text)
            assert s.span[0] == 0, s.text  # nothing before it: no separate article
            checked += 1
        elif ":plural}" in text:
            assert inside == features["plural"], (file, word, s.text)
        elif ":neuter}" in text:
            assert inside == features["neuter"], (file, word, s.text)
        else:
            assert inside in (word, word[0].upper() + word[1:]), (file, word, s.text)
    assert checked > 200


def test_predicative_adjectives_agree_with_the_subject(rendered):
    neuter = common = 0
    for file, key, word, features, s, text in rendered[0]:
        if features.get("class") != "adjective":
            continue
        inside = s.text[s.span[0] : s.span[1]]
        subject = tokens(s.text)[0]
        if subject in ("det", "dette"):
            assert inside == features["neuter"], (file, word, s.text)
            neuter += 1
        else:
            assert subject == "personen" and inside == word, (file, word, s.text)
            common += 1
    assert neuter and common
    assert neuter == 2 * common  # both neuter templates and the common-gender one fit every adjective


def test_bare_nouns_and_determiners(rendered):
    for file, key, word, features, s, text in rendered[0]:
        before = words_before(s.text, s.span[0])
        has_article = bool(before) and before[-1] in ARTICLES and "{word.indefinite}" not in text
        if features.get("class") in ("name", "concept", "group", "adjective") or ":plural}" in text:
            assert not has_article, (file, word, s.text)


def test_origin_name_lists_are_typed_and_balanced():
    for path in association_files():
        data = load(path)
        if data["bias_type"] != "origin" or not path.stem.startswith("weat"):
            continue
        origins = []
        for key in ("X", "Y"):
            wl = word_list(data["sets"][key], key)
            found = {wl.features(w).get("origin") for w in wl.words}
            assert len(found) == 1 and None not in found, (path.name, key, found)
            genders = [wl.features(w).get("gender") for w in wl.words]
            assert genders.count("m") == genders.count("f") == len(genders) // 2, (path.name, key)
            origins.append(found.pop())
        assert origins[0] == "norwegian" and origins[1] != "norwegian"


@pytest.fixture(scope="module")
def lpbs() -> lpbs_data.LpbsTest:
    return language_data.load_set("no", "lpbs-gender")


def test_lpbs_templates_are_grammatical_for_every_pair(lpbs):
    used = {key: set() for key in SET_KEYS}
    count = 0
    for template in lpbs.templates:
        for t_key in ("X", "Y"):
            for t in lpbs.sets()[t_key].words:
                for a_key in ("A", "B"):
                    for a in lpbs.sets()[a_key].words:
                        af = lpbs.sets()[a_key].features(a)
                        r = lpbs.render(template, (t, lpbs.sets()[t_key].features(t)), (a, af))
                        if r is None:
                            continue
                        count += 1
                        used[t_key].add(t)
                        used[a_key].add(a)
                        assert "{" not in r.text and r.text[0].isupper() and r.text.endswith("."), r.text
                        assert r.text[slice(*r.spans["target"])].lower() == t
                        assert r.spans["target"] == (0, len(t))  # sentence-initial definite noun, no article
                        assert r.text[slice(*r.spans["attribute"])] == a
                        before = words_before(r.text, r.spans["attribute"][0])
                        if "indefinite" in template.text:
                            assert before[-2:] == [INDEFINITE[af["gender"]], "erfaren"], r.text
                        else:
                            assert before[-1] in ("er", "som", "bli"), r.text  # bare predicate noun
    n_targets = len(lpbs.X.words) + len(lpbs.Y.words)
    n_attributes = len(lpbs.A.words) + len(lpbs.B.words)
    assert count == len(lpbs.templates) * n_targets * n_attributes
    for key in SET_KEYS:
        assert used[key] == set(lpbs.sets()[key].words), key


def test_lpbs_targets_are_definite_forms():
    lp = load(DATA / "lpbs-gender.toml")
    for key in ("X", "Y"):
        for w in lp["sets"][key]["words"]:
            assert w.endswith("en"), (key, w, "targets use the common-gender suffixed definite")


def test_gender_direction_uses_unambiguous_pronouns():
    data = load(DATA / "debias-gender.toml")
    assert data["direction"] == ["han", "hun"]
    words = {w for pair in data["definitional"] + data["equalize"] for w in pair}
    assert not words & {"hans", "hen", "en", "ei", "et"}


# Plurals of common-gender nouns by the Bokmål rules, written out independently of the data. A noun
# that only looks like an -er noun (sprettert: -ert) still takes -er: spretterter, not "sprettere".
IRREGULAR_PLURALS = {"far": "fedre", "mor": "mødre", "bror": "brødre", "datter": "døtre", "mann": "menn"}


def bokmaal_plurals(singular: str) -> set[str]:
    for base, plural in IRREGULAR_PLURALS.items():
        if singular.endswith(base):
            return {singular[: -len(base)] + plural}
    if singular.endswith("é"):
        return {singular[:-1] + "eer"}  # moské -> moskeer
    if singular.endswith("a"):
        return {singular[:-1] + "er", singular + "er"}  # kollega -> kolleger, tuba -> tubaer
    if singular.endswith("e"):
        return {singular + "r"}
    if singular.endswith("el"):
        return {singular[:-2] + "ler", singular + "er"}  # onkel -> onkler
    if singular.endswith("er"):
        return {singular + "e", singular[:-2] + "re", singular + "er"}  # lærer -> lærere, søster -> søstre
    # -er after a consonant (-ert too: sprettert -> spretterter), with the final consonant doubled after a
    # short vowel (sykdom -> sykdommer); some nouns are unchanged (sko)
    return {singular + "er", singular + singular[-1] + "er", singular}


def test_common_gender_plurals_follow_the_bokmaal_rules():
    checked, wrong = 0, []
    for path in association_files():
        data = load(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            for word in wl.words:
                features = wl.features(word)
                if features.get("gender") not in ("m", "f") or "plural" not in features or " " in word:
                    continue
                checked += 1
                if features["plural"] not in bokmaal_plurals(word):
                    wrong.append((path.name, word, features["plural"], sorted(bokmaal_plurals(word))))
    assert not wrong
    assert checked > 100
    assert "spretterter" in bokmaal_plurals("sprettert") and "sprettere" not in bokmaal_plurals("sprettert")
