"""Checks every language package should pass, whatever its language: the ones the first-party
packages pass in this repository. Each raises AssertionError listing what is wrong (file, word,
sentence), so it reads well under pytest or any other runner; each returns how many items it
checked, so a test can make sure a check really ran.

Agreement rules (articles, vowel harmony, ...) are the language's own: a package writes them in its
tests over `LanguageData.seat_sentences` and `lpbs_sentences`, as
tests/languages/test_language_grammar.py does."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bias.testing.language_data import LanguageData

# What every first-party package ships; a third-party package passes its own list.
FIRST_PARTY_FILES = tuple(f"weat{i}" for i in range(1, 11)) + (
    "seat-templates",
    "lpbs-gender",
    "debias-gender",
    "crows-sample",
    "analogies",
)
_SHOWN = 5


def _fail(what: str, problems: list[Any]) -> None:
    if problems:
        shown = "\n  ".join(str(p) for p in problems[:_SHOWN])
        more = f"\n  (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise AssertionError(f"{what}:\n  {shown}{more}")


def check_expected_files(
    data: LanguageData,
    required: Iterable[str] = FIRST_PARTY_FILES,
    prefixes: dict[str, int] | None = None,
) -> int:
    """The package has the files it promises: `required` stems, and at least N files per prefix
    (the first-party packages: four `labour-` tests)."""
    stems = data.stems()
    _fail("missing data files", sorted(set(required) - stems))
    for prefix, minimum in (prefixes or {}).items():
        found = [s for s in stems if s.startswith(prefix)]
        assert len(found) >= minimum, (
            f"{len(found)} files named {prefix}*, at least {minimum} expected"
        )
    return len(stems)


def check_files_are_nfc_utf8(data: LanguageData) -> int:
    """Every data file is UTF-8 in Unicode normal form C, so that a word matches the model's
    spelling of it."""
    files = sorted(data.root.glob("*.toml"))
    _fail(
        "files not in NFC",
        [
            p.name
            for p in files
            if not unicodedata.is_normalized("NFC", p.read_text(encoding="utf-8"))
        ],
    )
    return len(files)


def check_every_word_gets_a_sentence(data: LanguageData) -> int:
    """Every word of every association test renders in at least one SEAT template, and as many as
    `TemplateSet.render` (what a run uses) gives it."""
    made: dict[tuple[str, str, str], int] = {}
    for s in data.seat_sentences:
        made[(s.word.file, s.word.key, s.word.word)] = (
            made.get((s.word.file, s.word.key, s.word.word), 0) + 1
        )
    lost = [f"{w.file} {w.key} {w.word}" for w in data.words if (w.file, w.key, w.word) not in made]
    _fail("words that get no SEAT sentence", lost)
    differ = [
        w.word
        for w in data.words
        if made.get((w.file, w.key, w.word), 0) != len(data.seat.render(w.word, w.features))
    ]
    _fail("words rendered differently by TemplateSet.render", differ)
    return len(data.words)


def capitalised(word: str) -> str:
    return word[:1].upper() + word[1:]


def check_sentences_are_well_formed(data: LanguageData, endings: tuple[str, ...] = (".",)) -> int:
    """Every SEAT sentence is complete: no placeholder left, a capital first letter, a final mark,
    no double space, NFC; and the word's span holds the word or one of its forms (plural, definite,
    ...), capitalised at the start of the sentence."""
    bad = []
    for s in data.seat_sentences:
        text = s.text
        forms = {s.word.word, *s.word.features.values()}
        if (
            "{" in text
            or "}" in text
            or not text[:1].isupper()
            or not text.endswith(endings)
            or "  " in text
        ):
            bad.append((s.word.file, s.word.word, text))
        elif not unicodedata.is_normalized("NFC", text):
            bad.append((s.word.file, s.word.word, text, "not NFC"))
        elif s.slot not in forms and not (
            s.span[0] == 0 and s.slot in {capitalised(f) for f in forms}
        ):
            bad.append((s.word.file, s.word.word, text, f"span holds {s.slot!r}"))
    _fail("malformed SEAT sentences", bad)
    return len(data.seat_sentences)


def check_lpbs_renders_every_pair(
    data: LanguageData, every_template_fits: bool = True, endings: tuple[str, ...] = (".",)
) -> int:
    """Every LPBS sentence is complete, its spans hold the target and the attribute (or a form of
    them), every word is used, and (unless the package says otherwise) every template fits every
    pair."""
    bad, used = [], {k: set() for k in ("X", "Y", "A", "B")}
    count = 0
    for s in data.lpbs_sentences:
        r = s.rendered
        if r is None:
            if every_template_fits:
                bad.append(
                    (s.template, s.target, s.attribute, "the template does not fit the pair")
                )
            continue
        count += 1
        used[s.target_key].add(s.target)
        used[s.attribute_key].add(s.attribute)
        if (
            "{" in r.text
            or "}" in r.text
            or not r.text[:1].isupper()
            or not r.text.endswith(endings)
        ):
            bad.append(r.text)
            continue
        for slot, word, features in (
            ("target", s.target, s.target_features),
            ("attribute", s.attribute, s.attribute_features),
        ):
            inside = r.text[slice(*r.spans[slot])]
            forms = {f.casefold() for f in (word, *features.values())}
            if inside.casefold() not in forms:
                bad.append((r.text, slot, inside))
    sets = data.lpbs.sets()
    for key, found in used.items():
        if found != set(sets[key].words):
            bad.append((key, "words in no sentence", sorted(set(sets[key].words) - found)))
    _fail("LPBS sentences", bad)
    assert count, "no LPBS sentence was rendered"
    return count


def check_pairs_differ_in_one_phrase(
    data: LanguageData, stem: str = "crows-sample", minimum: int = 40, bias_types: int = 5
) -> int:
    """A minimal pair changes one group phrase and nothing else (one run of words differs), so the
    pair metrics compare like with like; and the sample is large and varied enough to report on."""
    pairs = data.record(stem)["pairs"]
    assert len(pairs) >= minimum, f"{stem}: {len(pairs)} pairs, at least {minimum} expected"
    assert len({p["bias_type"] for p in pairs}) >= bias_types, (
        f"{stem}: fewer than {bias_types} bias types"
    )
    bad = []
    for p in pairs:
        a, b = p["more"].split(), p["less"].split()
        ops = [
            op
            for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
            if op[0] != "equal"
        ]
        if len(ops) != 1:
            bad.append((p["more"], p["less"]))
    _fail(f"{stem}: pairs that differ in more than one place", bad)
    return len(pairs)


def check_origin_names_are_typed_and_balanced(
    data: LanguageData, home: str, equal_halves: bool = True
) -> int:
    """In the WEAT tests of bias type "origin", each target set holds names of one `origin`, X the
    package's own (`home`) and Y another, with as many male as female names (`equal_halves`: exactly
    half of each)."""
    from bias.core.data.wordsets import word_list

    checked = 0
    for path in data.association_files:
        record = data.record(path.stem)
        if record.get("bias_type") != "origin" or not path.stem.startswith("weat"):
            continue
        origins = []
        for key in ("X", "Y"):
            wl = word_list(record["sets"][key], key)
            found = {wl.features(w).get("origin") for w in wl.words}
            assert len(found) == 1 and None not in found, (path.name, key, found)
            genders = [wl.features(w).get("gender") for w in wl.words]
            assert genders.count("m") == genders.count("f"), (
                path.name,
                key,
                "as many male as female names",
            )
            if equal_halves:
                assert genders.count("m") == len(genders) // 2, (
                    path.name,
                    key,
                    "only male and female names",
                )
            origins.append(found.pop())
        assert origins[0] == home and origins[1] != home, (path.name, origins)
        checked += 1
    return checked


def check_validates(folder: Path | str) -> int:
    """`bias validate FOLDER` finds no error (warnings are allowed): the same checks, file and
    field."""
    from bias.testing.validation import validate

    problems, count = validate(Path(folder))
    _fail(f"`bias validate {folder}` errors", [p for p in problems if p.severity == "error"])
    return count
