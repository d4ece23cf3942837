"""The log handler of the command line: a warning logged by the engine or a plugin (which may
quote a word, a path or a line of a file) is printed like every other message, through `say`, its
level as a label in rich's logging colours.

A plain `logging.Handler`, not rich's: the handler is installed before every command, `--help`
included, and rich is imported only when something is printed."""

from __future__ import annotations

import logging

from bias.cli.consoles import stderr
from bias.cli.say import say


class Handler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            label = f"{record.levelname:<8} "
            say(stderr(), (label, f"logging.level.{record.levelname.lower()}"), self.format(record))
        except Exception:
            self.handleError(record)
