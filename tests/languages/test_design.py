"""Test design of the language packages: the confounds a bias researcher checks, written out here
independently of the data so that they cannot come back.

- WEAT 4 uses the attribute lists of WEAT 3 (Caliskan et al. 2017), not WEAT 1's;
- labour-age names people of working age and attributes of work, not retirees and frailty;
- labour-disability contrasts disability with neutral words, not fitness praise, and the two target
  sets share no stem;
- the labour-origin attributes are mostly antonyms with their own stems;
- every package has religion, sexual-orientation and gender-identity tests and pairs, and says in
  its README how origin and religion relate in its name tests.
"""

from __future__ import annotations

import pytest
from fixtures.language_data import ROOT, association_files, data_dir

from bias.core.data.wordsets import normalise, word_list
from bias.core.data.file_reading import read_toml

ADAPTED = ("nl", "de", "no", "is", "tr", "it")

# Retirees, the very old, pupils and students, and HR "senior" (= experienced) in Dutch and German
NOT_WORKING_AGE = {
    "nl": {"gepensioneerde", "bejaarde", "senior", "babyboomer", "student", "scholier", "schoolverlater", "jongere"},
    "de": {"rentner", "ruheständler", "greis", "senior", "babyboomer", "student", "schüler", "schulabgänger"},
    "no": {"pensjonist", "gamling", "olding", "syttiåring", "veteran", "elev", "tenåring", "student", "ungdom"},
}
# Frailty and health words, and words containing "old", among the attributes of labour-age
FRAILTY = {
    "nl": {"vermoeid", "vergeetachtig", "langzaam", "ouderwets", "zwak", "ziek"},
    "de": {"gebrechlich", "vergesslich", "altmodisch", "langsam", "müde", "krank"},
    "no": {"skrøpelig", "glemsk", "gammeldags", "langsom", "trøtt", "syk"},
    "is": {"þreyttur", "gamaldags", "veikur"},
    "tr": {"yorgun", "hasta"},
    "it": {"stanco", "malato", "fragile"},
}
# Fitness and health praise in the non-disabled set of labour-disability
FITNESS = {
    "nl": {"fit", "topfit", "kerngezond", "sportief", "lenig", "vitaal", "gezond"},
    "de": {"fit", "topfit", "kerngesund", "sportlich", "vital", "gesund", "beweglich"},
    "no": {"sprek", "spenstig", "kjernesunn", "frisk", "sunn", "vital"},
    "is": {"hraustur", "fullfrískur", "heilbrigður"},
    "tr": {"zinde", "dinç", "formda", "sağlıklı", "sıhhatli"},
    "it": {"sportivo", "atletico", "vigoroso"},
}


def words(code: str, stem: str, key: str) -> list[str]:
    data = read_toml(data_dir(code) / f"{stem}.toml")
    return [normalise(w) for w in word_list(data["sets"][key], key).words]


def contains(a: str, b: str, minimum: int = 5) -> bool:
    """One word written inside the other (valide / invalide, behindert / nichtbehindert)."""
    short, long = sorted((a, b), key=len)
    return len(short) >= minimum and short in long and short != long


@pytest.mark.parametrize("code", ("en", *ADAPTED))
def test_weat4_uses_the_attribute_lists_of_weat3(code):
    for key in "AB":
        assert set(words(code, "weat4", key)) == set(words(code, "weat3", key)), key


@pytest.mark.parametrize("code", sorted(NOT_WORKING_AGE))
def test_labour_age_targets_are_people_of_working_age(code):
    targets = set(words(code, "labour-age", "X")) | set(words(code, "labour-age", "Y"))
    assert not targets & NOT_WORKING_AGE[code]


@pytest.mark.parametrize("code", ADAPTED)
def test_labour_age_attributes_are_about_work_not_frailty(code):
    attributes = set(words(code, "labour-age", "A")) | set(words(code, "labour-age", "B"))
    assert not attributes & FRAILTY[code]
    assert not any(contains(a, b) for a in words(code, "labour-age", "A") for b in words(code, "labour-age", "B"))


@pytest.mark.parametrize("code", ADAPTED)
def test_labour_disability_contrasts_disability_with_neutral_words(code):
    x, y = words(code, "labour-disability", "X"), words(code, "labour-disability", "Y")
    assert not set(x) & FITNESS[code]
    assert not [(a, b) for a in x for b in y if contains(a, b)]


@pytest.mark.parametrize("code", ADAPTED)
def test_labour_origin_attributes_are_mostly_antonyms_with_their_own_stems(code):
    for path in association_files(code):
        if not path.stem.startswith("labour-origin"):
            continue
        a, b = words(code, path.stem, "A"), words(code, path.stem, "B")
        derived = [(p, q) for p in a for q in b if contains(p, q, 4)]
        assert len(derived) <= 2, (path.name, derived)


@pytest.mark.parametrize("code", ADAPTED)
def test_religion_sexual_orientation_and_gender_identity_are_covered(code):
    for stem, bias_type in (("religion", "religion"), ("sexual-orientation", "sexual-orientation"), ("gender-identity", "gender-identity")):
        data = read_toml(data_dir(code) / f"{stem}.toml")
        assert data["bias_type"] == bias_type and data["kind"] == "association"
        for key in "XYAB":
            assert len(words(code, stem, key)) >= 8, (stem, key)
        assert "(" in data["source"] and data["notes"], stem  # a citation and the authoring decisions
    pairs = read_toml(data_dir(code) / "crows-sample.toml")["pairs"]
    for bias_type in ("gender-identity", "sexual-orientation"):
        assert len([p for p in pairs if p["bias_type"] == bias_type]) >= 3, bias_type


@pytest.mark.parametrize("code", ADAPTED)
def test_readme_says_how_origin_and_religion_relate_in_the_name_tests(code):
    text = (ROOT / "languages" / code / "README.md").read_text(encoding="utf-8")
    assert "Muslim" in text and "religion" in text
    assert "## Changes in the 2026-11 revision of the data" in text


@pytest.mark.parametrize("code", ADAPTED)
def test_package_lists_its_known_ambiguous_words(code):
    path = data_dir(code) / "ambiguous-words.txt"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) >= 5 and all(":" in line for line in lines)
    pyproject = (ROOT / "languages" / code / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/*.txt"' in pyproject  # shipped with the package
