"""The same model named twice (`word2vec:w2v.bin` and `word2vec:./w2v.bin`, or two copies of one
file) runs once: running it twice would count every test twice in the multiple-testing family."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.specs import ModelSpec, resolve_location

log = logging.getLogger(__name__)

# bytes read from each end of a file: enough to tell real models apart, fast on GB files
_SAMPLE = 1 << 20


def file_identity(path: Path) -> tuple[Any, ...]:
    """Size and a hash of the first and last MiB of a file: two copies of one model agree."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        digest.update(fh.read(_SAMPLE))
        if size > 2 * _SAMPLE:
            fh.seek(size - _SAMPLE)
            digest.update(fh.read(_SAMPLE))
    return (size, digest.hexdigest())


def model_identity(parsed: ModelSpec, debias: Any = None) -> tuple[Any, ...]:
    """What a model config reads: its embedder, options (and debiasing) and the content of its file
    or folder (the location as written when it is not on disk, such as a Hub id)."""
    try:
        path = resolve_location(parsed.location)
        if path.is_file():
            where: Any = file_identity(path)
        elif path.is_dir():
            where = tuple(
                sorted((p.name, *file_identity(p)) for p in path.iterdir() if p.is_file())
            )
        else:
            where = parsed.location
    except (OSError, BiasError):
        where = parsed.location
    return (
        parsed.embedder,
        where,
        repr(sorted((str(k), str(v)) for k, v in parsed.options.items())),
        repr(debias),
    )


def same_models(experiments: Sequence[Any]) -> list[Any]:
    """Experiments with every duplicate model replaced by its first spelling, and a warning naming
    both."""
    first: dict[tuple[Any, ...], Any] = {}
    replaced: dict[str, Any] = {}
    seen: set[str] = set()
    for e in experiments:
        model, label = e.model, e.model.label()
        if label in seen:
            continue
        seen.add(label)
        identity = model_identity(model.parsed, model.parsed_debias)
        if identity in first:
            replaced[label] = first[identity]
            log.warning(
                "%s is the same model as %s (same file and options); it runs once.",
                label,
                first[identity].label(),
            )
        else:
            first[identity] = model
    return [
        attrs.evolve(e, model=replaced[e.model.label()]) if e.model.label() in replaced else e
        for e in experiments
    ]
