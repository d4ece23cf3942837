"""The `labelled-texts` word-set kind: texts with a class label (a review and its sentiment, say).

Bias measures say how much a model's encodings carry a social association; they do not say what a
debiasing method costs. A labelled set is the other half of that comparison: the `probe` metric
trains a classifier on the model's frozen sentence encodings of these texts and reports how well it
predicts the labels, before and after debiasing.

```toml
kind = "labelled-texts"
language = "nl"
bias_type = "non-social"
source = "..."
licence = "..."

[[items]]
text = "Een prachtig boek, in één adem uitgelezen."
label = "positive"
```

CSV and TSV files with the columns `text` and `label` are read by the `labelled-csv` importer into
the same record (with the line of every row), and checked here like a TOML file."""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Any

import attrs

from bias.core.model import LABELLED_TEXTS, WordSetMeta
from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors

ITEM_KEYS = ("text", "label", "line")


@attrs.frozen
class LabelledText:
    """One text and its class; `line` is where an imported row came from (None for TOML)."""

    text: str
    label: str
    line: int | None = None


@attrs.frozen
class LabelledTexts:
    meta: WordSetMeta
    items: tuple[LabelledText, ...]

    @property
    def name(self) -> str:
        return self.meta.name

    def labels(self) -> list[str]:
        """The distinct labels, sorted (the class order of every report)."""
        return sorted({item.label for item in self.items})

    def counts(self) -> dict[str, int]:
        found = Counter(item.label for item in self.items)
        return {label: found[label] for label in self.labels()}


def _where(entry: Any) -> str:
    line = entry.get("line") if isinstance(entry, dict) else None
    return f"line {line}: " if isinstance(line, int) and not isinstance(line, bool) else ""


def _clean(value: Any) -> str:
    return unicodedata.normalize("NFC", value).strip() if isinstance(value, str) else ""


def check(data: dict[str, Any], file: str) -> list[Problem]:
    """Every problem of a labelled-texts record (TOML or imported), naming the field or line."""
    problems = check_meta(data, file, ("items",))
    items = data.get("items")
    if not isinstance(items, list) or not items:
        problems.append(
            Problem(
                file,
                "items",
                "missing or empty: give [[items]] tables with `text` and `label` (or a CSV "
                "with those columns)",
            )
        )
        return problems
    labels: Counter[str] = Counter()
    seen: dict[str, int] = {}
    repeats: list[tuple[str, int, int]] = []
    for i, entry in enumerate(items):
        field = f"items[{i}]"
        if not isinstance(entry, dict):
            problems.append(Problem(file, field, "must be a table with `text` and `label`"))
            continue
        where = _where(entry)
        text, label = _clean(entry.get("text")), entry.get("label")
        if not text:
            problems.append(
                Problem(file, f"{field}.text", f"{where}missing or empty: every item needs a text")
            )
        if isinstance(label, bool) or not isinstance(label, (str, int)) or not str(label).strip():
            problems.append(
                Problem(
                    file,
                    f"{field}.label",
                    f"{where}missing or empty: every item needs a label (a word or a number)",
                )
            )
        else:
            labels[str(label).strip()] += 1
        for key in entry:
            if key not in ITEM_KEYS:
                problems.append(
                    Problem(
                        file,
                        f"{field}.{key}",
                        f"unknown field (known: {', '.join(ITEM_KEYS)})",
                        "warning",
                    )
                )
        if text:
            if text in seen:
                repeats.append((where, i, seen[text]))
            else:
                seen[text] = i
    # one line however many: a 100,000-row file with 99,000 repeats is not 99,000 warnings
    if repeats:
        where, i, first = repeats[0]
        more = (
            f"; {len(repeats) - 1:,} more item(s) repeat an earlier text"
            if len(repeats) > 1
            else ""
        )
        problems.append(
            Problem(
                file,
                f"items[{i}]",
                f"{where}repeats the text of item {first}{more} (kept: every copy counts)",
                "warning",
            )
        )
    same = _same_numbers(labels)
    if same:
        problems.append(
            Problem(
                file,
                "items",
                f"the labels {same} are one number written differently, and are read as "
                "different classes; write them alike",
                "warning",
            )
        )
    if len(labels) == 1:
        only = next(iter(labels))
        problems.append(
            Problem(
                file,
                "items",
                f"every item has the label {only!r}; a classifier needs at least 2 labels",
            )
        )
    for label, count in sorted(labels.items()):
        if count < 2 and len(labels) > 1:
            problems.append(
                Problem(
                    file,
                    "items",
                    f"label {label!r} has {count} item: a stratified split needs at least "
                    "2 per label",
                )
            )
    return problems


def _same_numbers(labels: Counter[str]) -> str:
    """Labels that are the same number written differently ('1', '1.0', '01'), listed; else ''."""
    by_value: dict[float, list[str]] = {}
    for label in labels:
        try:
            value = float(label)
        except ValueError:
            continue
        by_value.setdefault(value, []).append(label)
    groups = [sorted(g) for g in by_value.values() if len(g) > 1]
    return "; ".join(", ".join(repr(x) for x in g) for g in groups[:3])


def build(data: dict[str, Any], name: str, path: str) -> LabelledTexts:
    """A LabelledTexts from a checked record; raises BiasError naming the first error."""
    raise_on_errors(check(data, path), path)
    items = tuple(
        LabelledText(_clean(entry["text"]), str(entry["label"]).strip(), entry.get("line"))
        for entry in data["items"]
    )
    meta = meta_of(data, path, name)
    if meta.kind != LABELLED_TEXTS:
        meta = attrs.evolve(meta, kind=LABELLED_TEXTS)
    return LabelledTexts(meta, items)
