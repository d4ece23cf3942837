"""An on-disk cache of contextual encodings, so a second run of the same experiment runs no model.

Encoding sentences is the expensive step of SEAT, CEAT and every word-encoding WEAT; the statistics
after it take milliseconds. Rows are keyed by what determines their numbers: the model's fingerprint
(one database per fingerprint) and, inside it, the text, the span, the pooling and the layer.

Storage is one SQLite database per model in WAL mode: readers never block, concurrent runs that
write the same model take turns, and a row is either committed whole or not at all. Each row carries
its width and a CRC-32 of its bytes; a row that fails either check is treated as missing and
recomputed. The cache is an optimisation and never a reason for a run to fail: a database that
cannot be opened, read or written is reported once in the log and the run goes on without it (an
unreadable database file is moved aside and a fresh one started).

Rows are stored as float64, exactly as `encode` returns them, so a cached row equals a fresh one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bias.core.cache_dir import ENV_VAR, cache_root

log = logging.getLogger(__name__)

_SUBFOLDER = "encodings"
_CHUNK = 500  # SQLite allows at most 999 (older builds) host parameters in one statement
_SCHEMA_VERSION = 1


def default_cache_dir() -> Path:
    """`$BIAS_CACHE_DIR/encodings`, else `~/.cache/bias-framework/encodings` (XDG_CACHE_HOME
    honoured)."""
    return cache_root() / _SUBFOLDER


# One encoder for every key (json.dumps with options builds a new one per call: a tenth of a cached
# read's time went there).
_KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
# Pages read through a memory map instead of read() calls into SQLite's page cache.
_MMAP_BYTES = 1 << 30


def row_key(*parts: Any) -> str:
    """A stable key for one request (text, span, pooling, layer, ...): JSON of the parts, hashed."""
    return hashlib.sha256(_KEY_JSON.encode(parts).encode("utf-8", "surrogatepass")).hexdigest()


class EncodingCache:
    """Rows of one model (one fingerprint), looked up and stored by key.

    `get` answers the keys it holds intact; `put` stores new rows in one transaction. Both swallow
    storage errors after logging them once, since recomputing is always possible.
    """

    def __init__(self, folder: Path | str, fingerprint: str) -> None:
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        digest = hashlib.sha256(fingerprint.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        self.path = self.folder / f"{digest}.sqlite"
        self._connection: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._disabled = False

    # ---------------------------------------------------------------- public

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The intact rows among `keys` (float64 vectors), by key."""
        found: dict[str, np.ndarray] = {}
        damaged = 0
        wanted = list(dict.fromkeys(keys))
        connection = self._connect()
        if connection is None or not wanted:
            return found
        try:
            for first in range(0, len(wanted), _CHUNK):
                chunk = wanted[first : first + _CHUNK]
                marks = ",".join("?" * len(chunk))
                fetched = connection.execute(
                    f"SELECT key, dim, crc, data FROM rows WHERE key IN ({marks})", chunk
                ).fetchall()
                rows, bad = self._decode_rows(fetched)
                found.update(rows)
                damaged += bad
        except sqlite3.Error as exc:
            self._give_up("read", exc)
            found = {}
        if damaged:
            log.warning(
                "The encoding cache %s held %d damaged row(s) (wrong size, checksum or "
                "non-finite numbers); "
                "they are computed again from the model and replaced.",
                self.path,
                damaged,
            )
        return found

    def put(self, rows: Mapping[str, np.ndarray]) -> None:
        """Store rows (replacing any damaged ones under the same keys), all in one transaction."""
        connection = self._connect()
        if connection is None or not rows:
            return
        records = [(key, *self._encode_row(value)) for key, value in rows.items()]
        try:
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO rows (key, dim, crc, data) VALUES (?, ?, ?, ?)", records
                )
        except sqlite3.Error as exc:
            self._give_up("write", exc)

    @staticmethod
    def _encode_row(vector: Any) -> tuple[int, int, bytes]:
        """A row as stored: its size, the CRC-32 of its bytes, and the bytes."""
        data = np.ascontiguousarray(vector, dtype="<f8").tobytes()
        return int(np.asarray(vector).size), zlib.crc32(data), data

    @staticmethod
    def _decode_row(dim: Any, crc: Any, data: Any) -> Any:
        """The stored row, or None when it is damaged (see `_decode`)."""
        return _decode(dim, crc, data)

    def _decode_rows(self, fetched: list[tuple[Any, Any, Any, Any]]) -> tuple[dict[str, Any], int]:
        """The intact rows of (key, dim, crc, data) records, and how many were damaged: vectors all
        in one pass (`_decode_all`); rows of a subclass's own kind one by one with its
        `_decode_row`."""
        if type(self)._decode_row is EncodingCache._decode_row:
            return _decode_all(fetched)
        found: dict[str, Any] = {}
        for key, dim, crc, data in fetched:
            row = self._decode_row(dim, crc, data)
            if row is not None:
                found[key] = row
        return found, len(fetched) - len(found)

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except sqlite3.Error:  # pragma: no cover - closing never matters for correctness
                pass
        self._connection = None

    def __len__(self) -> int:
        connection = self._connect()
        if connection is None:
            return 0
        try:
            return int(connection.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
        except sqlite3.Error:
            return 0

    # ---------------------------------------------------------------- internals

    def _connect(self) -> sqlite3.Connection | None:
        if self._disabled:
            return None
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._connection = None  # a connection must not cross a fork
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            connection = self._open()
        except sqlite3.DatabaseError as exc:
            # Not a database at all (a damaged or foreign file): keep it for inspection, start
            # afresh.
            aside = self.path.with_name(
                f"{self.path.name}.damaged-{os.getpid()}-{int(time.time())}"
            )
            log.warning(
                "The encoding cache %s is unreadable (%s); it was moved to %s and a new "
                "one started.",
                self.path,
                exc,
                aside.name,
            )
            try:
                os.replace(self.path, aside)
                connection = self._open()
            except (OSError, sqlite3.Error) as again:
                self._give_up("open", again)
                return None
        except OSError as exc:
            self._give_up("open", exc)
            return None
        self._connection, self._pid = connection, os.getpid()
        return connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(str(self.path), timeout=60.0, isolation_level="DEFERRED")
        try:
            connection.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
            connection.execute("PRAGMA synchronous=NORMAL")
            # a cache written before: opened for reading, nothing written
            if self._ready(connection):
                return connection
            connection.execute("PRAGMA journal_mode=WAL")
            with connection:
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, dim INTEGER "
                    "NOT NULL, crc INTEGER NOT NULL, data BLOB NOT NULL)"
                )
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
                )
                connection.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('fingerprint', ?), "
                    "('schema', ?)",
                    (self.fingerprint, str(_SCHEMA_VERSION)),
                )
            connection.execute("SELECT 1 FROM rows LIMIT 1").fetchone()
        except BaseException:
            connection.close()
            raise
        return connection

    def _ready(self, connection: sqlite3.Connection) -> bool:
        """Whether the database already holds this cache's tables, in WAL mode, for this fingerprint
        and schema (a damaged file raises sqlite3.DatabaseError here, as when it is created)."""
        try:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            found = dict(
                connection.execute(
                    "SELECT name, value FROM meta WHERE name IN ('fingerprint', 'schema')"
                ).fetchall()
            )
            connection.execute("SELECT 1 FROM rows LIMIT 1").fetchone()
        except sqlite3.OperationalError:  # no such table yet
            return False
        return str(mode).lower() == "wal" and found == {
            "fingerprint": self.fingerprint,
            "schema": str(_SCHEMA_VERSION),
        }

    def _give_up(self, action: str, exc: BaseException) -> None:
        log.warning(
            "The encoding cache %s could not %s (%s); encodings are computed without it "
            "for the rest of this run.",
            self.path,
            action,
            exc,
        )
        self.close()
        self._disabled = True


def _decode_all(fetched: list[tuple[Any, Any, Any, Any]]) -> tuple[dict[str, np.ndarray], int]:
    """The intact rows of (key, dim, crc, data) records, and how many were damaged: sizes and
    checksums checked row by row, the numbers read and checked for NaN and infinity in one pass over
    all rows of the same width."""
    intact = [
        (key, data)
        for key, dim, crc, data in fetched
        if isinstance(data, bytes)
        and isinstance(dim, int)
        and dim >= 0
        and len(data) == 8 * dim
        and zlib.crc32(data) == crc
    ]
    damaged = len(fetched) - len(intact)
    widths = {len(data) for _, data in intact}
    if len(widths) != 1:  # rows of several widths (or none): one at a time
        rows = {key: _decode(len(data) // 8, zlib.crc32(data), data) for key, data in intact}
        kept = {key: row for key, row in rows.items() if row is not None}
        return kept, damaged + len(rows) - len(kept)
    matrix = (
        np.frombuffer(b"".join(data for _, data in intact), dtype="<f8")
        .reshape(len(intact), -1)
        .astype(np.float64)
    )
    finite = np.isfinite(matrix).all(axis=1)
    return {key: matrix[i] for i, (key, _) in enumerate(intact) if finite[i]}, damaged + int(
        (~finite).sum()
    )


def _decode(dim: Any, crc: Any, data: Any) -> np.ndarray | None:
    """The stored row, or None when its size or checksum shows it damaged."""
    if not isinstance(data, bytes) or not isinstance(dim, int) or dim < 0 or len(data) != 8 * dim:
        return None
    if zlib.crc32(data) != crc:
        return None
    row = np.frombuffer(data, dtype="<f8").astype(np.float64)
    # A model never gives NaN or infinity; such a row was written by something else.
    return row if np.isfinite(row).all() else None


def lookup(
    cache: EncodingCache | None, keys: Sequence[str]
) -> tuple[dict[str, np.ndarray], list[int]]:
    """Rows found for `keys` and the indices of the requests that still need computing (each
    distinct missing key once: the first request that asks for it)."""
    found = cache.get(keys) if cache is not None else {}
    missing, seen = [], set()
    for i, key in enumerate(keys):
        if key not in found and key not in seen:
            seen.add(key)
            missing.append(i)
    return found, missing


__all__ = ["ENV_VAR", "EncodingCache", "default_cache_dir", "lookup", "row_key"]
