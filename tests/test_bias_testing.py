"""bias.testing passes a good package and fails, naming what is wrong, on a copy with one mistake."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import pytest
from fixtures.language_data import data_dir

from bias import testing as bt

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "thirdparty" / "bias-example-eo"


@pytest.fixture
def eo(tmp_path) -> bt.LanguageData:
    """A copy of the example's Esperanto data, to break."""
    root = tmp_path / "data"
    shutil.copytree(EXAMPLE / "bias_example_eo" / "data", root)
    return bt.LanguageData("eo", root)


def edit(data: bt.LanguageData, stem: str, old: str, new: str) -> None:
    path = data.path(stem)
    text = path.read_text(encoding="utf-8")
    assert old in text, (stem, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_good_package_passes_and_every_check_counts_what_it_saw(eo):
    bt.check_package(eo, required=("weat1", "seat-templates"))
    assert len(eo.words) == 32 and bt.check_every_word_gets_a_sentence(eo) == 32
    assert bt.check_sentences_are_well_formed(eo) == 96  # three templates for each of the 32 nouns
    sentence = next(s for s in eo.seat_sentences if s.template == "La {word} estas ĉi tie.")
    assert sentence.text == "La rozo estas ĉi tie." and sentence.slot == "rozo" and sentence.span == (3, 7)


def test_a_missing_file_is_named(eo):
    with pytest.raises(AssertionError, match=r"missing data files:\n  lpbs-gender"):
        bt.check_expected_files(eo, ("weat1", "lpbs-gender"))
    with pytest.raises(AssertionError, match="0 files named labour-"):
        bt.check_expected_files(eo, (), {"labour-": 1})


def test_text_not_in_nfc_is_found(eo):
    edit(eo, "weat1", '"rozo"', '"' + unicodedata.normalize("NFD", "rozoĉ") + '"')
    with pytest.raises(AssertionError, match="files not in NFC:\n  weat1.toml"):
        bt.check_files_are_nfc_utf8(eo)


def test_a_word_no_template_takes_is_named(eo):
    edit(eo, "seat-templates", 'text = "Jen {word}."', 'text = "Jen {word}."\nwhen = { "word.class" = "name" }')
    edit(eo, "seat-templates", 'text = "Tio estas {word}."', 'text = "Tio estas {word}."\nwhen = { "word.class" = "name" }')
    edit(eo, "seat-templates", 'text = "La {word} estas ĉi tie."', 'text = "La {word} estas ĉi tie."\nwhen = { "word.class" = "name" }')
    with pytest.raises(AssertionError, match=r"words that get no SEAT sentence:\n  weat1.toml X rozo"):
        bt.check_every_word_gets_a_sentence(eo)


def test_an_unfinished_sentence_is_named(eo):
    edit(eo, "seat-templates", 'text = "Jen {word}."', 'text = "jen {word}"')
    with pytest.raises(AssertionError, match=r"malformed SEAT sentences:\n  \('weat1.toml', 'rozo', 'jen rozo'\)"):
        bt.check_sentences_are_well_formed(eo)


def test_lpbs_sentences_are_checked(tmp_path):
    root = tmp_path / "nl"
    shutil.copytree(data_dir("nl"), root)
    nl = bt.LanguageData("nl", root)
    assert bt.check_lpbs_renders_every_pair(nl) == len(nl.lpbs_sentences) > 100
    edit(nl, "lpbs-gender", 'text = "{Target.article} {target} is {attribute}."', 'text = "{Target.article} {target} is {attribute}"')
    broken = bt.LanguageData("nl", root)
    with pytest.raises(AssertionError, match=r"(?s)LPBS sentences:\n  De man is \w+\n.*\(and 283 more\)"):
        bt.check_lpbs_renders_every_pair(broken)


def test_a_pair_that_differs_twice_is_named(tmp_path):
    root = tmp_path / "it"
    shutil.copytree(data_dir("it"), root)
    it = bt.LanguageData("it", root)
    assert bt.check_pairs_differ_in_one_phrase(it) >= 40
    edit(it, "crows-sample", 'less = "Marco non sa parcheggiare la macchina."', 'less = "Marco non sa guidare la bici."')
    with pytest.raises(AssertionError, match="differ in more than one place"):
        bt.check_pairs_differ_in_one_phrase(it)
    with pytest.raises(AssertionError, match="at least 400 expected"):
        bt.check_pairs_differ_in_one_phrase(it, minimum=400)


def test_origin_lists_must_be_balanced(tmp_path):
    root = tmp_path / "de"
    shutil.copytree(data_dir("de"), root)
    de = bt.LanguageData("de", root)
    assert bt.check_origin_names_are_typed_and_balanced(de, "german") == 3
    with pytest.raises(AssertionError):
        bt.check_origin_names_are_typed_and_balanced(de, "turkish")
    text = de.path("weat3").read_text(encoding="utf-8")
    first_f = text.index('gender = "f"')
    de.path("weat3").write_text(text[:first_f] + 'gender = "m"' + text[first_f + len('gender = "f"'):], encoding="utf-8")
    with pytest.raises(AssertionError, match="as many male as female names"):
        bt.check_origin_names_are_typed_and_balanced(bt.LanguageData("de", root), "german")


def test_validation_errors_fail_the_package(eo):
    edit(eo, "weat1", 'licence = "CC0-1.0"', 'licence = ""')
    with pytest.raises(AssertionError, match="weat1.toml: licence"):
        bt.check_validates(eo.root)


def test_an_installed_package_is_found_by_its_language():
    nl = bt.LanguageData.installed("nl")
    assert nl.language == "nl" and nl.has("weat1") and nl.path("weat1").name == "weat1.toml"
    with pytest.raises(Exception, match="No language package for 'zz'"):
        bt.LanguageData.installed("zz")
