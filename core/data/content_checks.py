"""Checks of what a word set says, beyond its format: the mistakes careful authors of test data look
for.

`bias validate` runs them on any file or package, ours or a third party's. Each finding is a
warning, because each can be a deliberate choice; the file's `notes` are where such a choice is
explained.

- a stimulus that shares its stem with a word of the opposite set (`behindert` / `nichtbehindert`):
  sub-word models put the two sets close together and the test loses sensitivity;
- a word that stands in two sets of one test (it cannot be both target X and attribute A);
- a set whose words are far more or less frequent than its counterpart's, when a frequency list is
  given (frequency alone moves cosine similarities in static embeddings);
- a template that was written for a word (its `when` conditions hold) but whose agreement
  placeholder (`{word.article}`) finds no value for it, so the word silently loses the sentence;
- a word of the package's list of known ambiguous words (`data/ambiguous-words.txt`), unless the
  test's notes name it (a documented decision);
- a multi-word stimulus ("carro armato") in a word-level test: a static model (fastText, word2vec,
  GloVe) has no vector for a phrase (fastText splits on whitespace, so not even sub-words help), and
  a set that loses more than the lost-word threshold is refused there. A note instead of a warning
  when the notes name every such stimulus (or each of its words), as the test then says it is meant
  for sentence encoders;
- attribute sets A and B whose sizes differ by more than SIZE_GAP of the larger: the shorter set
  weighs each of its words more in every s(w, A, B) (targets X and Y of different sizes are reported
  by the format checks, since the permutation test then changes);
- a sentence pair whose sentences differ in more than MAX_PAIR_WORDS words, or share less than half
  of their words: a minimal pair changes only its group words (and the words that agree with them),
  unless the pair's `note` explains. The check counts words; it cannot tell a group word from an
  attribute word, so a pair that swaps "bad" for "good" beside the group word is a reader's catch.
"""

from __future__ import annotations

import io
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bias.core.data import grammar
from bias.core.data.wordsets import SET_KEYS, Problem, normalise, word_entry, word_list
from bias.core.errors import BiasError
from bias.core.data.file_reading import read_text
from bias.core.model import LOST_THRESHOLD
from bias.core.regular_files import open_regular

AMBIGUOUS_FILE = "ambiguous-words.txt"
# the largest published frequency lists (wordfreq, FrequencyWords) take tens of megabytes
MAX_FREQUENCY_LIST = 128 * 2**20
MAX_LINE_CHARS = 4096
OPPOSITE = (("X", "Y"), ("A", "B"))
MIN_STEM = 5  # shorter shared pieces (un-, on-, -heid) are affixes, not stems
MIN_PREFIX = 7  # a common beginning this long is a shared stem (funksjonsfrisk / funksjonshemmet)
FREQUENCY_RATIO = 10.0  # geometric means of counterpart sets further apart than this are reported
SETS_KINDS = ("association", "lpbs")
SIZE_GAP = (
    0.2  # counterpart sets whose sizes differ by more than this share of the larger are reported
)
MAX_PAIR_WORDS = 3  # words a minimal pair may change (a group word and the words agreeing with it)
MULTI_WORD = "multi-word"  # Problem.code of a multi-word stimulus finding


def shared_stem(a: str, b: str) -> str | None:
    """The stem two words share, if any: one contains the other (valide / invalide), or they begin
    with the same long stretch (güvenilir / güvenilmez)."""
    a, b = normalise(a), normalise(b)
    if a == b:
        return None
    short, long = sorted((a, b), key=len)
    if len(short) >= MIN_STEM and short in long:
        return short
    prefix = 0
    for x, y in zip(a, b):
        if x != y:
            break
        prefix += 1
    return a[:prefix] if prefix >= MIN_PREFIX else None


def _words(data: Mapping[str, Any], key: str) -> list[str]:
    entry = (data.get("sets") or {}).get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("words"), list):
        return []
    return [w for w, _ in map(word_entry, entry["words"]) if isinstance(w, str) and w.strip()]


def _documented(word: str, notes: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(normalise(word))}(?!\w)", normalise(notes)) is not None


def check_stems(data: Mapping[str, Any], file: str) -> list[Problem]:
    problems = []
    notes = str(data.get("notes", ""))
    for left, right in OPPOSITE:
        for i, a in enumerate(_words(data, left)):
            for b in _words(data, right):
                stem = shared_stem(a, b)
                if stem and not (_documented(a, notes) and _documented(b, notes)):
                    problems.append(
                        Problem(
                            file,
                            f"sets.{left}.words[{i}]",
                            f"'{a}' shares the stem '{stem}' with '{b}' of set {right}: "
                            "sub-word models put the two "
                            "sets close together; choose a word with its own stem",
                            "warning",
                        )
                    )
    return problems


def check_cross_duplicates(data: Mapping[str, Any], file: str) -> list[Problem]:
    problems = []
    first: dict[str, str] = {}
    for key in SET_KEYS:
        for i, word in enumerate(_words(data, key)):
            norm = normalise(word)
            if norm in first and first[norm] != key:
                problems.append(
                    Problem(
                        file,
                        f"sets.{key}.words[{i}]",
                        f"'{word}' is also in set {first[norm]}: a word belongs to one set "
                        "of a test",
                        "warning",
                    )
                )
            first.setdefault(norm, key)
    return problems


def read_frequencies(path: Path) -> dict[str, float]:
    """A frequency list: `word count` per line (wordfreq, FrequencyWords, word2vec vocab files), or
    one word per line in rank order, whose counts are then estimated as 1/rank (Zipf)."""
    counts: dict[str, float] = {}
    with (
        open_regular(path, limit=MAX_FREQUENCY_LIST, what="frequency list") as raw,
        io.TextIOWrapper(raw, "utf-8") as fh,
    ):
        for rank, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS + 1), ""), start=1):
            if len(line) > MAX_LINE_CHARS:
                raise BiasError(
                    f"{path}: line {rank} is longer than {MAX_LINE_CHARS:,} characters; a "
                    "frequency list has a word and a count per line.",
                    "Give a frequency list (word count, one per line).",
                )
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            count = 1.0 / rank
            if len(parts) >= 2:
                try:
                    count = float(parts[-1])
                except ValueError:
                    pass
            counts.setdefault(normalise(unicodedata.normalize("NFC", parts[0])), count)
    return counts


def check_frequencies(
    data: Mapping[str, Any], file: str, frequencies: Mapping[str, float]
) -> list[Problem]:
    """Counterpart sets (X/Y, A/B) whose geometric mean frequencies differ by more than
    FREQUENCY_RATIO. Words missing from the list count as half the rarest listed count."""
    if not frequencies:
        return []
    floor = (
        min(v for v in frequencies.values() if v > 0) / 2
        if any(v > 0 for v in frequencies.values())
        else 1.0
    )
    problems = []
    for left, right in OPPOSITE:
        means = {}
        for key in (left, right):
            words = _words(data, key)
            if not words:
                break
            means[key] = sum(
                math.log10(max(frequencies.get(normalise(w), floor), floor)) for w in words
            ) / len(words)
        if len(means) != 2:
            continue
        ratio = 10 ** abs(means[left] - means[right])
        if ratio > FREQUENCY_RATIO:
            rarer = left if means[left] < means[right] else right
            problems.append(
                Problem(
                    file,
                    f"sets.{rarer}",
                    f"set {rarer} is {ratio:.0f} times rarer than set "
                    f"{right if rarer == left else left} (geometric mean "
                    "frequency): frequency alone moves similarities; choose words of "
                    "comparable frequency",
                    "warning",
                )
            )
    return problems


def read_ambiguous(path: Path) -> dict[str, str]:
    """`word: the sense that competes with the intended one` per line; `#` starts a comment."""
    found: dict[str, str] = {}
    if not path.is_file():
        return found
    for line in read_text(path, "list of ambiguous words").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        word, _, why = line.partition(":")
        if word.strip():
            found[normalise(unicodedata.normalize("NFC", word))] = why.strip()
    return found


def check_ambiguous(
    data: Mapping[str, Any], file: str, ambiguous: Mapping[str, str], source: str = AMBIGUOUS_FILE
) -> list[Problem]:
    """Stimuli (and debiasing-list entries) that the package lists as ambiguous, unless the notes
    name them."""
    if not ambiguous:
        return []
    notes = str(data.get("notes", ""))
    located: list[tuple[str, str]] = []
    if data.get("kind", "association") in SETS_KINDS:
        located = [
            (f"sets.{key}.words[{i}]", w)
            for key in SET_KEYS
            for i, w in enumerate(_words(data, key))
        ]
    elif data.get("kind") == "debias-lists":
        for field in ("definitional", "equalize", "direction"):
            entries = data.get(field) or []
            for i, entry in enumerate(entries):
                members = entry if isinstance(entry, list) else [entry]
                located.extend((f"{field}[{i}]", w) for w in members if isinstance(w, str))
    problems = []
    for field, word in located:
        why = ambiguous.get(normalise(word))
        if why is not None and not _documented(word, notes):
            problems.append(
                Problem(
                    file,
                    field,
                    f"'{word}' is listed in {source} as ambiguous "
                    f"({why or 'see the list'}); replace it, or say in notes why it stays",
                    "warning",
                )
            )
    return problems


def unresolved_agreement(
    templates: Iterable[Any],
    forms: Mapping[str, grammar.FormsTable],
    words: Mapping[str, tuple[str, Mapping[str, str]]],
    language: str | None,
) -> list[tuple[str, str]]:
    """(template text, placeholder) for each template that addresses these words (its `when` holds,
    its word forms exist) but leaves an agreement placeholder without a value."""
    out = []
    for template in templates:
        if not template.when or not grammar.matches(template.when, words):
            continue
        if grammar.render(template.text, words, forms, template.when, language) is not None:
            continue
        for p in grammar.parse(template.text):
            if p.slot not in words:
                continue
            features = words[p.slot][1]
            if p.kind == "form" and p.feature not in features:
                break  # a missing word form (plural) is how templates select words: not a mistake
        else:
            for p in grammar.parse(template.text):
                if (
                    p.kind == "feature"
                    and p.slot in words
                    and grammar.value(p.feature, words[p.slot][1], forms) is None
                ):
                    out.append((template.text, "{" + template.text[p.start + 1 : p.end - 1] + "}"))
                    break
    return out


def agreement_problem(
    file: str, field: str, word: str, template: str, placeholder: str, features: Mapping[str, str]
) -> Problem:
    have = ", ".join(f"{k}={v}" for k, v in features.items()) or "none"
    return Problem(
        file,
        field,
        f"'{word}' meets the conditions of template \"{template}\" but {placeholder} has "
        "no value for it (its grammar: "
        f"{have}); add the feature or the forms-table entry",
        "warning",
    )


def check_lpbs_agreement(data: Mapping[str, Any], file: str) -> list[Problem]:
    """LPBS templates over every (target, attribute) pair."""
    from bias.core.data.templates import parse_templates

    forms, _ = grammar.forms_from_record(data.get("forms"))
    templates = parse_templates(data.get("templates"))
    lists = {key: word_list(data["sets"][key], key) for key in SET_KEYS}
    problems, seen = [], set()
    for t_key in ("X", "Y"):
        for t in lists[t_key].words:
            for a_key in ("A", "B"):
                for a in lists[a_key].words:
                    words = {
                        "target": (t, lists[t_key].features(t)),
                        "attribute": (a, lists[a_key].features(a)),
                    }
                    for text, placeholder in unresolved_agreement(
                        templates, forms, words, data.get("language")
                    ):
                        slot = placeholder.strip("{}").split(".")[0].lower()
                        key, word = (t_key, t) if slot == "target" else (a_key, a)
                        if (word, text) not in seen:
                            seen.add((word, text))
                            problems.append(
                                agreement_problem(
                                    file, f"sets.{key}", word, text, placeholder, words[slot][1]
                                )
                            )
    return problems


def multi_word(words: Iterable[str]) -> list[str]:
    """The stimuli that are phrases (more than one whitespace-separated word)."""
    return [w for w in words if len(w.split()) > 1]


def multi_word_entries(test: Any) -> dict[str, list[str]]:
    """Per set of a word-level association test, its multi-word stimuli (empty for other kinds, and
    for tests whose stimuli are sentences)."""
    if (
        not hasattr(test, "sets")
        or getattr(test, "stimuli", "words") != "words"
        or getattr(test.meta, "kind", "") != "association"
    ):
        return {}
    return {key: found for key, wl in test.sets().items() if (found := multi_word(wl.words))}


def static_loss(words: list[str], lost: list[str], threshold: float) -> str:
    """How a set fares on a static model that loses `lost`, in words: "3 of 8 lost (38% >
    20% allowed: the test is refused)" or "1 of 8 lost (12%, within 20%)"."""
    share = len(lost) / len(words) if words else 0.0
    verdict = (
        f"> {threshold:.0%} allowed: the test is refused"
        if share > threshold
        else f"within the {threshold:.0%} allowed"
    )
    return f"{len(lost)} of {len(words)} lost ({share:.0%}, {verdict})"


def check_multi_word(
    data: Mapping[str, Any], file: str, threshold: float | None = None
) -> list[Problem]:
    """Multi-word stimuli of a word-level association test, one finding per set that has any."""
    threshold = LOST_THRESHOLD if threshold is None else threshold
    notes = str(data.get("notes", ""))
    problems = []
    for key in SET_KEYS:
        words = _words(data, key)
        phrases = multi_word(words)
        if not phrases:
            continue
        documented = all(
            _documented(p, notes) or all(_documented(w, notes) for w in p.split()) for p in phrases
        )
        problems.append(
            Problem(
                file,
                f"sets.{key}",
                f"{len(phrases)} multi-word stimuli "
                f"({', '.join(phrases[:6])}{', ...' if len(phrases) > 6 else ''}): static "
                "models "
                "(fastText, word2vec, GloVe) have no vector for a phrase, "
                f"{static_loss(words, phrases, threshold)}; "
                + (
                    "the notes name them"
                    if documented
                    else "use single words, or say in notes that the test is for sentence "
                    "encoders (SEAT)"
                ),
                "note" if documented else "warning",
                MULTI_WORD,
            )
        )
    return problems


def check_set_sizes(data: Mapping[str, Any], file: str) -> list[Problem]:
    """Attribute sets whose sizes differ by more than SIZE_GAP of the larger one."""
    n, m = len(_words(data, "A")), len(_words(data, "B"))
    if not (n and m and abs(n - m) / max(n, m) > SIZE_GAP):
        return []
    return [
        Problem(
            file,
            f"sets.{'B' if m < n else 'A'}",
            f"set A has {n} words and set B {m} (more than {SIZE_GAP:.0%} apart): the "
            "shorter set weighs each of its words "
            "more in every association s(w, A, B); give counterpart sets equal sizes",
            "warning",
        )
    ]


def pair_difference(
    more: str, less: str
) -> tuple[list[tuple[int, int, int, int]], list[str], list[str]]:
    """Where two sentences differ, as word-index opcodes (i1, i2, j1, j2) of the changed stretches,
    and the two sentences' words (case-folded)."""
    import difflib

    from bias.core.data.minimal_pairs import words_of

    a, b = words_of(more), words_of(less)
    ops = [
        (i1, i2, j1, j2)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if tag != "equal"
    ]
    return ops, a, b


def check_pair_spans(data: Mapping[str, Any], file: str) -> list[Problem]:
    """Sentence pairs that change more than their group words (see MAX_PAIR_WORDS), unless their
    `note` explains."""
    problems = []
    for i, entry in enumerate(data.get("pairs") or []):
        if (
            not isinstance(entry, dict)
            or entry.get("note")
            or not all(isinstance(entry.get(k), str) for k in ("more", "less"))
        ):
            continue
        ops, a, b = pair_difference(entry["more"], entry["less"])
        changed = max(sum(i2 - i1 for i1, i2, _, _ in ops), sum(j2 - j1 for _, _, j1, j2 in ops))
        shared = max(len(a), len(b)) - changed
        if not set(a) & set(b):
            continue  # no common context at all: the format checks report that pair
        if changed > MAX_PAIR_WORDS or (ops and shared * 2 < max(len(a), len(b))):
            where = "; ".join(
                f"'{' '.join(a[i1:i2])}' / '{' '.join(b[j1:j2])}'" for i1, i2, j1, j2 in ops[:4]
            )
            line = entry.get("line")
            problems.append(
                Problem(
                    file,
                    f"pairs[{i}]",
                    f"{f'line {line}: ' if isinstance(line, int) else ''}the sentences "
                    f"differ in {changed} words ({where}), more "
                    f"than a group span of {MAX_PAIR_WORDS}: a pair changes only its group "
                    "words; rewrite it, or explain in its note",
                    "warning",
                )
            )
    return problems


def check_record_content(
    data: Mapping[str, Any],
    file: str,
    ambiguous: Mapping[str, str] | None = None,
    frequencies: Mapping[str, float] | None = None,
) -> list[Problem]:
    """Every content check that applies to one record of a file that passed the format checks."""
    kind = data.get("kind", "association")
    problems: list[Problem] = []
    if kind in SETS_KINDS and data.get("stimuli") != "sentences":
        problems += check_stems(data, file)
        problems += check_cross_duplicates(data, file)
        problems += check_set_sizes(data, file)
        if kind == "association":
            problems += check_multi_word(data, file)
        if frequencies:
            problems += check_frequencies(data, file, frequencies)
    if kind == "lpbs":
        problems += check_lpbs_agreement(data, file)
    if kind == "pairs":
        problems += check_pair_spans(data, file)
    if ambiguous:
        problems += check_ambiguous(data, file, ambiguous)
    return problems
