"""`bias validate --render TEST`: every sentence a test produces, as plain text, so a reviewer reads
sentences rather than templates.

SEAT sentences of each set of a word-level association test, built from the language's templates
with each word's grammar; the sentences of a sentence-level test; LPBS sentences of each (target
set, attribute set) pair; both sides of each sentence pair with the words that differ in brackets;
and the entries of any other kind (debiasing lists, analogies, templates) one per line. One sentence
a line, groups under a header line that starts with `== `, nothing wrapped or cut, so the output
reads the same piped into a file as on an 80-column terminal."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

HEADER = "== "
_WORD = re.compile(r"\w+", re.UNICODE)


def rendered_lines(name_or_path: str) -> list[str]:
    """The lines `--render` prints for a registered test (`nl/religion`) or a word-set file."""
    from bias.registry.resolve import load_wordset

    test = load_wordset(name_or_path)
    meta = test.meta
    lines = [f"{HEADER}{meta.name} ({meta.kind}, {meta.language}): {meta.title}".rstrip(": ")]
    if meta.kind == "association":
        lines += _association(test, name_or_path)
    elif meta.kind == "lpbs":
        lines += _lpbs(test)
    elif meta.kind == "pairs":
        lines += _pairs(test)
    elif meta.kind == "bbq-prompts":
        lines += _bbq_prompts(test, name_or_path)
    # a kind that renders itself (decisions)
    elif callable(getattr(test, "rendered_sections", None)):
        for header, rows in test.rendered_sections():
            lines += [f"{HEADER}{header}", *rows]
    else:
        lines += _entries(test)
    return lines


def _templates_for(test: Any, name_or_path: str) -> Any:
    """The SEAT templates of the test's package: the `seat-templates.toml` beside a file, else the
    installed `<language>/seat-templates`; None when the language has none."""
    from bias.registry.catalogue import wordset_entries
    from bias.registry.resolve import load_wordset

    beside = Path(name_or_path).parent / "seat-templates.toml"
    if Path(name_or_path).is_file() and beside.is_file():
        return load_wordset(str(beside))
    name = f"{test.meta.language}/seat-templates"
    return load_wordset(name) if name in wordset_entries() else None


def _association(test: Any, name_or_path: str) -> list[str]:
    from bias.core.data.templates import sentence_sets

    sets = test.sets()
    if test.stimuli == "sentences":
        out = []
        for key, wl in sets.items():
            out += [f"{HEADER}{key}: {wl.label} ({len(wl.words)} sentences)", *wl.words]
        return out
    templates = _templates_for(test, name_or_path)
    if templates is None:
        out = []
        for key, wl in sets.items():
            out += [
                f"{HEADER}{key}: {wl.label} ({len(wl.words)} words; no seat-templates for "
                f"{test.meta.language})",
                *wl.words,
            ]
        return out
    built = sentence_sets(test, templates)
    out = []
    for key, wl in sets.items():
        sentences = built.sentences[key]
        out.append(
            f"{HEADER}{key}: {wl.label} ({len(wl.words)} words, {len(sentences)} SEAT sentences)"
        )
        out += [s.text for s in sentences]
        if built.lost[key]:
            out.append(f"{HEADER}{key}: no sentence for {', '.join(built.lost[key])}")
    return out


def _lpbs(test: Any) -> list[str]:
    sets = test.sets()
    out = []
    for t_key in ("X", "Y"):
        for a_key in ("A", "B"):
            rows = []
            for template in test.templates:
                for t in sets[t_key].words:
                    for a in sets[a_key].words:
                        found = test.render(
                            template, (t, sets[t_key].features(t)), (a, sets[a_key].features(a))
                        )
                        if found is not None:
                            rows.append(found.text)
            out.append(
                f"{HEADER}{t_key} x {a_key}: {sets[t_key].label} x {sets[a_key].label} "
                f"({len(rows)} LPBS sentences)"
            )
            out += rows
    return out


def marked(more: str, less: str) -> tuple[str, str]:
    """The two sentences of a pair with each stretch of words in which they differ in [brackets]."""
    import difflib

    a = [
        (m.group(0).casefold(), m.span())
        for m in _WORD.finditer(unicodedata.normalize("NFC", more))
    ]
    b = [
        (m.group(0).casefold(), m.span())
        for m in _WORD.finditer(unicodedata.normalize("NFC", less))
    ]
    spans_a, spans_b = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        a=[w for w, _ in a], b=[w for w, _ in b], autojunk=False
    ).get_opcodes():
        if tag == "equal":
            continue
        spans_a += [(a[i1][1][0], a[i2 - 1][1][1])] if i2 > i1 else []
        spans_b += [(b[j1][1][0], b[j2 - 1][1][1])] if j2 > j1 else []
    return _bracket(unicodedata.normalize("NFC", more), spans_a), _bracket(
        unicodedata.normalize("NFC", less), spans_b
    )


def _bracket(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = f"{text[:start]}[{text[start:end]}]{text[end:]}"
    return text


def _pairs(test: Any) -> list[str]:
    groups: dict[str, list[Any]] = {}
    for pair in test.pairs:
        groups.setdefault(pair.bias_type, []).append(pair)
    out = []
    for bias_type, pairs in groups.items():
        out.append(
            f"{HEADER}{bias_type} ({len(pairs)} pairs; more = the stereotyping sentence, "
            "[..] = what differs)"
        )
        for pair in pairs:
            more, less = marked(pair.more, pair.less)
            out += [f"more ({pair.direction}): {more}", f"less: {less}"]
    return out


def _bbq_prompts(test: Any, name_or_path: str) -> list[str]:
    """Every prompt variant with every question of the package's bbq-sample (the file beside, else
    the installed `<language>/bbq-sample`), a prompt's line breaks shown as " ⏎ ", then each reading
    rule."""
    from bias.registry.catalogue import wordset_entries
    from bias.registry.resolve import load_wordset

    beside = Path(name_or_path).parent / "bbq-sample.toml"
    name = f"{test.meta.language}/bbq-sample"
    questions = (
        load_wordset(str(beside))
        if Path(name_or_path).is_file() and beside.is_file()
        else (load_wordset(name) if name in wordset_entries() else None)
    )
    out = []
    for variant in test.variants:
        out.append(
            f"{HEADER}variant {variant.name}"
            + (f" (system: {variant.system})" if variant.system else "")
        )
        for q in questions.items if questions is not None else ():
            out.append(variant.render(q.context, q.question, q.answers).replace("\n", " ⏎ "))
    for rule in (
        "answer_before",
        "answer_after",
        "unknown",
        "refusal",
        "articles",
        "unknown_answers",
    ):
        out.append(f"{HEADER}rules.{rule}")
        out += list(getattr(test.rules, rule))
    return out


def _entries(test: Any) -> list[str]:
    """Any other kind: each list-like field of the record, one entry a line."""
    import attrs

    out = []
    if callable(getattr(test, "questions", None)):  # analogies: the questions of each section
        sections: dict[str, list[str]] = {}
        for section, question in test.questions():
            sections.setdefault(section, []).append(" ".join(question.words()))
        for section, rows in sections.items():
            out += [f"{HEADER}{section} ({len(rows)} questions: a is to b as c is to d)", *rows]
        return out
    for field in attrs.fields(type(test)):
        value = getattr(test, field.name)
        if field.name == "meta" or not isinstance(value, (list, tuple, dict)) or not value:
            continue
        items = list(value.items()) if isinstance(value, dict) else list(value)
        out.append(f"{HEADER}{field.name.replace('_', ' ')} ({len(items)})")
        out += [_entry(item) for item in items]
    return out


def _entry(item: Any) -> str:
    for attr in ("text", "name", "word"):
        if isinstance(getattr(item, attr, None), str):
            return getattr(item, attr)
    if hasattr(item, "words") and callable(item.words):
        return " ".join(item.words())
    if isinstance(item, (list, tuple)):
        return " / ".join(_entry(i) for i in item)
    return str(item)
