"""Opening a file that someone else may have put in place (a data file, a received run folder's
results, a cache): only a regular file is read. A named pipe would block the run until someone
writes to it, a device such as /dev/zero never ends, and a sparse file of gigabytes costs a few
kilobytes to send: each is refused naming the file, before anything is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from bias.core.errors import BiasError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a pipe for reading waits for a writer without it
_LAST_OPENED: list[str] = []
PLAIN = "Give a plain file."  # the hint for a pipe or a device; a file too large gets its own


def last_opened() -> str | None:
    """The file `open_regular` was last asked for: what a message about exhausted memory names,
    since a file that grows many times in memory once read is the likeliest cause."""
    return _LAST_OPENED[0] if _LAST_OPENED else None


def open_regular(
    path: str | Path,
    *,
    limit: int | None = None,
    follow_links: bool = True,
    what: str = "file",
    hint: str = PLAIN,
) -> BinaryIO:
    """`path` opened for reading (binary), refused unless it is a regular file of at most `limit`
    bytes; a link is refused too with `follow_links=False` (a run folder's files). OSErrors other
    than these (not found, a folder, no permission) reach the caller as they are."""
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_links:
        flags |= _NOFOLLOW
    # the kind is checked before the open as well as after it: opening some devices is itself an
    # action (a watchdog starts counting), and a node nothing drives fails to open with an error
    # that would say nothing of what the file is
    _LAST_OPENED[:] = [str(path)]
    before = os.stat(path, follow_symlinks=follow_links)
    if not follow_links and stat.S_ISLNK(before.st_mode):  # as O_NOFOLLOW refuses it: the caller
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))  # says it is a link
    _check_kind(path, before, limit, what, hint)
    fd = os.open(path, flags)
    try:
        _check_kind(path, os.fstat(fd), limit, what, hint)  # the file opened is the one checked
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def article(word: str) -> str:
    """'a' or 'an' before `word`, as the file kinds named in messages need."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def _check_kind(
    path: str | Path, status: os.stat_result, limit: int | None, what: str, hint: str
) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if not stat.S_ISREG(status.st_mode):
        raise BiasError(
            f"{path} is not a regular {what} (a named pipe or a device); nothing was read from it.",
            hint,
        )
    if limit is not None and status.st_size > limit:
        raise BiasError(
            f"{path} holds {status.st_size:,} bytes, more than {article(what)} {what} may "
            f"({limit:,}); nothing was read from it.",
            "Check that this is the file you meant (the bound is far above any real one)."
            if hint == PLAIN
            else hint,
        )


class BoundedLines:
    """A binary handle whose lines are at most `limit` bytes: `readline()` and iteration past it
    raise a BiasError naming the file, so that a line of gigabytes (a sparse file, or a small
    compressed one) is never held whole. Reads of a size and everything else pass through.
    `under` is the file a decompressing `handle` reads, closed with it (gzip leaves it open)."""

    def __init__(
        self, handle: BinaryIO, path: str | Path, limit: int, what: str, under: BinaryIO | None
    ) -> None:
        self._handle, self._path, self._limit, self._what = handle, path, limit, what
        self._under = under

    def readline(self, size: int = -1) -> bytes:
        line = self._handle.readline(self._limit + 1 if size < 0 else size)
        if len(line) > self._limit:
            raise BiasError(
                f"{self._path} has a line of more than {self._limit:,} bytes; no line of "
                f"{article(self._what)} {self._what} is that long.",
                "Check that this is the file you meant.",
            )
        return line

    def __iter__(self) -> BoundedLines:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __enter__(self) -> BoundedLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._handle.close()
        if self._under is not None:
            self._under.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self._handle, name)
