"""Opening a file that someone else may have put in place (a data file, a received run folder's
results, a cache): only a regular file is read. A named pipe would block the run until someone
writes to it, a device such as /dev/zero never ends, and a sparse file of gigabytes costs a few
kilobytes to send: each is refused naming the file, before anything is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from bias.core.errors import BiasError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a pipe for reading waits for a writer without it


def open_regular(
    path: str | Path,
    *,
    limit: int | None = None,
    follow_links: bool = True,
    what: str = "file",
    hint: str = "Give a plain file.",
) -> BinaryIO:
    """`path` opened for reading (binary), refused unless it is a regular file of at most `limit`
    bytes; a link is refused too with `follow_links=False` (a run folder's files). OSErrors other
    than these (not found, a folder, no permission) reach the caller as they are."""
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= _NOFOLLOW
    fd = os.open(path, flags)
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(status.st_mode):
            raise BiasError(
                f"{path} is not a regular {what} (a named pipe or a device); nothing was read "
                "from it.",
                hint,
            )
        if limit is not None and status.st_size > limit:
            raise BiasError(
                f"{path} holds {status.st_size:,} bytes, more than a {what} may ({limit:,}); "
                "nothing was read from it.",
                hint,
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
