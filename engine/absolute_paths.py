"""Every path a model or metric reads, made absolute on the machine that plans the run.

Why: a Ray worker runs in the folder where `ray start` ran, not in the folder of `bias run`, so a
relative path that the planning machine reads correctly names nothing there (or another file). The
paths are therefore read here, once, against this process's working folder (an experiment file's
own paths were already read against the file's folder) and travel absolute: a model's file or
folder, its cache folder, the debiasing corpus and lists, a metric's corpus. Experiment keys and
labels keep the paths as written; only what is handed to the embedder and the metric changes, the
same way for the local runner and for Ray, so both compute the same thing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from bias.core.specs import DebiasSettings, ModelSpec

# Options of a model, of its debiasing and of a metric whose value is a file or folder read where
# the model runs (the template sets of SEAT and CEAT are read while planning, and need nothing
# here). A model's cache folder is always a folder, and may not exist yet: it is made absolute as
# written.
MODEL_PATH_OPTIONS = ("cache_dir",)
DEBIAS_PATH_FIELDS = ("corpus", "lists")
METRIC_PATH_PARAMS = ("corpus",)
_WRITTEN_AS_PATH = ("./", "../", ".\\", "..\\", "~")


def absolute(value: Any) -> Any:
    """`value` as an absolute path when it names a file or folder here or is written as a path
    (`./x`, `../x`, `~/x`); anything else as written: a Hub id, a registered name (`en/weat1`), a
    `pkg:` location, a URL, a service's model name, a value that is not text."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or value.startswith("pkg:")
        or "://" in value
    ):
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    if value.startswith(_WRITTEN_AS_PATH) or path.exists():
        return os.path.abspath(path)
    return value


def absolute_folder(value: Any) -> Any:
    """A value that is always a path (a cache folder), absolute whether or not it exists yet."""
    if not isinstance(value, str) or not value.strip():
        return value
    return os.path.abspath(Path(value).expanduser())


def absolute_spec(spec: ModelSpec) -> ModelSpec:
    """A parsed model spec with its location (see `absolute`) and its folders absolute."""
    options = {
        k: absolute_folder(v) if k in MODEL_PATH_OPTIONS else v for k, v in spec.options.items()
    }
    return ModelSpec(spec.embedder, absolute(spec.location), options)


def absolute_spec_text(spec: str) -> str:
    """`NAME:LOCATION` with an absolute location (a model a metric names as its input)."""
    name, sep, location = spec.partition(":")
    return f"{name}:{absolute(location.strip())}" if sep and location.strip() else spec


def absolute_debias(debias: DebiasSettings | None) -> DebiasSettings | None:
    """Debiasing settings with the corpus and list files absolute."""
    if debias is None:
        return None
    return attrs.evolve(
        debias, **{name: absolute(getattr(debias, name)) for name in DEBIAS_PATH_FIELDS}
    )


def absolute_metric(metric: Any) -> Any:
    """A built metric with the files it reads while computing (a corpus) absolute."""
    fields = attrs.fields_dict(type(metric)) if attrs.has(type(metric)) else {}
    changed = {
        name: absolute(getattr(metric, name))
        for name in METRIC_PATH_PARAMS
        if name in fields and absolute(getattr(metric, name)) != getattr(metric, name)
    }
    return attrs.evolve(metric, **changed) if changed else metric
