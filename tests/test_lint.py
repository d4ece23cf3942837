"""The lint configuration in pyproject.toml ([tool.ruff]) holds for the product code, the language
packages and the examples: the suite runs it, so CI enforces it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    """`ruff check` (long lines included) finds nothing."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted() -> None:
    """`ruff format` at 100 columns would change no file: a long line is wrapped where it is
    written, not left to a later reformatting of everything."""
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
