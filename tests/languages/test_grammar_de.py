"""German templates are grammatical for every word of the German package.

Renders every SEAT template with every word of every association test of `languages/de`, and every
LPBS template with every (target, attribute) pair, then checks German agreement on the sentences
themselves: der/die/das and ein/eine match the noun's gender (m/f/n), plural forms take "die" and
"sind", singulars never take "sind", nouns are capitalised and adjectives are not, a countable noun
never stands bare, and in the LPBS sentences the preposition contracts with the field's dative
article (im Handwerk, in der Pflege).
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

DATA = Path(__file__).resolve().parents[2] / "languages" / "de" / "bias_lang_de" / "data"
# German articles by grammatical gender (nominative singular), written out independently of the data
DEFINITE = {"m": "der", "f": "die", "n": "das"}
INDEFINITE = {"m": "ein", "f": "eine", "n": "ein"}
DATIVE_IN = {"m": ["im"], "f": ["in", "der"], "n": ["im"]}
DETERMINERS = {"der", "die", "das", "ein", "eine"}
NOUN_CLASSES = {"name", "person", "thing", "concept", "group"}


def load(path: Path) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def association_files() -> list[Path]:
    return language_data.association_files("de")


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def words_before(text: str, start: int) -> list[str]:
    return tokens(text[:start])


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("de", "seat-templates")


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
        assert s.text[0].isupper() and s.text.endswith("."), (file, word, s.text)
        assert "  " not in s.text and unicodedata.is_normalized("NFC", s.text)


def test_span_holds_the_word_or_its_plural(rendered):
    for file, key, word, features, s, plural_template in rendered[0]:
        inside = s.text[s.span[0] : s.span[1]]
        if plural_template and features.get("class") != "group":
            assert inside == features["plural"], (file, word, s.text)
        else:
            assert inside in (word, word[0].upper() + word[1:]), (file, word, s.text)


def test_nouns_are_capitalised_and_adjectives_are_not():
    for path in association_files():
        data = load(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            for word in wl.words:
                f = wl.features(word)
                assert f.get("class") in NOUN_CLASSES | {"adjective"}, (path.name, word)
                if f["class"] in NOUN_CLASSES:
                    assert word[0].isupper(), (path.name, word, "German nouns are capitalised")
                    assert not f.get("plural") or f["plural"][0].isupper(), (path.name, word)
                else:
                    assert word.islower(), (path.name, word, "adjectives are lower-case")
                if f["class"] in ("person", "thing"):
                    assert f.get("gender") in DEFINITE, (path.name, word, "nouns need gender m/f/n")


def test_articles_agree_with_gender(rendered):
    definite = indefinite = 0
    for file, key, word, features, s, plural_template in rendered[0]:
        before = words_before(s.text, s.span[0])
        if plural_template or not before or before[-1] not in DETERMINERS:
            continue
        gender = features.get("gender")
        if before[-1] in ("ein", "eine"):
            assert before[-1] == INDEFINITE[gender], (file, word, s.text)
            indefinite += 1
        else:
            assert before[-1] == DEFINITE[gender], (file, word, s.text)
            definite += 1
    assert definite > 100 and indefinite > 100  # the agreement templates really ran


def test_neuter_persons_follow_grammatical_gender(seat):
    sentences = {r.text for r in seat.render("Mädchen", {"class": "person", "gender": "n", "plural": "Mädchen"})}
    assert "Das Mädchen ist hier." in sentences and "Das ist ein Mädchen." in sentences
    assert not any(t.startswith("Die Mädchen ist") for t in sentences)


def test_plural_and_singular_verbs(rendered):
    plurals = 0
    for file, key, word, features, s, plural_template in rendered[0]:
        is_plural = plural_template
        toks = tokens(s.text)
        if is_plural:
            plurals += 1
            assert "sind" in toks and "ist" not in toks, (file, word, s.text)
            before = words_before(s.text, s.span[0])
            assert not before or before[-1] not in ("der", "das", "ein", "eine"), (file, word, s.text)
        else:
            assert "sind" not in toks, (file, word, s.text)
    assert plurals > 100


def test_countable_nouns_have_a_determiner_and_others_do_not(rendered):
    for file, key, word, features, s, plural_template in rendered[0]:
        cls = features.get("class")
        before = words_before(s.text, s.span[0])
        has_det = bool(before) and before[-1] in DETERMINERS
        if cls in ("person", "thing") and not plural_template:
            assert has_det, (file, word, s.text)
        if cls in ("name", "concept", "adjective", "group"):
            assert not has_det, (file, word, s.text)


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
        assert origins[0] == "german" and origins[1] != "german"


@pytest.fixture(scope="module")
def lpbs() -> lpbs_data.LpbsTest:
    return language_data.load_set("de", "lpbs-gender")


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
                        assert r.text[slice(*r.spans["target"])] == t
                        assert r.text[slice(*r.spans["attribute"])] == a
                        # plural targets: the only article before them is the plural "die", the verb is plural
                        before_t = words_before(r.text, r.spans["target"][0])
                        assert not before_t or before_t[-1] in ("die", "viele"), r.text
                        assert {"arbeiten", "machen"} & set(tokens(r.text)), r.text
                        # the preposition "in" contracts with the dative article of the field's gender
                        before_a = words_before(r.text, r.spans["attribute"][0])
                        want = DATIVE_IN[af["gender"]]
                        assert before_a[-len(want):] == want, r.text
    n_targets = len(lpbs.X.words) + len(lpbs.Y.words)
    n_attributes = len(lpbs.A.words) + len(lpbs.B.words)
    assert count == len(lpbs.templates) * n_targets * n_attributes
    for key in SET_KEYS:
        assert used[key] == set(lpbs.sets()[key].words), key


def test_no_ambiguous_pronoun_or_article_in_gender_lists():
    data = load(DATA / "debias-gender.toml")
    words = {w for pair in data["definitional"] + data["equalize"] + [data["direction"]] for w in pair}
    assert not words & {"sie", "ihr", "ihre", "der", "die", "das"}
    lp = load(DATA / "lpbs-gender.toml")
    assert not {w.lower() for k in ("X", "Y") for w in lp["sets"][k]["words"]} & {"sie", "schwestern"}
