"""`bias validate`: every problem of a word-set file or of a whole language package, with file and
field."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from bias.core.data import content_checks
from bias.core.errors import BiasError
from bias.core.data.wordsets import Problem, errors_of, read_and_validate, validate_toml_file
from bias.core.data.file_reading import read_text, read_toml
from bias.core.runs.manifest import MANIFEST_FILE
from bias.core.runs.results import RESULTS_FILE
from bias.core.text import shown

RUN_FILES = (RESULTS_FILE, MANIFEST_FILE)


def package_language(folder: Path) -> tuple[str | None, list[Problem]]:
    """The language a package's pyproject registers under `bias.wordsets`, and problems with it."""
    pyproject = folder / "pyproject.toml"
    if not pyproject.exists():
        return None, []
    try:
        data = read_toml(pyproject)
    except BiasError as exc:
        return None, [Problem(str(pyproject), "", exc.message)]
    eps = data.get("project", {}).get("entry-points", {}).get("bias.wordsets")
    if not isinstance(eps, dict) or not eps:
        return None, [
            Problem(
                str(pyproject),
                'project.entry-points."bias.wordsets"',
                "missing: a language package registers its DataPackage there, e.g. nl = "
                '"bias_lang_nl:PACKAGE"',
            )
        ]
    if len(eps) > 1:
        return None, [
            Problem(
                str(pyproject),
                'project.entry-points."bias.wordsets"',
                "register one language per package",
            )
        ]
    return next(iter(eps)), []


def validate_path(path: Path, frequencies: Path | None = None) -> tuple[list[Problem], int]:
    """Problems found and the number of data files checked. `frequencies` is a word-frequency list
    against which counterpart sets are compared (see `bias.core.data.content_checks`). A set below
    the minimum size, a warning when a test is run, is an error here: a published set must say so
    (published_small_sets = true)."""
    import attrs

    from bias.core.data.wordsets import SMALL_SET

    found, count = _validate_path(Path(path), frequencies)
    return [attrs.evolve(p, severity="error") if p.code == SMALL_SET else p for p in found], count


def _validate_path(path: Path, frequencies: Path | None = None) -> tuple[list[Problem], int]:
    if not path.exists():
        raise BiasError(
            f"Nothing to validate at {path}: no such file or folder.",
            "Give a word-set file or a language-package folder.",
        )
    counts = load_frequencies(frequencies)
    if path.is_file():
        if path.suffix.lower() != ".toml":
            return validate_file(path), 1
        data, problems = read_and_validate(path)  # the file parsed once for both checks
        if data is not None and not errors_of(problems):
            ambiguous = content_checks.read_ambiguous(path.parent / content_checks.AMBIGUOUS_FILE)
            problems += content_checks.check_record_content(data, str(path), ambiguous, counts)
        return problems, 1
    language, problems = package_language(path)
    files = sorted(
        p
        for p in path.rglob("*.toml")
        if p.name != "pyproject.toml" and not any(part.startswith(".") for part in p.parts)
    )
    files = within(path, files, problems)
    if not files:
        problems.append(Problem(str(path), "", "no word-set files (*.toml) found"))
    parsed: dict[Path, dict[str, Any]] = {}  # each file parsed once for every check
    ambiguous: dict[str, dict[str, str]] = {}
    for file in files:
        data, found = read_and_validate(file, language)
        problems.extend(found)
        if data is None or errors_of(found):
            continue
        parsed[file] = data
        if file.parent not in ambiguous:
            ambiguous[file.parent] = content_checks.read_ambiguous(
                file.parent / content_checks.AMBIGUOUS_FILE
            )
        problems.extend(
            content_checks.check_record_content(data, str(file), ambiguous[file.parent], counts)
        )
    problems.extend(check_template_coverage(parsed))
    if language is not None:
        problems.extend(check_review_log(path, files))
    return problems, len(files)


REVIEW_FILE = "REVIEW.md"
REVIEW_LOG = "review-log"  # Problem.code of the REVIEW.md findings


def check_review_log(package: Path, files: list[Path]) -> list[Problem]:
    """A language package keeps REVIEW.md beside its pyproject: each test with the number of entries
    a reviewer read, what changed after review, and open doubts. A warning when it is missing, and
    one per shipped word set it does not name (by file stem, `religion`, or qualified,
    `nl/religion`)."""
    import re

    log = package / REVIEW_FILE
    if not log.is_file():
        return [
            Problem(
                str(log),
                "",
                f"missing: a language package records its review in {REVIEW_FILE} (each "
                "test with its reviewed entries "
                "count, what was changed after review, open doubts); see CONTRIBUTING.md",
                "warning",
                REVIEW_LOG,
            )
        ]
    text = read_text(log, "review log")
    return [
        Problem(
            str(log),
            "",
            f"does not mention {file.stem} ({file.name}): say how many of its entries were "
            "reviewed, what changed, what is in doubt",
            "warning",
            REVIEW_LOG,
        )
        for file in files
        if not re.search(rf"(?<![\w-]){re.escape(file.stem)}(?![\w-])", text)
    ]


def load_frequencies(path: Path | None) -> dict[str, float]:
    if path is None:
        return {}
    try:
        counts = content_checks.read_frequencies(Path(path))
    except OSError as exc:
        raise BiasError(
            f"Cannot read the frequency list {path}: {exc.strerror}.",
            "Give a text file with `word count` per line.",
        ) from None
    except UnicodeDecodeError:
        raise BiasError(
            f"The frequency list {path} is not UTF-8 text.", "Save it as UTF-8."
        ) from None
    if not counts:
        raise BiasError(
            f"The frequency list {path} has no words.",
            "Give a text file with `word count` per line.",
        )
    return counts


def check_template_coverage(parsed: dict[Path, dict[str, Any]]) -> list[Problem]:
    """Across a package: every word of every association test must get at least one SEAT sentence; a
    word that none can take lacks the grammar its templates need (a noun without its gender, a name
    without class = "name"). A template that skips a word for lack of a feature is the mechanism
    itself (plural templates skip words without a plural), so that alone is not reported."""
    from bias.core.data.wordsets import SET_KEYS, build_record

    by_name = {f.name: f for f in parsed}
    if "seat-templates.toml" not in by_name:
        return []
    template_file = by_name["seat-templates.toml"]
    templates = build_record(parsed[template_file], "seat-templates", str(template_file))
    problems: list[Problem] = []
    for file, data in parsed.items():
        if data.get("kind", "association") != "association" or data.get("stimuli") == "sentences":
            continue
        test = build_record(data, file.stem, str(file))
        for key in SET_KEYS:
            wl = test.sets()[key]
            for i, word in enumerate(wl.words):
                merged = {**templates.defaults, **wl.features(word)}
                for text, placeholder in content_checks.unresolved_agreement(
                    templates.templates,
                    templates.forms,
                    {"word": (word, merged)},
                    templates.meta.language,
                ):
                    problems.append(
                        content_checks.agreement_problem(
                            str(file), f"sets.{key}.words[{i}]", word, text, placeholder, merged
                        )
                    )
                if not templates.render(word, wl.features(word)):
                    have = (
                        ", ".join(
                            f"{k}={v}"
                            for k, v in {**templates.defaults, **wl.features(word)}.items()
                        )
                        or "none"
                    )
                    problems.append(
                        Problem(
                            str(file),
                            f"sets.{key}.words[{i}]",
                            f"'{word}' gets no sentence from {template_file.name} (its "
                            f"grammar: {have}); "
                            "give it the features its templates need",
                        )
                    )
    return problems


def validate_file(path: Path) -> list[Problem]:
    """The format checks of one file, then (when it passes) the content checks its record allows; a
    file of the BIAS Detection Framework's datasets folder that is no test gets a note saying so."""
    if path.suffix.lower() == ".toml":
        return validate_toml_file(path)
    from bias.registry.resolve import format_for, not_a_test

    importer = format_for(path)
    if importer is None:
        reason = not_a_test(path)
        if reason:
            return [Problem(str(path), "", reason, "note")]
        what = f"'{path.suffix}' files" if path.suffix else "files without an extension"
        return [
            Problem(
                str(path),
                "",
                f"no importer reads {what}; word sets are read from .toml, WEAT .txt and "
                "SEAT .json files",
            )
        ]
    found = importer.validate(path)
    if not errors_of(found):
        try:
            found += content_checks.check_record_content(importer.record(path), str(path))
        except BiasError:
            pass  # unreadable records were reported by validate
    return found


def within(folder: Path, paths: list[Path], problems: list[Problem]) -> list[Path]:
    """The paths that stay inside `folder`; a symbolic link that leads out of it is not followed and
    is said, as a warning in `problems` (what a folder holds is what is checked, nothing beyond
    it)."""
    base = Path(folder).resolve()
    kept = []
    for path in paths:
        if path.is_symlink():
            target = path.resolve()
            if not (target == base or base in target.parents):
                problems.append(
                    Problem(
                        str(path),
                        "",
                        f"a symbolic link to {target}, outside {folder}: not followed, not checked",
                        "warning",
                    )
                )
                continue
        kept.append(path)
    return kept


def data_files(folder: Path, problems: list[Problem] | None = None) -> list[Path]:
    """The word-set files of a folder tree: TOML and every suffix an importer reads (hidden files
    skipped; links out of the folder are left out and added to `problems`)."""
    from bias.registry.resolve import format_for

    out = []
    for path in within(
        folder, sorted(Path(folder).rglob("*")), problems if problems is not None else []
    ):
        if not path.is_file() or any(
            part.startswith(".") for part in path.relative_to(folder).parts
        ):
            continue
        if path.name in ("pyproject.toml", content_checks.AMBIGUOUS_FILE):  # not word sets: a
            continue  # package's project file, and its list of words that validation warns of
        if path.suffix.lower() == ".toml" or format_for(path, by_folder=False) is not None:
            out.append(path)
    return out


def validate_paths(
    paths: list[Path], frequencies: Path | None = None
) -> tuple[list[Problem], int, list[tuple[str, int, int]]]:
    """Any number of files and folders: a language package is checked as a package, any other folder
    file by file (a folder of the BIAS Detection Framework's datasets, say). Returns the problems,
    the number of files checked, and (file, errors, warnings) for each file; a folder named with one
    of the framework's own language codes (tk, ne) adds a note saying which language it is read
    as."""
    from bias.core.data.framework_layout import FOLDER_CODES, language_code

    problems: list[Problem] = []
    per_file: list[tuple[str, int, int]] = []
    checked = 0
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise BiasError(
                f"Nothing to validate at {path}: no such file or folder.",
                "Give word-set files or folders.",
            )
        if path.is_dir() and any((path / name).is_file() for name in RUN_FILES):
            # a run's own files read as datasets gave a screen of nonsense errors
            raise BiasError(
                f"{shown(path)} is a run folder ({', '.join(RUN_FILES)}); `bias validate` checks "
                "word sets, language packages and datasets.",
                f"Read the run with: bias report {shlex.quote(str(path))}",
            )
        if path.is_dir() and (path / "pyproject.toml").exists():
            found, n = validate_path(path, frequencies)
            problems.extend(found)
            checked += n
            per_file.append((str(path), *severity_counts(found)))
            continue
        files = [path] if path.is_file() else data_files(path, problems)
        if not files:
            problems.append(Problem(str(path), "", "no word-set files found"))
        noted: set[str] = set()
        for file in files:
            found = (
                validate_path(file, frequencies)[0]
                if file.suffix.lower() == ".toml"
                else validate_file(file)
            )
            for part in file.parts:
                if part in FOLDER_CODES and part not in noted:
                    noted.add(part)
                    found = [
                        *found,
                        Problem(str(file.parent.parent), "", language_code(part)[1] or "", "note"),
                    ]
            problems.extend(found)
            checked += 1
            per_file.append((str(file), *severity_counts(found)))
    return problems, checked, per_file


def severity_counts(problems: list[Problem]) -> tuple[int, int]:
    """Errors and warnings among `problems`; notes are facts, not problems, and count as neither.
    The one count of both the per-path lines and the total line of `bias validate`."""
    return sum(p.severity == "error" for p in problems), sum(
        p.severity == "warning" for p in problems
    )


def attributed(
    per_file: list[tuple[str, int, int]], extra: list[Problem]
) -> list[tuple[str, int, int]]:
    """The per-path counts with `extra` problems (found later, as a model's losses) added to the
    path that holds each one's file, so the per-path lines add up to the total."""
    out = []
    for name, errors, warnings in per_file:
        base = Path(name)
        mine = [p for p in extra if Path(p.file) == base or base in Path(p.file).parents]
        more_errors, more_warnings = severity_counts(mine)
        out.append((name, errors + more_errors, warnings + more_warnings))
    return out
