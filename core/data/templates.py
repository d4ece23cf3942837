"""Template sets (`kind = "templates"`): bleached sentences that put a word in context, for SEAT and
CEAT.

A template set is a list of sentences with one `word` slot, each with optional `when` conditions on
the word's grammar, plus forms tables (see `bias.core.data.grammar` for placeholders and agreement).
A word gets every sentence whose placeholders all have a value and whose conditions hold; a word
that gets none is reported as lost rather than put into a sentence that does not fit it.

`defaults` (optional) gives features a word is assumed to have when its test says nothing, e.g.
`defaults = { class = "any" }`, so that tests without grammar (imported WEAT .txt files) still find
the templates written for unclassified words; features a word does have always win.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

import attrs
from bias.core.data import grammar
from bias.core.data.grammar import FormsTable, Rendered
from bias.core.errors import BiasError
from bias.core.model import AssociationTest, WordSetMeta
from bias.core.data.wordsets import (
    Problem,
    check_features,
    check_meta,
    meta_of,
    raise_on_errors,
)

SLOT = "word"
KNOWN_FIELDS = ("slots", "forms", "templates", "defaults")
TEMPLATE_FIELDS = ("text", "when", "note")


@attrs.frozen
class Template:
    """One sentence pattern and the grammar a word needs for it (`{"word.class": ("thing",)}`)."""

    text: str
    when: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class TemplateSet:
    """A validated template set; `render` gives the sentences one word gets, each with the word's
    span."""

    meta: WordSetMeta
    templates: tuple[Template, ...]
    forms: Mapping[str, FormsTable] = attrs.field(factory=dict, hash=False)
    defaults: Mapping[str, str] = attrs.field(factory=dict, hash=False)

    @property
    def name(self) -> str:
        return self.meta.name

    def render(self, word: str, features: Mapping[str, str] | None = None) -> list[Rendered]:
        """Every applicable sentence for `word`, in file order (duplicate sentences kept once)."""
        merged = {**self.defaults, **(features or {})}
        out: list[Rendered] = []
        seen: set[str] = set()
        for template in self.templates:
            found = grammar.render(
                template.text, {SLOT: (word, merged)}, self.forms, template.when, self.meta.language
            )
            if found is not None and found.text not in seen:
                seen.add(found.text)
                out.append(found)
        return out


@attrs.frozen
class Sentence:
    """A stimulus sentence: its text, the character span of the word in it, and the word."""

    text: str
    span: tuple[int, int]
    word: str


@attrs.frozen
class SentenceSets:
    """The sentences of each set X, Y, A, B of an association test, and the words that got none."""

    sentences: Mapping[str, tuple[Sentence, ...]]
    lost: Mapping[str, tuple[str, ...]]

    def words(self, key: str) -> list[str]:
        """The words of set `key` that have at least one sentence, in order."""
        return list(dict.fromkeys(s.word for s in self.sentences[key]))


def sentence_sets(test: AssociationTest, templates: TemplateSet) -> SentenceSets:
    """SEAT stimuli: each word of each set rendered in every template that fits its grammar."""
    words = sum(len(wl.words) for wl in test.sets().values())
    chars = words * sum(len(t.text) for t in templates.templates)
    check_rendered(words * len(templates.templates), chars, f"{test.meta.name} in {templates.name}")
    sentences: dict[str, tuple[Sentence, ...]] = {}
    lost: dict[str, tuple[str, ...]] = {}
    for key, wl in test.sets().items():
        rows: list[Sentence] = []
        missing: list[str] = []
        for word in wl.words:
            rendered = templates.render(word, wl.features(word))
            if not rendered:
                missing.append(word)
            rows.extend(Sentence(r.text, r.spans[SLOT], word) for r in rendered)
        sentences[key] = tuple(rows)
        lost[key] = tuple(missing)
    return SentenceSets(sentences, lost)


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a template-set record, each with its field (`templates[3].text`)."""
    problems = check_meta(data, file, KNOWN_FIELDS)
    slots = data.get("slots", [SLOT])
    if slots != [SLOT]:
        problems.append(
            Problem(
                file,
                "slots",
                f'a template set has the one slot "word": write slots = ["{SLOT}"], not {slots!r}',
            )
        )
    forms, form_problems = grammar.forms_from_record(data.get("forms"))
    problems.extend(Problem(file, field, message) for field, message in form_problems)
    if "defaults" in data:
        problems.extend(check_features(data["defaults"], file, "defaults"))
    entries = data.get("templates")
    if not isinstance(entries, list) or not entries:
        problems.append(
            Problem(
                file,
                "templates",
                'missing or empty: give [[templates]] tables, each with text = "... {word} ..."',
            )
        )
        return problems
    if len(entries) > MAX_TEMPLATES:
        return [*problems, too_many_templates(file)]
    texts: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(entries):
        field = f"templates[{i}]"
        if isinstance(entry, str):
            entry = {"text": entry}
        if not isinstance(entry, dict):
            problems.append(
                Problem(file, field, "must be a table with `text` (and optionally `when`)")
            )
            continue
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append(
                Problem(
                    file,
                    f"{field}.text",
                    "missing or empty: the sentence with its {word} placeholder",
                )
            )
        else:
            for message in grammar.check(text, [SLOT], forms):
                problems.append(Problem(file, f"{field}.text", message))
            for p in _parsed(text):
                if p.kind == "feature" and p.feature not in forms:
                    problems.append(
                        Problem(
                            file,
                            f"{field}.text",
                            f"{{{p.slot}.{p.feature}}} has no forms table "
                            f"[forms.{p.feature}]: it applies only to words "
                            f"that carry the feature '{p.feature}' themselves",
                            "warning",
                        )
                    )
            same = (text, repr(entry.get("when")))
            if same in texts:
                problems.append(
                    Problem(file, f"{field}.text", f"repeats templates[{texts[same]}]", "warning")
                )
            texts.setdefault(same, i)
        problems.extend(_check_when(entry.get("when"), file, f"{field}.when"))
        for key in entry:
            if key not in TEMPLATE_FIELDS:
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        f"unknown field (known: {', '.join(TEMPLATE_FIELDS)})",
                        "warning",
                    )
                )
    return problems


# Each template is rendered with every word of every set: 250,000 templates of 32 words took 2 GB.
MAX_TEMPLATES = 1_000  # the largest shipped set has 36


MAX_SENTENCES = 200_000  # of one test; the largest shipped renders a few thousand
MAX_RENDERED = 64 * 2**20  # characters of the templates in them, as the text kept from a corpus


def too_many_templates(file: str) -> Problem:
    return Problem(file, "templates", f"more than {MAX_TEMPLATES:,} templates")


def rendering_problem(count: int, chars: int, what: str = "templates") -> str | None:
    """What is wrong with rendering `count` sentences holding `chars` characters of `what` (the
    templates, a decisions file's scenarios), if anything: more than any test needs, said before
    any is rendered."""
    if count > MAX_SENTENCES:
        return f"the {what} would render {count:,} sentences, more than {MAX_SENTENCES:,}"
    if chars > MAX_RENDERED:
        return f"the {what} would render {chars:,} characters, more than {MAX_RENDERED:,}"
    return None


def check_rendered(count: int, chars: int, what: str) -> None:
    if found := rendering_problem(count, chars):
        raise BiasError(f"{what}: {found}.", "Use fewer or shorter templates, or smaller sets.")


def _parsed(text: str) -> list[grammar.Placeholder]:
    try:
        return grammar.parse(text)
    except grammar.TemplateError:
        return []


def _check_when(when: Any, file: str, field: str) -> list[Problem]:
    return [
        Problem(file, f"{field}.{key}" if key else field, message)
        for key, message in grammar.check_when(when, (SLOT,))
    ]


def build(data: dict[str, Any], name: str, path: str) -> TemplateSet:
    """A TemplateSet from a checked record; raises BiasError naming the file and field on errors."""
    raise_on_errors(check(data, path), path)
    forms, _ = grammar.forms_from_record(data.get("forms"))
    defaults = {str(k): str(v) for k, v in (data.get("defaults") or {}).items()}
    return TemplateSet(
        meta_of(data, path, name), tuple(parse_templates(data["templates"])), forms, defaults
    )


def parse_templates(entries: Any) -> list[Template]:
    """Checked `[[templates]]` entries (a table with `text` and `when`, or a bare string) as
    Templates, NFC-normalised; shared by every kind of file that holds templates (SEAT templates,
    LPBS)."""
    out = []
    for entry in entries or []:
        if isinstance(entry, str):
            entry = {"text": entry}
        when = {
            str(k): tuple(
                unicodedata.normalize("NFC", str(v)) for v in (w if isinstance(w, list) else [w])
            )
            for k, w in (entry.get("when") or {}).items()
        }
        out.append(Template(unicodedata.normalize("NFC", entry["text"]), when))
    return out


__all__ = [
    "Rendered",
    "Sentence",
    "SentenceSets",
    "Template",
    "TemplateSet",
    "build",
    "check",
    "check_rendered",
    "MAX_RENDERED",
    "MAX_SENTENCES",
    "MAX_TEMPLATES",
    "parse_templates",
    "rendering_problem",
    "sentence_sets",
    "too_many_templates",
]
