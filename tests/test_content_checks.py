"""The validator's content checks, each on a small package built here with one planted mistake, and
the clean case: a package without the mistake gets no such warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bias.core.data.content_checks import read_frequencies, shared_stem
from bias.engine.validate import validate_path

PYPROJECT = """[project]
name = "bias-lang-xx"
version = "0.1.0"
[project.entry-points."bias.wordsets"]
xx = "bias_lang_xx:PACKAGE"
"""

META = """format = "bias-wordset/1"
language = "xx"
source = "Authored for this test."
licence = "CC0-1.0"
"""

TEMPLATES = META + """kind = "templates"
bias_type = "any"
slots = ["word"]

[forms.article]
from = "gender"
m = "der"
f = "die"

[[templates]]
text = "Das ist {word}."
when = { "word.class" = "adjective" }

[[templates]]
text = "{Word.article} {word} ist hier."
when = { "word.class" = "thing" }

[[templates]]
text = "Hier sind {word:plural}."
when = { "word.class" = "thing" }
"""


def words(items: list[str]) -> str:
    return "[" + ", ".join(f'"{w}"' for w in items) + "]"


X = ["rot", "grün", "blau", "gelb", "weiß", "schwarz", "braun", "grau"]
Y = ["eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht"]
A = ["froh", "heiter", "lustig", "munter", "fröhlich", "sonnig", "vergnügt", "selig"]
B = ["trüb", "düster", "finster", "traurig", "bedrückt", "elend", "mies", "jämmerlich"]


def association(x=X, y=Y, a=A, b=B, notes: str = "") -> str:
    sets = "".join(
        f'\n[sets.{k}]\ngrammar = {{ class = "adjective" }}\nwords = {words(v)}\n' for k, v in zip("XYAB", (x, y, a, b))
    )
    return META + f'kind = "association"\nbias_type = "non-social"\nnotes = "{notes}"\n' + sets


def package(tmp_path: Path, files: dict[str, str], ambiguous: str | None = None, review: str | None = None) -> Path:
    """A package with the given data files; its REVIEW.md names every file unless `review` is given
    ("" leaves it out)."""
    root = tmp_path / "xx"
    data = root / "bias_lang_xx" / "data"
    data.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (data / "seat-templates.toml").write_text(TEMPLATES, encoding="utf-8")
    for name, text in files.items():
        (data / name).write_text(text, encoding="utf-8")
    if review is None:
        review = "# Review\n" + "".join(f"- {Path(n).stem}: 8 entries reviewed; nothing changed; no doubts\n" for n in ["seat-templates", *files])
    if review:
        (root / "REVIEW.md").write_text(review, encoding="utf-8")
    if ambiguous is not None:
        (data / "ambiguous-words.txt").write_text(ambiguous, encoding="utf-8")
    return root


def messages(path: Path, **kw) -> list[str]:
    problems, _ = validate_path(path, **kw)
    return [f"{Path(p.file).name}: {p.field}: {p.message} [{p.severity}]" for p in problems]


def test_a_clean_package_gets_no_warning(tmp_path):
    assert messages(package(tmp_path, {"t.toml": association()})) == []


def test_shared_stem_definition():
    assert shared_stem("behindert", "nichtbehindert") == "behindert"
    assert shared_stem("funksjonsfrisk", "funksjonshemmet") == "funksjons"
    assert shared_stem("güvenilir", "güvenilmez") == "güvenil"
    assert shared_stem("Valide", "INVALIDE") == "valide"
    assert shared_stem("fit", "unfit") is None  # too short to be told from an affix
    assert shared_stem("twintiger", "vijftiger") is None  # a shared ending is a suffix
    assert shared_stem("betrouwbaar", "betrokken") is None


def test_stem_shared_with_the_opposite_set_is_a_warning_unless_the_notes_explain_it(tmp_path):
    b = ["unlustig", *B[1:]]
    found = messages(package(tmp_path, {"t.toml": association(b=b)}))
    assert found == [
        "t.toml: sets.A.words[2]: 'lustig' shares the stem 'lustig' with 'unlustig' of set B: sub-word models put the "
        "two sets close together; choose a word with its own stem [warning]"
    ]
    explained = messages(package(tmp_path / "2", {"t.toml": association(b=b, notes="The pair lustig / unlustig is kept: ...")}))
    assert explained == []
    # within one set a shared stem is not a problem
    assert messages(package(tmp_path / "3", {"t.toml": association(a=["unlustig", *A[1:]])})) == []


def test_a_word_in_two_sets_of_one_test_is_reported(tmp_path):
    found = messages(package(tmp_path, {"t.toml": association(b=["rot", *B[1:]])}))
    assert found == ["t.toml: sets.B.words[0]: 'rot' is also in set X: a word belongs to one set of a test [warning]"]


def test_frequency_imbalance_between_counterpart_sets_with_a_frequency_list(tmp_path):
    root = package(tmp_path, {"t.toml": association()})
    freq = tmp_path / "freq.txt"
    # X and Y equally frequent; A 1000 times more frequent than B
    lines = [f"{w} 5000" for w in X + Y] + [f"{w} 100000" for w in A] + [f"{w} 100" for w in B]
    freq.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = messages(root, frequencies=freq)
    assert len(found) == 1 and found[0].startswith("t.toml: sets.B: set B is 1000 times rarer than set A"), found
    balanced = tmp_path / "balanced.txt"
    balanced.write_text("\n".join(f"{w} 5000" for w in X + Y + A + B), encoding="utf-8")
    assert messages(root, frequencies=balanced) == []
    assert messages(root) == []  # no list, no check


def test_frequency_list_in_rank_order_is_read_as_zipf(tmp_path):
    path = tmp_path / "ranks.txt"
    path.write_text("der\ndie\n# comment\nund 7\n", encoding="utf-8")
    counts = read_frequencies(path)
    assert counts["der"] == 1.0 and counts["die"] == 0.5 and counts["und"] == 7.0


def test_template_whose_agreement_placeholder_stays_unresolved_is_reported(tmp_path):
    text = association()
    # a noun with a gender the forms table does not know: the template written for it skips it silently
    text = text.replace('[sets.X]\ngrammar = { class = "adjective" }\nwords = ["rot",', '[sets.X]\ngrammar = { class = "adjective" }\nwords = [{ word = "Tisch", class = "thing", gender = "n", plural = "Tische" },')
    found = messages(package(tmp_path, {"t.toml": text}))
    assert found == [
        "t.toml: sets.X.words[0]: 'Tisch' meets the conditions of template \"{Word.article} {word} ist hier.\" but "
        "{Word.article} has no value for it (its grammar: class=thing, gender=n, plural=Tische); add the feature or "
        "the forms-table entry [warning]"
    ]
    # a word without a plural skips the plural template: that is how templates select words, no warning
    fine = text.replace('gender = "n", plural = "Tische"', 'gender = "m"')
    assert messages(package(tmp_path / "2", {"t.toml": fine})) == []


def test_known_ambiguous_words_of_the_package_are_reported_unless_the_notes_name_them(tmp_path):
    listed = "# known ambiguous words\nmies: also a Dutch first name\nLiv: the noun liv, life\n"
    found = messages(package(tmp_path, {"t.toml": association()}, ambiguous=listed))
    assert found == [
        "t.toml: sets.B.words[6]: 'mies' is listed in ambiguous-words.txt as ambiguous (also a Dutch first name); "
        "replace it, or say in notes why it stays [warning]"
    ]
    noted = association(notes="'mies' stays: its other sense is rare in German text.")
    assert messages(package(tmp_path / "2", {"t.toml": noted}, ambiguous=listed)) == []


def test_ambiguous_words_in_debiasing_lists_are_reported(tmp_path):
    lists = META + 'kind = "debias-lists"\nbias_type = "gender"\ndefinitional = [["Mann", "Frau"], ["Held", "Heldin"]]\n'
    found = messages(package(tmp_path, {"debias-gender.toml": lists}, ambiguous="held: adverb in Norwegian\n"))
    assert found == [
        "debias-gender.toml: definitional[1]: 'Held' is listed in ambiguous-words.txt as ambiguous (adverb in "
        "Norwegian); replace it, or say in notes why it stays [warning]"
    ]


def test_lpbs_agreement_placeholder_unresolved(tmp_path):
    lpbs = META + """kind = "lpbs"
bias_type = "gender"
[forms.article]
from = "gender"
m = "der"
f = "die"
[sets.X]
words = ["er", "Mann", "Vater", "Sohn", "Bruder", "Onkel", "Opa", "Neffe"]
[sets.Y]
words = ["sie", "Frau", "Mutter", "Tochter", "Schwester", "Tante", "Oma", "Nichte"]
[sets.A]
grammar = { gender = "m" }
words = ["Arzt", "Pilot", "Koch", "Maurer", "Richter", "Bauer", "Dachdecker", { word = "Mitglied", gender = "n" }]
[sets.B]
grammar = { gender = "f" }
words = ["Hebamme", "Pflegerin", "Lehrerin", "Friseurin", "Sekretärin", "Floristin", "Kosmetikerin", "Erzieherin"]
[[templates]]
text = "{Target} ist {attribute.article} {attribute}."
when = { "target.class" = "any" }
[[templates]]
text = "{Target} arbeitet als {attribute}."
"""
    lpbs = lpbs.replace('words = ["er",', 'grammar = { class = "any" }\nwords = ["er",').replace('words = ["sie",', 'grammar = { class = "any" }\nwords = ["sie",')
    found = messages(package(tmp_path, {"lpbs-gender.toml": lpbs}))
    assert len(found) == 1 and "lpbs-gender.toml: sets.A: 'Mitglied' meets the conditions of template" in found[0], found


def test_bias_validate_command_takes_a_frequency_list(tmp_path):
    root = package(tmp_path, {"t.toml": association()})
    freq = tmp_path / "freq.txt"
    freq.write_text("\n".join([f"{w} 5000" for w in X + A + B] + [f"{w} 1" for w in Y]), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "validate", str(root), "--frequencies", str(freq)],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "set Y is 5000 times rarer than set X" in proc.stdout
    assert "0 error(s), 1 warning(s)" in proc.stdout


# --- multi-word stimuli, unequal counterpart sets, pairs that change more than their group words,
# --- REVIEW.md: each planted in a fixture package, and absent from a clean one.

def test_multi_word_stimuli_are_a_warning_with_what_a_static_model_loses(tmp_path):
    x = ["rot", "hell rot", "dunkel grün", *X[3:]]
    found = messages(package(tmp_path, {"t.toml": association(x=x)}))
    assert found == [
        "t.toml: sets.X: 2 multi-word stimuli (hell rot, dunkel grün): static models (fastText, word2vec, GloVe) have no "
        "vector for a phrase, 2 of 8 lost (25%, > 20% allowed: the test is refused); use single words, or say in notes "
        "that the test is for sentence encoders (SEAT) [warning]"
    ]
    one = messages(package(tmp_path / "1", {"t.toml": association(x=["hell rot", *X[1:]])}))
    assert one and "1 of 8 lost (12%, within the 20% allowed)" in one[0] and one[0].endswith("[warning]")


def test_multi_word_stimuli_named_in_the_notes_are_a_note(tmp_path):
    x = ["rot", "hell rot", "dunkel grün", *X[3:]]
    notes = "Two stimuli are phrases (hell rot; dunkel and grün): the test is for sentence encoders."
    found = messages(package(tmp_path, {"t.toml": association(x=x, notes=notes)}))
    assert len(found) == 1 and found[0].endswith("the notes name them [note]"), found
    # naming one of the two is not enough
    half = messages(package(tmp_path / "2", {"t.toml": association(x=x, notes="hell rot is a phrase")}))
    assert len(half) == 1 and half[0].endswith("[warning]"), half


def test_attribute_sets_whose_sizes_differ_beyond_the_threshold_are_reported(tmp_path):
    b = [*B, "öde", "fade", "matt"]  # 11 against 8: 27% of the larger apart
    found = messages(package(tmp_path, {"t.toml": association(b=b)}))
    assert found == [
        "t.toml: sets.A: set A has 8 words and set B 11 (more than 20% apart): the shorter set weighs each of its words "
        "more in every association s(w, A, B); give counterpart sets equal sizes [warning]"
    ]
    # 10 against 8 is 20% apart: within the threshold
    assert messages(package(tmp_path / "2", {"t.toml": association(b=[*B, "öde", "fade"])})) == []
    # targets of different sizes: the format check's warning (any difference), not a second one
    found = messages(package(tmp_path / "3", {"t.toml": association(y=[*Y, "neun", "zehn", "elf"])}))
    assert found == [
        "t.toml: sets: targets differ in size (X 8, Y 11): the permutation test then uses random partitions of the "
        "observed sizes [warning]"
    ]


PAIRS = META + """kind = "pairs"
bias_type = "mixed"
"""


def pair(more: str, less: str, note: str = "") -> str:
    extra = f'note = "{note}"\n' if note else ""
    return f'\n[[pairs]]\nmore = "{more}"\nless = "{less}"\ndirection = "stereo"\nbias_type = "gender"\n{extra}'


def test_a_pair_that_changes_more_than_its_group_words_is_reported(tmp_path):
    clean = pair("Frauen fahren schlecht Auto.", "Männer fahren schlecht Auto.") + pair(
        "Sie sagt, sie sei müde.", "Er sagt, er sei müde."
    )
    assert messages(package(tmp_path, {"crows.toml": PAIRS + clean})) == []
    rewritten = pair("Frauen fahren am Sonntag immer schlecht Auto.", "Männer reparieren am liebsten alte Motorräder.")
    found = messages(package(tmp_path / "2", {"crows.toml": PAIRS + clean + rewritten}))
    assert found == [
        "crows.toml: pairs[2]: the sentences differ in 6 words ('frauen fahren' / 'männer reparieren'; 'sonntag immer "
        "schlecht auto' / 'liebsten alte motorräder'), more than a group span of 3: a pair changes only its group words; "
        "rewrite it, or explain in its note [warning]"
    ]
    # half of the words changed, though only 2: too little common context
    half = messages(package(tmp_path / "4", {"crows.toml": PAIRS + pair("Frauen weinen oft.", "Männer lachen oft.")}))
    assert len(half) == 1 and "pairs[0]: the sentences differ in 2 words ('frauen weinen' / 'männer lachen')" in half[0], half
    # no word in common is the format check's warning, not a second one
    apart = messages(package(tmp_path / "5", {"crows.toml": PAIRS + pair("Frauen weinen.", "Männer lachen.")}))
    assert len(apart) == 1 and "share no word" in apart[0], apart
    noted = pair("Frauen fahren am Sonntag immer schlecht Auto.", "Männer reparieren am liebsten alte Motorräder.", "kept: ...")
    assert messages(package(tmp_path / "3", {"crows.toml": PAIRS + clean + noted})) == []


def test_review_log_missing_or_silent_about_a_test_is_a_warning(tmp_path):
    files = {"t.toml": association(), "religion.toml": association()}
    missing = messages(package(tmp_path, files, review=""))
    assert missing == [
        "REVIEW.md: : missing: a language package records its review in REVIEW.md (each test with its reviewed entries "
        "count, what was changed after review, open doubts); see CONTRIBUTING.md [warning]"
    ]
    partial = "# Review\n- xx/religion: 32 entries reviewed; Pasen replaced; no doubts\n- seat-templates: all sentences read\n"
    found = messages(package(tmp_path / "2", files, review=partial))
    assert found == [
        "REVIEW.md: : does not mention t (t.toml): say how many of its entries were reviewed, what changed, what is in "
        "doubt [warning]"
    ]
    # a name inside a longer one does not count: "t" is not mentioned by "t2" or "weat-t"
    assert len(messages(package(tmp_path / "3", files, review=partial + "- t2 and weat-t\n"))) == 1
    assert messages(package(tmp_path / "4", files, review=partial + "- t: 32 entries\n")) == []


def test_validate_of_several_packages_totals_what_the_package_lines_count(tmp_path):
    """A note (a phrase the notes name) is a fact, counted as no warning on either line; a warning
    (an unnamed phrase) counts once on its package's line and once in the total."""
    import re

    x = ["rot", "hell rot", *X[2:]]
    noted = package(tmp_path / "1", {"t.toml": association(x=x, notes="hell rot is a phrase: SEAT only.")})
    warned = package(tmp_path / "2", {"t.toml": association(x=x)})
    proc = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "validate", str(noted), str(warned)],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # lines wrapped at 80 columns read as one
    lines = re.findall(r"ok (\S+): (\d+) error\(s\), (\d+) warning\(s\)", out)
    assert [(Path(p).parent.name, int(e), int(w)) for p, e, w in lines] == [("1", 0, 0), ("2", 0, 1)], out
    assert "4 file(s) checked: 0 error(s), 1 warning(s)." in out, out
