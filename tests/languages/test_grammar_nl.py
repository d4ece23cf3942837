"""Dutch templates are grammatical for every word of the Dutch package.

Renders every SEAT template with every word of every association test of `languages/nl`, and every
LPBS template with every (target, attribute) pair, then checks Dutch agreement on the sentences
themselves: the definite article before a noun is the one its gender (de/het) takes, a countable noun
never stands bare, adjectives and mass nouns never follow an article, plural forms go with the plural
verb "zijn" and singulars with "is", sentences start with a capital, and no placeholder is left.
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

DATA = Path(__file__).resolve().parents[2] / "languages" / "nl" / "bias_lang_nl" / "data"
ARTICLE = {"de": "de", "het": "het"}  # Dutch definite article by grammatical gender, written out independently
ARTICLES = {"de", "het", "een"}


def load(path: Path) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def association_files() -> list[Path]:
    return language_data.association_files("nl")


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("nl", "seat-templates")


@pytest.fixture(scope="module")
def rendered(seat):
    """(file, set key, word, features, sentence, is_plural) for every sentence of every word of every test.

    Each template is rendered on its own so that a sentence is known to come from a plural template even
    where the plural form equals the singular.
    """
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
                    plural = ":plural}" in template.text or features.get("class") == "group"
                    out.append((path.name, key, word, features, templates.Sentence(r.text, r.spans["word"], word), plural))
                if not found:
                    lost.append(f"{path.name} {key} {word}")
                assert found == len(seat.render(word, wl.features(word)))  # same as TemplateSet.render
    return out, lost


def words_before(text: str, start: int) -> list[str]:
    return re.findall(r"[\w'-]+", text[:start].lower())


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
    for file, key, word, _, s, _plural in rendered[0]:
        assert "{" not in s.text and "}" not in s.text, (file, word, s.text)
        assert s.text[0].isupper(), (file, word, s.text)
        assert s.text.endswith("."), s.text
        assert "  " not in s.text, s.text
        assert unicodedata.is_normalized("NFC", s.text)


def test_span_holds_the_word_or_its_plural(rendered):
    for file, key, word, features, s, plural_template in rendered[0]:
        inside = s.text[s.span[0] : s.span[1]]
        if plural_template and features.get("class") != "group":
            assert inside == features["plural"], (file, word, s.text)
        else:
            assert inside in (word, word[0].upper() + word[1:]), (file, word, s.text)


def test_definite_article_agrees_with_gender(rendered):
    checked = 0
    for file, key, word, features, s, plural_template in rendered[0]:
        before = words_before(s.text, s.span[0])
        if plural_template or not before or before[-1] not in ("de", "het"):
            continue
        assert features.get("gender") in ARTICLE, (file, word, "a noun after an article needs gender de/het")
        assert before[-1] == ARTICLE[features["gender"]], (file, word, s.text)
        checked += 1
    assert checked > 100  # the de/het templates really ran


def test_plural_forms_take_the_plural_article_and_verb(rendered):
    seen = 0
    for file, key, word, features, s, plural_template in rendered[0]:
        plural = plural_template
        tokens = re.findall(r"[\w'-]+", s.text.lower())
        if plural:
            seen += 1
            assert "zijn" in tokens and "is" not in tokens, (file, word, s.text)
            before = words_before(s.text, s.span[0])
            assert not before or before[-1] not in ("het", "een"), (file, word, s.text)
        else:
            assert "zijn" not in tokens and ({"is", "gaat"} & set(tokens)), (file, word, s.text)
    assert seen > 100


def test_countable_nouns_have_a_determiner_and_others_do_not(rendered):
    for file, key, word, features, s, plural_template in rendered[0]:
        cls = features.get("class")
        before = words_before(s.text, s.span[0])
        has_article = bool(before) and before[-1] in ARTICLES
        if cls in ("person", "thing") and not plural_template:
            assert has_article, (file, word, s.text)
        if cls in ("name", "concept", "adjective", "group"):
            assert not has_article, (file, word, s.text)


def test_nouns_carry_gender_and_plural():
    for path in association_files():
        data = load(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            for word in wl.words:
                f = wl.features(word)
                assert f.get("class") in {"name", "person", "thing", "concept", "adjective", "group"}, (path.name, word)
                if f["class"] in ("person", "thing"):
                    assert f.get("gender") in ARTICLE, (path.name, word)
                    assert f.get("plural") and f["plural"] != word, (path.name, word)
                if f["class"] == "name":
                    assert word[0].isupper(), (path.name, word)


def test_names_are_typed_by_origin_in_origin_tests():
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
            assert genders.count("m") == genders.count("f"), (path.name, key)
            origins.append(found.pop())
        assert origins[0] == "dutch" and origins[1] != "dutch"


@pytest.fixture(scope="module")
def lpbs() -> lpbs_data.LpbsTest:
    return language_data.load_set("nl", "lpbs-gender")


def test_lpbs_templates_are_grammatical_for_every_pair(lpbs):
    used = {key: set() for key in SET_KEYS}
    count = 0
    for template in lpbs.templates:
        for t_key in ("X", "Y"):
            for t in lpbs.sets()[t_key].words:
                for a_key in ("A", "B"):
                    for a in lpbs.sets()[a_key].words:
                        tf, af = lpbs.sets()[t_key].features(t), lpbs.sets()[a_key].features(a)
                        r = lpbs.render(template, (t, tf), (a, af))
                        if r is None:
                            continue
                        count += 1
                        used[t_key].add(t)
                        used[a_key].add(a)
                        assert "{" not in r.text and r.text[0].isupper() and r.text.endswith("."), r.text
                        assert r.text[slice(*r.spans["target"])] == t
                        assert r.text[slice(*r.spans["attribute"])] == a
                        before = words_before(r.text, r.spans["target"][0])
                        assert before[-1] == ARTICLE[tf["gender"]], r.text
                        # an occupation predicate is bare or follows "een", never a definite article
                        a_before = words_before(r.text, r.spans["attribute"][0])
                        assert a_before[-1] not in ("de", "het"), r.text
    for key in SET_KEYS:
        assert used[key] == set(lpbs.sets()[key].words), key
    n_targets = len(lpbs.X.words) + len(lpbs.Y.words)
    n_attributes = len(lpbs.A.words) + len(lpbs.B.words)
    assert count == len(lpbs.templates) * n_targets * n_attributes  # every template fits every pair


def test_lpbs_article_does_not_reveal_the_target_gender(lpbs):
    """Both target sets take the same article, so the masked target is not given away by it."""
    for template in lpbs.templates:
        articles = {}
        for t_key in ("X", "Y"):
            a = lpbs.A.words[0]
            articles[t_key] = {
                words_before(r.text, r.spans["target"][0])[-1] if r.spans["target"][0] else ""
                for t in lpbs.sets()[t_key].words
                if (r := lpbs.render(template, (t, lpbs.sets()[t_key].features(t)), (a, lpbs.A.features(a))))
            }
        assert articles["X"] == articles["Y"], template.text


def test_no_ambiguous_pronoun_in_gender_lists():
    data = load(DATA / "debias-gender.toml")
    words = {w for pair in data["definitional"] + data["equalize"] + [data["direction"]] for w in pair}
    assert not words & {"zij", "ze", "haar", "zijn"}
    lp = load(DATA / "lpbs-gender.toml")
    assert not {w for k in ("X", "Y") for w in lp["sets"][k]["words"]} & {"zij", "ze", "haar"}
