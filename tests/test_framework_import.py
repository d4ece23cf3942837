"""Every file kind of the BIAS Detection Framework's datasets imports, quirks included (files written
by us in its format: tests/fixtures/framework_data.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bias.core.errors import BiasError
from bias.core.data.fise_tests import parse_trait_line, read_affect, read_traits
from bias.core.data.framework_layout import language_of
from bias.engine.validate import validate_paths
from bias.registry.resolve import format_for, load_wordset
from fixtures.framework_data import IT_CROWS_ROWS, WORDS, build_datasets


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_datasets(tmp_path_factory.mktemp("framework") / "datasets")


@pytest.mark.parametrize("lang", sorted(WORDS))
def test_weat_txt_with_comments_spaces_trailing_commas_and_blank_lines(datasets: Path, lang: str) -> None:
    test = load_wordset(str(datasets / lang / "WEAT" / "T1.txt"))
    x, y, a, b = WORDS[lang]
    assert list(test.X.words) == x and list(test.Y.words) == y and list(test.B.words) == b
    # The repeated attribute is dropped by default, and kept for duplicates = keep.
    assert list(test.A.words) == a
    assert list(test.with_duplicates().A.words) == [*a, a[0]]
    assert test.repeats() == {"A": {a[0]: 2}}
    expected = {"tk": "tr", "nl": "nl"}.get(lang, lang)
    assert test.meta.language == expected


def test_folder_codes_tk_and_ne_are_turkish_and_dutch_with_a_note(tmp_path: Path) -> None:
    assert language_of(tmp_path / "tk" / "WEAT" / "x.txt")[0] == "tr"
    code, note = language_of(tmp_path / "ne" / "SEAT" / "x.jsonl")
    assert code == "nl" and "'ne'" in note and "'nl'" in note
    assert language_of(tmp_path / "de" / "WEAT" / "x.txt") == ("de", None)
    assert language_of(tmp_path / "random" / "x.txt") == (None, None)


def test_an_empty_entry_between_commas_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("a, b,, c\nd, e, f\ng, h\ni, j\n", encoding="utf-8")
    with pytest.raises(BiasError, match="line 1 has an empty entry"):
        load_wordset(str(path))


@pytest.mark.parametrize("kind", ["SEAT", "genSEAT"])
def test_seat_and_genseat_jsonl_stay_supported(datasets: Path, kind: str) -> None:
    name = "SEAT_T1" if kind == "SEAT" else "genSEAT_T1"
    test = load_wordset(str(datasets / "tk" / kind / f"{name}.jsonl"))
    assert test.stimuli == "sentences" and test.meta.language == "tr"
    assert test.X.words[0] == "Bu mühendis."


def test_lpbs_jsonl_with_placeholders_and_an_empty_plural(datasets: Path) -> None:
    test = load_wordset(str(datasets / "no" / "LPBS" / "LPBS_1.jsonl"))
    assert test.meta.kind == "lpbs" and test.meta.language == "no"
    assert list(test.X.words) == WORDS["no"][0][:2]
    assert [t.text for t in test.templates] == ["{target} {attribute}", "{target} and {attribute}."]
    rendered = test.render(test.templates[0], (test.X.words[0], test.X.features(test.X.words[0])), ("lønn", {}))
    assert rendered is not None and rendered.text == "ingeniør lønn"


def test_lpbs_plural_templates_take_only_plural_targets(tmp_path: Path) -> None:
    path = tmp_path / "no" / "LPBS" / "L.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "targ1": {"singular": ["han"], "plural": ["menn"]}, "targ2": {"singular": ["hun"], "plural": ["kvinner"]},
        "attr1": ["tall"], "attr2": ["dans"],
        "templates": {"singular": ["TARGET liker ATTRIBUTE."], "plural": ["TARGET elsker ATTRIBUTE."]},
    }), encoding="utf-8")
    test = load_wordset(str(path))
    sentences = set()
    for template in test.templates:
        for word in test.X.words:
            r = test.render(template, (word, test.X.features(word)), ("tall", {}))
            if r is not None:
                sentences.add(r.text)
    assert sentences == {"han liker tall.", "menn elsker tall."}


def test_crows_csv_with_extra_columns_skips_identical_and_empty_pairs(datasets: Path) -> None:
    path = datasets / "en" / "CROWS" / "crows_en.csv"
    pairs = load_wordset(str(path))
    assert len(pairs.pairs) == 5
    assert all(p.more != p.less for p in pairs.pairs)
    found = format_for(path).validate(path)
    skipped = [str(p) for p in found if "skipped" in p.message]
    assert [p.severity for p in found if "skipped" in p.message] == ["warning", "warning"]
    assert "line 6" in skipped[0] and "identical" in skipped[0]
    assert "line 7" in skipped[1] and "empty" in skipped[1]


def test_crows_xlsx_reads_like_the_csv(datasets: Path) -> None:
    xlsx = load_wordset(str(datasets / "it" / "CROWS" / "crows_it.xlsx"))
    csv_ = load_wordset(str(datasets / "it" / "CROWS" / "crows_it.csv"))
    assert [(p.more, p.less, p.line) for p in xlsx.pairs] == [(p.more, p.less, p.line) for p in csv_.pairs]
    assert len(xlsx.pairs) == len(IT_CROWS_ROWS) - 1 and xlsx.meta.language == "it"


def test_a_broken_xlsx_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.xlsx"
    path.write_bytes(b"not a zip")
    with pytest.raises(BiasError, match="not a readable .xlsx"):
        load_wordset(str(path))


def test_fise_files(datasets: Path) -> None:
    fise = load_wordset(str(datasets / "it" / "FISE" / "FISE_T1.json"))
    assert fise.meta.kind == "fise" and [a.name for a in fise.axes] == ["gender", "class"]
    assert fise.axes[0].first == "maschile" and ("ragazzo", "signore") in fise.axes[0].first_words
    traits = read_traits(datasets / "it" / "FISE" / "traitlist.txt")
    assert traits == ["coraggioso", ("gentile", "gentili"), ("calmo", "calma"), "ambizioso", "timido", "elegante"]
    positive, negative = read_affect(datasets / "it" / "FISE" / "valencestim.csv")
    assert positive == ["felice", "sereno", "onesto"] and negative == ["triste", "crudele"]


def test_trait_lines_are_parsed_as_data_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    line = f"[__import__('pathlib').Path({str(marker)!r}).touch()]"
    with pytest.raises(BiasError, match="not a list of words"):
        parse_trait_line(line, "traits.txt: line 1")
    assert not marker.exists()
    assert parse_trait_line("['bravo', 'brava']", "x") == ("bravo", "brava")
    assert parse_trait_line("molto gentile", "x") == "molto gentile"


def test_validate_reports_every_file_of_the_folder(datasets: Path) -> None:
    found, checked, per_file = validate_paths([datasets])
    files = {Path(f).relative_to(datasets).as_posix(): (e, w) for f, e, w in per_file}
    assert checked == len(files) == len([p for p in datasets.rglob("*") if p.is_file()])
    assert all(errors == 0 for errors, _ in files.values()), [str(p) for p in found if p.severity == "error"]
    assert files["en/CROWS/crows_en.csv"][1] == 2  # the two skipped pairs
    notes = [p.message for p in found if p.severity == "note"]
    assert any("'tk' read as language 'tr'" in n for n in notes)


def test_validate_reports_a_broken_file_among_good_ones(datasets: Path, tmp_path: Path) -> None:
    bad = tmp_path / "broken.jsonl"
    bad.write_text("{not json", encoding="utf-8")
    good = datasets / "de" / "WEAT" / "T2.txt"
    found, checked, per_file = validate_paths([good, bad])
    assert checked == 2
    assert [(Path(f).name, e > 0) for f, e, _ in per_file] == [("T2.txt", False), ("broken.jsonl", True)]
    assert any("malformed JSON" in p.message for p in found)
