"""A `RunSpec` written as an experiment file: `bias run --print-toml` and `bias convert` print it,
and `bias run FILE` plans the same experiments from it.

Paths that name existing files or folders are written absolute, because an experiment file's
relative paths are read against its own folder and the printed file may be saved anywhere. What a
file cannot decide is not written as a value: an option that runs code becomes a comment naming its
flag.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bias.core.text import visible
from bias.engine.experiments import ModelConfig
from bias.engine.guards import PATH_OPTIONS
from bias.engine.presets import PRESET_NOTES
from bias.engine.run_spec import Listed, RunSpec
from bias.engine.vocabulary import BY_NAME, FILE

# The run options written at the top of the file, in this order (the structure follows them).
TOP = (
    "title",
    "description",
    "preset",
    "duplicates",
    "seeds",
    "limit",
    "family",
    "executor",
    "ray_address",
    "out",
    "resume",
    "fail_fast",
    "formats",
    "json",
    "wide",
    "with_original",
    "before_after",
    "max_cost",
)
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def value(item: Any) -> str:
    """A TOML value: strings through JSON (a TOML basic string accepts its escapes), lists and
    tables inline."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, (int, float)):
        return repr(item)
    if isinstance(item, Mapping):
        return "{ " + ", ".join(f"{key(k)} = {value(v)}" for k, v in item.items()) + " }"
    if isinstance(item, (list, tuple)):
        return "[" + ", ".join(value(v) for v in item) + "]"
    # JSON escapes the control characters below U+0020; TOML refuses DEL and the C1 controls raw
    # too.
    return "".join(
        ch if not ("\x7f" <= ch <= "\x9f") else f"\\u{ord(ch):04X}"
        for ch in json.dumps(str(item), ensure_ascii=False)
    )


def key(name: Any) -> str:
    return str(name) if BARE_KEY.match(str(name)) else value(str(name))


def comment(text: object) -> str:
    """A TOML comment line, which may hold no control character: those are written as <U+XXXX>."""
    return f"# {visible(text)}"


def absolute(path: str) -> str:
    """An existing file or folder as an absolute path; anything else (a name, a Hub id) as
    written."""
    try:
        found = Path(path).expanduser()
        return str(found.resolve()) if path and found.exists() else path
    except (OSError, ValueError):
        return path


def _paths(options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: absolute(v) if str(k).replace("-", "_") in PATH_OPTIONS and isinstance(v, str) else v
        for k, v in options.items()
    }


def _spec(model: ModelConfig) -> str:
    name, _, location = model.spec.partition(":")
    return f"{name}:{absolute(location)}" if location else model.spec


def _model_options(model: ModelConfig, code: Mapping[str, str], said: list[str]) -> dict[str, Any]:
    """A model's options as a file writes them; an option that runs code becomes a comment."""
    out = {}
    for name, given in _paths(model.written_options()).items():
        if name in code:
            line = comment(f"give {code[name]} on the command line: a file cannot switch {name} on")
            if line not in said:
                said.append(line)
            continue
        out[name] = given
    return out


def spec_to_toml(spec: RunSpec) -> str:
    from bias.engine.guards import code_option_names

    code = {
        name: spec.code_flags.get(name, f"--model-option {name}=true")
        for name in code_option_names()
    }
    lines = [comment(c) for c in spec.comments]
    said: list[str] = []
    for name in TOP:
        option = BY_NAME.get(name)  # description is the file's own
        if not spec.given(name) or (option is not None and option.file != FILE):
            continue
        given = getattr(spec, name)
        if name == "out":
            given = str(Path(given).resolve())
        if name == "preset" and given in PRESET_NOTES:
            lines += [comment(line) for line in textwrap.wrap(PRESET_NOTES[given], 96)]
        if given is not None and given != ():
            lines.append(f"{name} = {value(given)}")
    for line in [comment(f"confirm on the command line with --allow {a}") for a in spec.allow]:
        lines.append(line)
    models = [_model_table(m, code, said) for m in spec.models]
    if not spec.listed:
        lines.append(f"wordsets = {value([absolute(w) for w in spec.wordsets])}")
        metrics = [
            m.name if not m.params else {"name": m.name, **_paths(m.params)} for m in spec.metrics
        ]
        if metrics:
            lines.append(f"metrics = {value(metrics)}")
    for table, content in (("params", spec.params), ("grid", spec.grid)):
        if content:
            lines += ["", f"[{table}]"]
            for k, v in content.items():
                written = _paths({k: v})[k] if table == "params" else [_paths({k: x})[k] for x in v]
                lines.append(f"{key(k)} = {value(written)}")
    for table in models:
        lines += ["", "[[models]]", *(f"{key(k)} = {value(v)}" for k, v in table.items())]
    for entry in spec.listed:
        lines += ["", *_experiment(entry, code, said)]
    return "\n".join([*lines[: len(spec.comments)], *said, *lines[len(spec.comments) :]]) + "\n"


def _model_table(model: ModelConfig, code: Mapping[str, str], said: list[str]) -> dict[str, Any]:
    table: dict[str, Any] = {"spec": _spec(model)}
    if model.name:
        table["name"] = model.name
    if model.resources:
        table["resources"] = dict(model.resources)
    return {**table, **_model_options(model, code, said)}


def _experiment(entry: Listed, code: Mapping[str, str], said: list[str]) -> list[str]:
    options = _model_options(entry.model, code, said)
    model: Any = {"spec": _spec(entry.model), **options} if options else _spec(entry.model)
    lines = [comment(c) for c in entry.comments]
    lines += [
        "[[experiments]]",
        f"wordset = {value(absolute(entry.wordset))}",
        f"metric = {value(entry.metric)}",
        f"model = {value(model)}",
    ]
    if entry.params:
        lines.append(f"params = {value(_paths(entry.params))}")
    return lines
