"""Reading a run folder's `manifest.json`, which reports and `--resume` both consult.

Writing it belongs to the run (`bias.engine.manifest`); reading it is all a report needs, so it
lives here, below the layer that runs experiments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bias.core.errors import BiasError, said_as_data

MANIFEST_FILE = "manifest.json"


MAX_MANIFEST = 8 * 2**20  # a manifest holds the experiment file and a line per model


def manifest_text(folder: Path) -> str | None:
    """The manifest of a run folder as written (None when there is none); a link, a pipe or a
    device in its place, or a file larger than MAX_MANIFEST, is refused naming it."""
    from bias.core.runs.folder import not_a_file, read_in_run, special_file

    if special_file(Path(folder) / MANIFEST_FILE):  # a device or a pipe is said, not passed over
        raise not_a_file(Path(folder) / MANIFEST_FILE)
    # a link planted in its place is refused
    written = read_in_run(
        Path(folder),
        MANIFEST_FILE,
        "the manifest",
        MAX_MANIFEST,
        what="manifest",
        hint="Check the run folder: manifest.json is what a run wrote, and nothing else.",
    )
    return None if written is None else written.decode("utf-8", errors="replace")


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST_FILE
    try:
        text = manifest_text(folder)
        if text is None:
            return None
        data = json.loads(text)
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: a 4,301-digit number too
        what = "JSON nested too deeply" if isinstance(exc, RecursionError) else said_as_data(exc)
        raise BiasError(
            f"{path} is damaged: not readable JSON ({what}).",
            "results.jsonl beside it is intact: `bias report` still reads it; to run "
            "again, give a new folder with --out.",
        ) from exc
    return data if isinstance(data, dict) else None
