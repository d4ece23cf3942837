"""The `bias` command line: thin wrappers that parse options, call core and the registry, and render.

Heavy libraries are never imported here; `bias --help`, `bias list` and `bias info` stay fast.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from bias.core.errors import FAILURE, USAGE, BiasError

app = typer.Typer(
    name="bias",
    help="Detect and mitigate social bias in word embeddings and language models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
console = Console()
err_console = Console(stderr=True)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print progress information."),
) -> None:
    from rich.logging import RichHandler

    level = logging.DEBUG if debug else logging.INFO if verbose else logging.ERROR if quiet else logging.WARNING
    logging.basicConfig(level=level, format="%(message)s", handlers=[RichHandler(console=err_console, show_path=False)], force=True)


@app.command("list")
def list_cmd(
    group: Optional[str] = typer.Argument(None, help="embedders, metrics, wordsets or debiasers (all when omitted)."),
    language: Optional[str] = typer.Option(None, "--language", "-l", help="Only word sets of this language, e.g. en."),
    bias_type: Optional[str] = typer.Option(None, "--bias-type", help="Only word sets of this bias type, e.g. gender."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """List installed plugins: name, kind, summary, distribution and status."""
    from bias.cli.render import plugins_table
    from bias.registry import GROUPS, list_plugins
    from bias.registry.entry_points import group_key

    rows = list_plugins(group, language=language, bias_type=bias_type)
    if as_json:
        print(json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False))
        return
    console.print(plugins_table(rows, [group_key(group)] if group else list(GROUPS)))


@app.command("info")
def info_cmd(
    name: str = typer.Argument(..., help="A plugin or word-set name, e.g. weat, hf or en/weat6."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Show a plugin's documentation, parameters, requirements and origin."""
    from bias.cli.info import describe, render

    found = describe(name)
    if as_json:
        print(json.dumps(found, indent=2, ensure_ascii=False, default=str))
        return
    for entry in found:
        render(console, entry)


def _parse_options(pairs: list[str], flag: str) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BiasError(f"{flag} '{pair}' is not KEY=VALUE.", f"For example {flag} batch_size=16.")
        out[key.strip()] = value.strip()
    return out


@app.command("run")
def run_cmd(
    config: Optional[Path] = typer.Argument(None, help="An experiment TOML file (instead of the options below)."),
    model: list[str] = typer.Option([], "--model", "-m", help="Model spec NAME:LOCATION, e.g. word2vec:vectors.bin. Repeatable."),
    wordset: list[str] = typer.Option([], "--wordset", "-w", help="Word-set name (en/weat1) or file. Repeatable."),
    metric: list[str] = typer.Option([], "--metric", help="Metric name (default weat). Repeatable."),
    seed: list[int] = typer.Option([], "--seed", help="Random seed (default 0). Repeatable."),
    permutations: Optional[int] = typer.Option(None, "--permutations", help="Sampled permutations when the exact test is too large (default 100000)."),
    exact_limit: Optional[int] = typer.Option(None, "--exact-limit", help="Enumerate all partitions up to this many (default 100000; 0 forces sampling)."),
    ddof: list[int] = typer.Option([], "--ddof", help="Std convention of the effect size: 1 (default) or 0. Repeatable."),
    alternative: list[str] = typer.Option([], "--alternative", help="greater (default), less or two-sided. Repeatable."),
    lost_threshold: Optional[float] = typer.Option(None, "--lost-threshold", help="Refuse a test losing more than this share of a set (default 0.2)."),
    case: Optional[str] = typer.Option(None, "--case", help="Word lookup: exact (default), lower, or fallback (lowercase words not found)."),
    level: list[str] = typer.Option([], "--level", help="SEAT/CEAT: sentence or word (the target's vector in its sentence). Repeatable."),
    pooling: list[str] = typer.Option([], "--pooling", help="Contextual vector: cls, mean, first, last, target-mean, target-first, target-last. Repeatable."),
    layer: list[str] = typer.Option([], "--layer", help="Hidden layer: -1 (last), N, or mean-last-4. Repeatable."),
    templates: Optional[str] = typer.Option(None, "--templates", help="SEAT/CEAT template set (name such as en/templates-bleached, or file)."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="CEAT: text file, one sentence or comment per line."),
    contexts_per_word: Optional[int] = typer.Option(None, "--contexts-per-word", help="CEAT: contexts kept per word (reservoir-sampled)."),
    samples: Optional[int] = typer.Option(None, "--samples", help="CEAT: random samples of one context per word (default 10000)."),
    window: Optional[int] = typer.Option(None, "--window", help="CEAT: keep this many words either side of the target."),
    pairs: list[str] = typer.Option([], "--pairs", help="Sentence-pair set (en/crows-sample) or CrowS-Pairs .csv/.tsv file. Repeatable."),
    analogies: list[str] = typer.Option([], "--analogies", help="Analogy set (name, or word2vec questions file). Repeatable."),
    param: list[str] = typer.Option([], "--param", help="Any metric parameter KEY=VALUE (see `bias info METRIC`). Repeatable."),
    device: Optional[str] = typer.Option(None, "--device", help="Model device: auto, cpu, cuda, cuda:N, mps."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Model weights' precision: float32, float16, bfloat16."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Texts per forward pass."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow a Hub model to run its own Python code (only for models you trust)."),
    debias: Optional[str] = typer.Option(None, "--debias", help="Debias the model on the fly before measuring: hard, inlp or sent."),
    debias_corpus: Optional[Path] = typer.Option(None, "--debias-corpus", help="Corpus (one sentence per line) for --debias sent / inlp on sentence encodings."),
    debias_lists: Optional[str] = typer.Option(None, "--debias-lists", help="Debiasing lists (name such as en/debias-gender, or file)."),
    model_option: list[str] = typer.Option([], "--model-option", help="Embedder parameter KEY=VALUE, e.g. word_pooling=first. Repeatable."),
    allow_pickle: bool = typer.Option(False, "--allow-pickle", help="Allow formats that unpickle (gensim .kv/.model); only for files you trust."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for results.jsonl and report.md."),
    resume: bool = typer.Option(False, "--resume", help="Skip experiments already in OUT/results.jsonl."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Stop at the first failing experiment."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON lines."),
    bootstrap: Optional[int] = typer.Option(None, "--bootstrap", help="WEAT/SEAT: bootstrap resamples for the effect size's confidence interval (default 2000; 0: none)."),
    ci_level: Optional[float] = typer.Option(None, "--ci-level", help="Confidence level of the bootstrap interval (default 0.95)."),
    ci_method: Optional[str] = typer.Option(None, "--ci-method", help="Bootstrap interval: bca (default) or percentile."),
    family: Optional[str] = typer.Option(None, "--family", help="Multiple-testing family: run (default), model or metric."),
    report_format: list[str] = typer.Option([], "--format", help="Report files written with --out: all, md, csv, tex, png, svg (default md,csv,tex). Repeatable."),
) -> None:
    """Run experiments: every combination of the repeatable options, or an experiment file."""
    from bias.cli.run import execute

    if seed and any(s < 0 for s in seed):
        raise BiasError("--seed must be a whole number >= 0.")
    model_options = _parse_options(model_option, "--model-option")
    if allow_pickle:
        model_options["allow_pickle"] = "true"
    params: dict[str, Any] = {}
    if permutations is not None:
        params["permutations"] = permutations
    if exact_limit is not None:
        params["exact_limit"] = exact_limit
    if lost_threshold is not None:
        params["lost_threshold"] = lost_threshold
    if case is not None:
        params["case"] = case
    for key, value in {"bootstrap": bootstrap, "ci_level": ci_level, "ci_method": ci_method}.items():
        if value is not None:
            params[key] = value
    for key, value in {
        "templates": templates,
        "corpus": str(corpus) if corpus is not None else None,
        "contexts_per_word": contexts_per_word,
        "samples": samples,
        "window": window,
    }.items():
        if value is not None:
            params[key] = value
    params.update(_parse_options(param, "--param"))
    grid = {k: v for k, v in {"ddof": ddof, "alternative": alternative, "level": level, "pooling": pooling, "layer": layer}.items() if v}
    # Options of the model loader apply to the models whose embedder has them (hf has a device,
    # word2vec has not); --model-option is strict and must fit every model.
    shared_model_options = {
        k: v
        for k, v in {
            "device": device,
            "dtype": dtype,
            "batch_size": batch_size,
            "trust_remote_code": "true" if trust_remote_code else None,
        }.items()
        if v is not None
    }
    for key, value in {"debias": debias, "debias_corpus": debias_corpus, "debias_lists": debias_lists}.items():
        if value is not None:
            model_options[key] = str(value)
    code = execute(
        config=config,
        models=model,
        wordsets=[*wordset, *pairs, *analogies],
        metrics=metric or ["weat"],
        seeds=seed,
        params=params,
        grid=grid,
        model_options=model_options,
        shared_model_options=shared_model_options,
        out=out,
        resume=resume,
        fail_fast=fail_fast,
        as_json=as_json,
        console=console,
        debug="--debug" in sys.argv,
        family=_family(family),
        formats=parse_formats(report_format) if report_format else ("md", "csv", "tex"),
    )
    raise typer.Exit(code)


def _family(value: Optional[str]) -> Optional[str]:
    from bias.core.multiple_testing import FAMILIES

    if value is not None and value not in FAMILIES:
        raise BiasError(f"--family must be one of {', '.join(FAMILIES)}, not '{value}'.", "run: all tests of the run; model / metric: each separately.")
    return value


def parse_formats(values: list[str]) -> tuple[str, ...]:
    from bias.core.reports import parse_formats as parse

    return parse(values)


@app.command("validate")
def validate_cmd(path: Path = typer.Argument(..., help="A word-set file or a language-package folder.")) -> None:
    """Check a word-set file or a whole language package; report every problem with file and field."""
    from bias.cli.render import problems
    from bias.core.validate import validate_path

    found, checked = validate_path(path)
    problems(console, found)
    errors = sum(p.severity == "error" for p in found)
    warnings = len(found) - errors
    colour = "red" if errors else "green"
    console.print(f"[{colour}]{checked} file(s) checked: {errors} error(s), {warnings} warning(s).[/{colour}]")
    raise typer.Exit(USAGE if errors else 0)


@app.command("report")
def report_cmd(
    folder: Path = typer.Argument(..., help="A folder written by `bias run --out` (or its results.jsonl)."),
    report_format: list[str] = typer.Option(["all"], "--format", help="all, md, csv, tex, png or svg. Repeatable or comma-separated."),
    family: Optional[str] = typer.Option(None, "--family", help="Multiple-testing family: run, model or metric (default: the run's, else run)."),
) -> None:
    """Regenerate the report of a run from its results.jsonl: table, CSV, Markdown, LaTeX and figures."""
    from bias.cli.render import results_table
    from bias.core.reports import load_report, write_report

    formats = parse_formats(report_format)
    report = load_report(folder, family=_family(family))
    for bad in report.damaged:
        err_console.print(f"[yellow]warning[/yellow] results.jsonl {bad}: skipped.", highlight=False, soft_wrap=True)
    console.print(results_table(report))
    target = folder if folder.is_dir() else folder.parent
    written = write_report(report, target, formats)
    console.print("Written: " + ", ".join(str(p) for p in written), highlight=False, soft_wrap=True)


@app.command("debias")
def debias_cmd(
    model: str = typer.Option(..., "--model", "-m", help="Static model spec NAME:LOCATION, e.g. word2vec:vectors.bin."),
    method: str = typer.Option("hard", "--method", help="hard (Hard-Debias) or inlp."),
    language: Optional[str] = typer.Option(None, "--language", "-l", help="Use the language's lists <language>/debias-gender, e.g. en."),
    lists: Optional[str] = typer.Option(None, "--lists", help="Debiasing lists: a name such as en/debias-gender, or a file."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for vectors.bin (or vectors.txt) and debias.json."),
    fmt: str = typer.Option("word2vec", "--format", help="word2vec (binary, vectors.bin) or text (vectors.txt)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Debias only the N most frequent words (list words always)."),
    components: Optional[int] = typer.Option(None, "--components", help="hard: dimensions of the bias subspace (default 1)."),
    model_option: list[str] = typer.Option([], "--model-option", help="Embedder parameter KEY=VALUE. Repeatable."),
) -> None:
    """Debias a static model once and write the vectors plus debias.json (what was done)."""
    from bias.cli.debias import execute

    code = execute(
        model=model, method=method, language=language, lists=lists, out=out, fmt=fmt, limit=limit,
        components=components, model_options=_parse_options(model_option, "--model-option"), console=console,
    )
    raise typer.Exit(code)


@app.command("compare")
def compare_cmd(
    before: Path = typer.Argument(..., help="The run before (a folder written by `bias run --out`, or its results.jsonl)."),
    after: Path = typer.Argument(..., help="The run after, e.g. on the debiased model."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for compare.md and compare.csv (default: the AFTER folder)."),
    before_model: Optional[str] = typer.Option(None, "--before-model", help="The model to take when the before run holds several."),
    after_model: Optional[str] = typer.Option(None, "--after-model", help="The model to take when the after run holds several."),
) -> None:
    """Compare two runs test by test: effect before, after and the change, with significance marks."""
    from bias.cli.compare import execute

    raise typer.Exit(execute(before, after, out=out, before_model=before_model, after_model=after_model, console=console))


def main() -> None:
    """Entry point of the `bias` script: user errors in two lines, tracebacks only with --debug."""
    import click

    debug = "--debug" in sys.argv
    try:
        code = app(standalone_mode=False)
    except BiasError as exc:
        if debug:
            raise
        err_console.print(f"[bold red]Error:[/bold red] {exc.message}", highlight=False, soft_wrap=True)
        if exc.hint:
            err_console.print(exc.hint, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("Interrupted; results written so far are kept.")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("Interrupted; results written so far are kept.")
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        err_console.print(f"[bold red]Failed:[/bold red] {type(exc).__name__}: {exc}", highlight=False, soft_wrap=True)
        err_console.print("Run again with --debug for the full traceback.")
        sys.exit(FAILURE)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
