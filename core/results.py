"""The results file: one JSON line per experiment, appended, flushed and fsynced as soon as it exists.

Reading tolerates a torn last line (a run killed mid-write) and reports it instead of failing, so a
resumed run can redo that experiment and nothing finished is lost.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from bias.core.errors import BiasError
from bias.core.model import Result

log = logging.getLogger(__name__)
RESULTS_FILE = "results.jsonl"


class ResultStore:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / RESULTS_FILE
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            probe = self.folder / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise BiasError(
                f"Cannot write to the output folder {self.folder}: {exc.strerror or exc}.",
                "Choose another folder with --out, or fix its permissions.",
            ) from None

    def append(self, result: Result) -> None:
        line = result.to_json() + "\n"
        self._repair_torn_tail()
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def _repair_torn_tail(self) -> None:
        """A killed writer can leave a last line without its newline; cut it so appends stay valid."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
            cut = data.rfind(b"\n") + 1
            log.warning("Dropping a torn last line of %s (%d bytes) left by an interrupted run.", self.path, len(data) - cut)
            fh.truncate(cut)

    def read(self) -> list[Result]:
        return read_results(self.path)

    def done_keys(self) -> set[str]:
        return {r.key for r in self.read() if r.status != "failed"}


def read_results(path: Path) -> list[Result]:
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    if not path.exists():
        raise BiasError(f"No results file at {path}.", "Give the folder a run wrote with --out.")
    results = []
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            results.append(Result.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError) as exc:
            if number == len(lines) and not line.endswith("\n"):
                log.warning("%s: ignoring a torn last line left by an interrupted run.", path)
                continue
            raise BiasError(f"{path}: line {number} is not a valid result ({exc}).", "The file was edited or corrupted.") from None
    return results
