"""Reading a run folder's `manifest.json`, which reports and `--resume` both consult.

Writing it belongs to the run (`bias.engine.manifest`); reading it is all a report needs, so it
lives here, below the layer that runs experiments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bias.core.errors import BiasError

MANIFEST_FILE = "manifest.json"


def read_manifest(folder: Path) -> dict[str, Any] | None:
    from bias.core.runs.folder import readable_in_run

    # a link planted in its place is refused
    path = readable_in_run(Path(folder), MANIFEST_FILE, "the manifest")
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        what = "JSON nested too deeply" if isinstance(exc, RecursionError) else exc
        raise BiasError(
            f"{path} is damaged: not readable JSON ({what}).",
            "results.jsonl beside it is intact: `bias report` still reads it; to run "
            "again, give a new folder with --out.",
        ) from exc
    return data if isinstance(data, dict) else None
