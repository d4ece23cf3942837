"""The `analogies` word-set kind: sections of "a b c d" questions (a is to b as c is to d).

Analogy accuracy is not a bias measure; it is the check that a debiased model still knows what it
knew. The file names what it holds by section (capital-country, family, plural, ...), so a debiasing
method that damages one kind of relation shows up in that section's accuracy.

```toml
kind = "analogies"
bias_type = "non-social"

[[sections]]
name = "capital-country"
questions = ["Berlin Germany Paris France", "Rome Italy Madrid Spain"]
```

word2vec question files (": section" lines, then "a b c d" lines) are read by the `analogy-txt`
importer into the same record, and checked here like a TOML file.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import attrs
from bias.core.errors import BiasError
from bias.core.model import WordSetMeta
from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors


@attrs.frozen
class Question:
    """a : b :: c : d."""

    a: str
    b: str
    c: str
    d: str

    def words(self) -> tuple[str, str, str, str]:
        return (self.a, self.b, self.c, self.d)


@attrs.frozen
class Section:
    name: str
    questions: tuple[Question, ...]


@attrs.frozen
class Analogies:
    """An analogy set: named sections of questions, in file order."""

    meta: WordSetMeta
    sections: tuple[Section, ...]

    @property
    def name(self) -> str:
        return self.meta.name

    def questions(self) -> list[tuple[str, Question]]:
        """Every question with the name of its section."""
        return [(s.name, q) for s in self.sections for q in s.questions]

    def all_words(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, q in self.questions():
            seen.update(dict.fromkeys(q.words()))
        return list(seen)


def parse_question(text: Any) -> tuple[str, str, str, str] | None:
    """The four words of a question, or None if it is not four whitespace-separated words."""
    if not isinstance(text, str):
        return None
    parts = unicodedata.normalize("NFC", text).split()
    return (parts[0], parts[1], parts[2], parts[3]) if len(parts) == 4 else None


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of an analogy-set record (TOML or imported), with its field."""
    problems = check_meta(data, file, ("sections",))
    sections = data.get("sections")
    if not isinstance(sections, list) or not sections:
        problems.append(
            Problem(
                file,
                "sections",
                "missing or empty: give [[sections]] tables, each with `name` and `questions`",
            )
        )
        return problems
    names: dict[str, int] = {}
    for i, section in enumerate(sections):
        field = f"sections[{i}]"
        if not isinstance(section, dict):
            problems.append(Problem(file, field, "must be a table with `name` and `questions`"))
            continue
        name = section.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append(
                Problem(file, f"{field}.name", "missing or empty: every section needs a name")
            )
        elif name in names:
            problems.append(
                Problem(
                    file,
                    f"{field}.name",
                    f"'{name}' repeats section {names[name]} (their accuracies are reported apart)",
                    "warning",
                )
            )
        else:
            names[name] = i
        for key in section:
            if key not in ("name", "questions", "description"):
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        "unknown field (known: name, questions, description)",
                        "warning",
                    )
                )
        questions = section.get("questions")
        if not isinstance(questions, list) or not questions:
            problems.append(
                Problem(
                    file,
                    f"{field}.questions",
                    "missing or empty: a section needs at least one question",
                )
            )
            continue
        seen: dict[tuple[str, ...], int] = {}
        for j, question in enumerate(questions):
            words = parse_question(question)
            if words is None:
                problems.append(
                    Problem(
                        file,
                        f"{field}.questions[{j}]",
                        f"{question!r}: a question is four words 'a b c d' (a is to b as c "
                        "is to d)",
                    )
                )
                continue
            if len(set(words[:3])) < 3 or words[3] in words[:3]:
                # 3CosAdd never answers one of a, b, c, so such a question can only be wrong.
                problems.append(
                    Problem(
                        file, f"{field}.questions[{j}]", f"{question!r}: the four words must differ"
                    )
                )
            if words in seen:
                problems.append(
                    Problem(
                        file,
                        f"{field}.questions[{j}]",
                        f"repeats question {seen[words]}",
                        "warning",
                    )
                )
            else:
                seen[words] = j
    return problems


def build(data: dict[str, Any], name: str, path: str) -> Analogies:
    """An Analogies object from a record; raises BiasError (file and field) on errors."""
    raise_on_errors(check(data, path), path)
    sections = []
    for section in data["sections"]:
        questions = []
        seen: set[tuple[str, ...]] = set()
        for text in section["questions"]:
            words = parse_question(text)
            if words is None or words in seen:  # pragma: no cover - refused by check
                continue
            seen.add(words)
            questions.append(Question(*words))
        sections.append(Section(str(section["name"]).strip(), tuple(questions)))
    if not sections:  # pragma: no cover - refused by check
        raise BiasError(f"{path}: no analogy questions.")
    return Analogies(meta_of(data, path, name), tuple(sections))
