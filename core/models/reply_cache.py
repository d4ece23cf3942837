"""An on-disk cache of the replies a chat service wrote, so a rerun or `--resume` sends nothing
twice.

A reply is keyed by what decided it (`bias.core.generation.request_key`: the service's address and
model, the messages, the sampling settings and the sample's own seed) and stored as JSON in the same
kind of SQLite database as the encoding cache (`bias.core.models.encoding_cache`: WAL mode, each row
committed whole, a CRC-32 per row, a damaged row or database treated as missing). A reply is written
as soon as it arrives, so a run that stops half-way keeps every reply it was given.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from bias.core.models.encoding_cache import EncodingCache


class ReplyCache(EncodingCache):
    """Replies of one service model, looked up and stored by key: JSON objects with a text, where
    the encoding cache keeps vectors."""

    @staticmethod
    def _encode_row(reply: Any) -> tuple[int, int, bytes]:
        data = json.dumps(dict(reply), ensure_ascii=False, sort_keys=True).encode(
            "utf-8", "surrogatepass"
        )
        return len(data), zlib.crc32(data), data

    @staticmethod
    def _decode_row(size: Any, crc: Any, data: Any) -> dict[str, Any] | None:
        """The stored reply, or None when its size, checksum or JSON shows it damaged."""
        if not isinstance(data, bytes) or size != len(data) or zlib.crc32(data) != crc:
            return None
        try:
            reply = json.loads(data.decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError):
            return None
        return reply if isinstance(reply, dict) and isinstance(reply.get("text"), str) else None


__all__ = ["ReplyCache"]
