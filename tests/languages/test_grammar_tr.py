"""Turkish package: every SEAT and LPBS sentence is grammatical Turkish for every word it is built for.

Turkish agreement is vowel harmony. The rules are implemented here independently of the data: the
question particle (mı/mi/mu/mü) and the plural suffix (-lar/-ler) follow from the last vowel of the
word, so a wrong `harmony` or `plural` feature or a wrong forms table fails a test. No models.
"""

from __future__ import annotations

import difflib
import unicodedata
from pathlib import Path

import pytest

from fixtures import language_data

from bias.core import templates
from bias.core.wordsets import SET_KEYS, read_toml, word_list

DATA = Path(__file__).resolve().parents[2] / "languages" / "tr" / "bias_lang_tr" / "data"
FOUR_WAY = {"a": "ı", "ı": "ı", "o": "u", "u": "u", "e": "i", "i": "i", "ö": "ü", "ü": "ü"}
PARTICLE = {"ı": "mı", "i": "mi", "u": "mu", "ü": "mü"}
# Words whose suffixes follow pronunciation rather than spelling (documented in the data files' notes).
HARMONY_EXCEPTIONS = {"normal": "i", "Einstein": "ı", "non-binary": "i", "hilal": "i"}


def tr_lower(text: str) -> str:
    return text.replace("I", "ı").replace("İ", "i").lower()


def tr_upper_first(text: str) -> str:
    first = {"i": "İ", "ı": "I"}.get(text[0], text[0].upper())
    return first + text[1:]


def harmony_of(word: str) -> str:
    if word in HARMONY_EXCEPTIONS:
        return HARMONY_EXCEPTIONS[word]
    vowels = [FOUR_WAY[c] for c in tr_lower(word) if c in FOUR_WAY]
    return vowels[-1]


def association_files() -> list[Path]:
    return language_data.association_files("tr")


@pytest.fixture(scope="module")
def seat() -> templates.TemplateSet:
    return language_data.load_set("tr", "seat-templates")


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


def test_harmony_feature_follows_the_last_vowel(words):
    for f, key, w, feats in words:
        assert feats.get("harmony") == harmony_of(w), (f, key, w, feats)


def test_plural_suffix_follows_vowel_harmony(words):
    for f, key, w, feats in words:
        if "plural" not in feats:
            continue
        plural = feats["plural"]
        back = feats["harmony"] in ("ı", "u")
        suffixes = ("lar", "ları") if back else ("ler", "leri")  # -ları/-leri: compounds such as hamamböcekleri
        assert plural.endswith(suffixes), (w, plural)
        assert plural.startswith(w) or plural.endswith(("ları", "leri")), (w, plural)


def test_every_word_gets_a_sentence(seat, words):
    lost = [(f, k, w) for f, k, w, feats in words if not seat.render(w, feats)]
    assert not lost


def test_sentences_are_well_formed(rendered):
    for f, k, w, feats, r in rendered:
        text = r.text
        assert "{" not in text and "}" not in text, text
        assert text[0] == tr_upper_first(text[0]) and text[0].isupper(), text
        assert text.endswith((".", "?")) and "  " not in text, text
        start, end = r.spans["word"]
        assert text[start:end] in (w, feats.get("plural")), (text, w)
        if start == 0:  # a word at the sentence start must be capitalised the Turkish way (i -> İ)
            assert text[: end] == tr_upper_first(w), text


def test_question_particle_agrees_with_the_word(rendered):
    checked = 0
    for f, k, w, feats, r in rendered:
        if r.text.endswith("?"):
            particle = r.text[:-1].split()[-1]
            assert particle == PARTICLE[harmony_of(w)], r.text
            assert r.text[: r.spans["word"][1]].endswith(w) and r.text[r.spans["word"][1]] == " ", r.text
            checked += 1
    assert checked > 300


def test_plural_templates_only_with_plural_forms(rendered):
    for f, k, w, feats, r in rendered:
        start, end = r.spans["word"]
        if r.text.startswith("Bunlar") or r.text.startswith("Burada") and r.text.endswith(" var.") and "bir" not in r.text:
            assert r.text[start:end] == feats.get("plural"), r.text
        if "plural" not in feats:
            assert not r.text.startswith("Bunlar"), r.text


def test_no_indefinite_bir_with_names_or_abstract_nouns(rendered):
    for f, k, w, feats, r in rendered:
        if feats.get("class") in ("name", "concept", "adjective"):
            assert " bir " not in f" {r.text} ", r.text


@pytest.fixture(scope="module")
def lpbs():
    return language_data.load_set("tr", "lpbs-gender")


def test_lpbs_sentences_are_grammatical_for_every_pair(lpbs):
    sets = lpbs.sets()
    used: dict[str, set[str]] = {k: set() for k in "XYAB"}
    for template in lpbs.templates:
        for tk in "XY":
            for t in sets[tk].words:
                for ak in "AB":
                    for a in sets[ak].words:
                        af = sets[ak].features(a)
                        r = lpbs.render(template, (t, sets[tk].features(t)), (a, af))
                        assert r is not None, (template.text, t, a)
                        used[tk].add(t)
                        used[ak].add(a)
                        assert "{" not in r.text and r.text.endswith((".", "?")), r.text
                        ts, te = r.spans["target"]
                        as_, ae = r.spans["attribute"]
                        assert r.text[as_:ae] == a
                        assert r.text[ts:te] == (tr_upper_first(t) if ts == 0 else t), r.text
                        assert r.text[0].isupper(), r.text
                        if r.text.endswith("?"):
                            assert r.text[:-1].split()[-1] == PARTICLE[harmony_of(a)], r.text
    for k in "XYAB":
        assert used[k] == set(sets[k].words), k


def test_crows_pairs_differ_only_in_one_group_phrase():
    pairs = read_toml(DATA / "crows-sample.toml")["pairs"]
    assert len(pairs) >= 40
    assert len({p["bias_type"] for p in pairs}) >= 5
    for p in pairs:
        a, b = p["more"].split(), p["less"].split()
        ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
        assert len(ops) == 1, (p["more"], p["less"])


# Words that can stand between a bare noun and the next noun without breaking a modifier reading:
# "Kadın bir mühendis" and "Kadın mühendis" both read as "a woman engineer".
MODIFIER_BRIDGE = {"bir"}


def test_lpbs_target_cannot_be_read_as_a_modifier_of_the_occupation(lpbs):
    """A bare Turkish noun right before another noun (optionally with 'bir' between) modifies it:
    'Erkek bir hemşire' is 'a male nurse', not 'The man is a nurse'. Every template must separate the
    target from the occupation by another word, or open with the demonstrative 'Bu' (this man ...)."""
    sets = lpbs.sets()
    t, a = sets["Y"].words[0], sets["B"].words[0]
    for template in lpbs.templates:
        r = lpbs.render(template, (t, sets["Y"].features(t)), (a, sets["B"].features(a)))
        ts, te = r.spans["target"]
        as_, _ = r.spans["attribute"]
        assert te < as_, r.text
        between = [w for w in r.text[te:as_].split() if w not in MODIFIER_BRIDGE]
        opens_with_demonstrative = r.text[:ts].split() == ["Bu"]
        assert between or opens_with_demonstrative, f"the target can be read as a modifier: {r.text}"
