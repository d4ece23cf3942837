"""The command line's two consoles, standard output and standard error, made when first used:
`bias --help` prints through neither, and importing rich's console is a sixth of its start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

_made: dict[bool, Console] = {}


def _console(stderr: bool) -> Console:
    if stderr not in _made:
        from rich.console import Console

        _made[stderr] = Console(stderr=stderr)
    return _made[stderr]


def stdout() -> Console:
    """The console of results, tables and documentation."""
    return _console(False)


def stderr() -> Console:
    """The console of errors, warnings, progress and where files went."""
    return _console(True)
