"""Every SEAT and LPBS sentence of every language package is grammatical for every word it is built for.

The checks any package passes come from `bias.testing` and run for every language; each language's
own agreement rules (Dutch de/het, German der/die/das, Norwegian suffixed definites, Icelandic
demonstratives, Turkish vowel harmony, Italian elision) are written below, independently of the data,
and listed per language in RULES, so a wrong feature, a wrong forms table or a template that ignores
them fails a test. No models.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs
import pytest
from fixtures.language_data import language_data

from bias.testing import (
    LanguageData,
    check_every_word_gets_a_sentence,
    check_expected_files,
    check_files_are_nfc_utf8,
    check_lpbs_renders_every_pair,
    check_origin_names_are_typed_and_balanced,
    check_pairs_differ_in_one_phrase,
    check_sentences_are_well_formed,
)

Rule = Callable[[LanguageData], None]


@attrs.frozen
class Rules:
    home: str  # the origin of the package's own names (X of its origin tests)
    rules: tuple[Rule, ...]
    endings: tuple[str, ...] = (".",)
    every_lpbs_template_fits: bool = True
    minimal_pairs: bool = False  # every crows-sample pair differs in one run of words


def package(code: str) -> LanguageData:
    """One LanguageData per language for the whole session: its sentences are rendered once."""
    return language_data(code)


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def words_before(text: str, start: int, pattern: str = r"\w+") -> list[str]:
    return re.findall(pattern, text[:start].lower())


def capitalised(word: str) -> str:
    return word[0].upper() + word[1:]


# --- shared by several languages ------------------------------------------------------------------


def span_holds_the_word_or_its_plural(d: LanguageData) -> None:
    for s in d.seat_sentences:
        if s.plural and s.word.features.get("class") != "group":
            assert s.slot == s.word.features["plural"], (s.word.file, s.word.word, s.text)
        else:
            assert s.slot in (s.word.word, capitalised(s.word.word)), (s.word.file, s.word.word, s.text)


def countable_nouns_take_a_determiner(determiners: set[str], pattern: str = r"\w+") -> Rule:
    def countable_nouns_have_a_determiner_and_others_do_not(d: LanguageData) -> None:
        for s in d.seat_sentences:
            cls = s.word.features.get("class")
            before = words_before(s.text, s.span[0], pattern)
            has_det = bool(before) and before[-1] in determiners
            if cls in ("person", "thing") and not s.plural:
                assert has_det, (s.word.file, s.word.word, s.text)
            if cls in ("name", "concept", "adjective", "group"):
                assert not has_det, (s.word.file, s.word.word, s.text)

    return countable_nouns_have_a_determiner_and_others_do_not


def lpbs_spans_hold_the_exact_words(d: LanguageData) -> None:
    for s in d.lpbs_sentences:
        if s.rendered is not None:
            r = s.rendered
            assert r.text[slice(*r.spans["target"])] == s.target and r.text[slice(*r.spans["attribute"])] == s.attribute, r.text


def lpbs_count(d: LanguageData) -> int:
    return sum(s.rendered is not None for s in d.lpbs_sentences)


# --- Dutch ----------------------------------------------------------------------------------------

NL_ARTICLE = {"de": "de", "het": "het"}  # definite article by grammatical gender
NL_WORD = r"[\w'-]+"


def nl_definite_article_agrees_with_gender(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        before = words_before(s.text, s.span[0], NL_WORD)
        if s.plural or not before or before[-1] not in ("de", "het"):
            continue
        assert s.word.features.get("gender") in NL_ARTICLE, (s.word.file, s.word.word, "a noun after an article needs gender de/het")
        assert before[-1] == NL_ARTICLE[s.word.features["gender"]], (s.word.file, s.word.word, s.text)
        checked += 1
    assert checked > 100  # the de/het templates really ran


def nl_plural_forms_take_the_plural_article_and_verb(d: LanguageData) -> None:
    seen = 0
    for s in d.seat_sentences:
        toks = re.findall(NL_WORD, s.text.lower())
        if s.plural:
            seen += 1
            assert "zijn" in toks and "is" not in toks, (s.word.file, s.word.word, s.text)
            before = words_before(s.text, s.span[0], NL_WORD)
            assert not before or before[-1] not in ("het", "een"), (s.word.file, s.word.word, s.text)
        else:
            assert "zijn" not in toks and ({"is", "gaat"} & set(toks)), (s.word.file, s.word.word, s.text)
    assert seen > 100


def nl_nouns_carry_gender_and_plural(d: LanguageData) -> None:
    for w in d.words:
        f = w.features
        assert f.get("class") in {"name", "person", "thing", "concept", "adjective", "group", "postmodifier", "personal", "impersonal", "any"}, (w.file, w.word)
        if f["class"] in ("person", "thing"):
            assert f.get("gender") in NL_ARTICLE, (w.file, w.word)
            assert f.get("plural") and f["plural"] != w.word, (w.file, w.word)
        if f["class"] == "name":
            assert w.word[0].isupper(), (w.file, w.word)
    for s in d.seat_sentences:  # said of states and events (tijdelijk, rot): never "Iemand is kortstondig."
        if s.word.features.get("class") == "impersonal":
            assert s.text.split()[0] in ("Dit", "Dat", "Het"), (s.word.file, s.word.word, s.text)


def nl_lpbs_articles_agree(d: LanguageData) -> None:
    lpbs_spans_hold_the_exact_words(d)
    for s in d.lpbs_sentences:
        r = s.rendered
        before = words_before(r.text, r.spans["target"][0], NL_WORD)
        assert before[-1] == NL_ARTICLE[s.target_features["gender"]], r.text
        # an occupation predicate is bare or follows "een", never a definite article
        assert words_before(r.text, r.spans["attribute"][0], NL_WORD)[-1] not in ("de", "het"), r.text


def nl_lpbs_article_does_not_reveal_the_target_gender(d: LanguageData) -> None:
    """Both target sets take the same article, so the masked target is not given away by it."""
    lpbs = d.lpbs
    for template in lpbs.templates:
        articles = {}
        for t_key in ("X", "Y"):
            a = lpbs.A.words[0]
            articles[t_key] = {
                words_before(r.text, r.spans["target"][0], NL_WORD)[-1] if r.spans["target"][0] else ""
                for t in lpbs.sets()[t_key].words
                if (r := lpbs.render(template, (t, lpbs.sets()[t_key].features(t)), (a, lpbs.A.features(a))))
            }
        assert articles["X"] == articles["Y"], template.text


def nl_no_ambiguous_pronoun_in_gender_lists(d: LanguageData) -> None:
    data = d.record("debias-gender")
    words = {w for pair in data["definitional"] + data["equalize"] + [data["direction"]] for w in pair}
    assert not words & {"zij", "ze", "haar", "zijn"}
    lp = d.record("lpbs-gender")
    assert not {w for k in ("X", "Y") for w in lp["sets"][k]["words"]} & {"zij", "ze", "haar"}


# --- German ---------------------------------------------------------------------------------------

DE_DEFINITE = {"m": "der", "f": "die", "n": "das"}  # nominative singular
DE_INDEFINITE = {"m": "ein", "f": "eine", "n": "ein"}
DE_DATIVE_IN = {"m": ["im"], "f": ["in", "der"], "n": ["im"]}
DE_DETERMINERS = {"der", "die", "das", "ein", "eine"}
DE_NOUN_CLASSES = {"name", "person", "thing", "concept", "group", "season"}
DE_ADJECTIVE_CLASSES = {"adjective", "personal"}  # personal: said only of people (schwul, nichtbinär)


def de_nouns_are_capitalised_and_adjectives_are_not(d: LanguageData) -> None:
    for w in d.words:
        f = w.features
        assert f.get("class") in DE_NOUN_CLASSES | DE_ADJECTIVE_CLASSES | {"postmodifier"}, (w.file, w.word)
        if f["class"] == "postmodifier":  # a phrase after "jemand": lower-case preposition, capitalised noun
            assert w.word.split()[0].islower() and w.word.split()[-1][0].isupper(), (w.file, w.word)
        elif f["class"] in DE_NOUN_CLASSES:
            assert w.word[0].isupper(), (w.file, w.word, "German nouns are capitalised")
            assert not f.get("plural") or f["plural"][0].isupper(), (w.file, w.word)
        else:
            assert w.word.islower(), (w.file, w.word, "adjectives are lower-case")
        if f["class"] in ("person", "thing"):
            assert f.get("gender") in DE_DEFINITE, (w.file, w.word, "nouns need gender m/f/n")


def de_articles_agree_with_gender(d: LanguageData) -> None:
    definite = indefinite = 0
    for s in d.seat_sentences:
        before = words_before(s.text, s.span[0])
        if s.plural or not before or before[-1] not in DE_DETERMINERS:
            continue
        gender = s.word.features.get("gender")
        if before[-1] in ("ein", "eine"):
            assert before[-1] == DE_INDEFINITE[gender], (s.word.file, s.word.word, s.text)
            indefinite += 1
        else:
            assert before[-1] == DE_DEFINITE[gender], (s.word.file, s.word.word, s.text)
            definite += 1
    assert definite > 100 and indefinite > 100  # the agreement templates really ran


def de_neuter_persons_follow_grammatical_gender(d: LanguageData) -> None:
    sentences = {r.text for r in d.seat.render("Mädchen", {"class": "person", "gender": "n", "plural": "Mädchen"})}
    assert "Das Mädchen ist hier." in sentences and "Das ist ein Mädchen." in sentences
    assert not any(t.startswith("Die Mädchen ist") for t in sentences)


def de_plural_and_singular_verbs(d: LanguageData) -> None:
    plurals = 0
    for s in d.seat_sentences:
        toks = tokens(s.text)
        if s.plural:
            plurals += 1
            assert "sind" in toks and "ist" not in toks, (s.word.file, s.word.word, s.text)
            before = words_before(s.text, s.span[0])
            assert not before or before[-1] not in ("der", "das", "ein", "eine"), (s.word.file, s.word.word, s.text)
        else:
            assert "sind" not in toks, (s.word.file, s.word.word, s.text)
    assert plurals > 100


def de_lpbs_plural_targets_and_dative_contraction(d: LanguageData) -> None:
    lpbs_spans_hold_the_exact_words(d)
    for s in d.lpbs_sentences:
        r = s.rendered
        # plural targets: the only article before them is the plural "die", the verb is plural
        before_t = words_before(r.text, r.spans["target"][0])
        assert not before_t or before_t[-1] in ("die", "viele"), r.text
        assert {"arbeiten", "machen"} & set(tokens(r.text)), r.text
        # the preposition "in" contracts with the dative article of the field's gender
        want = DE_DATIVE_IN[s.attribute_features["gender"]]
        assert words_before(r.text, r.spans["attribute"][0])[-len(want):] == want, r.text


def de_no_ambiguous_pronoun_or_article_in_gender_lists(d: LanguageData) -> None:
    data = d.record("debias-gender")
    words = {w for pair in data["definitional"] + data["equalize"] + [data["direction"]] for w in pair}
    assert not words & {"sie", "ihr", "ihre", "der", "die", "das"}
    lp = d.record("lpbs-gender")
    assert not {w.lower() for k in ("X", "Y") for w in lp["sets"][k]["words"]} & {"sie", "schwestern"}


# --- Norwegian Bokmål -----------------------------------------------------------------------------

NO_INDEFINITE = {"m": "en", "f": "en", "n": "et"}  # the two-gender Bokmål of this package
NO_ARTICLES = {"en", "ei", "et", "den", "det", "de"}


def no_nouns_and_adjectives_carry_their_forms(d: LanguageData) -> None:
    for w in d.words:
        f = w.features
        assert f.get("class") in {"name", "person", "thing", "concept", "group", "adjective"}, (w.file, w.word)
        if f["class"] in ("person", "thing"):
            assert f.get("gender") in NO_INDEFINITE, (w.file, w.word)
            # the suffixed definite: -en for common gender, -et for neuter (after the stem)
            ending = "et" if f["gender"] == "n" else "en"
            assert f.get("definite", "").endswith(ending), (w.file, w.word, f.get("definite"))
        if f["class"] == "adjective":
            neuter = f.get("neuter", "")
            assert neuter == w.word or neuter.endswith("t"), (w.file, w.word, neuter)
        if f["class"] == "name":
            assert w.word[0].isupper(), (w.file, w.word)


def no_indefinite_article_agrees_with_gender(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        if "{word.indefinite}" in s.template:
            assert words_before(s.text, s.span[0])[-1] == NO_INDEFINITE[s.word.features["gender"]], (s.word.word, s.text)
            checked += 1
    assert checked > 200


def no_definite_sentences_use_the_suffixed_form_without_an_article(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        f, word = s.word.features, s.word.word
        if ":definite}" in s.template:
            assert s.slot.lower() == f["definite"].lower() and s.slot != word, (word, s.text)
            assert s.span[0] == 0, s.text  # nothing before it: no separate article
            checked += 1
        elif ":plural}" in s.template:
            assert s.slot == f["plural"], (word, s.text)
        elif ":neuter}" in s.template:
            assert s.slot == f["neuter"], (word, s.text)
        else:
            assert s.slot in (word, capitalised(word)), (word, s.text)
    assert checked > 200


def no_predicative_adjectives_agree_with_the_subject(d: LanguageData) -> None:
    """Neuter after det/dette, the base form after a common-gender person noun; adjectives that describe
    only people (predicate_of = person: orientation, gender identity, disability, moods) never follow
    det/dette, where "Det er så homo." would be an insult idiom and "Det er nedstemt." means nothing;
    adjectives said only of states and events (predicate_of = thing: kronisk, midlertidig) never follow
    a person, where "Personen er kronisk." means nothing and "Personen er kort." is a short person."""
    neuter = common = person = thing = 0
    for s in d.seat_sentences:
        if s.word.features.get("class") != "adjective":
            continue
        subject = tokens(s.text)[0]
        if s.word.features.get("predicate_of") == "person":
            assert subject in ("personen", "naboen", "kollegaen") and s.slot == s.word.word, (s.word.word, s.text)
            person += 1
        elif s.word.features.get("predicate_of") == "thing":
            assert subject in ("det", "dette") and s.slot == s.word.features["neuter"], (s.word.word, s.text)
            thing += 1
        elif subject in ("det", "dette"):
            assert s.slot == s.word.features["neuter"], (s.word.word, s.text)
            neuter += 1
        else:
            assert subject == "personen" and s.slot == s.word.word, (s.word.word, s.text)
            common += 1
    assert neuter and common and person and thing
    assert neuter == 2 * common  # both neuter templates and the common-gender one fit every other adjective


def no_bare_nouns_and_determiners(d: LanguageData) -> None:
    for s in d.seat_sentences:
        before = words_before(s.text, s.span[0])
        has_article = bool(before) and before[-1] in NO_ARTICLES and "{word.indefinite}" not in s.template
        if s.word.features.get("class") in ("name", "concept", "group", "adjective") or ":plural}" in s.template:
            assert not has_article, (s.word.word, s.text)


def no_lpbs_definite_targets_and_predicates(d: LanguageData) -> None:
    for s in d.lpbs_sentences:
        r, t, a = s.rendered, s.target, s.attribute
        assert r.text[slice(*r.spans["target"])].lower() == t
        assert r.spans["target"] == (0, len(t))  # sentence-initial definite noun, no article
        assert r.text[slice(*r.spans["attribute"])] == a
        before = words_before(r.text, r.spans["attribute"][0])
        if "indefinite" in s.template:
            assert before[-2:] == [NO_INDEFINITE[s.attribute_features["gender"]], "erfaren"], r.text
        else:
            assert before[-1] in ("er", "som", "bli"), r.text  # bare predicate noun


def no_lpbs_targets_are_definite_forms(d: LanguageData) -> None:
    lp = d.record("lpbs-gender")
    for key in ("X", "Y"):
        for w in lp["sets"][key]["words"]:
            assert w.endswith("en"), (key, w, "targets use the common-gender suffixed definite")


def no_gender_direction_uses_unambiguous_pronouns(d: LanguageData) -> None:
    data = d.record("debias-gender")
    assert data["direction"] == ["han", "hun"]
    words = {w for pair in data["definitional"] + data["equalize"] for w in pair}
    assert not words & {"hans", "hen", "en", "ei", "et"}


# Plurals of common-gender nouns by the Bokmål rules. A noun that only looks like an -er noun
# (sprettert: -ert) still takes -er: spretterter, not "sprettere".
NO_IRREGULAR_PLURALS = {"far": "fedre", "mor": "mødre", "bror": "brødre", "datter": "døtre", "mann": "menn"}


def bokmaal_plurals(singular: str) -> set[str]:
    for base, plural in NO_IRREGULAR_PLURALS.items():
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


def no_common_gender_plurals_follow_the_bokmaal_rules(d: LanguageData) -> None:
    assert "spretterter" in bokmaal_plurals("sprettert") and "sprettere" not in bokmaal_plurals("sprettert")
    checked, wrong = 0, []
    for w in d.words:
        f = w.features
        if f.get("gender") not in ("m", "f") or "plural" not in f or " " in w.word:
            continue
        checked += 1
        if f["plural"] not in bokmaal_plurals(w.word):
            wrong.append((w.file, w.word, f["plural"], sorted(bokmaal_plurals(w.word))))
    assert not wrong
    assert checked > 100


# --- Icelandic ------------------------------------------------------------------------------------

IS_THIS = {"m": "þessi", "f": "þessi", "n": "þetta"}
IS_THESE = {"m": "þessir", "f": "þessar", "n": "þessi"}
IS_PRONOUN = {"m": "hann", "f": "hún"}
# Nouns whose plural has another gender than the singular: foreldri "parent" is neuter, its plural
# foreldrar masculine, so "these parents" is "þessir foreldrar".
IS_PLURAL_GENDER = {"foreldri": "m"}


def definite_agrees(definite: str, gender: str) -> bool:
    """Nominative singular suffixed article: masculine -(i)nn, feminine -(i)n, neuter -(i)ð."""
    if gender == "m":
        return definite.endswith("nn")
    if gender == "f":
        return definite.endswith("n") and not definite.endswith("nn")
    return definite.endswith("ð")


def is_nouns_have_gender_and_a_definite_form_that_agrees(d: LanguageData) -> None:
    for w in d.words:
        if w.features.get("class") in ("thing", "person", "concept"):
            assert w.features.get("gender") in ("m", "f", "n"), (w.file, w.key, w.word)
            definite = w.features.get("definite", "")
            assert definite_agrees(definite, w.features["gender"]), (w.file, w.word, definite)
            assert definite[:2] == w.word[:2] and len(definite) > len(w.word) - 2, (w.word, definite)


def is_plural_demonstrative_agrees_with_the_gender_of_the_plural(d: LanguageData) -> None:
    """A plural demonstrative agrees with the plural form, not with the singular's gender."""
    feats = {"gender": "n", "definite": "foreldrið", "plural": "foreldrar", "these": "þessir", "class": "person"}
    rendered = [r.text for r in d.seat.render("foreldri", feats)]
    assert "Þessir foreldrar eru hér." in rendered
    assert not any(t.startswith("Þessi foreldrar") for t in rendered)
    assert d.load("weat6").B.features("foreldri").get("these") == "þessir"


def is_demonstratives_and_pronouns_agree_with_gender(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        f = s.word.features
        first, second = (s.text.split() + [""])[:2]
        if first.lower() in ("þessi", "þetta") and s.span[0] == len(first) + 1 and " eru " not in s.text:
            assert first.lower() == IS_THIS[f["gender"]], s.text
            checked += 1
        if first.lower() in ("þessir", "þessar", "þessi") and " eru " in s.text:
            assert first.lower() == IS_THESE[IS_PLURAL_GENDER.get(s.word.word, f["gender"])] and s.slot == f["plural"], s.text
            checked += 1
        if second == "heitir":
            assert first.lower() == IS_PRONOUN[f["gender"]], s.text
            checked += 1
    assert checked > 300


IS_ADJECTIVE_SUBJECTS = {  # predicate_of -> the subjects its adjectives may follow
    "person": ("Hann er ", "Hann virðist "),
    "anyone": ("Manneskjan er ", "Manneskjan virðist "),  # gender identity: 'Hann er kynsegin' misgenders
    "relationship": ("Sambandið er ", "Parið er "),  # samkynja describes a couple, not a person
    "state": ("Það er ", "Það virðist "),  # 'Hann er stuttur' says that a man is short
}


def is_plural_and_adjective_templates_fit_their_words(d: LanguageData) -> None:
    subjects = tuple(s for group in IS_ADJECTIVE_SUBJECTS.values() for s in group)
    kinds = set()
    for s in d.seat_sentences:
        if " eru" in s.text:
            assert s.slot == s.word.features.get("plural"), s.text
        if s.text.startswith(subjects):
            assert s.word.features.get("class") == "adjective", s.text
        if s.word.features.get("class") == "adjective":
            kind = s.word.features.get("predicate_of", "person")
            assert s.text.startswith(IS_ADJECTIVE_SUBJECTS[kind]), s.text
            kinds.add(kind)
    assert kinds == set(IS_ADJECTIVE_SUBJECTS)


def is_state_adjectives_take_their_neuter_form(d: LanguageData) -> None:
    """After the impersonal 'Það er' an adjective is neuter: -t (stutt, langvinnt), -ð (tímabundið) or
    an indeclinable participle in -andi (viðvarandi); never the masculine citation form."""
    states = [w for w in d.words if w.features.get("predicate_of") == "state"]
    for w in states:
        neuter = w.features.get("neuter", "")
        if w.word.endswith("andi"):  # indeclinable participle
            assert neuter == w.word, w.word
        else:
            assert neuter.endswith(("t", "ð")) and neuter[:3] == w.word[:3], (w.word, neuter)
    assert len(states) >= 16


def is_lpbs_targets_and_adjectives_agree(d: LanguageData) -> None:
    good = {"m": "góður", "f": "góð", "n": "gott"}
    for s in d.lpbs_sentences:
        r, tf = s.rendered, s.target_features
        ts, te = r.spans["target"]
        as_, ae = r.spans["attribute"]
        assert r.text[as_:ae] == s.attribute
        target = r.text[ts:te]
        assert target.lower() in (s.target, tf["definite"]), r.text
        if target.lower() == s.target:  # bare noun only after the agreeing demonstrative
            assert r.text.split()[0].lower() == IS_THIS[tf["gender"]], r.text
        words = r.text[:as_].split()
        if words[-1] in good.values():
            assert words[-1] == good[s.attribute_features["gender"]], r.text
    sets = d.lpbs.sets()
    assert {sets["X"].features(w)["gender"] for w in sets["X"].words} == {"m"}
    assert {sets["Y"].features(w)["gender"] for w in sets["Y"].words} == {"f"}


# --- Turkish --------------------------------------------------------------------------------------

TR_FOUR_WAY = {"a": "ı", "ı": "ı", "o": "u", "u": "u", "e": "i", "i": "i", "ö": "ü", "ü": "ü"}
TR_PARTICLE = {"ı": "mı", "i": "mi", "u": "mu", "ü": "mü"}
# Words whose suffixes follow pronunciation rather than spelling (documented in the data files' notes).
TR_HARMONY_EXCEPTIONS = {"normal": "i", "Einstein": "ı", "non-binary": "i", "hilal": "i"}
# Words that can stand between a bare noun and the next noun without breaking a modifier reading:
# "Kadın bir mühendis" and "Kadın mühendis" both read as "a woman engineer".
TR_MODIFIER_BRIDGE = {"bir"}


def tr_lower(text: str) -> str:
    return text.replace("I", "ı").replace("İ", "i").lower()


def tr_upper_first(text: str) -> str:
    return {"i": "İ", "ı": "I"}.get(text[0], text[0].upper()) + text[1:]


def harmony_of(word: str) -> str:
    if word in TR_HARMONY_EXCEPTIONS:
        return TR_HARMONY_EXCEPTIONS[word]
    return [TR_FOUR_WAY[c] for c in tr_lower(word) if c in TR_FOUR_WAY][-1]


def tr_harmony_feature_follows_the_last_vowel(d: LanguageData) -> None:
    for w in d.words:
        assert w.features.get("harmony") == harmony_of(w.word), (w.file, w.key, w.word, w.features)


def tr_plural_suffix_follows_vowel_harmony(d: LanguageData) -> None:
    for w in d.words:
        if "plural" not in w.features:
            continue
        plural = w.features["plural"]
        back = w.features["harmony"] in ("ı", "u")
        suffixes = ("lar", "ları") if back else ("ler", "leri")  # -ları/-leri: compounds such as hamamböcekleri
        assert plural.endswith(suffixes), (w.word, plural)
        assert plural.startswith(w.word) or plural.endswith(("ları", "leri")), (w.word, plural)


def tr_sentences_are_capitalised_the_turkish_way(d: LanguageData) -> None:
    for s in d.seat_sentences:
        assert s.text[0] == tr_upper_first(s.text[0]), s.text
        assert s.slot in (s.word.word, s.word.features.get("plural")), (s.text, s.word.word)
        if s.span[0] == 0:  # a word at the sentence start is capitalised the Turkish way (i -> İ)
            assert s.text[: s.span[1]] == tr_upper_first(s.word.word), s.text


def tr_question_particle_agrees_with_the_word(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        if s.text.endswith("?"):
            assert s.text[:-1].split()[-1] == TR_PARTICLE[harmony_of(s.word.word)], s.text
            assert s.text[: s.span[1]].endswith(s.word.word) and s.text[s.span[1]] == " ", s.text
            checked += 1
    assert checked > 300


def tr_plural_templates_only_with_plural_forms(d: LanguageData) -> None:
    for s in d.seat_sentences:
        text, f = s.text, s.word.features
        if text.startswith("Bunlar") or text.startswith("Burada") and text.endswith(" var.") and "bir" not in text:
            assert s.slot == f.get("plural"), text
        if "plural" not in f:
            assert not text.startswith("Bunlar"), text


def tr_no_indefinite_bir_with_names_or_abstract_nouns(d: LanguageData) -> None:
    for s in d.seat_sentences:
        if s.word.features.get("class") in ("name", "concept", "adjective"):
            assert " bir " not in f" {s.text} ", s.text


def tr_lpbs_spans_and_particles(d: LanguageData) -> None:
    for s in d.lpbs_sentences:
        r = s.rendered
        ts, te = r.spans["target"]
        as_, ae = r.spans["attribute"]
        assert r.text[as_:ae] == s.attribute
        assert r.text[ts:te] == (tr_upper_first(s.target) if ts == 0 else s.target), r.text
        if r.text.endswith("?"):
            assert r.text[:-1].split()[-1] == TR_PARTICLE[harmony_of(s.attribute)], r.text


def tr_lpbs_target_cannot_be_read_as_a_modifier_of_the_occupation(d: LanguageData) -> None:
    """A bare Turkish noun right before another noun (optionally with 'bir' between) modifies it:
    'Erkek bir hemşire' is 'a male nurse', not 'The man is a nurse'. Every template must separate the
    target from the occupation by another word, or open with the demonstrative 'Bu' (this man ...)."""
    lpbs = d.lpbs
    sets = lpbs.sets()
    t, a = sets["Y"].words[0], sets["B"].words[0]
    for template in lpbs.templates:
        r = lpbs.render(template, (t, sets["Y"].features(t)), (a, sets["B"].features(a)))
        ts, te = r.spans["target"]
        as_, _ = r.spans["attribute"]
        assert te < as_, r.text
        between = [w for w in r.text[te:as_].split() if w not in TR_MODIFIER_BRIDGE]
        assert between or r.text[:ts].split() == ["Bu"], f"the target can be read as a modifier: {r.text}"


# --- Italian --------------------------------------------------------------------------------------

IT_VOWELS = "aeiouàèéìòù"
IT_SINGULAR_ARTICLES = {"il", "lo", "la", "l'", "un", "uno", "una", "un'", "del", "dello", "della", "dell'"}
IT_PLURAL_ARTICLES = {"i", "gli", "le"}


def lo_onset(word: str) -> bool:
    """Masculine nouns that take lo/uno/gli: s + consonant, z, gn, ps, pn, x, y."""
    w = word.lower()
    return (w[0] == "s" and len(w) > 1 and w[1] not in IT_VOWELS) or w[0] in "zxy" or w[:2] in ("gn", "ps", "pn")


def allowed_singular(word: str, gender: str) -> set[str]:
    """Articles (and di + article) that may stand right before a singular noun, by the grammar rule."""
    if word[0].lower() in IT_VOWELS:
        return {"l'", "dell'", "un'"} if gender == "f" else {"l'", "dell'", "un"}
    if gender == "f":
        return {"la", "della", "una"}
    return {"lo", "dello", "uno"} if lo_onset(word) else {"il", "del", "un"}


def allowed_plural(plural: str, gender: str) -> set[str]:
    if gender == "f":
        return {"le"}
    return {"gli"} if plural[0].lower() in IT_VOWELS or lo_onset(plural) else {"i"}


def determiner_before(text: str, start: int) -> str:
    """The article or demonstrative written right before the slot: "l'" (no space) or the previous word."""
    before = text[:start]
    if before.endswith("'"):
        return re.findall(r"(\w+')$", before)[0].lower()
    found = re.findall(r"(\w+) $", before)
    return found[0].lower() if found else ""


def it_det_feature_follows_gender_and_onset(d: LanguageData) -> None:
    """The data's article class agrees with the rule, so the forms tables get the right key."""
    for w in d.words:
        f = w.features
        if "det" not in f:
            continue
        expected = ("lm" if f["gender"] == "m" else "lf") if w.word[0].lower() in IT_VOWELS else (
            "la" if f["gender"] == "f" else ("lo" if lo_onset(w.word) else "il"))
        assert f["det"] == expected, (w.file, w.key, w.word, f)


def it_elided_articles_join_the_word(d: LanguageData) -> None:
    for s in d.seat_sentences:
        assert "' " not in s.text, s.text
        assert s.slot in (s.word.word, s.word.features.get("plural"), capitalised(s.word.word)), (s.text, s.word.word)


def it_articles_agree_with_the_noun(d: LanguageData) -> None:
    checked = 0
    for s in d.seat_sentences:
        f = s.word.features
        if "det" not in f:
            continue
        det = determiner_before(s.text, s.span[0])
        plural = s.slot == f.get("plural") and " sono" in s.text
        if det in ("questo", "questa"):
            assert det == ("questo" if f["gender"] == "m" else "questa"), s.text
            assert s.slot[0].lower() not in IT_VOWELS, s.text  # quest'uomo, quest'ape: elided before a vowel
        elif det == "quest'":
            assert s.slot[0].lower() in IT_VOWELS, s.text
        elif plural and det in IT_PLURAL_ARTICLES:
            assert det in allowed_plural(s.slot, f["gender"]), s.text
        elif det in IT_SINGULAR_ARTICLES:
            assert det in allowed_singular(s.word.word, f["gender"]), s.text
        else:
            assert det in ("è", "sono", "ecco", ""), s.text  # no other word may stand before a noun
        # the demonstrative at the start agrees too: "Questa è un'ape."
        first = s.text.split()[0].lower()
        if first in ("questo", "questa"):
            assert first == ("questo" if f["gender"] == "m" else "questa"), s.text
        if first in ("questi", "queste"):
            assert first == ("questi" if f["gender"] == "m" else "queste"), s.text
        checked += 1
    assert checked > 500


def it_plural_sentences_use_plural_forms_only(d: LanguageData) -> None:
    for s in d.seat_sentences:
        text, f = s.text, s.word.features
        if " sono " in text or text.endswith(f" {s.slot}.") and text.split()[1] == "sono":
            assert "plural" in f and s.slot.lower() == f["plural"].lower(), text
        if "plural" not in f:
            assert " sono " not in text, text


def it_names_and_adjectives_take_no_article(d: LanguageData) -> None:
    for s in d.seat_sentences:
        f = s.word.features
        if f.get("class") in ("name", "adjective") or f.get("gender") == "epicene":
            assert determiner_before(s.text, s.span[0]) not in {"il", "lo", "la", "l'", "un", "uno", "una", "un'", "i", "gli", "le"}, s.text
        if f.get("class") == "name" and s.text.split()[0] in ("Questo", "Questa"):
            assert s.text.split()[0] == ("Questo" if f["gender"] == "m" else "Questa"), s.text


def it_lpbs_targets_open_the_sentence_and_occupations_are_bare(d: LanguageData) -> None:
    lpbs_spans_hold_the_exact_words(d)
    for s in d.lpbs_sentences:
        if s.rendered is None:
            continue
        r = s.rendered
        # nothing before the masked target: no article can reveal its gender
        assert r.spans["target"][0] == 0 and s.target_features.get("class") == "name", r.text
        # occupations are bare (no article), so they imply no gender
        assert determiner_before(r.text, r.spans["attribute"][0]) in ("come", "è", "diventare"), r.text


def it_lpbs_targets_are_single_gendered_nouns(d: LanguageData) -> None:
    lpbs = d.lpbs
    assert {lpbs.X.features(w)["gender"] for w in lpbs.X.words} == {"m"}
    assert {lpbs.Y.features(w)["gender"] for w in lpbs.Y.words} == {"f"}
    for w in lpbs.A.words + lpbs.B.words:
        assert lpbs.A.features(w).get("gender", lpbs.B.features(w).get("gender")) == "epicene"


def it_pair_sentences_are_capitalised(d: LanguageData) -> None:
    for p in d.record("crows-sample")["pairs"]:
        assert p["more"][0].isupper() and p["less"][0].isupper(), p


def it_demonstrative_elides_before_a_vowel(d: LanguageData) -> None:
    """Italian elides questo/questa before a vowel as it does the article: quest'uomo, quest'ape."""
    for word, feats in (("uomo", {"class": "person", "gender": "m", "det": "lm", "plural": "uomini"}),
                        ("ape", {"class": "thing", "gender": "f", "det": "lf", "plural": "api"})):
        texts = [r.text for r in d.seat.render(word, feats)]
        assert f"Quest'{word} è qui." in texts, texts
        assert not any(t.startswith(("Questo " + word, "Questa " + word)) for t in texts), texts
    texts = [r.text for r in d.seat.render("sedia", {"class": "thing", "gender": "f", "det": "la", "plural": "sedie"})]
    assert "Questa sedia è qui." in texts


def it_lpbs_sentences_do_not_reveal_the_masked_words_gender(d: LanguageData) -> None:
    """Kurita et al.'s score compares P(target | sentence) for male and female targets; a gendered
    article or adjective anywhere else in the sentence would give the answer away. Every word of every
    rendered sentence other than the two slots is the same for a male and a female target."""
    lpbs = d.lpbs
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


# --- the table ------------------------------------------------------------------------------------

RULES: dict[str, Rules] = {
    "nl": Rules("dutch", (
        span_holds_the_word_or_its_plural, nl_definite_article_agrees_with_gender, nl_plural_forms_take_the_plural_article_and_verb,
        countable_nouns_take_a_determiner({"de", "het", "een"}, NL_WORD), nl_nouns_carry_gender_and_plural, nl_lpbs_articles_agree,
        nl_lpbs_article_does_not_reveal_the_target_gender, nl_no_ambiguous_pronoun_in_gender_lists,
    )),
    "de": Rules("german", (
        span_holds_the_word_or_its_plural, de_nouns_are_capitalised_and_adjectives_are_not, de_articles_agree_with_gender,
        de_neuter_persons_follow_grammatical_gender, de_plural_and_singular_verbs, countable_nouns_take_a_determiner(DE_DETERMINERS),
        de_lpbs_plural_targets_and_dative_contraction, de_no_ambiguous_pronoun_or_article_in_gender_lists,
    )),
    "no": Rules("norwegian", (
        no_nouns_and_adjectives_carry_their_forms, no_indefinite_article_agrees_with_gender,
        no_definite_sentences_use_the_suffixed_form_without_an_article, no_predicative_adjectives_agree_with_the_subject,
        no_bare_nouns_and_determiners, no_lpbs_definite_targets_and_predicates, no_lpbs_targets_are_definite_forms,
        no_gender_direction_uses_unambiguous_pronouns, no_common_gender_plurals_follow_the_bokmaal_rules,
    )),
    "is": Rules("icelandic", (
        is_nouns_have_gender_and_a_definite_form_that_agrees, is_plural_demonstrative_agrees_with_the_gender_of_the_plural,
        is_demonstratives_and_pronouns_agree_with_gender, is_plural_and_adjective_templates_fit_their_words,
        is_state_adjectives_take_their_neuter_form, is_lpbs_targets_and_adjectives_agree,
    ), minimal_pairs=True),
    "tr": Rules("turkish", (
        tr_harmony_feature_follows_the_last_vowel, tr_plural_suffix_follows_vowel_harmony, tr_sentences_are_capitalised_the_turkish_way,
        tr_question_particle_agrees_with_the_word, tr_plural_templates_only_with_plural_forms,
        tr_no_indefinite_bir_with_names_or_abstract_nouns, tr_lpbs_spans_and_particles,
        tr_lpbs_target_cannot_be_read_as_a_modifier_of_the_occupation,
    ), endings=(".", "?"), minimal_pairs=True),
    "it": Rules("italian", (
        it_det_feature_follows_gender_and_onset, it_elided_articles_join_the_word, it_articles_agree_with_the_noun,
        it_plural_sentences_use_plural_forms_only, it_names_and_adjectives_take_no_article,
        it_lpbs_targets_open_the_sentence_and_occupations_are_bare, it_lpbs_targets_are_single_gendered_nouns,
        it_pair_sentences_are_capitalised, it_demonstrative_elides_before_a_vowel, it_lpbs_sentences_do_not_reveal_the_masked_words_gender,
    ), every_lpbs_template_fits=False, minimal_pairs=True),
}
LANGUAGES = list(RULES)


@pytest.mark.parametrize("code", LANGUAGES)
def test_package_has_the_expected_files(code):
    check_expected_files(package(code), prefixes={"labour-": 4})


@pytest.mark.parametrize("code", LANGUAGES)
def test_files_are_nfc_utf8(code):
    check_files_are_nfc_utf8(package(code))


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_word_gets_a_sentence(code):
    assert check_every_word_gets_a_sentence(package(code)) > 500


@pytest.mark.parametrize("code", LANGUAGES)
def test_sentences_are_well_formed(code):
    check_sentences_are_well_formed(package(code), RULES[code].endings)


@pytest.mark.parametrize("code", LANGUAGES)
def test_lpbs_renders_every_pair(code):
    d = package(code)
    count = check_lpbs_renders_every_pair(d, RULES[code].every_lpbs_template_fits, RULES[code].endings)
    if RULES[code].every_lpbs_template_fits:
        lpbs = d.lpbs
        n_targets = len(lpbs.X.words) + len(lpbs.Y.words)
        n_attributes = len(lpbs.A.words) + len(lpbs.B.words)
        assert count == len(lpbs.templates) * n_targets * n_attributes == lpbs_count(d)


@pytest.mark.parametrize("code", LANGUAGES)
def test_origin_name_lists_are_typed_and_balanced(code):
    assert check_origin_names_are_typed_and_balanced(package(code), RULES[code].home) >= 1


@pytest.mark.parametrize("code", [c for c in LANGUAGES if RULES[c].minimal_pairs])
def test_crows_pairs_differ_only_in_one_group_phrase(code):
    check_pairs_differ_in_one_phrase(package(code))


@pytest.mark.parametrize(
    ("code", "rule"),
    [pytest.param(code, rule, id=f"{code}-{rule.__name__.removeprefix(code + '_')}") for code in LANGUAGES for rule in RULES[code].rules],
)
def test_language_rule(code, rule):
    rule(package(code))
