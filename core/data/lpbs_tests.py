"""LPBS tests (`kind = "lpbs"`): targets X, Y and attributes A, B put into templates with two slots.

The log-probability bias score of Kurita et al. (2019) reads the model's probability of a target
word in a sentence such as "{Target} is {attribute.article} {attribute}.". The file holds the four
word sets (as an association test, words may carry grammar), forms tables, and templates with
exactly one `{target}` and one `{attribute}` head placeholder each (see `bias.core.data.grammar`). A
template may carry `when` conditions on either slot (`{ "target.class" = "pronoun" }`); a (target,
attribute) pair gets every template whose placeholders have values and whose conditions hold.
Rendering keeps the character span of each slot, which the metric maps to tokens through the
tokenizer's offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from bias.core.data import grammar
from bias.core.data.grammar import FormsTable, Rendered
from bias.core.model import LPBS, WordList, WordSetMeta
from bias.core.data.templates import (
    MAX_TEMPLATES,
    Template,
    parse_templates,
    rendering_problem,
    too_many_templates,
)
from bias.core.data.wordsets import (
    SET_KEYS,
    Problem,
    check_meta,
    check_word_list,
    meta_of,
    raise_on_errors,
    word_list,
)

SLOTS = ("target", "attribute")
KNOWN_FIELDS = ("sets", "forms", "templates")
TEMPLATE_FIELDS = ("text", "when", "note")
TARGETS = ("X", "Y")
ATTRIBUTES = ("A", "B")


@attrs.frozen
class LpbsTest:
    """Targets X, Y, attributes A, B and the templates that join them.

    A positive effect means X is more probable than Y in sentences with A-attributes and less in
    sentences with B-attributes (X ~ A, Y ~ B), as for WEAT.
    """

    meta: WordSetMeta
    X: WordList
    Y: WordList
    A: WordList
    B: WordList
    templates: tuple[Template, ...]
    forms: Mapping[str, FormsTable] = attrs.field(factory=dict, hash=False)

    @property
    def name(self) -> str:
        return self.meta.name

    def sets(self) -> dict[str, WordList]:
        return {"X": self.X, "Y": self.Y, "A": self.A, "B": self.B}

    def render(
        self,
        template: Template,
        target: tuple[str, Mapping[str, str]],
        attribute: tuple[str, Mapping[str, str]],
    ) -> Rendered | None:
        """The sentence of one (target, attribute) pair in one template, None when it does not
        apply."""
        return grammar.render(
            template.text,
            {"target": target, "attribute": attribute},
            self.forms,
            template.when,
            self.meta.language,
        )


def _check_when(when: Any, file: str, field: str) -> list[Problem]:
    return [
        Problem(file, f"{field}.{key}" if key else field, message)
        for key, message in grammar.check_when(when, SLOTS)
    ]


def _templates(data: dict[str, Any]) -> list[Template]:
    return parse_templates(data.get("templates"))


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of an LPBS record, each with its field (`sets.A.words[2]`,
    `templates[1].text`)."""
    problems = check_meta(data, file, KNOWN_FIELDS)
    forms, form_problems = grammar.forms_from_record(data.get("forms"))
    problems.extend(Problem(file, field, message) for field, message in form_problems)
    sets = data.get("sets")
    set_ok = isinstance(sets, dict)
    if not set_ok:
        problems.append(
            Problem(
                file,
                "sets",
                "missing: give [sets.X], [sets.Y] (targets) and [sets.A], [sets.B] (attributes)",
            )
        )
    else:
        for key in SET_KEYS:
            if not isinstance(sets.get(key), dict):
                problems.append(
                    Problem(
                        file,
                        f"sets.{key}",
                        "missing (targets X, Y and attributes A, B are all needed)",
                    )
                )
                set_ok = False
                continue
            found, size = check_word_list(sets[key], file, f"sets.{key}")
            problems.extend(found)
            set_ok = set_ok and size > 0
        for key in sets:
            if key not in SET_KEYS:
                problems.append(
                    Problem(
                        file, f"sets.{key}", "unknown set (an LPBS test has X, Y, A, B)", "warning"
                    )
                )
    entries = data.get("templates")
    if not isinstance(entries, list) or not entries:
        problems.append(
            Problem(
                file,
                "templates",
                "missing or empty: give [[templates]] tables with text containing {target} "
                "and {attribute}",
            )
        )
        return problems
    if len(entries) > MAX_TEMPLATES:
        return [*problems, too_many_templates(file)]
    templates_ok = True
    for i, entry in enumerate(entries):
        field = f"templates[{i}]"
        if isinstance(entry, str):
            entry = {"text": entry}
        if not isinstance(entry, dict):
            problems.append(
                Problem(file, field, "must be a table with `text` (and optionally `when`)")
            )
            templates_ok = False
            continue
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append(
                Problem(
                    file,
                    f"{field}.text",
                    "missing or empty: a sentence with {target} and {attribute}",
                )
            )
            templates_ok = False
        else:
            messages = grammar.check(text, list(SLOTS), forms)
            problems.extend(Problem(file, f"{field}.text", m) for m in messages)
            templates_ok = templates_ok and not messages
        found = _check_when(entry.get("when"), file, f"{field}.when")
        problems.extend(found)
        templates_ok = templates_ok and not found
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
    if set_ok and templates_ok and not any(p.severity == "error" for p in problems):
        sizes = {key: len(data["sets"][key]["words"]) for key in SET_KEYS}
        pairs = sum(sizes[k] for k in TARGETS) * sum(sizes[k] for k in ATTRIBUTES)
        chars = pairs * sum(len(str(e.get("text", ""))) for e in entries if isinstance(e, dict))
        if found := rendering_problem(len(entries) * pairs, chars):  # before _coverage renders
            problems.append(Problem(file, "templates", found))
        else:
            problems.extend(_coverage(data, file, forms))
    return problems


def _coverage(data: dict[str, Any], file: str, forms: Mapping[str, FormsTable]) -> list[Problem]:
    """Every word must get at least one sentence; a word no template fits cannot be scored."""
    lists = {key: word_list(data["sets"][key], key) for key in SET_KEYS}
    templates = _templates(data)
    used: dict[str, set[str]] = {key: set() for key in SET_KEYS}
    for template in templates:
        for t_key in TARGETS:
            for t in lists[t_key].words:
                for a_key in ATTRIBUTES:
                    for a in lists[a_key].words:
                        words = {
                            "target": (t, lists[t_key].features(t)),
                            "attribute": (a, lists[a_key].features(a)),
                        }
                        if grammar.render(template.text, words, forms, template.when) is not None:
                            used[t_key].add(t)
                            used[a_key].add(a)
    problems = []
    for key in SET_KEYS:
        for i, word in enumerate(lists[key].words):
            if word not in used[key]:
                problems.append(
                    Problem(
                        file,
                        f"sets.{key}",
                        f"'{word}' gets no sentence from any template (a placeholder has "
                        "no value for it, or a `when` "
                        "condition excludes it); give it the features the templates need",
                    )
                )
    return problems


def build(data: dict[str, Any], name: str, path: str) -> LpbsTest:
    """An LpbsTest from a checked record; raises BiasError naming the file and field on errors."""
    raise_on_errors(check(data, path), path)
    forms, _ = grammar.forms_from_record(data.get("forms"))
    sets = data["sets"]
    meta = meta_of(data, path, name)
    if meta.kind != LPBS:
        meta = attrs.evolve(meta, kind=LPBS)
    return LpbsTest(
        meta,
        *(word_list(sets[key], key) for key in SET_KEYS),
        templates=tuple(_templates(data)),
        forms=forms,
    )
