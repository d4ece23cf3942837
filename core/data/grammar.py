"""Templates with grammatical agreement, filled from data: the mechanism every language package
uses.

A template is a sentence with placeholders for one or more slots (`word` in SEAT templates, `target`
and `attribute` in LPBS templates). A word carries its grammar as data (features such as `gender =
"f"`, `plural = "Rosen"`, `class = "thing"`), and a file may declare forms tables that derive a
value from a feature (`[forms.article] from = "gender"`, `m = "der"`, `f = "die"`, `n = "das"`). No
language rule lives in code, so German articles, Icelandic suffixed definites or Turkish suffix
harmony are all written in the data files.

Placeholders (a capital first letter capitalises the value, for sentence starts):

- `{word}`          the word as listed; its character span is the slot's span.
- `{word:plural}`   the word in the form given by its feature `plural` (a word form, so its span is
                    the slot's span): plural templates only apply to words that have a plural form.
- `{word.article}`  an agreement value: the word's own feature `article`, else the forms table
                    `article` looked up by the word's feature named in the table's `from`.

A template applies to a word only when every placeholder has a value and its `when` conditions
(`{ "word.class" = ["person", "name"] }`) hold; otherwise it is skipped for that word, which callers
count and report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from bias.core.data.record_bounds import MAX_TEXT_CHARS

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
_PARTS = re.compile(rf"^({_NAME})(?:([:.])({_NAME}))?$")

Features = Mapping[str, str]


@attrs.frozen
class Placeholder:
    slot: str  # lower-cased slot name: "word", "target", "attribute"
    kind: str  # "word" (the word itself), "form" (a word form), "feature" (an agreement value)
    feature: str  # the feature or form name; "" for kind "word"
    capital: bool
    start: int  # position of the placeholder in the template text
    end: int

    @property
    def is_head(self) -> bool:
        """Whether it stands for the word itself, so its span is the slot's span."""
        return self.kind in ("word", "form")


@attrs.frozen
class FormsTable:
    """Values of one placeholder feature, chosen by another feature of the word (`from`)."""

    name: str
    source: str
    values: Mapping[str, str]


@attrs.frozen
class Rendered:
    text: str
    spans: Mapping[str, tuple[int, int]]  # slot -> character span of its word in `text`


class TemplateError(ValueError):
    """A template string that cannot be parsed; the message says what is wrong."""


def parse(template: str) -> list[Placeholder]:
    """The placeholders of a template, in order; raises TemplateError for a malformed one."""
    out = []
    stray = PLACEHOLDER.sub("", template)
    if "{" in stray or "}" in stray:
        raise TemplateError(
            "unbalanced brace: placeholders are written {slot}, {slot:form} or {slot.feature}"
        )
    for m in PLACEHOLDER.finditer(template):
        inner = m.group(1).strip()
        parts = _PARTS.match(inner)
        if not parts:
            raise TemplateError(
                f"placeholder {{{m.group(1)}}} is not {{slot}}, {{slot:form}} or {{slot.feature}}"
            )
        slot, sep, feature = parts.group(1), parts.group(2), parts.group(3) or ""
        kind = "word" if not sep else ("form" if sep == ":" else "feature")
        out.append(Placeholder(slot.lower(), kind, feature, slot[0].isupper(), m.start(), m.end()))
    return out


def check(
    template: str, slots: Sequence[str], forms: Mapping[str, FormsTable] | None = None
) -> list[str]:
    """What is wrong with a template for the given slots: each slot's word exactly once, known
    slots; no longer than a model takes at once (it was refused only when encoded)."""
    if len(template) > MAX_TEXT_CHARS:
        return [f"longer than {MAX_TEXT_CHARS:,} characters, more than a model takes at once"]
    try:
        found = parse(template)
    except TemplateError as exc:
        return [str(exc)]
    problems = []
    for p in found:
        if p.slot not in slots:
            problems.append(f"unknown slot '{p.slot}' (this file's slots: {', '.join(slots)})")
    for slot in slots:
        heads = [p for p in found if p.slot == slot and p.is_head]
        if not heads:
            problems.append(f"no {{{slot}}} placeholder: the template must contain its {slot} slot")
        elif len(heads) > 1:
            problems.append(f"the {slot} slot appears {len(heads)} times; it must appear once")
    return problems


def check_when(when: Any, slots: Sequence[str]) -> list[tuple[str, str]]:
    """Problems of a template's `when` conditions as (sub-field, message) pairs ("" = the table)."""
    if when is None:
        return []
    example = f'{{ "{slots[0]}.class" = ["person", "name"] }}'
    if not isinstance(when, dict):
        return [("", f"must be a table such as {example}")]
    problems = []
    written = " or ".join(f'"{slot}.FEATURE"' for slot in slots)
    for key, wanted in when.items():
        slot, dot, feature = str(key).partition(".")
        if slot not in slots or not dot or not feature:
            problems.append(
                (str(key), f"unknown slot or feature: conditions are written {written}")
            )
        values = wanted if isinstance(wanted, list) else [wanted]
        if not values or not all(isinstance(v, str) for v in values):
            problems.append((str(key), "must be a string or a list of strings"))
    return problems


def value(feature: str, features: Features, forms: Mapping[str, FormsTable]) -> str | None:
    """An agreement value: the word's own feature, else the forms table chosen by its `from`
    feature."""
    if feature in features:
        return str(features[feature])
    table = forms.get(feature)
    if table is None:
        return None
    key = features.get(table.source)
    if key is None:
        return None
    found = table.values.get(str(key))
    return None if found is None else str(found)


def matches(when: Mapping[str, Any], words: Mapping[str, tuple[str, Features]]) -> bool:
    """Whether `when` conditions ({"word.class": "person" or [..]}) hold for the words in the
    slots."""
    for key, wanted in when.items():
        slot, _, feature = key.partition(".")
        if slot not in words or not feature:
            return False
        have = words[slot][1].get(feature)
        allowed = [str(w) for w in wanted] if isinstance(wanted, (list, tuple)) else [str(wanted)]
        if have is None or str(have) not in allowed:
            return False
    return True


def capitalise(text: str, language: str | None = None) -> str:
    """Upper-case the first letter; Turkish and Azerbaijani dotted i becomes İ, dotless ı becomes
    I."""
    if not text:
        return text
    first = text[0]
    if language in DOTTED_I_LANGUAGES and first in "iı":
        return ("İ" if first == "i" else "I") + text[1:]
    return first.upper() + text[1:]


DOTTED_I_LANGUAGES = ("tr", "az")


def render(
    template: str,
    words: Mapping[str, tuple[str, Features]],
    forms: Mapping[str, FormsTable] | None = None,
    when: Mapping[str, Any] | None = None,
    language: str | None = None,
) -> Rendered | None:
    """Fill a template; None when it does not apply to these words (a value missing or `when`
    false).

    `words` maps each slot to (word, its grammatical features); `language` decides how a capital is
    written (Turkish i -> İ). Spans are tracked while filling, never
    found afterwards by searching the text, so "he" inside "the" cannot be mistaken for a slot.
    """
    forms = forms or {}
    if when and not matches(when, words):
        return None
    pieces: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    cursor = 0
    length = 0
    for p in parse(template):
        literal = template[cursor : p.start]
        pieces.append(literal)
        length += len(literal)
        if p.slot not in words:
            return None
        word, features = words[p.slot]
        if p.kind == "word":
            text: str | None = word
        elif p.kind == "form":
            text = features.get(p.feature)
            text = None if text is None else str(text)
        else:
            text = value(p.feature, features, forms)
        if text is None:
            return None
        if p.capital:
            text = capitalise(text, language)
        if p.is_head:
            spans[p.slot] = (length, length + len(text))
        pieces.append(text)
        length += len(text)
        cursor = p.end
    pieces.append(template[cursor:])
    return Rendered("".join(pieces), spans)


def forms_from_record(data: Any) -> tuple[dict[str, FormsTable], list[tuple[str, str]]]:
    """Forms tables from a file's `[forms.NAME]` tables, and (field, problem) pairs."""
    tables: dict[str, FormsTable] = {}
    problems: list[tuple[str, str]] = []
    if data is None:
        return tables, problems
    if not isinstance(data, dict):
        return tables, [("forms", "must be a table of [forms.NAME] tables")]
    for name, entry in data.items():
        field = f"forms.{name}"
        if not isinstance(entry, dict):
            problems.append((field, "must be a table with `from` and one value per feature value"))
            continue
        source = entry.get("from")
        if not isinstance(source, str) or not source:
            problems.append(
                (
                    f"{field}.from",
                    'missing: name the word feature that chooses the value, e.g. from = "gender"',
                )
            )
            continue
        values = {str(k): v for k, v in entry.items() if k != "from"}
        bad = [k for k, v in values.items() if not isinstance(v, str)]
        for k in bad:
            problems.append((f"{field}.{k}", "must be a string"))
        if not values:
            problems.append((field, "has no values"))
        tables[name] = FormsTable(
            name, source, {k: v for k, v in values.items() if isinstance(v, str)}
        )
    return tables, problems
