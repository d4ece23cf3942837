"""Warnings that belong to the experiment being run, not only to the run's log: what a model had to
do to its input (texts cut to its window), which a report of the result must still say.

Code that finds such a thing logs it to `log`. While the runner runs an experiment it collects
these lines into the result's warnings (`collected`), where reports keep them and the command line
says them once with the experiment's name; outside an experiment (a library call) they are logged
as any warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("bias.experiment")


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a plugin's malformed format: its words, not a failed experiment
            text = str(record.msg)
        if text not in self.lines:
            self.lines.append(text)


@contextmanager
def collected() -> Iterator[list[str]]:
    """The warnings logged to `log` meanwhile, each once, kept instead of printed: at WARNING
    whatever the command line's level (-q must change what is printed, not what a result
    records)."""
    kept, propagate, level = _Kept(), log.propagate, log.level
    log.addHandler(kept)
    log.propagate = False
    log.setLevel(logging.WARNING)
    try:
        yield kept.lines
    finally:
        log.removeHandler(kept)
        log.propagate = propagate
        log.setLevel(level)
