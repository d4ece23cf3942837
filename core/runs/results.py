"""The results file: one JSON line per experiment, appended as soon as it exists.

Each line is written to the file the moment its result exists, so a killed process loses nothing
finished (the kernel holds what was written). Durability against a power cut costs an fsync, about a
millisecond, more than a cheap experiment's own compute; lines are therefore fsynced in batches: at
once when results come slower than ten a second, else once per 64 results or per second, and always
when the store is closed. A per-item table (`scores-*.csv`) is written whole under a hidden name and
renamed into place before the line that names it, and its size is recorded in the line
(`meta.detail_bytes`): a table that a power cut left shorter than its line says is redone on resume
(`done_keys`), like an experiment whose line was lost.

Reading tolerates a torn last line (a run killed mid-write): appends cut it first, so a resumed run
redoes that experiment and nothing finished is lost. A damaged line elsewhere (an edit, a disk
error) is skipped and reported with its line number, and the rest of the file is still read."""

from __future__ import annotations

import io
import json
import math
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError, said_as_data
from bias.core.model import Result
from bias.core.text import csv_cell
from bias.core.regular_files import open_regular
from bias.core.runs.folder import link_refusal, open_in_run, readable_in_run

log = logging.getLogger(__name__)
RESULTS_FILE = "results.jsonl"


# When lines are fsynced: at once if the previous line is older than _SPARSE seconds, else after
# _BATCH lines or _INTERVAL seconds (a timer syncs what a pause leaves pending).
_SPARSE, _BATCH, _INTERVAL = 0.1, 64, 1.0

# Figures that are tables of one row per item (pair, sentence); stored as CSV files, not inline.
DETAIL_TABLES = ("pairs", "scores", "predictions")


def detail_file_name(name: str, result: Result) -> str:
    """`scores-en-weat1-seat-word-1a2b3c4d.csv`: which table, test and metric (with SEAT's level),
    and the result's key (short)."""
    import re

    test = result.wordset.replace("\\", "/")
    parts = test.split("/")
    if not (len(parts) == 2 and "." not in parts[1]):  # a file given by path: its stem
        test = parts[-1].rsplit(".", 1)[0]
    level = result.params.get("level") if isinstance(result.params, dict) else None
    metric = f"{result.metric}-{level}" if level else result.metric  # s-SEAT and w-SEAT apart
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", f"{test}-{metric}").strip("-")
    return f"{name}-{slug}-{result.key[:8]}.csv"


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    """A table as CSV in UTF-8 (the excel dialect: CRLF, minimal quoting), the columns in the order
    they first appear, a row's missing column left empty, every cell through `csv_cell` (control
    characters made visible, formulas defused)."""
    import csv

    columns = list(rows[0])
    if all(list(row) == columns for row in rows):  # the usual table: every row the same columns
        cells = [[csv_cell(v) for v in row.values()] for row in rows]
    else:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        cells = [[csv_cell(row.get(c, "")) for c in columns] for row in rows]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow([csv_cell(c) for c in columns])
    writer.writerows(cells)
    return text.getvalue().encode("utf-8")


class ResultStore:
    """Appends results to `folder/results.jsonl` (see the module docstring for when they are
    synced).

    Use it as a context manager, or call `close()`, so that the last batch is synced."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / RESULTS_FILE
        self._fd: int | None = None
        self._size = -1  # the file's size after this store's last line
        self._pending = 0
        self._last_sync = self._last_line = time.monotonic()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open_in_run(self.folder, ".write-test"):
                pass
            (self.folder / ".write-test").unlink()
            # a link planted as results.jsonl is refused now
            readable_in_run(self.folder, RESULTS_FILE, RESULTS_FILE)
        except OSError as exc:
            raise BiasError(
                f"Cannot write to the output folder {self.folder}: {exc.strerror or exc}.",
                "Choose another folder with --out, or fix its permissions.",
            ) from exc

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, result: Result) -> None:
        """Write the result's line (and its tables) now; fsync it now or with its batch."""
        result = self._write_detail_tables(result)
        line = (result.to_json() + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                with open_in_run(
                    self.folder, RESULTS_FILE, "ab"
                ) as fh:  # the checks of a run folder's files
                    self._fd = os.dup(fh.fileno())
                self._size = -1
            # first line, or another writer came between
            if os.fstat(self._fd).st_size != self._size:
                self._repair_torn_tail()
            os.write(self._fd, line)
            self._size = os.fstat(self._fd).st_size
            self._pending += 1
            now = time.monotonic()
            sparse, self._last_line = now - self._last_line >= _SPARSE, now
            if sparse or self._pending >= _BATCH or now - self._last_sync >= _INTERVAL:
                self._sync()
            elif self._timer is None:
                self._timer = threading.Timer(_INTERVAL, self.sync)
                self._timer.daemon = True
                self._timer.start()

    def sync(self) -> None:
        """fsync the lines written since the last sync (none: nothing to do)."""
        with self._lock:
            self._sync()

    def close(self) -> None:
        """Sync what is pending and close the file; a later `append` opens it again."""
        with self._lock:
            self._sync()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _sync(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._fd is not None and self._pending:
            os.fsync(self._fd)
        self._pending, self._last_sync = 0, time.monotonic()

    def _write_detail_tables(self, result: Result) -> Result:
        """Per-item rows a metric returns (per-pair scores of CrowS and friends) go to a CSV beside
        the results, `<table>-<key>.csv`, written whole before the result line that names it."""
        tables = {
            k: v
            for k, v in result.figures.items()
            if k in DETAIL_TABLES
            and isinstance(v, list)
            and v
            and all(isinstance(row, dict) for row in v)
        }
        if not tables:
            return result
        figures = dict(result.figures)
        sizes = {}
        for name, rows in tables.items():
            target = detail_file_name(name, result)
            data = _csv_bytes(rows)
            # written in place, in one write (a half-written table is never named by a line: the
            # line comes after, and records the table's size, which resume checks)
            with open_in_run(self.folder, target, "wb") as fh:
                fh.write(data)
            sizes[name] = len(data)
            figures[name] = target
        return attrs.evolve(result, figures=figures, meta={**result.meta, "detail_bytes": sizes})

    def _repair_torn_tail(self) -> None:
        """A killed writer can leave a last line without its newline; cut it so appends stay
        valid."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open_in_run(self.folder, RESULTS_FILE, "r+b") as fh:
            end = fh.seek(0, os.SEEK_END)
            fh.seek(end - 1)
            if fh.read(1) == b"\n":
                return
            # the last newline, looked for backwards a block at a time (the file may be large)
            cut, position = 0, end
            while position > max(0, end - MAX_LINE - 1) and not cut:
                start = max(0, position - 2**16)
                fh.seek(start)
                found = fh.read(position - start).rfind(b"\n")
                cut, position = (start + found + 1 if found >= 0 else 0), start
            if not cut and end > MAX_LINE:
                raise BiasError(
                    f"{self.path} ends in more than {MAX_LINE:,} bytes without a line break: not "
                    "a line a run wrote.",
                    "Give a new folder with --out, or remove the damaged file.",
                )
            log.warning(
                "Dropping a torn last line of %s (%d bytes) left by an interrupted run.",
                self.path,
                end - cut,
            )
            fh.truncate(cut)

    def read(self) -> list[Result]:
        return read_results(self.path)

    def done_keys(self) -> set[str]:
        """Keys of the experiments that need no redoing: not failed, and every table the line names
        as long as it was written (a power cut may lose a table whose line survived)."""
        return {r.key for r in self.read() if r.status != "failed" and self._tables_intact(r)}

    def _tables_intact(self, result: Result) -> bool:
        sizes = result.meta.get("detail_bytes") if isinstance(result.meta, dict) else None
        if not isinstance(sizes, dict):
            return True
        for name, size in sizes.items():
            try:
                path = readable_in_run(self.folder, result.figures.get(name), name)
            except BiasError:
                return False
            if path is None or path.stat().st_size != size:
                return False
        return True


@attrs.frozen
class DamagedLine:
    """A line of a results file that could not be read, and why."""

    number: int
    reason: str
    count: int = 1  # the lines it stands for: the last entry counts those not listed one by one

    def __str__(self) -> str:
        return f"line {self.number}: {self.reason}"


@attrs.frozen
class ResultsFile:
    """What a results file holds: its readable results (in file order) and its damaged lines."""

    path: Path
    results: list[Result]
    damaged: list[DamagedLine]

    def latest(self) -> list[Result]:
        """One result per experiment key, the last line of each key winning (a resumed run appends
        the redone experiment after its failed attempt), in the order keys first appeared."""
        by_key: dict[str, Result] = {}
        for r in self.results:
            by_key.pop(r.key, None)
            by_key[r.key] = r
        order = list(dict.fromkeys(r.key for r in self.results))
        return [by_key[k] for k in order]


NUMBER_FIELDS = ("effect_size", "p_value")
# No metric's value comes near it; a value past it was edited in, and averaging or drawing it
# would overflow.
MAX_MAGNITUDE = 1e15


def results_path(path: Path) -> Path:
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def scan_results(path: Path) -> ResultsFile:
    """Every readable result, and the number and reason of every line that is not one.

    A torn last line (no newline: a writer killed mid-write) is expected after an interrupted run
    and is only logged; a damaged line elsewhere is listed so the caller can report its line number,
    and the rest of the file is still read."""
    path = results_path(path)
    if not path.exists():
        raise BiasError(f"No results file at {path}.", "Give the folder a run wrote with --out.")
    results: list[Result] = []
    damaged: list[DamagedLine] = []
    try:
        # not through a link, a pipe or a device; not beyond what a run writes
        fh = open_regular(
            path,
            limit=MAX_RESULTS_BYTES,
            follow_links=False,
            what="results file",
            hint="Check the run folder: results.jsonl is what a run wrote, and nothing else.",
        )
    except OSError as exc:
        if path.is_symlink():
            raise link_refusal(path) from None
        raise BiasError(f"{path}: not readable ({exc.strerror or exc}).") from None
    unlisted, first_unlisted = 0, 0
    with fh:
        for number, line, whole in _lines(fh):
            if not whole:
                problem: str | None = f"not a valid result (longer than {MAX_LINE:,} bytes)"
            else:
                problem = _result_problem(line, results)
                if problem is None:
                    continue
                if not line.endswith("\n") and not fh.peek(1):
                    log.warning("%s: ignoring a torn last line left by an interrupted run.", path)
                    continue
            if len(damaged) < MAX_DAMAGED_LISTED:
                damaged.append(DamagedLine(number, problem))
                continue
            # a file of millions of one-byte lines must not become millions of messages, nor take
            # hours to read: a run leaves one torn line, not a million damaged ones
            unlisted += 1
            first_unlisted = first_unlisted or number
            if unlisted + len(damaged) > MAX_DAMAGED:
                raise BiasError(
                    f"{path} has more than {MAX_DAMAGED:,} damaged lines (the first at line "
                    f"{damaged[0].number}): not a results file a run wrote; nothing is read "
                    "from it.",
                    "Check the run folder: results.jsonl is what a run wrote, and nothing else.",
                )
    if unlisted:
        damaged.append(
            DamagedLine(
                first_unlisted, f"and {unlisted:,} more damaged lines from here on", unlisted
            )
        )
    return ResultsFile(path, results, damaged)


MAX_DAMAGED_LISTED = 100  # damaged lines listed one by one; the rest are counted
MAX_DAMAGED = 1_000_000  # damaged lines read before the file is refused (about ten seconds)


MAX_RESULTS_BYTES = 2 * 2**30  # a results file of a million experiments is about 2 GB
MAX_LINE = 16 * 2**20  # a run writes lines of a few kilobytes (per-item tables go to CSV files)


def _lines(fh: Any) -> Any:
    """(number, text, whole) for each line of a binary file, at most MAX_LINE bytes of each held
    at a time: a longer one is read past without keeping it (whole = False)."""
    number = 0
    while True:
        raw = fh.readline(MAX_LINE + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(MAX_LINE)
            yield number, "", False
            continue
        yield number, raw.decode("utf-8", errors="replace"), True


def _result_problem(line: str, results: list[Result]) -> str | None:
    """The result of one line appended to `results`, or why the line is not one (None for a blank
    line or a good one)."""
    if not line.strip():
        return None
    try:
        data = json.loads(line)
        if not isinstance(data, dict) or not isinstance(data.get("key"), str):
            raise TypeError("not a result object with a key")
        # a run writes a finite number or null; anything else was edited
        for field in NUMBER_FIELDS:
            value = data.get(field)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                raise ValueError(f"{field} {str(value)[:20]!r} is not a finite number")
            if value is not None and abs(value) > MAX_MAGNITUDE:
                raise ValueError(f"{field} {value:.3g} is beyond any metric's range")
        p = data.get("p_value")
        if p is not None and not 0 <= p <= 1:
            raise ValueError(f"p_value {p:.3g} is not between 0 and 1")
        problem = _shape_problem(data)
        if problem:
            raise ValueError(problem)
        results.append(Result.from_dict(data))
    except RecursionError:
        return "not a valid result (JSON nested too deeply)"
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        return f"not a valid result ({said_as_data(exc)})"
    return None


_TEXT = ("model", "wordset", "metric", "status")
_TABLES = (
    "figures",
    "convention",
    "sizes",
    "lost",
    "approximated",
    "params",
    "timings",
    "versions",
    "meta",
)
MAX_WHOLE = 10**30  # a count in figures (partitions, sizes) is far below; a float converts


def _shape_problem(data: dict[str, Any]) -> str | None:
    """What makes a line not a result a run writes: a field of the wrong type, or a number in
    `figures` a report cannot average or draw (a run writes finite floats of a metric's range).
    None when the line has the shape of a result."""
    for name in _TEXT:
        if name in data and not isinstance(data[name], str):
            return f"{name} is not text"
    if data.get("reason") is not None and not isinstance(data["reason"], str):
        return "reason is not text"
    for name in _TABLES:
        if name in data and not isinstance(data[name], dict):
            return f"{name} is not a table"
    for name in ("lost", "approximated"):
        for words in data.get(name, {}).values():
            if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                return f"{name} is not a table of word lists"
    for size in data.get("sizes", {}).values():
        if isinstance(size, bool) or not isinstance(size, int):
            return "sizes are not whole numbers"
    warnings = data.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        return "warnings is not a list of text"
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        return "seed is not a whole number"
    figures = data.get("figures", {})
    for name in ("ci_low", "ci_high", "ci_level"):
        value = figures.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"figures.{name} is not a number"
    level = figures.get("ci_level")
    if level is not None and not 0 < level < 1:
        return "figures.ci_level is not a level between 0 and 1"
    return _number_problem(figures, "figures")


def _number_problem(value: Any, where: str) -> str | None:
    """A number inside `value` (tables and lists, walked) that is not finite or past any metric's
    range (floats), or too large to convert to a float (whole numbers)."""
    todo: list[tuple[str, Any]] = [(where, value)]
    while todo:
        at, found = todo.pop()
        if isinstance(found, dict):
            todo += [(f"{at}.{k}", v) for k, v in found.items()]
        elif isinstance(found, list):
            todo += [(f"{at}[{i}]", v) for i, v in enumerate(found)]
        elif isinstance(found, float) and not (
            math.isfinite(found) and abs(found) <= MAX_MAGNITUDE
        ):
            return f"{at[:60]} {found:.3g} is beyond any metric's range"
        elif type(found) is int and abs(found) > MAX_WHOLE:
            return f"{at[:60]} is too large a number"
    return None


def read_results(path: Path) -> list[Result]:
    """The readable results of a file; each damaged line is skipped with a warning naming its
    number."""
    found = scan_results(path)
    for bad in found.damaged:
        log.warning("%s: skipping %s.", found.path, bad)
    return found.results
