"""The `bbq-prompts` word-set kind: how BBQ questions are put to a model that answers in text, and
how its replies are read, in one language.

A chat model is asked a question with its three answers listed as options (A), (B), (C), and writes
a reply. MBBQ (Neplenbroek et al. 2024) asks each question in five prompts and reports how much the
scores move between them; a language package ships at least three prompt variants of its own and the
rules that read replies in its language:

```toml
kind = "bbq-prompts"
language = "nl"
bias_type = "mixed"
source = "..."
licence = "..."
letters = ["A", "B", "C"]           # the option labels the prompts use, in answer order

[[variants]]
name = "plain"                       # a-z, 0-9, . _ -; names the variant in results and reports
prompt = "{context} {question}\n(A) {ans0}\n(B) {ans1}\n(C) {ans2}\nAntwoord:"
system = ""                          # optional system message sent with this variant

[rules]                              # phrases, matched case-insensitively, each a few words
answer_before = ["het antwoord is"]  # the answer follows the phrase ("het antwoord is (B)")
answer_after = ["is het juiste antwoord"]  # the answer precedes it ("(B) is het juiste antwoord")
unknown = ["valt niet te zeggen"]    # the reply says the context does not tell: the unknown answer
refusal = ["ik kan hier niet op antwoorden"]  # the reply declines to answer at all
articles = ["de", "het", "een"]      # words an answer may open with that a reply may leave out
unknown_answers = ["Onbekend"]       # wordings of the unknown answer, for the lm-eval preset
```

A prompt holds the placeholders {context}, {question}, {ans0}, {ans1} and {ans2}, each plain (no
format specification, conversion or index), and may hold no others; write a literal brace twice.
Each answer's placeholder follows its letter ("(B) {ans1}"), since replies are read by the letters.
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

import attrs

from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors
from bias.core.model import WordSetMeta
from bias.core.data.bias_questions import MAX_FIELD_USES, MAX_TEMPLATE_CHARS, fill

BBQ_PROMPTS = "bbq-prompts"
PLACEHOLDERS = ("context", "question", "ans0", "ans1", "ans2")
RULE_KEYS = ("answer_before", "answer_after", "unknown", "refusal", "articles", "unknown_answers")
VARIANT_KEYS = ("name", "prompt", "system")
MIN_VARIANTS = (
    1  # a file may hold one; the language packages ship at least three (their tests check)
)
MAX_PHRASE = 200  # characters: a rule is a phrase, not a paragraph
MIN_READING_PHRASE = 3  # characters of an unknown or refusal phrase
MAX_PROMPT = 4_000  # characters of a prompt or system text (the shipped ones hold 200 at most)


@attrs.frozen
class PromptVariant:
    name: str
    prompt: str
    system: str = ""

    def render(self, context: str, question: str, answers: tuple[str, ...]) -> str:
        return fill(
            self.prompt,
            context=context,
            question=question,
            ans0=answers[0],
            ans1=answers[1],
            ans2=answers[2],
        )


@attrs.frozen
class ReadingRules:
    """How replies in one language are read (see bias.core.bbq.extraction): phrases as written
    (NFC); the default reading compares them case-folded."""

    answer_before: tuple[str, ...] = ()
    answer_after: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    refusal: tuple[str, ...] = ()
    articles: tuple[str, ...] = ()
    unknown_answers: tuple[str, ...] = ()  # wordings of the unknown answer: continuations to score


@attrs.frozen
class BbqPrompts:
    meta: WordSetMeta
    letters: tuple[str, str, str]
    variants: tuple[PromptVariant, ...]
    rules: ReadingRules

    @property
    def name(self) -> str:
        return self.meta.name

    def variant(self, name: str) -> PromptVariant | None:
        return next((v for v in self.variants if v.name == name), None)


def fold(text: str) -> str:
    """A phrase or a reply as the rules compare them: NFC, case-folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def template_problems(text: Any, wanted: tuple[str, ...]) -> str | None:
    """Why `text` is not a prompt with exactly the plain placeholders `wanted` (each at least once),
    or None when it is one."""
    if not isinstance(text, str) or not text.strip():
        return "must be a non-empty text"
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"is not a well-formed template ({exc}; write a literal brace twice: {{{{ }}}})"
    if len(text) > MAX_TEMPLATE_CHARS:
        return (
            f"is {len(text):,} characters long; a prompt template has at most "
            f"{MAX_TEMPLATE_CHARS:,}"
        )
    found: list[str] = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if spec or conversion or name not in wanted:
            shown = (
                "{"
                + name
                + ("!" + conversion if conversion else "")
                + (":" + spec if spec else "")
                + "}"
            )
            return (
                f"holds {shown}; only the plain placeholders "
                f"{', '.join('{' + w + '}' for w in wanted)} are allowed"
            )
        found.append(name)
        if found.count(name) > MAX_FIELD_USES:
            return (
                f"holds {{{name}}} more than {MAX_FIELD_USES} times; each placeholder is "
                f"written at most {MAX_FIELD_USES} times"
            )
    missing = [w for w in wanted if w not in found]
    if missing:
        return f"lacks {', '.join('{' + w + '}' for w in missing)}"
    return None


def label_problems(prompt: str, letters: Any) -> str | None:
    """Why `prompt` does not label each answer with its letter, or None when it does: the text
    between the previous placeholder and {ans<i>} must hold letters[i] as a word ("(B) {ans1}").
    Replies are read by the letters, so a prompt that lists "(A) {ans1}" or letters given in
    another order would have every reply read as another answer than the one it gave."""
    if not isinstance(letters, list) or len(letters) != 3:
        return None  # the letters' own problem, reported for `letters`
    before = ""
    for literal, name, _, _ in string.Formatter().parse(prompt):
        before += literal
        if name is None:
            continue
        if name in ("ans0", "ans1", "ans2"):
            letter = str(letters[int(name[3])]).strip()
            if not re.search(r"(?<!\w)" + re.escape(letter) + r"(?!\w)", before):
                return (
                    f"lists {{{name}}} without its letter {letter!r} before it (since the "
                    "previous "
                    "placeholder); replies are read by the letters "
                    f"{', '.join(map(str, letters))}, "
                    "in that order"
                )
        before = ""
    return None


def _phrases(value: Any, field: str, file: str, problems: list[Problem]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(Problem(file, field, "must be a list of non-empty texts"))
        return ()
    for v in value:
        if field.split(".")[-1] in ("unknown", "refusal") and len(v.strip()) < MIN_READING_PHRASE:
            # a reply holding it reads as the unknown answer: "a" or "de" is in nearly every one
            problems.append(
                Problem(
                    file,
                    field,
                    f"{v!r} is shorter than {MIN_READING_PHRASE} characters; a phrase that "
                    "says the context does not tell is found in almost any reply",
                )
            )
        if len(v) > MAX_PHRASE:
            problems.append(
                Problem(
                    file,
                    field,
                    f"{v[:40]!r}... is longer than {MAX_PHRASE} characters; a rule is a phrase",
                )
            )
    return tuple(v for v in value)


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a bbq-prompts record, naming the field."""
    problems = check_meta(data, file, ("letters", "variants", "rules"))
    letters = data.get("letters", ["A", "B", "C"])
    if (
        not isinstance(letters, list)
        or len(letters) != 3
        or not all(isinstance(x, str) and x.strip() for x in letters)
        or len({x.strip().casefold() for x in letters}) != 3
        or any(len(x.strip()) > 3 or not x.strip().isprintable() for x in letters)
    ):
        problems.append(
            Problem(
                file,
                "letters",
                "must be three different short labels of printable characters, "
                'e.g. ["A", "B", "C"]',
            )
        )
    variants = data.get("variants")
    if not isinstance(variants, list) or len(variants) < MIN_VARIANTS:
        problems.append(
            Problem(
                file,
                "variants",
                "missing or empty: give [[variants]] tables with a name and a prompt",
            )
        )
        variants = []
    seen: set[str] = set()
    for i, entry in enumerate(variants):
        field = f"variants[{i}]"
        if not isinstance(entry, dict):
            problems.append(Problem(file, field, "must be a table with a name and a prompt"))
            continue
        name = entry.get("name")
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
        ):
            problems.append(
                Problem(
                    file,
                    f"{field}.name",
                    f"{name!r} must be a short name of a-z, 0-9, '.', '_' or '-'",
                )
            )
        elif name in seen:
            problems.append(Problem(file, f"{field}.name", f"repeats the variant name {name!r}"))
        else:
            seen.add(name)
        prompt = entry.get("prompt")
        why = template_problems(prompt, PLACEHOLDERS)
        if not why and len(prompt) > MAX_PROMPT:
            why = f"is {len(prompt):,} characters long, more than a prompt needs ({MAX_PROMPT:,})"
        if not why:
            why = label_problems(prompt, letters)
        if why:
            problems.append(Problem(file, f"{field}.prompt", why))
        system = entry.get("system", "")
        if not isinstance(system, str):
            problems.append(Problem(file, f"{field}.system", "must be a text"))
        elif len(system) > MAX_PROMPT:
            problems.append(
                Problem(
                    file,
                    f"{field}.system",
                    f"is {len(system):,} characters long, more than a system text needs "
                    f"({MAX_PROMPT:,})",
                )
            )
        for key in entry:
            if key not in VARIANT_KEYS:
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        f"unknown field (known: {', '.join(VARIANT_KEYS)})",
                        "warning",
                    )
                )
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        problems.append(Problem(file, "rules", "must be a table of phrase lists"))
        rules = {}
    for key, value in rules.items():
        if key not in RULE_KEYS:
            problems.append(
                Problem(
                    file,
                    f"rules.{key}",
                    f"unknown field (known: {', '.join(RULE_KEYS)})",
                    "warning",
                )
            )
        else:
            _phrases(value, f"rules.{key}", file, problems)
    return problems


def build(data: dict[str, Any], name: str, path: str) -> BbqPrompts:
    """BbqPrompts from a checked record; raises BiasError naming the first error."""
    raise_on_errors(check(data, path), path)
    rules = data.get("rules", {})
    found: list[Problem] = []
    reading = ReadingRules(
        **{
            k: tuple(
                unicodedata.normalize("NFC", v).strip()
                for v in _phrases(rules.get(k), k, path, found)
            )
            for k in RULE_KEYS
        }
    )
    variants = tuple(
        PromptVariant(
            v["name"],
            unicodedata.normalize("NFC", v["prompt"]),
            unicodedata.normalize("NFC", v.get("system", "") or ""),
        )
        for v in data["variants"]
    )
    letters = tuple(x.strip() for x in data.get("letters", ["A", "B", "C"]))
    meta = meta_of(data, path, name)
    if meta.kind != BBQ_PROMPTS:
        meta = attrs.evolve(meta, kind=BBQ_PROMPTS)
    return BbqPrompts(meta, letters, variants, reading)  # type: ignore[arg-type]


__all__ = [
    "BBQ_PROMPTS",
    "BbqPrompts",
    "PLACEHOLDERS",
    "PromptVariant",
    "ReadingRules",
    "build",
    "check",
    "fold",
    "template_problems",
]
