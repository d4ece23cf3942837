"""`bias run`: the command is generated from the run's vocabulary (`bias.engine.vocabulary`), one
option per row, grouped in help panels; the options given become a `RunSpec`, laid over the
experiment file when one is given (`bias.engine.front_door`), and the run is shown by
`bias.cli.run`. Nothing heavy is imported until the command runs."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from bias.engine.vocabulary import CODE, COMMAND_LINE, MODEL, OPTIONS, SHARED, Option

# The command line's flags for the model options that run code: a file cannot switch them on
# (bias.engine.guards), so they are the command line's own, beside the vocabulary's.
CODE_OPTIONS = (
    Option(
        "trust_remote_code",
        ("--trust-remote-code",),
        "Model",
        "Allow a Hub model to run its own Python code (only for models you trust).",
        kind="switch",
        to=SHARED,
        file=COMMAND_LINE,
        why_command_line=CODE,
    ),
    Option(
        "allow_pickle",
        ("--allow-pickle",),
        "Model",
        "Allow formats that unpickle (gensim .kv/.model); only for files you trust.",
        kind="switch",
        to=MODEL,
        file=COMMAND_LINE,
        why_command_line=CODE,
    ),
)
CODE_FLAGS = {o.name: o.flag for o in CODE_OPTIONS}
# Every option of `bias run`, in the order of its help: the code flags after the model's loader
# options.
_AFTER = [o.name for o in OPTIONS].index("batch_size") + 1
COMMAND_OPTIONS = (*OPTIONS[:_AFTER], *CODE_OPTIONS, *OPTIONS[_AFTER:])
TABLE = {o.name: o for o in COMMAND_OPTIONS}
TYPES: dict[str, type] = {"text": str, "whole": int, "number": float, "path": Path, "pair": str}
CONFIG_HELP = (
    "An experiment TOML file, or a BIAS Detection Framework config .txt; options given here "
    "replace the file's (the same names: docs/run-options.md)."
)


def _parameter(option: Option) -> inspect.Parameter:
    base = TYPES.get(option.kind, str)
    annotation: Any
    if option.kind == "switch":
        annotation, default = bool, False
    elif option.many:
        annotation, default = list[base], []  # type: ignore[valid-type]
    else:
        annotation, default = Optional[base], None
    # a repeatable option shows the type of one value: its help says it repeats
    metavar = f"<{base.__name__.lower()}>" if option.many else None
    if option.kind == "pair":
        metavar = "NAME=VALUE" if option.to == "param" else "KEY=VALUE"
    info = typer.Option(
        default, *option.flags, help=option.help, rich_help_panel=option.panel, metavar=metavar
    )
    return inspect.Parameter(
        option.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )


def command(run: Callable[[Optional[Path], dict[str, Any]], int], doc: str) -> Callable[..., None]:
    """The `run` command's function, its signature the vocabulary's options and its help `doc`: it
    hands the config argument and every option's value to `run` and exits with the code `run`
    returns."""
    config = inspect.Parameter(
        "config",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=typer.Argument(None, help=CONFIG_HELP, show_default=False),
        annotation=Optional[Path],
    )
    parameters = [config, *(_parameter(o) for o in COMMAND_OPTIONS)]

    def run_cmd(config: Optional[Path] = None, **values: Any) -> None:
        raise typer.Exit(run(config, values))

    run_cmd.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run_cmd.__annotations__ = {p.name: p.annotation for p in parameters}
    run_cmd.__doc__ = doc
    return run_cmd


def given_options(values: dict[str, Any]) -> dict[str, Any]:
    """The options the command line gave, by name: KEY=VALUE lists read, paths as text where they
    are a metric's or a model's (a path is a Path only for out and the framework's folders)."""
    from bias.engine.option_values import many_pairs, pairs
    from bias.engine.vocabulary import PARAM

    given = {k: v for k, v in values.items() if v is not None and v is not False and v != []}
    if "params" in given:
        given["params"] = many_pairs(given["params"], "--param")
    if "model_options" in given:
        given["model_options"] = pairs(given["model_options"], "--model-option")
    for name, value in given.items():
        if TABLE[name].to in (PARAM, MODEL) and TABLE[name].kind == "path":
            given[name] = [str(v) for v in value] if isinstance(value, list) else str(value)
    return given


def metric_help(argv: list[str]) -> list[str]:
    """The metrics of `bias run --metric NAME ... --help`, whose parameters follow the help."""
    if not argv or argv[0] != "run" or not any(a in ("--help", "-h") for a in argv):
        return []
    names = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--metric"]
    return names + [a.split("=", 1)[1] for a in argv if a.startswith("--metric=")]


def show_metric_parameters(console: Any, names: list[str]) -> None:
    """Each metric's declared parameters as `bias info` shows them, with their flag where one
    exists."""
    from bias.cli.info import parameters_table, plugin_documentation
    from bias.cli.say import say
    from bias.engine.vocabulary import BY_NAME, PARAM

    for name in names:
        for entry in plugin_documentation(name):
            if entry["group"] != "metrics":
                continue
            aliases = {
                n: o.flag
                for n, o in BY_NAME.items()
                if (o.to == PARAM and n != "params") or n == "duplicates"
            }
            say(
                console,
                (f"Parameters of {name}", "bold"),
                " (--param NAME=VALUE; in a file [params] or [grid]):",
            )
            console.print(parameters_table(entry, aliases))


def run(
    config: Optional[Path], values: dict[str, Any], console: Any, err_console: Any, debug: bool
) -> int:
    """The run the command line asks for: printed as an experiment file with --print-toml, else
    run."""
    from bias.cli.run import execute
    from bias.cli.say import say, warn
    from bias.engine.front_door import from_options, spec_for_run
    from bias.registry.resolve import check_pairs_file

    given = given_options(values)
    door = {k: given.pop(k) for k in ("datasets", "models_dir", "print_toml") if k in given}
    for pairs_file in given.get("pairs", ()):
        check_pairs_file(pairs_file)
    spec = spec_for_run(
        from_options(given, table=TABLE),
        config,
        datasets=door.get("datasets"),
        models_dir=door.get("models_dir"),
        on_warning=lambda problem: warn(err_console, str(problem)),
        on_notice=lambda text: say(err_console, text),
    )
    if door.get("print_toml"):
        print(spec.to_toml(), end="")
        return 0
    return execute(spec, console=console, debug=debug)
