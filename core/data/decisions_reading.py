"""Checking and reading a `decisions` file (see `bias.core.data.decisions`): every problem named
with its field, names read from the association tests beside the file, and every scenario rendered
for every applicant before a run starts, so a missing agreement value is a file error, not a gap in
the results.

A name source is `FILE.SET` with a bare file stem: only files in the file's folder are named (a
link there is followed, as for any data file the user gives).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.data import grammar
from bias.core.text import listed, shown
from bias.core.data.bias_questions import PLAIN_PLACEHOLDERS, placeholders
from bias.core.data.decisions import (
    DECISION_TYPES,
    SLOT,
    VARIANTS,
    Applicant,
    DecisionGroup,
    Decisions,
    Scenario,
    fill,
)
from bias.core.data.grammar import FormsTable
from bias.core.data.record_bounds import MAX_SET_WORDS, MAX_TEXT_CHARS, MAX_WORD_CHARS
from bias.core.data.templates import rendering_problem
from bias.core.data.wordsets import (
    SMALL_SET,
    Problem,
    check_features,
    check_meta,
    check_word_list,
    meta_of,
    raise_on_errors,
    word_list,
)
from bias.core.data.file_reading import read_toml
from bias.core.errors import BiasError
from bias.core.model import ASSOCIATION, DECISIONS

KNOWN_FIELDS = ("reference", "prompt", "answers", "forms", "groups", "scenarios")
GROUP_FIELDS = ("label", "names", "words", "grammar", "explicit")
SCENARIO_FIELDS = ("id", "decision", "job", "profile", "question", "note")
PROMPT_FIELDS = {"job", "profile", "question"}
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
SOURCE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]*)\.([A-Z])$")
SHORT_NAME = "a short lower-case name (letters, digits, - and _)"
MAX_GROUPS = 64  # a published audit compares a handful
MAX_SOURCES = 64  # sets one group draws its names from
MAX_NAME_FILES = 16  # files of names one decisions file reads
MAX_NAME_BYTES = 8 * 2**20  # and their bytes in all (a package's: four files of kilobytes)

Named = list[tuple[str, dict[str, str]]]  # names with their grammar


@attrs.define
class Found:
    """The problems of one file as they are found."""

    file: str
    problems: list[Problem] = attrs.field(factory=list)
    sources: dict[str, Named] = attrs.field(factory=dict)  # each FILE.SET read once
    files: dict[Path, dict[str, Any] | BiasError] = attrs.field(factory=dict)  # read once
    read_bytes: int = 0  # of the files of names, held at once
    over: bool = False  # a bound on files of names was said: the references after it are not read

    def error(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.file, field, message))

    def warn(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.file, field, message, "warning"))

    def errors(self, prefix: str = "") -> bool:
        return any(p.severity == "error" and p.field.startswith(prefix) for p in self.problems)


def _text(value: Any) -> str:
    return unicodedata.normalize("NFC", value).strip() if isinstance(value, str) else ""


def _source_names(source: Any, found: Found, field: str) -> Named:
    """The names of `stem.SET` (a set of an association test beside the file) and their grammar,
    read once however often the file names it (3,000 references to a 4 MB set took minutes)."""
    if isinstance(source, str) and source in found.sources:
        return found.sources[source]
    named = _read_source(source, found, field)
    if isinstance(source, str):
        found.sources[source] = named
    return named


def _read_source(source: Any, found: Found, field: str) -> Named:
    match = SOURCE.match(source) if isinstance(source, str) else None
    if match is None:
        found.error(
            field,
            f"{source!r} must name a set of an association test in this folder as "
            'FILE.SET, e.g. "weat3.X" (the file stem, without folder or .toml)',
        )
        return []
    stem, key = match.groups()
    path = Path(found.file).parent / f"{stem}.toml"
    if not path.exists():  # a pipe or a folder is said to be one by the reading
        found.error(field, f"{source!r}: no file {stem}.toml beside this one")
        return []
    try:
        data = _name_file(path, found)
    except _OverBound as exc:  # said once, not for each of thousands of references
        if not found.over:
            found.over = True
            found.error(field, f"{source!r}: {exc.message} (the references after it are not read)")
        return []
    except BiasError as exc:
        found.error(field, f"{source!r}: {exc.message}")
        return []
    if data.get("kind", ASSOCIATION) != ASSOCIATION or not isinstance(data.get("sets"), dict):
        found.error(field, f"{source!r}: {stem}.toml is not an association test with sets")
        return []
    entry = data["sets"].get(key)
    errors = [
        p for p in check_word_list(entry, str(path), f"sets.{key}")[0] if p.severity == "error"
    ]
    if not isinstance(entry, dict) or errors:
        why = errors[0].message if errors else "no such set"
        found.error(field, f"{source!r}: {stem}.toml has no usable set {key} ({why})")
        return []
    names = word_list(entry, key)
    return [(w, dict(names.features(w))) for w in names.words]


class _OverBound(BiasError):
    """More files of names, or bytes of them, than one decisions file may read."""


def _name_file(path: Path, found: Found) -> dict[str, Any]:
    """A file of names, read once however many sets of it the file names (links or copies of one
    4 MB file, named 4,096 times, each took 60 ms to read); a file over the bytes bound is refused
    each time it is named, as one over the file bound is (`_OverBound`)."""
    key = path.resolve()
    if key not in found.files:
        if len(found.files) >= MAX_NAME_FILES:
            raise _OverBound(f"more than {MAX_NAME_FILES} files of names in all")
        # each is held parsed while the file is read: 16 files of 4 MiB of tables took 1.6 GB
        found.read_bytes += key.stat().st_size
        if found.read_bytes > MAX_NAME_BYTES:
            raise _OverBound(f"more than {MAX_NAME_BYTES // 2**20} MiB of files of names in all")
        try:
            found.files[key] = read_toml(path)
        except BiasError as exc:  # a file that fails is read once too (a 4 MB one: 0.85 s a time)
            found.files[key] = exc
    read = found.files[key]
    if isinstance(read, BiasError):
        raise read
    return read


def _group_names(entry: dict[str, Any], found: Found, field: str) -> tuple[Named, list[str]]:
    """A group's names: from the sets it names, then from its own `words`, each once."""
    names: Named = []
    sources: list[str] = []
    refs = entry.get("names", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        found.error(f"{field}.names", 'must be a list of sets such as ["weat3.X"]')
        refs = []
    if len(refs) > MAX_SOURCES:
        found.error(f"{field}.names", f"more than {MAX_SOURCES} sets")
        refs = []
    for i, ref in enumerate(refs):
        names += _source_names(ref, found, f"{field}.names[{i}]")
        sources.append(ref)
    if "words" in entry:
        problems = check_word_list({"words": entry["words"]}, found.file, field)[0]
        found.problems += [p for p in problems if p.code != SMALL_SET]
        if not [p for p in problems if p.severity == "error"]:
            here = word_list({"words": entry["words"]}, field)
            names += [(w, dict(here.features(w))) for w in here.words]
            sources.append("words")
    defaults = entry.get("grammar", {})
    if "grammar" in entry:
        found.problems += check_features(defaults, found.file, f"{field}.grammar")
    if isinstance(defaults, dict):
        names = [(w, {**{k: str(v) for k, v in defaults.items()}, **f}) for w, f in names]
    kept: dict[str, dict[str, str]] = {}
    for word, features in names:
        kept.setdefault(word, features)  # a name listed by two of the group's sets counts once
    if len(kept) > MAX_SET_WORDS:
        found.error(f"{field}.names", f"more than {MAX_SET_WORDS:,} names in all")
    return list(kept.items()), sources


def _explicit(value: Any, found: Found, field: str) -> list[tuple[str, str]]:
    """(gender, words) of a group's `explicit` field: a text, or a table of texts by gender."""
    if value is None:
        return []
    texts = value.values() if isinstance(value, dict) else [value]
    if any(len(_text(t)) > MAX_WORD_CHARS for t in texts):
        found.error(field, f"a group in words is at most {MAX_WORD_CHARS:,} characters")
        return []
    if isinstance(value, str) and value.strip():
        return [("", _text(value))]
    if isinstance(value, dict) and value and all(_text(v) for v in value.values()):
        return [(str(g), _text(v)) for g, v in value.items()]
    found.error(
        field,
        'must be the group in words ("a woman of Polish origin"), or a table of '
        'such texts by gender: { m = "...", f = "..." }',
    )
    return []


def _read_group(key: str, entry: Any, found: Found, owner: dict[str, str]) -> DecisionGroup | None:
    field = f"groups.{key}"
    if not KEY.match(key):
        found.error(field, f"a group's name is {SHORT_NAME}")
    if not isinstance(entry, dict):
        found.error(field, "must be a table with label, names and/or explicit")
        return None
    if not _text(entry.get("label")):
        found.error(f"{field}.label", "missing or empty: say who the group is")
    for extra in entry:
        if extra not in GROUP_FIELDS:
            found.warn(f"{field}.{extra}", f"unknown field (known: {', '.join(GROUP_FIELDS)})")
    names, sources = _group_names(entry, found, field)
    explicit = _explicit(entry.get("explicit"), found, f"{field}.explicit")
    if not names and not explicit and not found.errors(field) and not found.over:
        found.error(field, 'has neither names nor explicit: give names = ["FILE.SET"] or explicit')
    shared: dict[str, list[str]] = {}  # said once per group, not once per name or pair
    for word, _ in names:
        if owner.setdefault(word, key) != key:
            shared.setdefault(owner[word], []).append(word)
    if shared:
        words = [w for found_words in shared.values() for w in found_words]
        found.error(
            field,
            f"{listed(map(repr, words), 3)} {'is' if len(words) == 1 else 'are'} also "
            f"{'a name' if len(words) == 1 else 'names'} of "
            f"{'group' if len(shared) == 1 else 'groups'} {listed(map(repr, shared), 3)}; "
            "a name belongs to one group",
        )
    applicants = tuple(
        Applicant(w, key, f.get("gender", ""), "names", {**f, "mention": "name"}) for w, f in names
    )
    stated = tuple(
        Applicant(t, key, g, "explicit", {**({"gender": g} if g else {}), "mention": "explicit"})
        for g, t in explicit
    )
    return DecisionGroup(key, _text(entry.get("label")), applicants, stated, tuple(sources))


def _read_groups(data: dict[str, Any], found: Found) -> list[DecisionGroup]:
    table = data.get("groups")
    if not isinstance(table, dict) or len(table) < 2:
        found.error("groups", "give at least two [groups.NAME] tables, each with a label and names")
        return []
    if len(table) > MAX_GROUPS:
        found.error("groups", f"more than {MAX_GROUPS} groups")
        return []
    owner: dict[str, str] = {}
    groups = [_read_group(str(k), v, found, owner) for k, v in table.items()]
    return [g for g in groups if g is not None]


def _check_reference(data: dict[str, Any], groups: list[DecisionGroup], found: Found) -> None:
    reference = data.get("reference")
    known = {g.key: g for g in groups}
    if not isinstance(reference, str) or reference not in known:
        found.error(
            "reference",
            f"{reference!r} must name one of the groups ({', '.join(known)}): "
            "the group every other group is compared with",
        )
        return
    if found.errors(f"groups.{reference}.") or found.over:  # its names are unread: said already
        return
    for variant in VARIANTS:
        if any(g.applicants(variant) for g in groups) and not known[reference].applicants(variant):
            what = "names" if variant == "names" else "explicit"
            found.error(
                f"groups.{reference}", f"the reference group has no {what}, but other groups do"
            )


def _check_answers(value: Any, found: Found) -> None:
    if not isinstance(value, dict) or set(value) != {"yes", "no"}:
        found.error(
            "answers",
            'must be a table { yes = ["..."], no = ["..."] } of the language\'s answer words',
        )
        return
    for key in ("yes", "no"):
        words = value[key]
        single = isinstance(words, list) and all(
            _text(w) and len(_text(w).split()) == 1 for w in words
        )
        if not words or not single:
            found.error(f"answers.{key}", "must be a non-empty list of single words")
    if not found.errors("answers"):
        yes, no = ({_text(w).casefold() for w in value[k]} for k in ("yes", "no"))
        if yes & no:
            found.error("answers", "a word is both a yes and a no")


def _count_heads(text: Any, found: Found, field: str) -> int:
    """Check a profile or question template; how often it names the applicant."""
    if not _text(text):
        found.error(field, "missing or empty")
        return 0
    try:
        parsed = grammar.parse(text)
    except grammar.TemplateError as exc:
        found.error(field, str(exc))
        return 0
    for p in parsed:
        if p.slot != SLOT:
            found.error(field, f"unknown slot '{p.slot}': the applicant's slot is {{name}}")
    return sum(1 for p in parsed if p.slot == SLOT and p.is_head)


def _read_scenario(i: int, entry: Any, found: Found, seen: set[str]) -> Scenario | None:
    field = f"scenarios[{i}]"
    if not isinstance(entry, dict):
        found.error(field, "must be a table with id, decision, job, profile and question")
        return None
    sid = entry.get("id")
    if not isinstance(sid, str) or not KEY.match(sid):
        found.error(f"{field}.id", f"{sid!r} must be {SHORT_NAME}")
    elif sid in seen:
        found.error(f"{field}.id", f"{sid!r} is the id of an earlier scenario; ids must be unique")
    else:
        seen.add(sid)
        field = f"{field} ({sid})"
    decision = entry.get("decision")
    if not isinstance(decision, str) or not KEY.match(decision):
        found.error(
            f"{field}.decision", f"{decision!r} must be a short name: " + ", ".join(DECISION_TYPES)
        )
    elif decision not in DECISION_TYPES:
        found.warn(
            f"{field}.decision",
            f"{decision!r} is not one of {', '.join(DECISION_TYPES)}; "
            "reports group scenarios by it",
        )
    job = _text(entry.get("job"))
    if not job:
        found.error(f"{field}.job", "missing or empty: the vacancy the applicant answers")
    elif "{" in job or "}" in job:
        found.error(
            f"{field}.job",
            "has a brace: the job names no applicant (write the profile with {name})",
        )
    heads = sum(_count_heads(entry.get(k), found, f"{field}.{k}") for k in ("profile", "question"))
    if heads != 1 and not found.errors(field):
        found.error(
            field,
            f"names the applicant {heads} times: write {{name}} (or {{Name}}) once "
            "in the profile or the question, and refer back with agreement values such as "
            "{name.pronoun}",
        )
    for extra in entry:
        if extra not in SCENARIO_FIELDS:
            found.warn(f"{field}.{extra}", f"unknown field (known: {', '.join(SCENARIO_FIELDS)})")
    return Scenario(
        sid if isinstance(sid, str) else f"scenario-{i}",
        decision if isinstance(decision, str) else "",
        job,
        _text(entry.get("profile")),
        _text(entry.get("question")),
    )


def _read_scenarios(data: dict[str, Any], found: Found) -> list[Scenario]:
    entries = data.get("scenarios")
    if not isinstance(entries, list) or not entries:
        found.error(
            "scenarios",
            "missing or empty: give [[scenarios]] tables with id, job, profile and question",
        )
        return []
    seen: set[str] = set()
    read = [_read_scenario(i, entry, found, seen) for i, entry in enumerate(entries)]
    return [s for s in read if s is not None]


def _check_prompt(prompt: Any, found: Found) -> None:
    fields = placeholders(prompt)
    if fields is None or not {"profile", "question"} <= fields or fields - PROMPT_FIELDS:
        found.error(
            "prompt",
            "must be a text with {profile} and {question} (and {job}, optionally), "
            f"no other placeholders, not {shown(prompt, 80)!r} ({PLAIN_PLACEHOLDERS})",
        )


def _check_rendering(
    scenarios: list[Scenario],
    groups: list[DecisionGroup],
    forms: Mapping[str, FormsTable],
    language: str,
    found: Found,
) -> None:
    """A scenario must read for every applicant: the first one a template cannot fill is named.
    What the filling would cost is bounded first, as a template's rendering is."""
    applicants = [a for g in groups for a in g.names + g.explicit]
    chars = len(applicants) * sum(len(s.profile) + len(s.question) for s in scenarios)
    if too_many := rendering_problem(2 * len(applicants) * len(scenarios), chars, "scenarios"):
        found.error("scenarios", too_many)
        return
    longest = max((len(a.text) for a in applicants), default=0)
    for scenario in scenarios:  # what a model is given at once (+ the prompt)
        held = len(scenario.profile) + len(scenario.question) + len(scenario.job) + longest
        if held > MAX_TEXT_CHARS:
            text = (
                f"the job, profile and question with an applicant hold more than "
                f"{MAX_TEXT_CHARS:,} characters"
            )
            found.error(f"scenario {scenario.id}", text)
            return
    for scenario in scenarios:
        for key in ("profile", "question"):
            template = getattr(scenario, key)
            lacking = next(
                (a for a in applicants if fill(template, a, forms, language) is None), None
            )
            if lacking is not None:
                found.error(
                    f"scenario {scenario.id}.{key}",
                    f"has no value for {lacking.text!r} (group "
                    f"{lacking.group}, features {dict(lacking.features)}): a placeholder needs "
                    "a feature or forms-table value this applicant lacks",
                )


def read(data: dict[str, Any], file: str) -> tuple[list[Problem], dict[str, Any]]:
    """Every problem of a decisions record, and its groups, scenarios and forms as read."""
    found = Found(file, check_meta(data, file, KNOWN_FIELDS))
    _check_prompt(data.get("prompt"), found)
    _check_answers(data.get("answers"), found)
    forms, form_problems = grammar.forms_from_record(data.get("forms"))
    for field, message in form_problems:
        found.error(field, message)
    groups = _read_groups(data, found)
    if groups:
        _check_reference(data, groups, found)
    scenarios = _read_scenarios(data, found)
    if not found.errors():
        _check_rendering(scenarios, groups, forms, str(data.get("language", "")), found)
    return found.problems, {"groups": groups, "scenarios": scenarios, "forms": forms}


def decisions_of(data: dict[str, Any], name: str, path: str) -> Decisions:
    """The Decisions of a record; raises BiasError naming the first error."""
    problems, built = read(data, path)
    raise_on_errors(problems, path)
    reference = data["reference"]
    groups = sorted(built["groups"], key=lambda g: g.key != reference)  # first: --limit keeps it
    answers = {k: tuple(_text(w) for w in data["answers"][k]) for k in ("yes", "no")}
    meta = meta_of(data, path, name)
    if meta.kind != DECISIONS:
        meta = attrs.evolve(meta, kind=DECISIONS)
    return Decisions(
        meta,
        data["prompt"],
        answers,
        reference,
        tuple(groups),
        tuple(built["scenarios"]),
        built["forms"],
    )


__all__ = ["KNOWN_FIELDS", "decisions_of", "read"]
