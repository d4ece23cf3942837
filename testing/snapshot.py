"""The rendered-sentence snapshot of a language package: every sentence its templates make, in one
reviewed text file beside its REVIEW.md, so that a change to a template, a word or its grammar shows
up as a diff of sentences that a native reader reads before the change lands.

A grammar test checks agreement; only a reader sees that "Personen er kort." speaks of a short
person. The snapshot holds what the package's checks render (`LanguageData`): each SEAT template
with each word of each association test, and each LPBS template with each (target, attribute) pair,
one sentence a line with where it comes from:

    weat9 | X | nedstemt | Personen er {word}. | Personen er nedstemt.

Lines are grouped by test and template, so the sentences of one template with all its words read one
after another. Write or update it with

    python -m bias.testing.snapshot languages/nl [languages/de ...]

and check it in a test with `check_rendered_snapshot(data, folder)` (`check_package` does when the
file exists).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from bias.core.text import natural_key, visible
from bias.testing.language_data import LanguageData

SNAPSHOT_FILE = "rendered-sentences.txt"  # beside the package's pyproject.toml and REVIEW.md
COMMAND = "python -m bias.testing.snapshot"
SEP = " | "
_DIFF_SHOWN = 60  # changed lines printed by a failing check


def snapshot_path(folder: Path | str) -> Path:
    return Path(folder) / SNAPSHOT_FILE


def header(language: str) -> list[str]:
    """What the file is and how it is made, as `#` lines at its top."""
    return [
        f"# Every sentence the templates of the '{language}' package render, one a line:",
        "# SEAT: test | set | word | template | sentence; LPBS: test | sets | target / "
        "attribute | ...",
        "# A native reader reads the diff of this file before a change to a template or "
        "word lands.",
        f"# Regenerate: {COMMAND} FOLDER (the package's folder, with its pyproject.toml).",
    ]


def rendered_snapshot(data: LanguageData) -> list[str]:
    """The snapshot's lines: the header, then one line per rendered sentence."""
    lines = header(data.language)
    if data.has("seat-templates"):
        lines += _seat_lines(data)
    if data.has("lpbs-gender"):
        lines += _lpbs_lines(data)
    return lines


def _row(*fields: str) -> str:
    return SEP.join(visible(f) for f in fields)


def _seat_lines(data: LanguageData) -> list[str]:
    """Grouped by file, then template (in the template file's order), then set and word."""
    order = {t.text: i for i, t in enumerate(data.seat.templates)}
    keyed = [
        (natural_key(Path(s.word.file).stem), order[s.template], i, s)
        for i, s in enumerate(data.seat_sentences)
    ]
    return [
        _row(Path(s.word.file).stem, s.word.key, s.word.word, s.template, s.text)
        for *_, s in sorted(keyed, key=lambda k: k[:3])
    ]


def _lpbs_lines(data: LanguageData) -> list[str]:
    """In `LanguageData.lpbs_sentences` order (template, target, attribute); pairs a template does
    not fit (its `when` condition) render nothing and are left out."""
    return [
        _row(
            "lpbs-gender",
            f"{s.target_key}/{s.attribute_key}",
            f"{s.target} / {s.attribute}",
            s.template,
            s.rendered.text,
        )
        for s in data.lpbs_sentences
        if s.rendered is not None
    ]


def check_rendered_snapshot(data: LanguageData, folder: Path | str) -> int:
    """The package's snapshot file holds exactly the sentences its templates render now. On any
    difference, an AssertionError with the diff and the command that rewrites the file (after which
    a native reader reads the diff). Returns the number of sentences."""
    path = snapshot_path(folder)
    now = rendered_snapshot(data)
    update = f"{COMMAND} {folder}"
    if not path.is_file():
        raise AssertionError(f"{path} is missing: write it with `{update}` and have it read.")
    before = path.read_text(encoding="utf-8").splitlines()
    if before != now:
        changed = [
            line
            for line in difflib.unified_diff(
                before, now, str(path), "rendered now", n=0, lineterm=""
            )
            if not line.startswith("@@")
        ]
        shown = "\n".join(changed[:_DIFF_SHOWN])
        more = len(changed) - _DIFF_SHOWN
        raise AssertionError(
            f"the sentences rendered for '{data.language}' differ from {path}:\n{shown}\n"
            + (f"... and {more} more changed lines\n" if more > 0 else "")
            + f"If the change is meant, run `{update}`, have a native reader read `git diff` of "
            "the file, and record the reading in REVIEW.md."
        )
    return len(now) - len(header(data.language))


def write_snapshot(data: LanguageData, folder: Path | str) -> tuple[Path, int]:
    """Writes the snapshot of `data` into the package's `folder`; returns the file and the number
    of sentences in it."""
    path = snapshot_path(folder)
    lines = rendered_snapshot(data)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(lines) - len(header(data.language))


def package_data(folder: Path) -> LanguageData:
    """The installed language package whose distribution is `folder`, refused with what to do when
    `folder` is no language package or the installed one reads its data from elsewhere."""
    from bias.core.errors import BiasError
    from bias.engine.validate import package_language

    if not (folder / "pyproject.toml").is_file():
        raise BiasError(
            f"{folder} is not a language package: it has no pyproject.toml.",
            "Give the package's folder (the one with pyproject.toml and REVIEW.md).",
        )
    language, problems = package_language(folder)
    if language is None:
        reason = (
            str(problems[0])
            if problems
            else f"{folder}/pyproject.toml: no bias.wordsets entry point"
        )
        raise BiasError(reason, "Give a language package's folder.")
    data = LanguageData.installed(language)
    if folder.resolve() not in data.root.resolve().parents:
        raise BiasError(
            f"The installed '{language}' package reads its data from {data.root}, not from "
            f"{folder}.",
            f"Install this folder first: pip install -e {folder}",
        )
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m bias.testing.snapshot FOLDER...`: 0 when written, 2 for a bad folder (none is
    written then), 1 when a file cannot be written."""
    from bias.core.errors import BiasError

    folders = list(sys.argv[1:] if argv is None else argv)
    if not folders or any(f.startswith("-") for f in folders):
        print(
            f"usage: {COMMAND} FOLDER... (a language package's folder, e.g. languages/nl)",
            file=sys.stderr,
        )
        return 2
    try:
        # every folder is checked before anything is written
        checked = [(Path(f), package_data(Path(f))) for f in folders]
    except BiasError as exc:
        print(visible(exc.message), file=sys.stderr)
        if exc.hint:
            print(visible(exc.hint), file=sys.stderr)
        return 2
    for folder, data in checked:
        try:
            path, count = write_snapshot(data, folder)
        except OSError as exc:
            print(
                f"Cannot write {visible(snapshot_path(folder))}: {exc.strerror}.", file=sys.stderr
            )
            return 1
        print(f"wrote {visible(path)}: {count} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
