"""StereoSet's published JSON files (Nadeem et al. 2021; `dev.json`, `test.json`), read into the
`stereoset` kind.

The file is one object, `{"version": ..., "data": {"intrasentence": [...], "intersentence":
[...]}}`; each intrasentence example has `id`, `bias_type`, `target`, `context` (with the word
BLANK) and three `sentences` (`id`, `sentence`, `labels`, `gold_label`). Only the intrasentence part
is kept; the intersentence part is a different task (a sentence after a context) and is ignored. The
record keeps the file's layout, so the kind's checks name a field as the file spells it
(`data.intrasentence[4] (id '...').sentences[1].gold_label`). The files are the user's: none are
shipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bias.api import BiasError, WordSetFormat
from bias.api.data import STEREOSET, read_json


def _looks_like_stereoset(data: Any) -> bool:
    """A JSON object with StereoSet's top-level `data` part (and its `version`, or an object as
    `data`)."""
    return (
        isinstance(data, dict)
        and "data" in data
        and ("version" in data or isinstance(data["data"], dict))
    )


class StereoSetJsonFormat(WordSetFormat):
    name: ClassVar[str] = "stereoset-json"
    summary: ClassVar[str] = (
        "StereoSet's intrasentence examples, the published dev.json/test.json (for the "
        "stereoset metric)."
    )
    suffixes: ClassVar[tuple[str, ...]] = (".json",)
    kind: ClassVar[str] = STEREOSET

    def sniff(self, path: Any) -> bool:
        try:
            return _looks_like_stereoset(read_json(path))
        except (OSError, BiasError):
            return False

    def record(self, path: Any) -> dict[str, Any]:
        path = Path(path)
        data = read_json(path, "StereoSet file")
        if not isinstance(data, dict):
            raise BiasError(
                f"{path}: not a JSON object.",
                'A StereoSet file is one object: {"version": ..., "data": '
                '{"intrasentence": [...]}}.',
            )
        part = data.get("data")
        # Only the intrasentence part is kept: the record stays small, and the intersentence task is
        # not scored.
        kept = (
            {"intrasentence": part["intrasentence"]}
            if isinstance(part, dict) and "intrasentence" in part
            else part
        )
        record: dict[str, Any] = {
            "kind": STEREOSET,
            "language": "en",
            "bias_type": "mixed",
            "title": f"StereoSet intrasentence examples from {path.name}",
            "source": f"user file {path.name} (StereoSet format, Nadeem et al. 2021)",
            "licence": "unspecified",
            "data": kept,
        }
        if "version" in data:
            record["version"] = data["version"]
        return record
