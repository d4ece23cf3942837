"""The `stereoset` word-set kind: StereoSet's intrasentence examples (Nadeem et al. 2021).

An example is a context with one slot, the word BLANK ("The librarian was BLANK."), about a target
term ("librarian") of a domain ("profession"), and three sentences that fill the slot: one with a
stereotype, one with an anti-stereotype and one with an unrelated word. The `stereoset` metric asks
how often a language model prefers the stereotype, and how often it prefers a meaningful filling to
the unrelated one.

The record keeps StereoSet's own layout, so that a message names a field exactly as the published
JSON files (`dev.json`, `test.json`) spell it, whichever way the file was written:

```toml
kind = "stereoset"
language = "en"
bias_type = "mixed"
source = "..."
licence = "..."

[[data.intrasentence]]
id = "librarian-1"                # unique
bias_type = "profession"          # the domain: reports give every score per domain
target = "librarian"              # the target term: scores are averaged over terms
context = "The librarian was BLANK."

[[data.intrasentence.sentences]]
id = "librarian-1-s"              # unique
sentence = "The librarian was quiet."
gold_label = "stereotype"         # stereotype | anti-stereotype | unrelated, one sentence of each
labels = [{ human_id = "a1", label = "stereotype" }]   # optional: the annotators' labels (not used)
```

StereoSet's JSON files are read by the `stereoset-json` importer into the same record (other parts
of the file, such as `intersentence`, are ignored) and checked here like a TOML file.

The *template word* of a sentence is the word the metric scores on a masked LM: the sentence split
on single spaces, the word at the index of the context's word that contains BLANK, with every ASCII
punctuation character removed (as bias-bench reads it). A sentence whose template word is missing or
empty is refused here, before any model is loaded, rather than scored as nothing."""

from __future__ import annotations

import re
import string
from typing import Any, ClassVar

import attrs

from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors
from bias.core.model import STEREOSET, WordSetMeta
from bias.core.text import shown

BLANK = "BLANK"
STEREOTYPE, ANTI, UNRELATED = "stereotype", "anti-stereotype", "unrelated"
GOLD_LABELS = (STEREOTYPE, ANTI, UNRELATED)
PART = "data.intrasentence"
EXAMPLE_KEYS = ("id", "bias_type", "target", "context", "sentences")
SENTENCE_KEYS = ("id", "sentence", "labels", "gold_label")
_PUNCTUATION = frozenset(string.punctuation)
MAX_ERRORS = 100  # a file's errors listed before checking stops (a broken file would list millions)
ODD_SPACE, MAX_ODD_SPACES = "odd-space", 5  # a word at BLANK misread for its spaces: said so often
_ZERO_WIDTH = "\u180e\u200b\u2060\ufeff"  # spaces that str.isspace does not count
_SPACES = re.compile(f"[\\s{_ZERO_WIDTH}]+")
_ODD_SPACE = re.compile(f"[^\\S ]|[{_ZERO_WIDTH}]")  # any space but the plain one


def blank_word_index(context: str) -> int | None:
    """The index of the context's word (split on single spaces) that holds BLANK; None without
    one."""
    found = None
    for i, word in enumerate(context.split(" ")):
        if BLANK in word:
            found = i
    return found


def template_word(sentence: str, index: int) -> str | None:
    """The sentence's word at `index` (split on single spaces) without ASCII punctuation; None when
    the sentence has no word there."""
    words = sentence.split(" ")
    if index >= len(words):
        return None
    return _bare(words[index])


def _bare(word: str) -> str:
    return "".join(c for c in word if c not in _PUNCTUATION)


def _spaces_note(sentence: str, context: str | None) -> str:
    """What a message adds when a sentence lacks a word at BLANK's place for its spaces: a space
    character other than the plain one, or a double space, in it or in the context before BLANK."""
    before = context[: context.find(BLANK)] if context else ""
    for text, whose in ((sentence, "it holds"), (before, "the context holds, before BLANK,")):
        odd = _ODD_SPACE.search(text)
        found = f"the space character U+{ord(odd.group()):04X}" if odd else None
        found = found or ("a double space" if "  " in text else None)
        if found:
            return f" ({whose} {found}; words are split on single plain spaces)"
    return ""


@attrs.frozen
class StereoSentence:
    """One filling of an example's slot, with its gold label and its template word."""

    id: str
    sentence: str
    gold_label: str
    word: str


@attrs.frozen
class StereoExample:
    """A context with one BLANK, its domain and target term, and its three sentences (file
    order)."""

    limit_whole: ClassVar[bool] = True  # `--limit` keeps an example's three sentences together
    id: str
    bias_type: str
    target: str
    context: str
    sentences: tuple[StereoSentence, ...]
    index: int = 0  # its position in data.intrasentence, for messages

    def by_label(self, label: str) -> StereoSentence:
        return next(s for s in self.sentences if s.gold_label == label)

    @property
    def slot(self) -> tuple[int, int]:
        """The character span of BLANK in the context."""
        start = self.context.index(BLANK)
        return start, start + len(BLANK)

    @property
    def text(self) -> str:
        """The example on one line, as a reviewer reads it (`bias validate --render`)."""
        fillings = " | ".join(f"{label}: {self.by_label(label).sentence}" for label in GOLD_LABELS)
        return f"[{self.id}: {self.bias_type}, {self.target}] {self.context} ({fillings})"


@attrs.frozen
class StereoSetExamples:
    meta: WordSetMeta
    examples: tuple[StereoExample, ...]
    version: str = ""

    @property
    def name(self) -> str:
        return self.meta.name

    def domains(self) -> list[str]:
        return sorted({e.bias_type for e in self.examples})


def example_name(entry: Any, i: int) -> str:
    """How messages name an example: its place in data.intrasentence, and its id."""
    name = f"{PART}[{i}]"
    if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"].strip():
        name += f" (id {entry['id'].strip()!r})"
    return name


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and not _surrogate(value)


def _surrogate(value: str) -> bool:
    """Whether a string holds a lone surrogate (JSON's "\\ud800" escape): no character, so it cannot
    be written out as UTF-8 (the scores table, the report)."""
    return any("\ud800" <= c <= "\udfff" for c in value)


def _not_text(value: Any) -> str:
    """Why a value is not a usable string (for a field's message)."""
    if isinstance(value, str) and value.strip() and _surrogate(value):
        return (
            "holds a lone surrogate (a \\ud800-\\udfff escape), which is no character; fix the text"
        )
    return f"must be a non-empty string, not {shown(repr(value), 60)}"


def _check_labels(labels: Any, file: str, field: str) -> list[Problem]:
    if labels is None:
        return []
    good = isinstance(labels, list) and all(
        isinstance(lab, dict)
        and isinstance(lab.get("human_id"), str)
        and isinstance(lab.get("label"), str)
        for lab in labels
    )
    return (
        []
        if good
        else [
            Problem(file, field, "must be a list of {human_id, label} objects with string values")
        ]
    )


def check_sentence(
    entry: Any, field: str, file: str, word_at: int | None, context: str | None = None
) -> list[Problem]:
    """Problems of one sentence; `word_at` is the index of the context's BLANK word (None:
    unknown)."""
    if not isinstance(entry, dict):
        return [Problem(file, field, "must be an object with id, sentence and gold_label")]
    problems = []
    for key in ("id", "sentence"):
        if not _text(entry.get(key)):
            problems.append(Problem(file, f"{field}.{key}", _not_text(entry.get(key))))
    gold = entry.get("gold_label")
    if gold not in GOLD_LABELS:
        problems.append(
            Problem(
                file, f"{field}.gold_label", f"{gold!r} must be one of {', '.join(GOLD_LABELS)}"
            )
        )
    problems.extend(_check_labels(entry.get("labels"), file, f"{field}.labels"))
    if word_at is not None and _text(entry.get("sentence")):
        word = template_word(entry["sentence"], word_at)
        if word is None:
            problems.append(
                Problem(
                    file,
                    f"{field}.sentence",
                    f"has no word at position {word_at + 1} (split on spaces), "
                    "where the context has BLANK: its template word is missing"
                    + _spaces_note(entry["sentence"], context),
                )
            )
        elif not word:
            bare = entry["sentence"].split(" ")[word_at]
            problems.append(
                Problem(
                    file,
                    f"{field}.sentence",
                    f"its template word {bare!r} (at the place of BLANK) is empty "
                    "once punctuation is removed",
                )
            )
        elif context is not None:
            problems.extend(
                _misread(file, f"{field}.sentence", entry["sentence"], context, word_at)
            )
    return problems


def _misread(file: str, field: str, sentence: str, context: str, word_at: int) -> list[Problem]:
    """The word read at BLANK's place (split on plain spaces, StereoSet's rule) against the one
    there when both texts are split at every space (tabs, no-break, zero-width and double spaces
    too): where they differ, the space characters moved the word read, silently (a no-break space
    before BLANK in the context only made every example a tie)."""
    words = [w for w in _SPACES.split(context) if w]
    at = next((i for i, w in enumerate(words) if BLANK in w), None)
    there = [w for w in _SPACES.split(sentence) if w]
    if at is None or at >= len(there):
        return []
    read, meant = template_word(sentence, word_at), _bare(there[at])
    if read == meant:
        return []
    return [
        Problem(
            file,
            field,
            f"the word read at the place of BLANK is {shown(repr(read), 40)}, but split at every "
            f"space the sentence has {shown(repr(meant), 40)} there: words are split on plain "
            "spaces, so a tab, a no-break, zero-width or double space moves the word read; write "
            "single plain spaces",
            severity="warning",
            code=ODD_SPACE,
        )
    ]


def check_example(entry: Any, field: str, file: str) -> list[Problem]:
    """Every problem of one example, each naming the example and its field."""
    if not isinstance(entry, dict):
        return [
            Problem(
                file, field, "must be an object with id, bias_type, target, context and sentences"
            )
        ]
    problems: list[Problem] = []
    for key in ("id", "bias_type", "target", "context"):
        if not _text(entry.get(key)):
            problems.append(Problem(file, f"{field}.{key}", _not_text(entry.get(key))))
    word_at = None
    context = entry.get("context")
    if _text(context):
        count = context.count(BLANK)
        if count == 0:
            problems.append(
                Problem(
                    file,
                    f"{field}.context",
                    f"has no {BLANK}: an intrasentence context marks the slot "
                    f"its sentences fill with the word {BLANK}",
                )
            )
        elif count > 1:
            problems.append(
                Problem(
                    file,
                    f"{field}.context",
                    f"holds {BLANK} {count} times; an intrasentence context "
                    f"has exactly one (the slot its sentences fill)",
                )
            )
        else:
            word_at = blank_word_index(context)
    sentences = entry.get("sentences")
    if not isinstance(sentences, list) or not sentences:
        problems.append(
            Problem(
                file,
                f"{field}.sentences",
                "missing or empty: give the three sentences that fill BLANK",
            )
        )
        return problems
    seen: dict[Any, int] = {}
    for k, sentence in enumerate(sentences):
        problems.extend(check_sentence(sentence, f"{field}.sentences[{k}]", file, word_at, context))
        gold = sentence.get("gold_label") if isinstance(sentence, dict) else None
        if gold in GOLD_LABELS:
            if gold in seen:
                problems.append(
                    Problem(
                        file,
                        f"{field}.sentences[{k}].gold_label",
                        f"sentences[{seen[gold]}] and "
                        f"sentences[{k}] are both {gold!r}; an example has one sentence of "
                        "each gold label",
                    )
                )
            else:
                seen[gold] = k
    for gold in GOLD_LABELS:
        if gold not in seen:
            problems.append(
                Problem(
                    file,
                    f"{field}.sentences",
                    f"no sentence has gold_label {gold!r}; an example has "
                    f"one {STEREOTYPE}, one {ANTI} and one {UNRELATED} sentence",
                )
            )
    return problems


def _examples(data: dict[str, Any], file: str) -> tuple[list[Any] | None, list[Problem]]:
    part = data.get("data")
    if not isinstance(part, dict):
        return None, [
            Problem(
                file,
                "data",
                "missing or not an object: StereoSet's examples are under data.intrasentence",
            )
        ]
    examples = part.get("intrasentence")
    if examples is None:
        return None, [
            Problem(
                file,
                PART,
                "missing: the file has no intrasentence part (only intrasentence examples "
                "are scored)",
            )
        ]
    if not isinstance(examples, list) or not examples:
        return None, [Problem(file, PART, "must be a non-empty list of examples")]
    return examples, []


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a stereoset record (TOML or imported), naming the example and field."""
    problems = check_meta(data, file, ("data", "version"))
    version = data.get("version")
    if version is not None and (not isinstance(version, str) or _surrogate(version)):
        problems.append(
            Problem(
                file,
                "version",
                _not_text(version)
                if isinstance(version, str)
                else f"must be a string, not {shown(repr(version), 60)}",
            )
        )
    examples, found = _examples(data, file)
    problems.extend(found)
    if examples is None:
        return problems
    example_ids: dict[str, int] = {}
    sentence_ids: dict[str, str] = {}
    checked = len(problems)  # problems counted for `found_errors` so far
    found_errors = 0
    for i, entry in enumerate(examples):
        found_errors += sum(1 for p in problems[checked:] if p.severity == "error")
        checked = len(problems)
        if found_errors >= MAX_ERRORS:
            problems.append(
                Problem(
                    file,
                    PART,
                    f"checking stopped after {found_errors} errors, at example {i + 1:,} of "
                    f"{len(examples):,}: fix these first",
                )
            )
            break
        name = example_name(entry, i)
        problems.extend(check_example(entry, name, file))
        if not isinstance(entry, dict):
            continue
        key = entry.get("id")
        if isinstance(key, str) and key.strip():
            if key in example_ids:
                problems.append(
                    Problem(
                        file,
                        f"{name}.id",
                        f"repeats the id of {PART}[{example_ids[key]}]; ids must be unique",
                    )
                )
            example_ids.setdefault(key, i)
        for k, sentence in enumerate(entry.get("sentences") or []):
            sid = sentence.get("id") if isinstance(sentence, dict) else None
            if isinstance(sid, str) and sid.strip():
                if sid in sentence_ids:
                    problems.append(
                        Problem(
                            file,
                            f"{name}.sentences[{k}].id",
                            f"repeats the id of {sentence_ids[sid]}; "
                            "sentence ids must be unique (they name the scores)",
                        )
                    )
                sentence_ids.setdefault(sid, f"{name}.sentences[{k}]")
    return _few_odd_spaces(problems, file)


def _few_odd_spaces(problems: list[Problem], file: str) -> list[Problem]:
    """The warnings of spaces that misplace the word at BLANK for the first examples, and a count
    of the rest: a file written with tabs throughout would say the same thing once a sentence."""
    odd = [p for p in problems if p.code == ODD_SPACE]
    if len(odd) <= MAX_ODD_SPACES:
        return problems
    dropped = {id(p) for p in odd[MAX_ODD_SPACES:]}
    kept = [p for p in problems if id(p) not in dropped]
    more = Problem(
        file,
        PART,
        f"{len(dropped):,} more fields where the word at the place of BLANK is read wrong for "
        "their spaces, as above",
        severity="warning",
    )
    return [*kept, more]


def build(data: dict[str, Any], name: str, path: str) -> StereoSetExamples:
    """StereoSetExamples from a checked record; raises BiasError naming the first error."""
    raise_on_errors(check(data, path), path)
    examples = []
    for i, entry in enumerate(data["data"]["intrasentence"]):
        word_at = blank_word_index(entry["context"])
        assert word_at is not None  # checked: the context holds BLANK
        sentences = []
        for s in entry["sentences"]:
            word = template_word(s["sentence"], word_at)
            assert word  # checked: a non-empty template word
            sentences.append(StereoSentence(s["id"], s["sentence"], s["gold_label"], word))
        examples.append(
            StereoExample(
                entry["id"],
                entry["bias_type"],
                entry["target"],
                entry["context"],
                tuple(sentences),
                i,
            )
        )
    meta = meta_of(data, path, name)
    if meta.kind != STEREOSET:
        meta = attrs.evolve(meta, kind=STEREOSET)
    return StereoSetExamples(meta, tuple(examples), str(data.get("version") or ""))
