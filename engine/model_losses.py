"""`bias validate --model SPEC`: per word-level test, how many stimuli that model would lose, and
which tests it would refuse, before anything is run.

A static model (fastText, word2vec, GloVe: a fixed vocabulary) has no vector for a word it never saw
(fastText builds one from sub-words) and none for a phrase at all; a set that loses more than the
lost-word threshold is refused by every association metric. A model without a fixed vocabulary
(a Hugging Face encoder) encodes any text, so it loses nothing at word level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bias.core.association.lookup import LOST_THRESHOLD, set_vectors, too_many_lost
from bias.core.data.content_checks import static_loss
from bias.core.interfaces import Capability
from bias.core.data.wordsets import Problem, errors_of, validate_toml_file
from bias.core.data.file_reading import read_toml

LOSS = "model-loss"  # Problem.code of these findings


def word_level_tests(paths: list[Path]) -> list[tuple[Path, Any]]:
    """The word-level association tests among files and folders (house TOML, and the files an
    importer reads, such as the BIAS Detection Framework's WEAT .txt), each with its file; files
    with errors are left to the format checks."""
    from bias.core.errors import BiasError
    from bias.core.data.wordsets import build_record
    from bias.engine.validate import data_files
    from bias.registry.resolve import format_for

    files: list[Path] = []
    for path in paths:
        path = Path(path)
        files += [path] if path.is_file() else data_files(path)
    out = []
    for file in files:
        if file.suffix.lower() == ".toml":
            if errors_of(validate_toml_file(file)):
                continue
            data = read_toml(file)
            if (
                data.get("kind", "association") == "association"
                and data.get("stimuli", "words") == "words"
            ):
                out.append((file, build_record(data, file.stem, str(file))))
            continue
        importer = format_for(file)
        if importer is None or importer.kind != "association" or errors_of(importer.validate(file)):
            continue
        try:
            test = importer.load(file)
        except BiasError:
            continue
        if getattr(test, "stimuli", "words") == "words":
            out.append((file, test))
    return out


def model_losses(
    spec: str, paths: list[Path], threshold: float = LOST_THRESHOLD, case: str = "exact"
) -> list[Problem]:
    """A note per word-level test with the stimuli `spec` loses (per set), a warning for each test
    it would refuse (a set losing more than `threshold`)."""
    from bias.registry.resolve import build_embedder

    embedder = build_embedder(spec)
    tests = word_level_tests(paths)
    if Capability.VOCABULARY not in embedder.capabilities:
        return [
            Problem(
                spec,
                "",
                f"{spec} has no fixed vocabulary: it encodes every stimulus, so none of "
                f"the {len(tests)} word-level tests loses words",
                "note",
                LOSS,
            )
        ]
    embedder.load()
    problems = []
    for file, test in tests:
        _, _, lost, _ = set_vectors(embedder, test, case)
        total = sum(len(lost[k]) for k in lost)
        per_set = ", ".join(
            f"{k}: {static_loss(list(wl.words), lost[k], threshold)}"
            for k, wl in test.sets().items()
            if lost[k]
        )
        refused = [
            f"set {k} lost {len(lost[k])} of {len(wl.words)} words {why}"
            for k, wl in test.sets().items()
            if (why := too_many_lost(lost[k], len(wl.words), threshold))
        ]
        if refused:
            problems.append(
                Problem(
                    str(file),
                    "",
                    f"{spec} refuses this test: {'; '.join(refused)}",
                    "warning",
                    LOSS,
                )
            )
        else:
            lost_words = (
                f"loses {total} of {len(test.all_words())} stimuli ({per_set})"
                if total
                else "loses no stimulus"
            )
            problems.append(Problem(str(file), "", f"{spec} {lost_words}", "note", LOSS))
    return problems
