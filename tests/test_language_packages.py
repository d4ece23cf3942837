"""Every language package: installed as its own distribution, registered, valid, complete, and usable
end to end on a model trained with the language's own words (so its Unicode survives tokenisation,
model files and lookup)."""

from __future__ import annotations

import random
import re
import subprocess
import tomllib
import unicodedata
from importlib import metadata

import pytest
from fixtures.in_process import completed
from fixtures.language_data import ROOT, association_files, data_dir

from bias.core.data import grammar
from bias.core.model import BIAS_TYPES, DIRECTIONS
from bias.core.data.wordsets import MIN_STIMULI, normalise, word_list

LANGUAGES = ("en", "nl", "de", "no", "is", "tr", "it")
WEAT_FAMILY = tuple(f"weat{i}" for i in range(1, 11))
OTHER_FILES = ("seat-templates", "lpbs-gender", "debias-gender", "crows-sample")


def load(code: str, stem: str) -> dict:
    with open(data_dir(code) / f"{stem}.toml", "rb") as fh:
        return tomllib.load(fh)


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


@pytest.mark.parametrize("code", LANGUAGES)
def test_package_is_its_own_distribution_and_registers_its_language(code):
    dist = metadata.distribution(f"bias-lang-{code}")
    entry = [ep for ep in dist.entry_points if ep.group == "bias.wordsets"]
    assert [ep.name for ep in entry] == [code]
    from bias import registry

    expected = {f"{code}/{stem}" for stem in (*WEAT_FAMILY, *OTHER_FILES)}
    assert expected <= {row.name for row in registry.wordsets(language=code)}


@pytest.mark.parametrize("code", LANGUAGES)
def test_validate_passes_and_list_shows_the_tests(code):
    checked = bias("validate", str(ROOT / "languages" / code))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert " 0 error(s)" in checked.stdout
    if code != "en":  # en reproduces WEAT 9 with its published 6/7-word sets, which the validator notes
        # REVIEW.md is a package's review log; until it covers every test, its warnings are the only ones allowed
        review = (ROOT / "languages" / code / "REVIEW.md").is_file()
        warnings = [line for line in checked.stdout.splitlines() if line.startswith("warning ")]
        others = [line for line in warnings if review or not line.startswith(f"warning {ROOT / 'languages' / code / 'REVIEW.md'}:")]
        assert others == [], checked.stdout
    listed = bias("list", "wordsets", "--language", code, "--json")
    assert listed.returncode == 0, listed.stderr
    import json

    rows = json.loads(listed.stdout)
    assert {f"{code}/weat1", f"{code}/weat10"} <= {r["name"] for r in rows}
    assert all(r["status"] == "ok" for r in rows), [r for r in rows if r["status"] != "ok"]


@pytest.mark.parametrize("code", LANGUAGES)
def test_required_files_counts_and_metadata(code):
    folder = data_dir(code)
    stems = {p.stem for p in folder.glob("*.toml")}
    assert set(WEAT_FAMILY) <= stems and set(OTHER_FILES) <= stems, sorted(set(WEAT_FAMILY + OTHER_FILES) - stems)
    if code != "en":
        assert len([s for s in stems if s.startswith("labour-")]) >= 4, "at least four labour-market tests"
    assert (ROOT / "languages" / code / "README.md").is_file()
    for path in folder.glob("*.toml"):
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        for field in ("kind", "language", "bias_type", "source", "licence"):
            assert isinstance(data.get(field), str) and data[field].strip(), f"{path.name}: {field}"
        assert data["language"] == code, path.name
        assert data["bias_type"] in BIAS_TYPES, path.name
        assert data.get("expected_direction", "positive") in DIRECTIONS, path.name
        text = path.read_text(encoding="utf-8")
        assert unicodedata.is_normalized("NFC", text), f"{path.name} is not NFC-normalised"
    for path in association_files(code):
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        # The English package reproduces the published tests; WEAT 9 was published with 6 and 7 words
        # per set, which its notes say. Every adapted test has at least the minimum.
        published_small = code == "en" and path.stem == "weat9" and "published sets are small" in data["notes"]
        for key in ("X", "Y", "A", "B"):
            entries = data["sets"][key]["words"]
            words = word_list(data["sets"][key], key).words
            assert published_small or len(words) >= MIN_STIMULI, f"{path.name} set {key}: {len(words)} stimuli"
            assert len(words) == len(entries), f"{path.name} set {key} has duplicates after case-folding"
            assert len({normalise(w) for w in words}) == len(words)


@pytest.mark.parametrize("code", LANGUAGES)
def test_pair_set_size_and_bias_types(code):
    data = load(code, "crows-sample")
    pairs = data["pairs"]
    minimum, types = (60, 6) if code == "en" else (40, 5)
    assert len(pairs) >= minimum
    assert len({p["bias_type"] for p in pairs}) >= types
    assert all(p["direction"] in ("stereo", "antistereo") and p["more"] != p["less"] for p in pairs)


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_word_of_every_test_gets_a_seat_sentence(code):
    """The grammar is data: every stimulus of the package must render in at least one template, and
    the word must stand in the sentence exactly where the span says."""
    data = load(code, "seat-templates")
    forms, problems = grammar.forms_from_record(data.get("forms"))
    assert not problems
    templates = data["templates"]
    defaults = data.get("defaults") or {}  # as the engine's TemplateSet.render: the word's own features win
    for path in association_files(code):
        with open(path, "rb") as fh:
            test = tomllib.load(fh)
        if test.get("stimuli") == "sentences":
            continue
        for key in ("X", "Y", "A", "B"):
            wl = word_list(test["sets"][key], key)
            for word in wl.words:
                features = {**defaults, **wl.features(word)}
                rendered = [
                    grammar.render(t["text"], {"word": (word, features)}, forms, t.get("when"))
                    for t in templates
                ]
                rendered = [r for r in rendered if r is not None]
                assert rendered, f"{path.name} set {key}: no template renders '{word}'"
                for r in rendered:
                    start, end = r.spans["word"]
                    assert r.text[start:end].casefold() in {word.casefold(), *(v.casefold() for v in wl.features(word).values())}
                    assert "{" not in r.text and "}" not in r.text


def _planted_corpus(sets: dict[str, tuple[str, ...]], seed: int = 5, sentences: int = 2500) -> list[list[str]]:
    rng = random.Random(seed)
    filler = [f"f{i}" for i in range(40)]
    out = []
    for _ in range(sentences):
        from_x = rng.random() < 0.5
        target = rng.choice(sets["X"] if from_x else sets["Y"])
        pool = sets["A"] if from_x else sets["B"]
        sentence = [target, rng.choice(pool), rng.choice(pool), *(rng.choice(filler) for _ in range(4))]
        rng.shuffle(sentence)
        out.append(sentence)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("code", [c for c in LANGUAGES if c != "en"])
def test_weat_end_to_end_on_a_model_trained_with_the_languages_own_words(code, tmp_path):
    """Words with ð, þ, ß, ı, ş, ç, é, ... go through a fastText .bin and a word2vec .bin and back: the
    planted association of the package's own weat1 words is found with the right sign."""
    from fixtures.planted import save_fasttext_bin, train_fasttext

    test = load(code, "weat1")
    sets = {k: tuple(w for w in word_list(test["sets"][k], k).words if " " not in w) for k in "XYAB"}
    model = train_fasttext(_planted_corpus(sets))
    path = tmp_path / f"{code}.bin"
    save_fasttext_bin(model, path)
    proc = bias("run", "--model", f"fasttext:{path}", "--wordset", f"{code}/weat1", "--permutations", "2000", "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "ok"
    assert result["effect_size"] > 1.0 and result["p_value"] < 0.01
    assert not result["lost"] and not result["approximated"]


def test_validate_reports_every_problem_of_a_broken_package_with_file_and_field(tmp_path):
    """A copy of the Dutch package with one mistake of each kind: all are reported, each with its file
    and field, and the exit code is 2."""
    import shutil

    package = tmp_path / "nl"
    shutil.copytree(ROOT / "languages" / "nl", package, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    data = package / "bias_lang_nl" / "data"

    def edit(name: str, old: str, new: str) -> None:
        path = data / name
        text = path.read_text(encoding="utf-8")
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    edit("weat1.toml", 'bias_type = "non-social"', 'bias_type = "flowers"')  # unknown bias type
    edit("weat2.toml", 'grammar = { class = "thing" }', 'grammar = { class = "gadget" }')  # no template fits
    edit("lpbs-gender.toml", "{attribute}", "{atribute}")  # a template without its attribute slot
    edit("weat6.toml", '{ word = "Peter", gender = "m" },', '{ word = "Peter", gender = "m" }, "PETER",')  # a duplicate after case-folding
    weat7 = (data / "weat7.toml").read_text(encoding="utf-8")
    start = weat7.index("words = [", weat7.index("[sets.A]"))
    end = weat7.index("\n]", start) + 2
    (data / "weat7.toml").write_text(weat7[:start] + 'words = ["man", "jongen", "broer", "vader", "zoon"]' + weat7[end:], encoding="utf-8")

    proc = bias("validate", str(package))
    assert proc.returncode == 2, proc.stdout
    out = " ".join(proc.stdout.split())
    assert "weat1.toml: bias_type: 'flowers' is not a known bias type" in out
    assert "weat2.toml: sets.X.words[0]:" in out and "gets no sentence from seat-templates.toml" in out
    assert "lpbs-gender.toml: templates[" in out and "attribute" in out
    assert "weat6.toml: sets.X.words[" in out and "duplicates are dropped" in out
    # a set below the minimum is an error in `bias validate` (a warning when run)
    assert re.search(r"error \S*weat7\.toml: sets\.A\.words: 5 stimuli, fewer than the minimum of 8", out)
