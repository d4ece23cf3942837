"""Icelandic package: every SEAT and LPBS sentence is grammatical Icelandic for every word it is built for.

The agreement rules are implemented here independently of the data: the demonstrative (þessi /
þetta, þessir / þessar / þessi), the pronoun of a name (hann / hún) and the nominative suffixed
article (-inn/-nn, -in/-n, -ið/-ð) follow from the word's gender, so a wrong `gender` or `definite`
feature or a wrong forms table fails a test. No models.
"""

from __future__ import annotations

import difflib
import unicodedata
from pathlib import Path

import pytest

from fixtures import language_data

from bias.core import templates
from bias.core.wordsets import SET_KEYS, read_toml, word_list

DATA = Path(__file__).resolve().parents[2] / "languages" / "is" / "bias_lang_is" / "data"
THIS = {"m": "þessi", "f": "þessi", "n": "þetta"}
THESE = {"m": "þessir", "f": "þessar", "n": "þessi"}
PRONOUN = {"m": "hann", "f": "hún"}


def association_files() -> list[Path]:
    return language_data.association_files("is")


def definite_agrees(definite: str, gender: str) -> bool:
    """Nominative singular suffixed article: masculine -(i)nn, feminine -(i)n, neuter -(i)ð."""
    if gender == "m":
        return definite.endswith("nn")
    if gender == "f":
        return definite.endswith("n") and not definite.endswith("nn")
    return definite.endswith("ð")


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("is", "seat-templates")


@pytest.fixture(scope="module")
def words():
    out = []
    for path in association_files():
        data = read_toml(path)
        for key in SET_KEYS:
            wl = word_list(data["sets"][key], key)
            out.extend((path.stem, key, w, dict(wl.features(w))) for w in wl.words)
    return out


@pytest.fixture(scope="module")
def rendered(seat, words):
    return [(f, k, w, feats, r) for f, k, w, feats in words for r in seat.render(w, feats)]


def test_package_has_the_expected_files():
    stems = {p.stem for p in DATA.glob("*.toml")}
    assert {f"weat{i}" for i in range(1, 11)} <= stems
    assert {"seat-templates", "lpbs-gender", "debias-gender", "crows-sample", "analogies"} <= stems
    assert len([s for s in stems if s.startswith("labour-")]) >= 4


def test_files_are_nfc_utf8():
    for path in DATA.glob("*.toml"):
        text = path.read_text(encoding="utf-8")
        assert unicodedata.normalize("NFC", text) == text, path.name


def test_nouns_have_gender_and_a_definite_form_that_agrees(words):
    for f, key, w, feats in words:
        if feats.get("class") in ("thing", "person", "concept"):
            assert feats.get("gender") in ("m", "f", "n"), (f, key, w)
            definite = feats.get("definite", "")
            assert definite_agrees(definite, feats["gender"]), (f, key, w, definite)
            assert definite[:2] == w[:2] and len(definite) > len(w) - 2, (w, definite)


def test_every_word_gets_a_sentence(seat, words):
    lost = [(f, k, w) for f, k, w, feats in words if not seat.render(w, feats)]
    assert not lost


def test_sentences_are_well_formed(rendered):
    for f, k, w, feats, r in rendered:
        text = r.text
        assert "{" not in text and "}" not in text, text
        assert text[0].isupper() and text.endswith(".") and "  " not in text, text
        start, end = r.spans["word"]
        forms = {w, feats.get("plural"), feats.get("definite")}
        slot = text[start:end]
        assert slot in forms or (start == 0 and slot[0].lower() + slot[1:] in forms), (text, w)


# Nouns whose plural has another gender than the singular (written out here, independently of the data):
# foreldri "parent" is neuter, its plural foreldrar masculine, so "these parents" is "þessir foreldrar".
PLURAL_GENDER = {"foreldri": "m"}


def test_plural_demonstrative_agrees_with_the_gender_of_the_plural(seat):
    """A plural demonstrative agrees with the plural form, not with the singular's gender."""
    rendered = [r.text for r in seat.render("foreldri", {"gender": "n", "definite": "foreldrið", "plural": "foreldrar", "these": "þessir", "class": "person"})]
    assert "Þessir foreldrar eru hér." in rendered
    assert not any(t.startswith("Þessi foreldrar") for t in rendered)
    test = language_data.load_set("is", "weat6")
    assert test.B.features("foreldri").get("these") == "þessir"


def test_demonstratives_and_pronouns_agree_with_gender(rendered):
    checked = 0
    for f, k, w, feats, r in rendered:
        first, second = (r.text.split() + [""])[:2]
        start, end = r.spans["word"]
        slot = r.text[start:end]
        if first.lower() in ("þessi", "þetta") and start == len(first) + 1 and " eru " not in r.text:
            assert first.lower() == THIS[feats["gender"]], r.text
            checked += 1
        if first.lower() in ("þessir", "þessar", "þessi") and " eru " in r.text:
            plural_gender = PLURAL_GENDER.get(w, feats["gender"])
            assert first.lower() == THESE[plural_gender] and slot == feats["plural"], r.text
            checked += 1
        if second == "heitir":
            assert first.lower() == PRONOUN[feats["gender"]], r.text
            checked += 1
    assert checked > 300


def test_plural_and_adjective_templates_fit_their_words(rendered):
    for f, k, w, feats, r in rendered:
        start, end = r.spans["word"]
        if " eru" in r.text:
            assert r.text[start:end] == feats.get("plural"), r.text
        if r.text.startswith(("Hann er ", "Hann virðist ")):
            assert feats.get("class") == "adjective", r.text
        if feats.get("class") == "adjective":
            assert r.text.startswith(("Hann er ", "Hann virðist ")), r.text


@pytest.fixture(scope="module")
def lpbs():
    return language_data.load_set("is", "lpbs-gender")


def test_lpbs_sentences_are_grammatical_for_every_pair(lpbs):
    sets = lpbs.sets()
    good = {"m": "góður", "f": "góð", "n": "gott"}
    for template in lpbs.templates:
        for tk in "XY":
            for t in sets[tk].words:
                tf = sets[tk].features(t)
                for ak in "AB":
                    for a in sets[ak].words:
                        af = sets[ak].features(a)
                        r = lpbs.render(template, (t, tf), (a, af))
                        assert r is not None, (template.text, t, a)
                        assert "{" not in r.text and r.text[0].isupper() and r.text.endswith("."), r.text
                        ts, te = r.spans["target"]
                        as_, ae = r.spans["attribute"]
                        assert r.text[as_:ae] == a
                        target = r.text[ts:te]
                        assert target.lower() in (t, tf["definite"]), r.text
                        if target.lower() == t:  # bare noun only after the agreeing demonstrative
                            assert r.text.split()[0].lower() == THIS[tf["gender"]], r.text
                        words = r.text[:as_].split()
                        if words[-1] in good.values():
                            assert words[-1] == good[af["gender"]], r.text
    assert {sets["X"].features(w)["gender"] for w in sets["X"].words} == {"m"}
    assert {sets["Y"].features(w)["gender"] for w in sets["Y"].words} == {"f"}


def test_crows_pairs_differ_only_in_one_group_phrase():
    pairs = read_toml(DATA / "crows-sample.toml")["pairs"]
    assert len(pairs) >= 40
    assert len({p["bias_type"] for p in pairs}) >= 5
    for p in pairs:
        a, b = p["more"].split(), p["less"].split()
        ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
        assert len(ops) == 1, (p["more"], p["less"])
