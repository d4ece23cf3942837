"""The one folder where the framework keeps what it can recompute: encodings, static vectors built
from an encoder, what `bias list` read. Each user of it takes a sub-folder of its own."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "BIAS_CACHE_DIR"


def cache_root() -> Path:
    """`$BIAS_CACHE_DIR`, else `$XDG_CACHE_HOME/bias-framework`, else `~/.cache/bias-framework`."""
    root = os.environ.get(ENV_VAR, "").strip()
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "bias-framework"
