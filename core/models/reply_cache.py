"""An on-disk cache of the replies a chat service wrote, so a rerun or `--resume` sends nothing twice.

A reply is keyed by what decided it (`bias.core.generation.request_key`: the service's address and
model, the messages, the sampling settings and the sample's own seed) and stored as JSON in the same
kind of SQLite database as the encoding cache (`bias.core.models.encoding_cache`: WAL mode, each row
committed whole, a CRC-32 per row, a damaged row or database treated as missing). A reply is written
as soon as it arrives, so a run that stops half-way keeps every reply it was given.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from bias.core.models.encoding_cache import _CHUNK, EncodingCache

log = logging.getLogger(__name__)


class ReplyCache(EncodingCache):
    """Replies of one service model, looked up and stored by key (JSON objects, not vectors)."""

    def get(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:  # type: ignore[override]
        found: dict[str, dict[str, Any]] = {}
        wanted = list(dict.fromkeys(keys))
        connection = self._connect()
        if connection is None or not wanted:
            return found
        try:
            for first in range(0, len(wanted), _CHUNK):
                chunk = wanted[first : first + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, size, crc, data in connection.execute(
                    f"SELECT key, dim, crc, data FROM rows WHERE key IN ({marks})", chunk
                ):
                    reply = _decode(size, crc, data)
                    if reply is not None:
                        found[key] = reply
        except sqlite3.Error as exc:
            self._give_up("read", exc)
            return {}
        return found

    def put(self, rows: Mapping[str, Mapping[str, Any]]) -> None:  # type: ignore[override]
        connection = self._connect()
        if connection is None or not rows:
            return
        records = []
        for key, reply in rows.items():
            data = json.dumps(dict(reply), ensure_ascii=False, sort_keys=True).encode(
                "utf-8", "surrogatepass"
            )
            records.append((key, len(data), zlib.crc32(data), data))
        try:
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO rows (key, dim, crc, data) VALUES (?, ?, ?, ?)", records
                )
        except sqlite3.Error as exc:
            self._give_up("write", exc)


def _decode(size: Any, crc: Any, data: Any) -> dict[str, Any] | None:
    """The stored reply, or None when its size, checksum or JSON shows it damaged."""
    if not isinstance(data, bytes) or size != len(data) or zlib.crc32(data) != crc:
        return None
    try:
        reply = json.loads(data.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError):
        return None
    return reply if isinstance(reply, dict) and isinstance(reply.get("text"), str) else None


__all__ = ["ReplyCache"]
