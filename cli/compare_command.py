"""The `compare` command's options; the work is in bias.cli.compare, imported when the command runs
(it reads reports), so that `bias --help` does not."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


HELP = (
    "Compare two runs test by test: effect before, after and the change, with significance marks."
)


def compare_cmd(
    before: Path = typer.Argument(
        ..., help="The run before (a folder written by `bias run --out`, or its results.jsonl)."
    ),
    after: Path = typer.Argument(..., help="The run after, e.g. on the debiased model."),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="Folder for compare.md and compare.csv (default: the AFTER folder).",
    ),
    before_model: Optional[str] = typer.Option(
        None, "--before-model", help="The model to take when the before run holds several."
    ),
    after_model: Optional[str] = typer.Option(
        None, "--after-model", help="The model to take when the after run holds several."
    ),
) -> None:
    from bias.cli.consoles import stdout
    from bias.cli.compare import execute

    raise typer.Exit(
        execute(
            before,
            after,
            out=out,
            before_model=before_model,
            after_model=after_model,
            console=stdout(),
        )
    )
