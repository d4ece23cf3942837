"""One exception type for everything a user can fix, so the CLI can print it in two lines."""

from __future__ import annotations

USAGE = 2  # bad usage or bad input: the user can fix it
FAILURE = 1  # something went wrong while running


class BiasError(Exception):
    """An error meant for a person: what is wrong, and what to do about it.

    `hint` is the second line the CLI prints; `exit_code` is 2 for bad usage or input, 1 for
    failures. `redo`: an experiment it ends is run again by --resume although the input was at
    fault, because the input is outside the run's files (a key a service refused, fixed in the
    environment)."""

    def __init__(
        self, message: str, hint: str | None = None, exit_code: int = USAGE, *, redo: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        self.redo = redo

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class BadValue(BiasError):
    """A parameter value that no setting could take (a word where a number belongs, a pooling that
    does not exist): the plan stops on it at once, instead of setting the combination aside as one
    that does not fit the model or the word set."""


DIGITS = "a number of more than 4,300 digits, which no data file has"


def said_as_data(exc: BaseException) -> str:
    """Python refuses to convert a number of more than 4,300 digits (its error advises a setting of
    the interpreter): said as the data it is; any other error as it is."""
    return DIGITS if isinstance(exc, ValueError) and "4300 digits" in str(exc) else str(exc)


REPORT_HINT = (
    "This is not a problem with your input: please report it to the bias-framework maintainers, "
    "with the output of the same command run with --debug."
)


def recognised(exc: BaseException) -> BiasError | None:
    """A user error for the failures a person can act on (a missing or unreadable file, a full disk,
    no network, too little memory), found anywhere in the exception's chain; None for anything else,
    which is a failure of the program and is reported as one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BiasError):
            return current
        found = _recognise_one(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def _recognise_one(exc: BaseException) -> BiasError | None:
    import errno

    name = type(exc).__name__
    where = f" {exc.filename}" if isinstance(exc, OSError) and exc.filename else ""
    if isinstance(exc, FileNotFoundError):
        return BiasError(f"File not found:{where or ' ' + str(exc)}", "Check the path.")
    if isinstance(exc, IsADirectoryError):
        return BiasError(
            f"{where.strip() or exc} is a folder where a file was expected.",
            "Give the file itself.",
        )
    if isinstance(exc, PermissionError):
        return BiasError(
            f"Permission denied:{where or ' ' + str(exc)}",
            "Check the file's permissions, or choose another path.",
        )
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return BiasError(
            f"A file name is too long for the file system ({len(str(exc.filename or ''))} "
            "characters).",
            "Check the path.",
        )
    if isinstance(exc, OSError) and exc.errno == errno.EIO:
        # the disk failing, or a link to what reads fail on (a process's memory): a read or write
        # names no file, so the one last opened for reading is named as a clue, not as the culprit
        from bias.core.regular_files import last_opened

        read = last_opened()
        return BiasError(
            f"Input/output error reading or writing {exc.filename}."
            if exc.filename
            else "Input/output error reading or writing a file"
            + (f" (the last data file opened: {read})." if read else "."),
            "Check the disk, and that each file given is a plain file (a link to a process's "
            "memory or a device cannot be read).",
            exit_code=FAILURE,
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return BiasError(
            f"No space left on the disk{' for' + where if where else ''}.",
            "Free some space or write elsewhere (--out).",
        )
    if isinstance(exc, MemoryError) or name in ("OutOfMemoryError", "OutOfMemory"):
        from bias.core.regular_files import last_opened

        read = last_opened()
        return BiasError(
            "Not enough memory for this run"
            + (f" (the last data file read: {read})." if read else "."),
            "Use a smaller --batch-size, fewer --permutations or --bootstrap resamples, or "
            "a smaller model; check that no input file is far larger than it should be.",
        )
    if isinstance(exc, ValueError) and "null byte" in str(exc):
        return BiasError(
            "A path holds a NUL character, which no file name can contain.",
            "Check the paths given in the command and the experiment file.",
        )
    if isinstance(exc, UnicodeDecodeError):
        return BiasError(
            f"A file is not UTF-8 text ({exc.reason} at byte {exc.start}).",
            "Save the file as UTF-8.",
        )
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
        # a lone surrogate: a file name in another encoding than UTF-8, or a \ud800-style escape in
        # a file
        shown = (
            exc.object[max(0, exc.start - 30) : exc.end + 10]
            .encode("utf-8", "backslashreplace")
            .decode("ascii", "replace")
        )
        return BiasError(
            "Text that cannot be written as UTF-8, a file name in another encoding or a "
            f"lone surrogate escape (...{shown}...).",
            "Rename the file, or fix the text in it.",
        )
    if isinstance(exc, (ConnectionError, TimeoutError)) or name in (
        "OfflineModeIsEnabled",
        "ConnectTimeout",
        "ReadTimeout",
        "ConnectError",
        "NewConnectionError",
        "MaxRetryError",
    ):
        return BiasError(
            f"No network connection ({name}).",
            "Give a local model folder, or set HF_HUB_OFFLINE=1 to use only what is "
            "already downloaded.",
        )
    return None


class Interrupted(KeyboardInterrupt):
    """A run ended by SIGTERM or SIGHUP, handled like Ctrl-C; exits with 128 + the signal's
    number."""

    # The signal of the latest Interrupted: a library that catches the interruption and raises a
    # plain KeyboardInterrupt in its place (Ray, while it waits for results) loses the signal's
    # number.
    latest: int | None = None

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum
        Interrupted.latest = signum


def interrupt_exit_code(exc: KeyboardInterrupt, default: int = 130) -> int:
    """128 + the number of the signal that ended the run (130, Ctrl-C, when none is known); an
    interruption that names its exit code itself (`exit_code`) is taken at its word."""
    if isinstance(getattr(exc, "exit_code", None), int):
        return exc.exit_code
    return 128 + Interrupted.latest if Interrupted.latest is not None else default
