"""Model specs: `NAME:LOCATION`, e.g. `word2vec:vectors.bin`, `hf:./my-bert`, `hf:pkg:module/model`.

A location of the form `pkg:MODULE/sub/path` names a folder or file inside an installed Python package,
found without importing it: that is how the quickstart finds the MiniLM encoder shipped on PyPI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import attrs

from bias.core.errors import BiasError


@attrs.frozen
class ModelSpec:
    embedder: str
    location: str

    def __str__(self) -> str:
        return f"{self.embedder}:{self.location}"


def parse_spec(spec: str) -> ModelSpec:
    name, sep, location = spec.partition(":")
    if not sep or not name or not location:
        raise BiasError(
            f"Model spec '{spec}' is not of the form NAME:LOCATION.",
            "For example word2vec:vectors.bin, fasttext:cc.nl.300.bin or hf:path/to/model (see `bias list embedders`).",
        )
    return ModelSpec(name.strip().lower(), location.strip())


def resolve_location(location: str) -> Path:
    """The filesystem path a location names (`pkg:` locations resolved inside installed packages)."""
    if not location.startswith("pkg:"):
        return Path(location).expanduser()
    module, _, sub = location[4:].partition("/")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.submodule_search_locations:
        raise BiasError(
            f"Python package '{module}' (from '{location}') is not installed.",
            f"Install it, e.g. `pip install {module.replace('_', '-')}`.",
        )
    return Path(list(found.submodule_search_locations)[0]) / sub
