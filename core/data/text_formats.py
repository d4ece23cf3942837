"""Reading the plain-text community formats (WEAT .txt, word2vec analogy questions): UTF-8 lines,
blank lines skipped, `#` comments, and `# key: value` comments that carry the file's metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bias.core.data.framework_layout import language_of
from bias.core.data.file_reading import read_text

META_KEYS = ("language", "bias_type", "source", "licence", "title")


def read_lines(
    path: Path, bias_type: str = "unspecified"
) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """The file's metadata (defaults for what its comments do not say) and its content lines with
    their line numbers, for error messages that point at the line."""
    text = read_text(path)
    meta: dict[str, Any] = {
        "language": "und",
        "bias_type": bias_type,
        "source": f"user file {Path(path).name}",
        "licence": "unspecified",
    }
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep and key.strip().lower() in META_KEYS:
                meta[key.strip().lower()] = value.strip()
            continue
        lines.append((number, line))
    return with_layout_language(meta, path), lines


def with_layout_language(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """The file's language from the BIAS Detection Framework's folder layout when it says none."""
    if meta.get("language", "und") == "und":
        code, note = language_of(path)
        if code:
            meta = {**meta, "language": code}
            if note:
                meta["notes"] = note
    return meta
