"""One run at a time writes into an output folder: a second `bias run --out` into the same folder is
refused while the first holds the lock, so result lines and reports never interleave.

The lock is an advisory `flock` on `<out>/.bias-run.lock`, released by the operating system when the
process ends however it ends, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bias.core.errors import BiasError

LOCK_FILE = ".bias-run.lock"


class RunLock:
    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no advisory locks, runs are not guarded
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise BiasError(
                f"Another bias run is writing into {self.path.parent} ({holder}).",
                "Wait until it ends (then add --resume to continue it), or choose another --out.",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
