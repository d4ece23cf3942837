"""`bias validate`: every problem of a word-set file or of a whole language package, with file and field."""

from __future__ import annotations

from pathlib import Path

from bias.core.errors import BiasError
from bias.core.wordsets import Problem, errors_of, read_toml, validate_toml_file


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
                "missing: a language package registers its DataPackage there, e.g. nl = \"bias_lang_nl:PACKAGE\"",
            )
        ]
    if len(eps) > 1:
        return None, [Problem(str(pyproject), 'project.entry-points."bias.wordsets"', "register one language per package")]
    return next(iter(eps)), []


def validate_path(path: Path) -> tuple[list[Problem], int]:
    """Problems found and the number of data files checked."""
    path = Path(path)
    if not path.exists():
        raise BiasError(f"Nothing to validate at {path}: no such file or folder.", "Give a word-set file or a language-package folder.")
    if path.is_file():
        return validate_file(path), 1
    language, problems = package_language(path)
    files = sorted(p for p in path.rglob("*.toml") if p.name != "pyproject.toml" and not any(part.startswith(".") for part in p.parts))
    if not files:
        problems.append(Problem(str(path), "", "no word-set files (*.toml) found"))
    broken = set()
    for file in files:
        found = validate_toml_file(file, language)
        problems.extend(found)
        if errors_of(found):
            broken.add(file)
    problems.extend(check_template_coverage([f for f in files if f not in broken]))
    return problems, len(files)


def check_template_coverage(files: list[Path]) -> list[Problem]:
    """Across a package: every word of every association test must get at least one SEAT sentence; a
    word that none can take lacks the grammar its templates need (a noun without its gender, a name
    without class = "name"). A template that skips a word for lack of a feature is the mechanism
    itself (plural templates skip words without a plural), so that alone is not reported."""
    from bias.core.wordsets import SET_KEYS, build_record

    by_name = {f.name: f for f in files}
    if "seat-templates.toml" not in by_name:
        return []
    template_file = by_name["seat-templates.toml"]
    templates = build_record(read_toml(template_file), "seat-templates", str(template_file))
    problems: list[Problem] = []
    for file in files:
        data = read_toml(file)
        if data.get("kind", "association") != "association" or data.get("stimuli") == "sentences":
            continue
        test = build_record(data, file.stem, str(file))
        for key in SET_KEYS:
            wl = test.sets()[key]
            for i, word in enumerate(wl.words):
                if not templates.render(word, wl.features(word)):
                    have = ", ".join(f"{k}={v}" for k, v in {**templates.defaults, **wl.features(word)}.items()) or "none"
                    problems.append(
                        Problem(
                            str(file),
                            f"sets.{key}.words[{i}]",
                            f"'{word}' gets no sentence from {template_file.name} (its grammar: {have}); "
                            "give it the features its templates need",
                        )
                    )
    return problems


def validate_file(path: Path) -> list[Problem]:
    if path.suffix.lower() == ".toml":
        return validate_toml_file(path)
    from bias.registry.resolve import format_for

    importer = format_for(path)
    if importer is None:
        return [Problem(str(path), "", f"unknown word-set format '{path.suffix}' (use .toml, WEAT .txt or SEAT .json)")]
    return importer.validate(path)
