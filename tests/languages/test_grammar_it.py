"""Italian package: every SEAT and LPBS sentence is grammatical Italian for every word it is built for.

The rules checked here are written independently of the data: the article a noun needs follows from
its gender and its first sounds (il/lo/l', la/l', un/uno/una/un', i/gli/le), so a wrong `det` or
`gender` feature, a wrong forms table or a template that ignores them fails a test. No models.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from pathlib import Path

import pytest

from fixtures import language_data

from bias.core import templates
from bias.core.wordsets import SET_KEYS, read_toml, word_list

DATA = Path(__file__).resolve().parents[2] / "languages" / "it" / "bias_lang_it" / "data"
VOWELS = "aeiouàèéìòù"
SINGULAR_ARTICLES = {"il", "lo", "la", "l'", "un", "uno", "una", "un'", "del", "dello", "della", "dell'"}
PLURAL_ARTICLES = {"i", "gli", "le"}


def association_files() -> list[Path]:
    return language_data.association_files("it")


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("it", "seat-templates")


@pytest.fixture(scope="module")
def words() -> list[tuple[str, str, str, dict[str, str]]]:
    """(file, set, word, features) for every word of every association test of the package."""
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


def lo_onset(word: str) -> bool:
    """Masculine nouns that take lo/uno/gli: s + consonant, z, gn, ps, pn, x, y."""
    w = word.lower()
    return (w[0] == "s" and len(w) > 1 and w[1] not in VOWELS) or w[0] in "zxy" or w[:2] in ("gn", "ps", "pn")


def allowed_singular(word: str, gender: str) -> set[str]:
    """Articles (and di + article) that may stand right before a singular noun, by the grammar rule."""
    if word[0].lower() in VOWELS:
        return {"l'", "dell'", "un'"} if gender == "f" else {"l'", "dell'", "un"}
    if gender == "f":
        return {"la", "della", "una"}
    return {"lo", "dello", "uno"} if lo_onset(word) else {"il", "del", "un"}


def allowed_plural(plural: str, gender: str) -> set[str]:
    if gender == "f":
        return {"le"}
    return {"gli"} if plural[0].lower() in VOWELS or lo_onset(plural) else {"i"}


def determiner_before(text: str, start: int) -> str:
    """The article or demonstrative written right before the slot: "l'" (no space) or the previous word."""
    before = text[:start]
    if before.endswith("'"):
        return re.findall(r"(\w+')$", before)[0].lower()
    found = re.findall(r"(\w+) $", before)
    return found[0].lower() if found else ""


def test_package_has_the_expected_files():
    stems = {p.stem for p in DATA.glob("*.toml")}
    assert {f"weat{i}" for i in range(1, 11)} <= stems
    assert {"seat-templates", "lpbs-gender", "debias-gender", "crows-sample", "analogies"} <= stems
    assert len([s for s in stems if s.startswith("labour-")]) >= 4


def test_files_are_nfc_utf8():
    for path in DATA.glob("*.toml"):
        text = path.read_text(encoding="utf-8")
        assert unicodedata.normalize("NFC", text) == text, path.name


def test_det_feature_follows_gender_and_onset(words):
    """The data's article class agrees with the rule, so the forms tables get the right key."""
    for f, key, w, feats in words:
        if "det" not in feats:
            continue
        expected = ("lm" if feats["gender"] == "m" else "lf") if w[0].lower() in VOWELS else (
            "la" if feats["gender"] == "f" else ("lo" if lo_onset(w) else "il"))
        assert feats["det"] == expected, (f, key, w, feats)


def test_every_word_gets_a_sentence(seat, words):
    lost = [(f, k, w) for f, k, w, feats in words if not seat.render(w, feats)]
    assert not lost


def test_sentences_are_well_formed(rendered):
    for f, k, w, feats, r in rendered:
        text = r.text
        assert "{" not in text and "}" not in text, text
        assert text[0].isupper(), text
        assert text.endswith("."), text
        assert "  " not in text and "' " not in text, text  # elided articles join the word
        start, end = r.spans["word"]
        assert text[start:end] in (w, feats.get("plural"), w[0].upper() + w[1:]), (text, w)


def test_articles_agree_with_the_noun(rendered):
    checked = 0
    for f, k, w, feats, r in rendered:
        if "det" not in feats:
            continue
        start, end = r.spans["word"]
        slot = r.text[start:end]
        det = determiner_before(r.text, start)
        plural = slot == feats.get("plural") and " sono" in r.text
        if det in ("questo", "questa"):
            assert det == ("questo" if feats["gender"] == "m" else "questa"), r.text
            assert slot[0].lower() not in VOWELS, r.text  # quest'uomo, quest'ape: elided before a vowel
        elif det == "quest'":
            assert slot[0].lower() in VOWELS, r.text
        elif plural and det in PLURAL_ARTICLES:
            assert det in allowed_plural(slot, feats["gender"]), r.text
        elif det in SINGULAR_ARTICLES:
            assert det in allowed_singular(w, feats["gender"]), r.text
        else:
            assert det in ("è", "sono", "ecco", ""), r.text  # no other word may stand before a noun
        # the demonstrative at the start agrees too: "Questa è un'ape."
        first = r.text.split()[0].lower()
        if first in ("questo", "questa"):
            assert first == ("questo" if feats["gender"] == "m" else "questa"), r.text
        if first in ("questi", "queste"):
            assert first == ("questi" if feats["gender"] == "m" else "queste"), r.text
        checked += 1
    assert checked > 500


def test_plural_sentences_use_plural_forms_only(rendered):
    for f, k, w, feats, r in rendered:
        start, end = r.spans["word"]
        if " sono " in r.text or r.text.endswith(f" {r.text[start:end]}.") and r.text.split()[1] == "sono":
            assert "plural" in feats and r.text[start:end].lower() == feats["plural"].lower(), r.text
    for f, k, w, feats, r in rendered:
        if "plural" not in feats:
            assert " sono " not in r.text, r.text


def test_names_and_adjectives_take_no_article(rendered):
    for f, k, w, feats, r in rendered:
        if feats.get("class") in ("name", "adjective") or feats.get("gender") == "epicene":
            det = determiner_before(r.text, r.spans["word"][0])
            assert det not in {"il", "lo", "la", "l'", "un", "uno", "una", "un'", "i", "gli", "le"}, r.text
        if feats.get("class") == "name" and r.text.split()[0] in ("Questo", "Questa"):
            assert r.text.split()[0] == ("Questo" if feats["gender"] == "m" else "Questa"), r.text


@pytest.fixture(scope="module")
def lpbs():
    return language_data.load_set("it", "lpbs-gender")


def test_lpbs_sentences_are_grammatical_for_every_pair(lpbs):
    sets = lpbs.sets()
    used: dict[str, set[str]] = {k: set() for k in "XYAB"}
    for template in lpbs.templates:
        for tk in "XY":
            for t in sets[tk].words:
                tf = sets[tk].features(t)
                for ak in "AB":
                    for a in sets[ak].words:
                        r = lpbs.render(template, (t, tf), (a, sets[ak].features(a)))
                        if r is None:
                            continue
                        used[tk].add(t)
                        used[ak].add(a)
                        assert "{" not in r.text and r.text[0].isupper() and r.text.endswith("."), r.text
                        ts, te = r.spans["target"]
                        as_, ae = r.spans["attribute"]
                        assert r.text[ts:te] == t and r.text[as_:ae] == a
                        # nothing before the masked target: no article can reveal its gender
                        assert ts == 0 and tf.get("class") == "name", r.text
                        # occupations are bare (no article), so they imply no gender
                        assert determiner_before(r.text, as_) in ("come", "è", "diventare"), r.text
    for k in "XYAB":
        assert used[k] == set(sets[k].words), k


def test_lpbs_targets_are_single_gendered_nouns(lpbs):
    assert {lpbs.X.features(w)["gender"] for w in lpbs.X.words} == {"m"}
    assert {lpbs.Y.features(w)["gender"] for w in lpbs.Y.words} == {"f"}
    for w in lpbs.A.words + lpbs.B.words:
        assert lpbs.A.features(w).get("gender", lpbs.B.features(w).get("gender")) == "epicene"


def test_crows_pairs_differ_only_in_one_group_phrase():
    data = read_toml(DATA / "crows-sample.toml")
    pairs = data["pairs"]
    assert len(pairs) >= 40
    assert len({p["bias_type"] for p in pairs}) >= 5
    for p in pairs:
        a, b = p["more"].split(), p["less"].split()
        ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
        assert len(ops) == 1, (p["more"], p["less"])
        assert p["more"][0].isupper() and p["less"][0].isupper()


def test_demonstrative_elides_before_a_vowel(seat):
    """Italian elides questo/questa before a vowel as it does the article: quest'uomo, quest'ape."""
    for word, feats in (("uomo", {"class": "person", "gender": "m", "det": "lm", "plural": "uomini"}),
                        ("ape", {"class": "thing", "gender": "f", "det": "lf", "plural": "api"})):
        texts = [r.text for r in seat.render(word, feats)]
        assert f"Quest'{word} è qui." in texts, texts
        assert not any(t.startswith(("Questo " + word, "Questa " + word)) for t in texts), texts
    texts = [r.text for r in seat.render("sedia", {"class": "thing", "gender": "f", "det": "la", "plural": "sedie"})]
    assert "Questa sedia è qui." in texts


def test_lpbs_sentences_do_not_reveal_the_masked_words_gender(lpbs):
    """Kurita et al.'s score compares P(target | sentence) for male and female targets; a gendered
    article or adjective anywhere else in the sentence would give the answer away. Every word of every
    rendered sentence other than the two slots is the same for a male and a female target."""
    sets = lpbs.sets()
    a = sets["A"].words[0]
    for template in lpbs.templates:
        rendered = []
        for key in "XY":
            t = sets[key].words[0]
            r = lpbs.render(template, (t, sets[key].features(t)), (a, sets["A"].features(a)))
            ts, te = r.spans["target"]
            rendered.append(r.text[:ts] + "[MASK]" + r.text[te:])
        assert rendered[0] == rendered[1], rendered
