"""The `decisions` word-set kind: yes/no decisions about an applicant whose name is the only thing
that changes, for counterfactual audits of hiring and employment decisions (DiscrimEval, Tamkin et
al. 2023; the paired-CV design of correspondence tests).

A scenario is a job (a vacancy text without any person in it), an applicant's profile (a template
with the applicant's `{name}` once) and a yes/no question about that applicant. Every applicant of
every group gets the same profile, so a difference in the answers is a difference made by the name.
Groups take their names from association tests of the same folder (`names = ["weat3.X"]`: the set
X of `weat3.toml` beside this file), so a language keeps one list of names per origin; a name's
grammar (its `gender`) comes with it and drives the agreement values of the templates
(`{name.pronoun}` from a forms table, as in every other template of the framework). The explicit
variant states the group instead of implying it (`explicit = { m = "a man of Polish origin", f =
... }`), as DiscrimEval does. The format is in docs/data-formats.md; checking and reading are in
`bias.core.data.decisions_reading`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from bias.core.data import grammar
from bias.core.data.grammar import FormsTable
from bias.core.errors import BiasError
from bias.core.model import WordSetMeta

SLOT = "name"
DECISION_TYPES = ("interview", "shortlist", "offer", "salary", "promotion", "reference")
VARIANTS = ("names", "explicit")


@attrs.frozen
class Applicant:
    """Who a prompt is about: a name (variant "names") or the group stated in words ("explicit")."""

    text: str
    group: str
    gender: str  # the name's `gender` feature; "" when its list does not say
    variant: str
    features: Mapping[str, str] = attrs.field(factory=dict, hash=False, eq=False)


@attrs.frozen
class DecisionGroup:
    key: str
    label: str
    names: tuple[Applicant, ...]
    explicit: tuple[Applicant, ...]
    sources: tuple[str, ...] = ()  # where the names come from ("weat3.X"; "words" for a list here)

    def applicants(self, variant: str) -> tuple[Applicant, ...]:
        return self.names if variant == "names" else self.explicit


@attrs.frozen
class Scenario:
    id: str
    decision: str
    job: str
    profile: str
    question: str


@attrs.frozen
class Prompt:
    """One scenario put to the model about one applicant: the whole prompt, and the applicant's CV
    (the rendered profile) that a retrieval audit ranks against the job."""

    scenario: Scenario
    applicant: Applicant
    text: str
    cv: str
    question: str


@attrs.frozen
class Decisions:
    meta: WordSetMeta
    prompt: str
    answers: Mapping[str, tuple[str, ...]] = attrs.field(hash=False)  # "yes"/"no" -> words
    reference: str = ""
    groups: tuple[DecisionGroup, ...] = ()  # the reference group first
    scenarios: tuple[Scenario, ...] = ()
    forms: Mapping[str, FormsTable] = attrs.field(factory=dict, hash=False)

    @property
    def name(self) -> str:
        return self.meta.name

    def answer_words(self, which: str) -> tuple[str, ...]:
        """The words of an answer with their case variants (ja, Ja), pooled as DiscrimEval pools
        "yes" and "Yes"; Turkish capitals follow Turkish rules (ı -> I, i -> İ)."""
        out: dict[str, None] = {}
        for word in self.answers[which]:
            lower = word.lower()
            out.update(dict.fromkeys((word, lower, grammar.capitalise(lower, self.meta.language))))
        return tuple(out)

    def groups_of(self, variant: str) -> tuple[DecisionGroup, ...]:
        """The groups that take part in a variant (a group may have names only, or only words)."""
        return tuple(g for g in self.groups if g.applicants(variant))

    def applicants_of(self, variant: str) -> list[Applicant]:
        return [a for g in self.groups_of(variant) for a in g.applicants(variant)]

    def prompts(self, variant: str = "names") -> list[Prompt]:
        """Every scenario for every applicant of the variant, scenario by scenario."""
        applicants = self.applicants_of(variant)
        return [self.render(s, a) for s in self.scenarios for a in applicants]

    def render(self, scenario: Scenario, applicant: Applicant) -> Prompt:
        language = self.meta.language
        cv = fill(scenario.profile, applicant, self.forms, language)
        question = fill(scenario.question, applicant, self.forms, language)
        if cv is None or question is None:  # checked when the file was read
            raise BiasError(
                f"{self.meta.path}: scenario {scenario.id!r} has no sentence for "
                f"{applicant.text!r}."
            )
        text = self.prompt.format(job=scenario.job, profile=cv, question=question)
        return Prompt(scenario, applicant, text, cv, question)

    def rendered_sections(self) -> list[tuple[str, list[str]]]:
        """What `bias validate --render` prints: the prompt and the answers once, then per scenario
        and variant its job (which names nobody) and every applicant's profile and question, one
        line each."""
        yes, no = self.answer_words("yes"), self.answer_words("no")
        sections = [
            ("prompt", [self.prompt.replace("\n", "\\n")]),
            ("answers", [f"yes: {', '.join(yes)}", f"no: {', '.join(no)}"]),
        ]
        for variant in VARIANTS:
            for scenario in self.scenarios:
                rows = [self.render(scenario, a) for a in self.applicants_of(variant)]
                if rows:
                    header = f"{scenario.id} ({scenario.decision}), {variant}: {len(rows)} prompts"
                    lines = [f"[{p.applicant.group}] {p.cv} | {p.question}" for p in rows]
                    sections.append((header, [f"job: {scenario.job}", *lines]))
        return sections


def _folded(text: str, language: str) -> str:
    """Case-folded as the language writes it (Turkish I -> ı, İ -> i), accents kept."""
    if language in grammar.DOTTED_I_LANGUAGES:
        text = text.replace("I", "ı").replace("İ", "i")
    return unicodedata.normalize("NFC", text).casefold()


def _bare(word: str) -> str:
    """A word without its accents (si for sì, ja for já, hayir for hayır): what a reply typed
    without them gives."""
    plain = unicodedata.normalize("NFD", word.replace("ı", "i"))
    return "".join(c for c in plain if not unicodedata.combining(c))


def parse_answer(reply: str, data: Decisions) -> str | None:
    """ "yes", "no" or None (unparsed) for a model's free-text reply, by the file's answer words:
    the reply's first word when it is one of them (case and accents aside: "Ja.", "**JA**",
    "si"), else the one answer word the reply contains as a word ("Die Antwort ist: Nein"); a reply
    with both or neither, a refusal among them, is unparsed."""
    language = data.meta.language
    words = {which: {_folded(w, language) for w in data.answers[which]} for which in ("yes", "no")}
    bare = {which: {_bare(w) for w in found} for which, found in words.items()}
    tokens = [t for t in re.findall(r"\w+", _folded(reply, language)) if t]
    if not tokens:
        return None
    for which in ("yes", "no"):
        if tokens[0] in words[which] or _bare(tokens[0]) in bare[which]:
            return which
    found = {which for which in ("yes", "no") for t in tokens if t in words[which]}
    return found.pop() if len(found) == 1 else None


def applicant_families(applicants: Sequence[Applicant]) -> dict[str, list[str]]:
    """The labels rates are broken down by: group, gender ("?" where unknown), group/gender."""
    return {
        "group": [a.group for a in applicants],
        "gender": [a.gender or "?" for a in applicants],
        "group_gender": [f"{a.group}/{a.gender or '?'}" for a in applicants],
    }


def headline_of(data: Any, variant: str, headline: str, metric: str) -> str:
    """The group whose figure is a metric's value: `headline`, else the first group after the
    reference. Raises BiasError (a refusal) for data of another kind, fewer than two groups in the
    variant, or a headline that is not a group compared with the reference."""
    if not isinstance(data, Decisions):
        raise BiasError(
            f"The {metric} metric needs decisions (kind decisions), not {type(data).__name__}."
        )
    compared = [g.key for g in data.groups_of(variant)]
    others = [key for key in compared if key != data.reference]
    if not others or data.reference not in compared:
        raise BiasError(
            f"{data.name} has no two groups to compare in its {variant!r} variant (the reference "
            f"group {data.reference!r} and another with applicants).",
            "If the run has --limit, give a number large enough to keep the applicants of two "
            "groups; else the word set's variant lists only one.",
        )
    chosen = headline or others[0]
    if chosen not in others:
        raise BiasError(
            f"headline {chosen!r} is not a group compared with the reference "
            f"{data.reference!r} in {data.name}.",
            f"Use one of: {', '.join(others)} (--param headline=GROUP).",
        )
    return chosen


def fill(
    template: str, applicant: Applicant, forms: Mapping[str, FormsTable], language: str
) -> str | None:
    """A profile or question for one applicant; None when a placeholder has no value for it."""
    found = grammar.render(
        template, {SLOT: (applicant.text, applicant.features)}, forms, None, language
    )
    return None if found is None else found.text


def check(data: dict[str, Any], file: str) -> list[Any]:
    """Every problem of a decisions file, each naming its field (a group, a scenario)."""
    from bias.core.data.decisions_reading import read

    return read(data, file)[0]


def build(data: dict[str, Any], name: str, path: str) -> Decisions:
    from bias.core.data.decisions_reading import decisions_of

    return decisions_of(data, name, path)


__all__ = [
    "Applicant",
    "DECISION_TYPES",
    "DecisionGroup",
    "Decisions",
    "Prompt",
    "Scenario",
    "VARIANTS",
    "applicant_families",
    "build",
    "check",
    "fill",
    "headline_of",
    "parse_answer",
]
