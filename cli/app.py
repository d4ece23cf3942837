"""The `bias` command line: thin wrappers that parse options, call core and the registry, and
render.

Heavy libraries are never imported here; `bias --help`, `bias list` and `bias info` stay fast.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from bias.cli import compare_command, debias
from bias.cli.consoles import stderr, stdout
from bias.cli.say import say, warn
from bias.cli.coercion import convert_only_when_needed
from bias.cli.help_format import GroupedCommand
from bias.cli.lazy_commands import LazyGroup, later
from bias.core.errors import FAILURE, USAGE

convert_only_when_needed()

app = typer.Typer(
    name="bias",
    help="Detect and mitigate social bias in word embeddings and language models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=LazyGroup,
)
_state = {"debug": False}  # --debug, as the main callback parsed it


def _version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version as installed

        say(stdout(), f"bias-framework {installed('bias-framework')}")
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors."),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="Also print each experiment's sets, lost words and convention under its progress "
        "line, and more of what happens.",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        is_eager=True,
        callback=lambda v: _version(v),
    ),
) -> None:
    from bias.cli.log_handler import Handler

    _state["debug"] = debug
    level = (
        logging.DEBUG
        if debug
        else logging.INFO
        if verbose
        else logging.ERROR
        if quiet
        else logging.WARNING
    )
    handler = Handler()
    handler.addFilter(_OncePerMessage())
    logging.basicConfig(level=level, format="%(message)s", handlers=[handler], force=True)
    # how far a long batch of service requests has got: said unless -q
    logging.getLogger("bias.progress").setLevel(
        logging.ERROR if quiet else min(level, logging.INFO)
    )
    # -v is about this tool's progress; the libraries' own INFO lines only with --debug
    if not debug:
        for library in ("gensim", "smart_open", "urllib3", "filelock"):
            logging.getLogger(library).setLevel(max(level, logging.WARNING))
        # urllib3 warns of a server's malformed header with the header's text, which may echo
        # the key sent; what matters of it reaches the user as the request's own error
        logging.getLogger("urllib3").setLevel(max(level, logging.ERROR))


class _OncePerMessage(logging.Filter):
    """A warning that several experiments or files raise alike is printed once, not once per
    caller."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@app.command("list", cls=GroupedCommand)
def list_cmd(
    group: Optional[str] = typer.Argument(
        None, help="embedders, metrics, wordsets or debiasers (all when omitted)."
    ),
    language: Optional[str] = typer.Option(
        None, "--language", "-l", help="Only word sets of this language, e.g. en."
    ),
    bias_type: Optional[str] = typer.Option(
        None, "--bias-type", help="Only word sets of this bias type, e.g. gender."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    long: bool = typer.Option(
        False, "--long", help="Whole summaries, kinds, distributions and status."
    ),
) -> None:
    """List installed plugins, one line each (--long: kind, whole summary, distribution, status)."""
    from bias.cli.plugin_listing import plugins_table
    from bias.registry import GROUPS, list_plugins
    from bias.registry.entry_points import group_key
    from bias.registry.listing_cache import remembered

    with remembered():
        if language is not None:
            from bias.registry.catalogue import check_language

            check_language(language)
        # the short listing shows no distribution: not read
        rows = list_plugins(group, language=language, bias_type=bias_type, origins=long or as_json)
    if as_json:
        print(json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False))
        return
    extra = sorted({r.group for r in rows} - set(GROUPS))  # e.g. a broken word-set format importer
    title = (
        "Word sets" + (f" ({language})" if language else "")
        if group and group_key(group) == "wordsets"
        else "Installed plugins"
    )
    shown = plugins_table(
        rows,
        [group_key(group)] if group else list(GROUPS) + extra,
        long=long,
        title=title,
        width=stdout().width,
    )
    # the short listing's lines are cut to the width already: wrapping them again was a fifth of
    # `bias list`
    stdout().print(shown, highlight=False, soft_wrap=not long)


@app.command("info", cls=GroupedCommand)
def info_cmd(
    name: str = typer.Argument(..., help="A plugin or word-set name, e.g. weat, hf or en/weat6."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Show a plugin's documentation, parameters, requirements and origin."""
    from bias.cli.info import plugin_documentation, render

    found = plugin_documentation(name)
    if as_json:
        print(json.dumps(found, indent=2, ensure_ascii=False, default=str))
        return
    for entry in found:
        render(stdout(), entry)


RUN_HELP = (
    "Run experiments: every combination of the repeatable options, or an experiment file. Every "
    "option has the same name in an experiment file; `bias run --metric NAME --help` lists a "
    "metric's parameters."
)


def _run_command() -> Any:
    """`bias run`, built when named (`bias.cli.lazy_commands`)."""
    import typer.main

    from bias.cli import run_command

    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    one.command("run", cls=GroupedCommand)(
        run_command.command(
            lambda config, values: run_command.run(
                config, values, stdout(), stderr(), _state["debug"]
            ),
            RUN_HELP,
        )
    )
    return typer.main.get_command(one)


later("run", after="info", build=_run_command, help=RUN_HELP)


def _family(value: Optional[str]) -> Optional[str]:
    from bias.engine.vocabulary import checked

    return None if value is None else checked("family", value, "--family")


def parse_formats(values: list[str]) -> tuple[str, ...]:
    from bias.core.reports import parse_formats as parse

    return parse(values)


VALIDATE_HELP = (
    "Check word-set files, language packages or folders of datasets; report every problem "
    "with file and field, and a line per file."
)


@app.command("validate", help=VALIDATE_HELP, cls=GroupedCommand)
def validate_cmd(
    paths: Optional[list[Path]] = typer.Argument(
        None, help="Word-set files, language-package folders or dataset folders (any number)."
    ),
    frequencies: Optional[Path] = typer.Option(
        None,
        "--frequencies",
        help="Word-frequency list (`word count` per line): warn when a set is much rarer than "
        "its counterpart.",
    ),
    render: list[str] = typer.Option(
        [],
        "--render",
        help="Print every sentence a test produces (SEAT, LPBS, pairs), one per line, e.g. "
        "nl/religion. Repeatable.",
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        help="A model spec: say per word-level test how many stimuli it loses and which tests "
        "it refuses.",
    ),
) -> None:
    from bias.cli.validate import execute

    raise typer.Exit(execute(paths or [], frequencies, render, model, stdout()))


@app.command("convert", cls=GroupedCommand)
def convert_cmd(
    config: Path = typer.Argument(
        ..., help="An experiment config .txt of the BIAS Detection Framework."
    ),
    datasets: Optional[Path] = typer.Option(
        None,
        "--datasets",
        help="The datasets folder (<lang>/<METRIC>/<test>; default ./datasets, else the "
        "datasets folder beside or above CONFIG).",
    ),
    models_dir: Optional[Path] = typer.Option(
        None,
        "--models-dir",
        "--models",
        help="The models folder (cc.<lang>.300.bin, Hub ids; default ./models, else the models "
        "folder beside or above CONFIG).",
    ),
) -> None:
    """Print the TOML experiment file equivalent to a BIAS Detection Framework config file."""
    from bias.engine.framework_file import read_framework_config

    spec = read_framework_config(
        config,
        datasets,
        models_dir,
        lambda problem: warn(stderr(), str(problem)),
        "nothing to convert",
    )
    print(spec.to_toml(), end="")  # paths absolute: the file may be saved anywhere


REPORT_HELP = (
    "Regenerate the report of a run from its results.jsonl: table, CSV, Markdown, LaTeX, "
    "figures, HTML."
)


@app.command("report", help=REPORT_HELP, cls=GroupedCommand)
def report_cmd(
    folder: Path = typer.Argument(
        ..., help="A folder written by `bias run --out` (or its results.jsonl)."
    ),
    report_format: list[str] = typer.Option(
        ["all"],
        "--format",
        help="all, md, csv, tex, png, svg or html. Repeatable or comma-separated.",
    ),
    family: Optional[str] = typer.Option(
        None,
        "--family",
        help="Multiple-testing family: run, model or metric (default: the run's, else run).",
    ),
    wide: bool = typer.Option(
        False,
        "--wide",
        help="Print every column of the results table: a table where it fits, else one block "
        "per result; piped, the table unwrapped.",
    ),
    robustness: bool = typer.Option(
        False,
        "--robustness",
        help="Specification curves instead: each test across the design choices the run varied "
        "(metric, level, pooling, layer, test variant), as robustness-*.png, robustness.md "
        "and robustness.csv.",
    ),
    agreement: bool = typer.Option(
        False,
        "--agreement",
        help="How far the methods agree: Pearson and Spearman correlations of every pair of "
        "methods across (model, test) cells, all and significant scores, as "
        "agreement.md/.tex/.csv/.png and a section of report.html.",
    ),
) -> None:
    from bias.cli.report import execute

    execute(
        folder,
        parse_formats(report_format),
        _family(family),
        wide=wide,
        robustness=robustness,
        agreement=agreement,
        console=stdout(),
        err_console=stderr(),
    )


app.command("debias", cls=GroupedCommand)(debias.debias_cmd)
app.command("compare", help=compare_command.HELP, cls=GroupedCommand)(compare_command.compare_cmd)


GLOBAL_FLAGS = ("-q", "--quiet", "-v", "--verbose", "--debug")


def global_flags_first(args: list[str]) -> list[str]:
    """`bias run ... -q` means `bias -q run ...`: the global flags are accepted after the
    sub-command too (up to a `--`, after which every argument is the user's)."""
    end = args.index("--") if "--" in args else len(args)
    moved = [a for a in args[:end] if a in GLOBAL_FLAGS]
    rest = [a for a in args[:end] if a not in GLOBAL_FLAGS]
    return moved + rest + args[end:]


def _click_classes(name: str) -> tuple[type, ...]:
    """The exception class `name` of click and of the click copy inside typer (typer raises its
    own)."""
    import click

    found = [getattr(click.exceptions, name)]
    try:
        from typer._click import exceptions as vendored

        found.append(getattr(vendored, name))
    except (ImportError, AttributeError):
        pass
    return tuple(found)


def _say(message: str, hint: str | None = None, label: str = "Error") -> None:
    """One or two lines on stderr; the text is shown as text (never read as rich markup), control
    and invisible characters made visible, and cut when very long."""
    say(stderr(), (f"{label}: ", "bold red"), message)
    if hint:
        say(stderr(), hint)


def main(args: Optional[list[str]] = None) -> None:
    """Entry point of the `bias` script: user errors in two lines with exit 2, failures of the
    program with exit 1 and how to report them, the whole chained traceback only with --debug."""
    import signal
    import traceback

    from bias.core.errors import REPORT_HINT, interrupt_exit_code, recognised

    argv = global_flags_first(list(sys.argv[1:] if args is None else args))
    debug = "--debug" in argv
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            try:
                previous[number] = signal.signal(number, _interrupt)
            except ValueError:
                # not the main thread (an embedding application): leave signals alone
                pass
    try:
        try:
            code = app(args=argv, prog_name="bias", standalone_mode=False)
        except _click_classes("Exit") as exc:
            code = exc.exit_code
        if code in (0, None) and argv[:1] == ["run"]:  # `bias run --metric NAME --help`
            from bias.cli import run_command

            if run_command.metric_help(argv):
                run_command.show_metric_parameters(stdout(), run_command.metric_help(argv))
    except SystemExit:
        raise
    except (KeyboardInterrupt, *_click_classes("Abort")) as exc:
        say(stderr(), "Interrupted; results written so far are kept.")
        code = interrupt_exit_code(exc) if isinstance(exc, KeyboardInterrupt) else 130
    except _click_classes("UsageError") as exc:
        command = exc.ctx.command_path if getattr(exc, "ctx", None) else "bias"
        _say(exc.format_message(), f"See `{command} --help`.")
        code = USAGE
    except _click_classes("ClickException") as exc:
        _say(exc.format_message())
        code = USAGE
    except Exception as exc:
        user = recognised(exc)
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        if user is not None:
            _say(user.message, user.hint)
            code = user.exit_code
        else:
            _say(f"{type(exc).__name__}: {exc}", REPORT_HINT, label="Failed")
            code = FAILURE
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    sys.exit(code if isinstance(code, int) else 0)


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM and SIGHUP end a run like Ctrl-C: what is finished is kept, the manifest is
    closed."""
    from bias.core.errors import Interrupted

    raise Interrupted(signum)


if __name__ == "__main__":
    main()
