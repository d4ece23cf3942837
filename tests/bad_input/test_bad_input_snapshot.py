"""Bad inputs of `python -m bias.testing.snapshot FOLDER...`, the command that writes a language
package's rendered-sentence snapshot: each refused with exit 2, at most two lines on stderr naming
the folder and what to do, no traceback, and no file written (a refused folder stops them all)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from fixtures.language_data import ROOT

from bias.testing import snapshot


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = snapshot.main(args)
    return code, out.getvalue(), err.getvalue()


def folder_without_pyproject(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    return tmp_path / "pkg"


def package_of_no_language(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text(
        '[project]\nname = "not-a-language"\n', encoding="utf-8"
    )
    return tmp_path / "pkg"


def copy_of_an_installed_package(tmp_path: Path) -> Path:
    """A folder registering `en`, whose installed package reads its data from the repository."""
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "pyproject.toml").write_text(
        (ROOT / "languages" / "en" / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return tmp_path / "en"


def package_not_installed(tmp_path: Path) -> Path:
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "pyproject.toml").write_text(
        '[project]\nname = "bias-lang-zz"\n[project.entry-points."bias.wordsets"]\nzz = "bias_lang_zz:PACKAGE"\n',
        encoding="utf-8",
    )
    return tmp_path / "zz"


@pytest.mark.parametrize(
    "make, names",
    [
        (folder_without_pyproject, ("no pyproject.toml",)),
        (package_of_no_language, ("pyproject.toml", "bias.wordsets")),
        (copy_of_an_installed_package, ("reads its data from", "pip install -e")),
        (package_not_installed, ("'zz'", "Install it")),
    ],
)
def test_a_bad_folder_is_refused_before_anything_is_written(tmp_path, make, names):
    folder = make(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    good = snapshot.snapshot_path(ROOT / "languages" / "en")
    stamp = good.stat().st_mtime_ns
    # a good folder first: nothing is written for it either when a later one is refused
    code, out, err = run([str(ROOT / "languages" / "en"), str(folder)])
    assert code == 2 and out == "", (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2 and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert good.stat().st_mtime_ns == stamp


@pytest.mark.parametrize("args", [[], ["--help"], ["-x", "languages/en"]])
def test_no_folder_or_an_option_gets_the_usage_line(args):
    code, out, err = run(args)
    assert (
        code == 2
        and out == ""
        and err.startswith("usage: python -m bias.testing.snapshot FOLDER...")
    )
