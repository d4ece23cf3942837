"""Checks a language package runs in its own tests: the data and grammar checks the first-party
packages pass, usable from any package without this repository.

    from bias.testing import LanguageData, check_package

    def test_my_package():
        check_package(LanguageData.installed("xx"), folder=Path(__file__).parents[1])

`check_package` runs the checks that apply to the files the package has (the rendered-sentence
snapshot among them: `python -m bias.testing.snapshot FOLDER` writes it); the single checks and
`LanguageData` (every word, SEAT sentence and LPBS sentence of the package) are there for the
language's own agreement rules.

A plugin distribution runs `check_metric`, `check_embedder`, `check_debiaser` and `check_format` on
its classes, or `parametrize_with_checks` for one test per named check (see `bias.testing.plugins`):
the contract every first-party plugin passes too.
"""

from __future__ import annotations

from pathlib import Path

from bias.testing.checks import (
    FIRST_PARTY_FILES,
    check_every_word_gets_a_sentence,
    check_expected_files,
    check_files_are_nfc_utf8,
    check_lpbs_renders_every_pair,
    check_origin_names_are_typed_and_balanced,
    check_pairs_differ_in_one_phrase,
    check_sentences_are_well_formed,
    check_validates,
)
from bias.testing.language_data import LanguageData, LpbsSentence, SeatSentence, Word
from bias.testing.plugins import (
    check_debiaser,
    check_embedder,
    check_format,
    check_metric,
    checks_of,
    parametrize_with_checks,
)
from bias.testing.validation import validate


def check_package(
    data: LanguageData,
    folder: Path | str | None = None,
    *,
    required: tuple[str, ...] = (),
    pairs_minimum: int = 40,
    pair_bias_types: int = 5,
) -> None:
    """Every generic check that applies to the files the package has: `bias validate` of `folder`
    (the distribution's folder, with its pyproject) or of the data folder, NFC, the `required`
    files, SEAT sentences for every word, LPBS sentences for every pair, minimal sentence pairs, and
    the rendered-sentence snapshot when `folder` has one (see `bias.testing.snapshot`)."""
    check_validates(folder if folder is not None else data.root)
    check_files_are_nfc_utf8(data)
    check_expected_files(data, required)
    if data.has("seat-templates"):
        check_every_word_gets_a_sentence(data)
        check_sentences_are_well_formed(data)
    if data.has("lpbs-gender"):
        check_lpbs_renders_every_pair(data)
    if data.has("crows-sample"):
        check_pairs_differ_in_one_phrase(data, minimum=pairs_minimum, bias_types=pair_bias_types)
    # imported here: `python -m bias.testing.snapshot` must find the module not yet imported
    from bias.testing.snapshot import check_rendered_snapshot, snapshot_path

    if folder is not None and snapshot_path(folder).is_file():
        check_rendered_snapshot(data, folder)


__all__ = [
    "FIRST_PARTY_FILES",
    "LanguageData",
    "LpbsSentence",
    "SeatSentence",
    "Word",
    "check_debiaser",
    "check_embedder",
    "check_every_word_gets_a_sentence",
    "check_expected_files",
    "check_files_are_nfc_utf8",
    "check_format",
    "check_lpbs_renders_every_pair",
    "check_metric",
    "check_origin_names_are_typed_and_balanced",
    "check_package",
    "check_pairs_differ_in_one_phrase",
    "check_sentences_are_well_formed",
    "check_validates",
    "checks_of",
    "parametrize_with_checks",
    "validate",
]
