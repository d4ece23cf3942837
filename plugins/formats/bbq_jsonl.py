"""BBQ's published JSONL files (Parrish et al. 2022) and MBBQ's (Neplenbroek et al. 2024): one
question a line, read into the `bbq` kind.

The fields read are those of the published files: example_id, question_index, question_polarity
("neg" or "nonneg"), context_condition ("ambig" or "disambig"), category, answer_info (for each of
ans0..ans2 its text and its group label, "unknown" for the unknown answer),
additional_metadata.stereotyped_groups, context, question, ans0, ans1, ans2 and label.

The stereotyped answer is the answer whose group label is one of the stereotyped groups: first by an
exact match (case ignored), then with spaces, hyphens and underscores ignored (`low SES` is
`lowSES`), then by a part of a compound label (`F-Black` holds `Black`), then, for the groups `F`
and `M`, by a noun for a woman or girl (a man or boy) in English, Dutch, Spanish or Turkish, which
is how the gender questions that name people by a noun label them (`woman`, `vrouw`, `mujer`,
`kadın`). An item where no answer or both group answers match is refused, naming its line: add a
`target_loc` field to such a line to say which, as BBQ's own metadata table gives it: the index of
the answer that follows the bias, which is the stereotyped group's for a negative question and the
other group's for a non-negative one (as the BBQ authors read it in their own analysis).

MBBQ publishes the same fields in one file per category and language, `<Category>_<language>.jsonl`
(en, es, nl, tr), and a control set, `<Category>_control_<language>.jsonl`, whose contexts name
people by first names (the group label stays in answer_info) to measure how well a model answers
independently of bias. Such a file name gives the word set its language and, for the control set, a
title and source that say so; the lines are read as BBQ's. The files are the user's: none are
shipped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import MAX_DATASET_FILE, BBQ, file_head, parse_json, read_text

REQUIRED = (
    "example_id",
    "question_polarity",
    "context_condition",
    "category",
    "answer_info",
    "additional_metadata",
    "context",
    "question",
    "ans0",
    "ans1",
    "ans2",
    "label",
)
ANSWERS = ("ans0", "ans1", "ans2")
_SNIFF_KEYS = ("example_id", "context_condition", "question_polarity", "answer_info")
_PARTS = re.compile(r"[-_\s]+")
# MBBQ's file names: <Category>_<language>.jsonl and <Category>_control_<language>.jsonl
MBBQ_LANGUAGES = ("en", "es", "nl", "tr")
_MBBQ_NAME = re.compile(
    rf"^(?P<category>.+?)(?P<control>_control)?_(?P<language>{'|'.join(MBBQ_LANGUAGES)})$"
)
# Nouns the gender questions use as the group label of an answer that names a person by a noun,
# where stereotyped_groups says F or M: the labels of BBQ (English) and of MBBQ's translations, with
# the obvious companions (singular, lower case; matched with case ignored).
GENDER_NOUNS = {
    "f": frozenset(
        {
            "woman",
            "girl",
            "lady",  # en
            "vrouw",
            "meisje",
            "dame",  # nl
            "mujer",
            "chica",
            "niña",
            "señora",
            "maestra",  # es
            "kadın",
            "kız",
            "kız çocuk",  # tr
        }
    ),
    "m": frozenset(
        {
            "man",
            "boy",
            "gentleman",  # en (and nl "man")
            "jongen",
            "heer",  # nl
            "hombre",
            "chico",
            "niño",
            "señor",
            "maestro",  # es
            "adam",
            "erkek",
            "erkek çocuk",  # tr
        }
    ),
}


def _compact(text: str) -> str:
    return _PARTS.sub("", text)


def _group(info: Any, key: str) -> str | None:
    """The group label of one answer (answer_info[key][1]), casefolded; None when absent."""
    entry = info.get(key) if isinstance(info, dict) else None
    if isinstance(entry, list) and len(entry) >= 2 and isinstance(entry[1], str):
        return entry[1].strip().casefold()
    return None


def _matches(groups: list[str | None], unknown: int, stereotyped: list[str]) -> list[int]:
    """The group answers whose label is a stereotyped group, by the first rule that finds any:
    exact, compact (spaces, hyphens, underscores ignored), a part of a compound label, a gender
    noun."""
    wanted = {s.strip().casefold() for s in stereotyped if isinstance(s, str) and s.strip()}
    nouns = frozenset().union(*(GENDER_NOUNS.get(w, frozenset()) for w in wanted))
    candidates = [i for i in range(len(groups)) if i != unknown and groups[i]]
    for match in (
        lambda g: g in wanted,
        lambda g: _compact(g) in {_compact(w) for w in wanted},
        lambda g: bool(wanted & set(_PARTS.split(g))),
        lambda g: g in nouns,
    ):
        found = [i for i in candidates if match(groups[i])]
        if found:
            return found
    return []


def mbbq_name(path: Path) -> tuple[str, bool] | None:
    """(language, control set?) of a file named as MBBQ names its files; None for any other name."""
    found = _MBBQ_NAME.match(path.stem) if path.suffix.lower() == ".jsonl" else None
    return (found.group("language"), bool(found.group("control"))) if found else None


class BbqJsonlFormat(WordSetFormat):
    name: ClassVar[str] = "bbq-jsonl"
    summary: ClassVar[str] = (
        "BBQ multiple-choice bias questions, the published JSONL files of BBQ and MBBQ "
        "(for the bbq metric)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".jsonl",)
    kind: ClassVar[str] = BBQ

    def sniff(self, path: Any) -> bool:
        """A first line that is a JSON object with BBQ's field names."""
        head = file_head(path)
        if head is None:
            return False
        first = next((line for line in head.splitlines() if line.strip()), "")
        return first.lstrip().startswith("{") and any(f'"{key}"' in first for key in _SNIFF_KEYS)

    def record(self, path: Any) -> dict[str, Any]:
        path = Path(path)
        text = read_text(path, "BBQ file", limit=MAX_DATASET_FILE)
        items: list[dict[str, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                items.append(self._item(parse_json(line, f"{path}: line {number}"), path, number))
        if not items:
            raise BiasError(
                f"{path}: the file is empty.",
                "A BBQ file has one JSON object (one question) per line.",
            )
        mbbq = mbbq_name(path)
        if mbbq is None:
            language, title, source = (
                "und",
                f"BBQ questions from {path.name}",
                f"user file {path.name} (BBQ format, Parrish et al. 2022)",
            )
        else:
            language, control = mbbq
            which = (
                "MBBQ control questions (first names for the groups; measures accuracy)"
                if control
                else "MBBQ questions"
            )
            title = f"{which} from {path.name}"
            source = (
                f"user file {path.name} (MBBQ {'control set' if control else 'format'}, "
                "Neplenbroek et al. 2024)"
            )
        return {
            "kind": BBQ,
            "language": language,
            "bias_type": "mixed",
            "title": title,
            "source": source,
            "licence": "unspecified",
            # the file states none; the bbq metric's sign is its own convention
            "expected_direction": "none",
            "items": items,
        }

    def _item(self, row: Any, path: Path, number: int) -> dict[str, Any]:
        where = f"{path}: line {number}"
        if not isinstance(row, dict):
            raise BiasError(
                f"{where}: not a JSON object.",
                "A BBQ file has one JSON object (one question) per line.",
            )
        if "example_id" in row:
            where += f" (example_id {row['example_id']!r})"
        missing = [key for key in REQUIRED if key not in row]
        if missing:
            raise BiasError(
                f"{where}: missing field(s) {', '.join(missing)}.",
                "Each line of a BBQ file needs the fields of the published files (see "
                "docs/data-formats.md, bbq).",
            )
        info = row["answer_info"]
        groups = [_group(info, key) for key in ANSWERS]
        unknowns = [i for i, g in enumerate(groups) if g == "unknown"]
        if len(unknowns) != 1:
            raise BiasError(
                f"{where}: answer_info marks {len(unknowns)} answers as 'unknown'; exactly "
                "one must be.",
                "answer_info gives each of ans0..ans2 as [text, group]; the unknown "
                "answer's group is 'unknown'.",
            )
        meta = row["additional_metadata"]
        groups_named = meta.get("stereotyped_groups") if isinstance(meta, dict) else None
        if not isinstance(groups_named, list) or not groups_named:
            raise BiasError(
                f"{where}: additional_metadata.stereotyped_groups is missing or empty.",
                "Name the stereotyped group(s), as the published files do.",
            )
        self._check_fields(row, where, unknowns[0])
        target_loc = row.get("target_loc")
        if target_loc is not None:
            # BBQ's metadata table names the answer that follows the bias: the stereotyped group for
            # a negative question, the other group for a non-negative one (its authors' reading)
            stereotyped = target_loc
            valid = (
                isinstance(target_loc, int)
                and not isinstance(target_loc, bool)
                and 0 <= target_loc < 3
            )
            if valid and target_loc != unknowns[0] and row["question_polarity"] == "nonneg":
                stereotyped = 3 - unknowns[0] - target_loc
        else:
            found = _matches(groups, unknowns[0], groups_named)
            if len(found) != 1:
                raise BiasError(
                    self._unresolved(where, groups, unknowns[0], groups_named, len(found)),
                    "Correct answer_info or stereotyped_groups, or add target_loc (as in "
                    "BBQ's metadata table) to that line.",
                )
            stereotyped = found[0]
        category = row["category"]
        return {
            "id": f"{category}-{row['example_id']}",
            "category": category,
            "context": row["context"],
            "context_condition": row["context_condition"],
            "question": row["question"],
            "polarity": row["question_polarity"],
            "answers": [row[key] for key in ANSWERS],
            "unknown": unknowns[0],
            "stereotyped": stereotyped,
            "target": ", ".join(str(g) for g in groups_named),
            "label": row["label"],
            "line": number,
        }

    @staticmethod
    def _check_fields(row: dict[str, Any], where: str, unknown: int) -> None:
        """The fields the house format renames, checked under the names the file gives them, so a
        message names what the user sees in the file (target_loc, not the stereotyped answer it
        becomes)."""
        if row["question_polarity"] not in ("neg", "nonneg"):
            raise BiasError(
                f'{where}: question_polarity {row["question_polarity"]!r} must be "neg" or '
                '"nonneg".'
            )
        if row["context_condition"] not in ("ambig", "disambig"):
            raise BiasError(
                f'{where}: context_condition {row["context_condition"]!r} must be "ambig" '
                'or "disambig".'
            )
        for key in ("label", "target_loc"):
            value = row.get(key)
            if key == "target_loc" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 3:
                raise BiasError(
                    f"{where}: {key} {value!r} must be 0, 1 or 2, the index of one of "
                    "ans0, ans1 and ans2."
                )
        if row.get("target_loc") == unknown:
            raise BiasError(
                f"{where}: target_loc {unknown} names ans{unknown}, which answer_info "
                "marks as the unknown answer.",
                "target_loc is the answer that follows the bias, one of the two groups (as "
                "in BBQ's metadata table).",
            )

    @staticmethod
    def _unresolved(
        where: str, groups: list[str | None], unknown: int, named: list[str], found: int
    ) -> str:
        """Why no single answer is the stereotyped one: the two group answers share a label, or the
        stereotyped groups match both or none of them."""
        shown = ", ".join(f"{key}={g!r}" for key, g in zip(ANSWERS, groups))
        pair = [g for i, g in enumerate(groups) if i != unknown]
        if pair[0] is not None and pair[0] == pair[1]:
            return (
                f"{where}: both group answers carry the group label {pair[0]!r} in answer_info "
                f"({shown}), so the stereotyped answer is not among the answers."
            )
        return (
            f"{where}: the stereotyped answer is not among the answers: stereotyped_groups "
            f"{named} match "
            f"{'both' if found > 1 else 'none'} of the groups ({shown})."
        )
