"""The rendered-sentence snapshot tool (`bias.testing.snapshot`): what a line holds, that any
change of a word or template fails the check with the diff and the command to run, and the command
that writes the file. Its bad inputs are in tests/bad_input/test_bad_input_snapshot.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.language_data import ROOT

from bias.testing import LanguageData
from bias.testing import snapshot

META = """format = "bias-wordset/1"
language = "xx"
source = "Authored for this test."
licence = "CC0-1.0"
"""
TEMPLATES = (
    META
    + """kind = "templates"
bias_type = "any"
slots = ["word"]
[[templates]]
text = "Das ist {word}."
[[templates]]
text = "Jemand ist {word}."
when = { "word.class" = "personal" }
"""
)


def words(items: list[str]) -> str:
    return "[" + ", ".join(f'"{w}"' for w in items) + "]"


def association_file(x: list[str]) -> str:
    sets = {"X": x, "Y": ["eins", "zwei"], "A": ["froh", "heiter"], "B": ["trüb", "düster"]}
    body = "".join(f"[sets.{k}]\nwords = {words(v)}\n" for k, v in sets.items())
    return (
        META
        + 'kind = "association"\nbias_type = "non-social"\n'
        + body.replace("[sets.X]\n", '[sets.X]\ngrammar = { class = "personal" }\n')
    )


def tiny_package(root: Path, x: list[str]) -> LanguageData:
    data = root / "bias_lang_xx" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "seat-templates.toml").write_text(TEMPLATES, encoding="utf-8")
    (data / "t.toml").write_text(association_file(x), encoding="utf-8")
    return LanguageData("xx", data)


def test_each_line_names_test_set_word_and_template_grouped_by_template(tmp_path):
    lines = snapshot.rendered_snapshot(tiny_package(tmp_path, ["rot", "grün"]))
    assert all(line.startswith("# ") for line in lines[:4])
    assert lines[4:] == [
        "t | X | rot | Das ist {word}. | Das ist rot.",
        "t | X | grün | Das ist {word}. | Das ist grün.",
        "t | Y | eins | Das ist {word}. | Das ist eins.",
        "t | Y | zwei | Das ist {word}. | Das ist zwei.",
        "t | A | froh | Das ist {word}. | Das ist froh.",
        "t | A | heiter | Das ist {word}. | Das ist heiter.",
        "t | B | trüb | Das ist {word}. | Das ist trüb.",
        "t | B | düster | Das ist {word}. | Das ist düster.",
        "t | X | rot | Jemand ist {word}. | Jemand ist rot.",
        "t | X | grün | Jemand ist {word}. | Jemand ist grün.",
    ]


def test_a_changed_word_fails_with_the_diff_and_the_command(tmp_path):
    data = tiny_package(tmp_path, ["rot", "grün"])
    with pytest.raises(
        AssertionError, match="is missing: write it with `python -m bias.testing.snapshot"
    ):
        snapshot.check_rendered_snapshot(data, tmp_path)
    path, count = snapshot.write_snapshot(data, tmp_path)
    assert path == tmp_path / "rendered-sentences.txt" and count == 10
    assert snapshot.check_rendered_snapshot(data, tmp_path) == 10

    changed = tiny_package(tmp_path, ["rot", "blau"])
    with pytest.raises(AssertionError) as failure:
        snapshot.check_rendered_snapshot(changed, tmp_path)
    message = str(failure.value)
    for line in (
        "-t | X | grün | Das ist {word}. | Das ist grün.",
        "+t | X | blau | Das ist {word}. | Das ist blau.",
        "-t | X | grün | Jemand ist {word}. | Jemand ist grün.",
        "+t | X | blau | Jemand ist {word}. | Jemand ist blau.",
    ):
        assert line in message.splitlines(), message
    assert "Das ist rot." not in message  # unchanged sentences are not shown
    assert f"python -m bias.testing.snapshot {tmp_path}" in message and "native reader" in message


def test_a_long_diff_is_cut_with_the_count_of_what_is_left(tmp_path):
    data = tiny_package(tmp_path, [f"w{i}" for i in range(40)])
    snapshot.write_snapshot(data, tmp_path)
    with pytest.raises(AssertionError) as failure:
        snapshot.check_rendered_snapshot(
            tiny_package(tmp_path, [f"v{i}" for i in range(40)]), tmp_path
        )
    # 40 words x 2 templates, each line removed and added: 160 changed lines besides the file names
    assert "... and 102 more changed lines" in str(failure.value)


def test_the_command_writes_the_snapshot_of_an_installed_package(tmp_path, monkeypatch, capsys):
    out = tmp_path / "en.txt"
    monkeypatch.setattr(snapshot, "SNAPSHOT_FILE", str(out))  # not the repository's own file
    assert snapshot.main([str(ROOT / "languages" / "en")]) == 0
    written = out.read_text(encoding="utf-8").splitlines()
    assert f"wrote {out}: {len(written) - 4} sentences" in capsys.readouterr().out
    assert "weat1 | X | aster | The {word} is here. | The aster is here." in written
    lpbs = "lpbs-gender | X/A | he / engineer | {Target} is {attribute.article} {attribute}. | He is an engineer."
    assert lpbs in written
