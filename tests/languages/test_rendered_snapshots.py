"""Every sentence the templates of each language package render (SEAT templates with the words of
every association test, LPBS templates with every target and attribute) is in the package's reviewed
snapshot, `languages/<code>/rendered-sentences.txt`. A change to a template, a word or its grammar
fails here with the diff of sentences and the command that rewrites the file; a native reader reads
that diff before the change lands, and REVIEW.md records the reading."""

from __future__ import annotations

import pytest
from fixtures.language_data import language_data, package_dir

from bias.testing.snapshot import check_rendered_snapshot

LANGUAGES = ("en", "nl", "de", "no", "is", "tr", "it")


@pytest.mark.parametrize("code", LANGUAGES)
def test_rendered_sentences_are_the_reviewed_snapshot(code: str) -> None:
    data = language_data(code)
    checked = check_rendered_snapshot(data, package_dir(code))
    # every SEAT and every LPBS sentence the grammar tests read is a line of the file
    rendered = len(data.seat_sentences) + sum(s.rendered is not None for s in data.lpbs_sentences)
    assert checked == rendered and rendered > 1000
