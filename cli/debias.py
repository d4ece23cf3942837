"""`bias debias`: the engine writes the debiased vectors and their record
(`bias.engine.debiased_vectors`); this module says what was done and, with --wordset, measures the
original and the debiased vectors.

The vectors are a word2vec file any tool reads (and `bias run --model word2vec:DIR/vectors.bin`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from bias.cli.say import say, warn
from bias.core.errors import BiasError

if TYPE_CHECKING:
    from rich.console import Console


def execute(
    *,
    model: str,
    method: str,
    language: str | None,
    lists: str | None,
    out: Path,
    fmt: str,
    limit: int | None,
    components: int | None,
    model_options: dict[str, str],
    console: Console,
    wordsets: list[str] | None = None,
    metrics: list[str] | None = None,
    params: dict[str, str] | None = None,
) -> int:
    from bias.engine.debiased_vectors import writable, write_debiased
    from bias.engine.inputs import DEBIAS_RECORD

    writable(method)  # a method that makes no vectors is refused first, whatever else is wrong
    if metrics and not wordsets:
        raise BiasError("--metric goes with --wordset (the word sets to measure before and after).")
    written = write_debiased(
        model=model,
        method=method,
        language=language,
        lists=lists,
        out=out,
        fmt=fmt,
        limit=limit,
        components=components,
        model_options=model_options,
        params=params,
    )
    path, record = written.path, written.record
    missing = record["missing"] or {}
    for what, words in missing.items():
        if words:
            shown = ", ".join(" ".join(w) if isinstance(w, list) else w for w in words[:12])
            warn(
                console,
                f"({what}): {shown}{' ...' if len(words) > 12 else ''}",
                label="not in the model",
            )
    say(
        console, f"Debiased {written.vocabulary} words with {method}; record: {out / DEBIAS_RECORD}"
    )
    say(console, f"Use the debiased model with: --model word2vec:{path}")
    if wordsets:
        return measure(
            model,
            f"word2vec:{path}",
            wordsets,
            metrics or [],
            model_options,
            out / "measures",
            console,
        )
    return 0


DEFAULT_METRICS = {
    "association": "weat",
    "similarity-pairs": "word-similarity",
    "analogies": "analogy",
}


def measure(
    original: str,
    debiased: str,
    wordsets: list[str],
    metrics: list[str],
    model_options: dict[str, str],
    out: Path,
    console: Console,
) -> int:
    """`bias debias --wordset`: the word sets on the original and the written vectors in one run
    (results and report in OUT/measures), then the before/after table (bias down by X, similarity
    down by Y)."""
    from bias.cli.run import execute as run
    from bias.engine.experiments import ModelConfig
    from bias.engine.front_door import validate
    from bias.engine.model_options import with_shared
    from bias.engine.run_spec import MetricEntry, RunSpec
    from bias.registry.resolve import load_wordset

    if not metrics:
        kinds = [getattr(getattr(load_wordset(w), "meta", None), "kind", None) for w in wordsets]
        unknown = [w for w, k in zip(wordsets, kinds) if k not in DEFAULT_METRICS]
        if unknown:
            raise BiasError(
                f"No default metric for the word set {unknown[0]}.",
                "Name the metrics with --metric.",
            )
        metrics = list(dict.fromkeys(DEFAULT_METRICS[k] for k in kinds))  # type: ignore[index]
    spec = RunSpec(
        models=[with_shared(ModelConfig(m), model_options) for m in (original, debiased)],
        wordsets=wordsets,
        metrics=[MetricEntry(m) for m in metrics],
        shared_model_options=model_options,
        out=out,
        before_after=True,
        where={"models": "--model", "wordsets": "--wordset", "metrics": "--metric", "out": "--out"},
    )
    return run(validate(spec), console=console, debug=False)


def debias_cmd(
    model: str = typer.Option(
        ..., "--model", "-m", help="Static model spec NAME:LOCATION, e.g. word2vec:vectors.bin."
    ),
    method: str = typer.Option(
        "hard",
        "--method",
        help="A debiaser that writes static vectors (see `bias list debiasers`).",
    ),
    language: Optional[str] = typer.Option(
        None, "--language", "-l", help="Use the language's lists <language>/debias-gender, e.g. en."
    ),
    lists: Optional[str] = typer.Option(
        None, "--lists", help="Debiasing lists: a name such as en/debias-gender, or a file."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Folder for vectors.bin (or vectors.txt) and debias.json."
    ),
    fmt: str = typer.Option(
        "word2vec", "--format", help="word2vec (binary, vectors.bin) or text (vectors.txt)."
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", help="Debias only the N most frequent words (list words always)."
    ),
    components: Optional[int] = typer.Option(
        None,
        "--components",
        help="Dimensions of the bias subspace, for a method with that parameter (hard).",
    ),
    param: list[str] = typer.Option(
        [],
        "--param",
        help="Any parameter of the method KEY=VALUE (see `bias info METHOD`). Repeatable.",
    ),
    model_option: list[str] = typer.Option(
        [], "--model-option", help="Embedder parameter KEY=VALUE. Repeatable."
    ),
    wordset: list[str] = typer.Option(
        [],
        "--wordset",
        "-w",
        help="Measure the original and the debiased vectors on this word set (a bias test, "
        "word-similarity pairs, analogies) and print a before/after table. Repeatable.",
    ),
    metric: list[str] = typer.Option(
        [],
        "--metric",
        help="With --wordset: metrics to run (default: weat, word-similarity or analogy, by the "
        "word set's kind). Repeatable.",
    ),
) -> None:
    """Debias a static model once and write the vectors plus debias.json (what was done)."""
    from bias.cli.consoles import stdout
    from bias.engine.option_values import pairs

    raise typer.Exit(
        execute(
            model=model,
            method=method,
            language=language,
            lists=lists,
            out=out,
            fmt=fmt,
            limit=limit,
            components=components,
            model_options=pairs(model_option, "--model-option"),
            console=stdout(),
            wordsets=wordset,
            metrics=metric,
            params=pairs(param, "--param"),
        )
    )
