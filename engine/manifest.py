"""The run manifest (`manifest.json`): what a run was, so that its numbers can be trusted and
redone.

It records the command line, the experiment file's text, the seeds, the configuration fingerprint
(checked by `--resume`), library and plugin versions, the fingerprint of every model, the machine,
start and end times of each session (a resumed run adds one), and the skipped combinations. It is
rewritten atomically (temporary file, then rename), so a killed run leaves the previous version.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.runs.results import RESULTS_FILE
from bias.core.runs.folder import open_in_run
from bias.core.runs.manifest import MANIFEST_FILE, read_manifest

FORMAT = "bias-run/1"
KILLED = "killed"  # a session that never closed, found by the next one
LIBRARIES = (
    "bias-framework",
    "numpy",
    "scipy",
    "attrs",
    "torch",
    "transformers",
    "tokenizers",
    "gensim",
    "fasttext-numpy2-wheel",
    "matplotlib",
)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def library_versions() -> dict[str, str]:
    out = {}
    for dist in LIBRARIES:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def plugin_versions() -> dict[str, str]:
    """Distribution and version of every installed bias plugin (all entry-point groups), read from
    metadata only: a third-party metric or language package that produced a number is named."""
    from bias.registry.entry_points import FORMATS_GROUP, GROUPS

    out: dict[str, str] = {}
    for group in (*GROUPS.values(), FORMATS_GROUP):
        for ep in metadata.entry_points(group=group):
            dist = getattr(ep, "dist", None)
            if dist is not None:
                out[dist.metadata["Name"]] = dist.version
    return dict(sorted(out.items()))


def _has_results(folder: Path) -> bool:
    path = folder / RESULTS_FILE
    return path.exists() and path.stat().st_size > 0


def check_folder(
    folder: Path, fingerprint: str, *, resume: bool, also: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """Refuse to mix runs in one folder: without --resume the folder must hold no results; with it,
    the folder's configuration fingerprint must be this run's. Returns the existing manifest."""
    folder = Path(folder)
    existing = read_manifest(folder) if folder.exists() else None
    if not resume:
        if _has_results(folder):
            raise BiasError(
                f"{folder} already holds the results of a run.",
                "Add --resume to continue that run, or give a new folder with --out.",
            )
        return existing
    if existing is None:
        return None  # a folder written before manifests existed, or a fresh one: nothing to compare
    theirs = existing.get("config_fingerprint")
    # `also`: the same run under older keys
    if theirs and theirs != fingerprint and theirs not in also:
        n = existing.get("experiments", "?")
        raise BiasError(
            f"Cannot resume {folder}: it holds a run of a different configuration "
            f"(fingerprint {theirs}, {n} experiments; this one is {fingerprint}).",
            "Resume with the same experiment file and options, or give a new folder with --out.",
        )
    return existing


@attrs.define
class Manifest:
    """The manifest of one output folder, updated as the run goes and saved atomically."""

    folder: Path
    data: dict[str, Any]

    @classmethod
    def begin(
        cls,
        folder: Path,
        *,
        plan: Any,
        command: Sequence[str],
        config_text: str | None = None,
        config_path: str | None = None,
        settings: dict[str, Any] | None = None,
        family: str = "run",
        resume: bool = False,
    ) -> Manifest:
        """Check the folder (see `check_folder`) and start a session in its manifest."""
        folder = Path(folder)
        legacy = getattr(plan, "legacy_fingerprint", None)
        existing = check_folder(
            folder, plan.fingerprint, resume=resume, also=(legacy,) if legacy else ()
        )
        settings = settings or {}
        seeds = sorted({p.experiment.seed for p in plan.runnable}, key=lambda s: (s is None, s))
        data = (
            existing
            if (resume and existing)
            else {
                "format": FORMAT,
                "title": settings.get("title", ""),
                "description": settings.get("description", ""),
                "config_fingerprint": plan.fingerprint,
                "experiments": len(plan.runnable),
                "config_file": config_path,
                "config_text": config_text,
                "grid": settings.get("grid", {}),
                "family": family,
                "seeds": seeds,
                # --limit N: a smoke run on the first N items of each list of each test (None: all
                # items)
                "limit": next(
                    (p.experiment.limit for p in plan.runnable if p.experiment.limit is not None),
                    None,
                ),
                "merged_combinations": plan.merged,
                "skipped": [s.to_dict() for s in plan.skipped],
                "notes": list(settings.get("notes", [])),
                "models": {},
                "sessions": [],
            }
        )
        data["family"] = family
        # The run lock lets one session at a time into a folder: an earlier session still marked
        # running was killed (SIGKILL, a crash, a lost machine) before it could close itself.
        for earlier in data.get("sessions", []):
            if earlier.get("status") == "running":
                earlier["status"] = KILLED
        data.setdefault("sessions", []).append(
            {
                "command": list(command),
                "started": now(),
                "ended": None,
                "status": "running",
                "resume": resume,
                "machine": machine(),
                "libraries": library_versions(),
                "plugins": plugin_versions(),
            }
        )
        manifest = cls(folder, data)
        manifest.save()
        return manifest

    def model_loaded(
        self,
        label: str,
        *,
        fingerprint: str | None = None,
        info: dict[str, Any] | None = None,
        load_s: float | None = None,
        error: str | None = None,
    ) -> None:
        entry = {
            "fingerprint": fingerprint,
            "info": info or {},
            "load_s": None if load_s is None else round(load_s, 4),
        }
        if error:
            entry["error"] = error
        self.data.setdefault("models", {})[label] = entry
        self.save()

    def executor(self, name: str, **details: Any) -> None:
        """Record how this session runs: `local`, or `ray` with the cluster's address and
        resources."""
        self.data["sessions"][-1]["executor"] = {"name": name, **details}
        self.save()

    def finish(self, status: str, **counts: int) -> None:
        """Close the session: `status` is finished, interrupted, stopped (fail-fast) or failed (a
        session that never closed is marked killed when the next one starts)."""
        session = self.data["sessions"][-1]
        session.update(ended=now(), status=status, **counts)
        self.save()

    def save(self) -> None:
        from bias.core.model import _jsonable

        self.folder.mkdir(parents=True, exist_ok=True)
        with open_in_run(self.folder, MANIFEST_FILE, atomic=True) as fh:
            json.dump(_jsonable(self.data), fh, indent=2, ensure_ascii=False, sort_keys=True)
            fh.write("\n")


def command_line(argv: Sequence[str] | None = None) -> list[str]:
    """The command as typed, with the program reduced to `bias` (no interpreter or install
    paths)."""
    argv = list(sys.argv if argv is None else argv)
    return ["bias", *argv[1:]]
