"""One exception type for everything a user can fix, so the CLI can print it in two lines."""

from __future__ import annotations

USAGE = 2  # bad usage or bad input: the user can fix it
FAILURE = 1  # something went wrong while running


class BiasError(Exception):
    """An error meant for a person: what is wrong, and what to do about it.

    `hint` is the second line the CLI prints; `exit_code` is 2 for bad usage or input, 1 for failures.
    """

    def __init__(self, message: str, hint: str | None = None, exit_code: int = USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"
