"""The one way into a run folder: every file written there (results, reports, figures, CSV tables,
the manifest, the lock) is opened by `open_in_run`, and every file a report reads because a results
line names it is found by `readable_in_run`.

A run folder can be shared (`bias report` needs only results.jsonl), so what is in it is not
trusted: a symbolic link planted as report.md would otherwise make the next report overwrite
whatever the link points to, and a results line naming `../../secret.csv` would copy that file into
report.html. A path that is a symbolic link, or that resolves outside the folder, is refused with
the file named; the open itself does not follow a link (O_NOFOLLOW), so one swapped in after the
check is refused too."""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
from pathlib import Path
from typing import IO, Any

from bias.core.errors import BiasError

# Python's modes, as flags of os.open: "w" truncates, "a" appends, "r+" updates a file that exists
# and "a+" creates without truncating (the lock, whose holder is read before it is rewritten).
_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "r+": os.O_RDWR,
    "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_OPEN_REFUSES_LINKS = hasattr(os, "O_NOFOLLOW")


def _plain_name(name: str | Path) -> bool:
    """A file directly in the folder: no separator, not "." or ".."."""
    text = os.fspath(name)
    return (
        text not in ("", ".", "..")
        and os.sep not in text
        and "/" not in text
        and (os.altsep is None or os.altsep not in text)
    )


def not_a_file(path: Path | str) -> BiasError:
    return BiasError(
        f"{path} is not a regular file (a device or a named pipe); bias writes and reads only "
        "plain files in a run folder.",
        "Remove it (or choose another --out) and run again.",
    )


def link_refusal(path: Path | str) -> BiasError:
    return BiasError(
        f"{path} is a symbolic link (to {os.readlink(path)}); bias does not write or "
        "read through links in a run folder.",
        "Remove the link (or choose another --out) and run again.",
    )


def _inside(folder: Path, name: str | Path, what: str) -> Path:
    """`folder / name`, refused when it is a symbolic link or resolves outside `folder`."""
    path = Path(folder) / name
    # a plain name: its parent is the folder
    if str(name) == path.name and str(name) not in (
        ".",
        "..",
    ):
        parent = base = None
    else:
        base = Path(folder).resolve()
        try:
            parent = path.parent.resolve()
        except (OSError, RuntimeError):  # a loop of links
            parent = None
    if base is not None and (
        Path(name).is_absolute() or parent is None or not (parent == base or base in parent.parents)
    ):
        raise BiasError(
            f"{what}: {str(name)!r} is outside the run folder {folder}; a run folder's "
            "files stay inside it.",
            "Check the run folder: something in it points elsewhere (a link, or an edited "
            "results.jsonl).",
        )
    if path.is_symlink():
        raise link_refusal(path)
    return path


def open_in_run(
    folder: Path,
    name: str | Path,
    mode: str = "w",
    *,
    encoding: str | None = "utf-8",
    newline: str | None = None,
    atomic: bool = False,
) -> Any:
    """Open the file `name` of the run folder `folder` for writing: the only way any file in a run
    folder is written. `mode` is "w", "a", "r+" or "a+", with "b" for bytes. With `atomic`, what is
    written goes to a hidden file beside it that replaces the file when closed without an error, so
    a reader never sees half of it."""
    binary = "b" in mode
    flags = _FLAGS[mode.replace("b", "")] | _NOFOLLOW
    path: str | Path
    if atomic:
        target = _inside(folder, name, "the file")
        path = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        _remove_stale_temporaries(target)
        if path.is_symlink():
            path.unlink()
    elif _OPEN_REFUSES_LINKS and _plain_name(name):
        # a file directly in the folder: the open itself refuses a link (one check, not two)
        path = os.path.join(folder, name)
    else:
        path = _inside(folder, name, "the file")
    if special_file(path):
        # checked before the open too: opening some devices is itself an action (a watchdog starts
        # counting), and a node nothing drives fails to open with an error that says nothing
        raise not_a_file(path)
    try:
        # never blocking on a pipe, never a terminal's controlling device
        fd = os.open(path, flags | _NONBLOCK | getattr(os, "O_NOCTTY", 0), 0o644)
    except OSError as exc:
        if os.path.islink(path):  # a link, there before the open or swapped in after the check
            raise link_refusal(Path(path)) from None
        if exc.errno == errno.ENXIO or special_file(path):  # a pipe nobody reads, a node swapped
            raise not_a_file(path) from None  # in after the check
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        # a device node or a pipe a received folder (an unpacked archive) put in a file's place:
        # nothing is written into it
        os.close(fd)
        raise not_a_file(path)
    os.set_blocking(fd, True)
    handle: IO[Any] = os.fdopen(
        fd,
        mode if binary else mode.replace("b", ""),
        buffering=0 if binary and "+" in mode else -1,
        **({} if binary else {"encoding": encoding, "newline": newline}),
    )
    return _Replacing(handle, path, target) if atomic else handle


def special_file(path: str | Path) -> bool:
    """A device node, a named pipe or a socket stands at `path` (not a file, folder or link)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _remove_stale_temporaries(target: Path) -> None:
    """The hidden files an atomic write of `target` left when its process was killed mid-write
    (`.NAME.PID.tmp` of a process that no longer runs): removed, so a run folder holds no debris."""
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        pid = stale.name[len(target.name) + 2 : -len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid() or _running(int(pid)):
            continue
        with contextlib.suppress(OSError):
            stale.unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or not ours to tell: left alone
    return True


def remove_in_run(folder: Path, name: str | Path) -> bool:
    """Remove the file `name` of the run folder (a page of a figure that a smaller report no longer
    draws), refusing links and names outside the folder as `open_in_run` does; False if none was
    there."""
    path = _inside(folder, name, "the file")
    if not path.is_file():
        return False
    path.unlink()
    return True


class _Replacing:
    """A file written beside its target that takes the target's place when closed without an
    error."""

    def __init__(self, handle: IO[Any], temporary: Path, target: Path) -> None:
        self._handle, self._temporary, self._target = handle, temporary, target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _Replacing:
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            # replaces a link planted meanwhile, never its target
            os.replace(self._temporary, self._target)
        else:
            self._handle.close()
            self._temporary.unlink(missing_ok=True)


MAX_FIGURE = 64 * 2**20  # a PNG of a report; the largest grid's page is a few megabytes
MAX_TABLE = 256 * 2**20  # a per-item table: a hundred thousand items take about ten megabytes


def read_in_run(
    folder: Path,
    name: Any,
    field: str,
    limit: int,
    what: str | None = None,
    hint: str | None = None,
) -> bytes | None:
    """The bytes of the run folder's file `name` (`readable_in_run`), refused when it is a pipe or
    a device or holds more than `limit` bytes (`what` names its kind in the refusal): a received
    folder must not make a report read without end."""
    path = readable_in_run(folder, name, field)
    if path is None:
        return None
    from bias.core.regular_files import PLAIN, open_regular

    kind = what or f"file ({field})"
    with open_regular(path, limit=limit, follow_links=False, what=kind, hint=hint or PLAIN) as fh:
        return fh.read()


def readable_in_run(folder: Path, name: Any, field: str) -> Path | None:
    """The file of the run folder that a results line's `field` names (a per-item CSV table), or
    None when the field names none or the file is gone. A name that leaves the folder or is a
    symbolic link is refused, naming the field: an edited results.jsonl must not make a report read
    other files."""
    if not isinstance(name, str) or not name:
        return None
    path = _inside(folder, name, field)
    return path if path.is_file() else None
