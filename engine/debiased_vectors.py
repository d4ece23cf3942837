"""Debiasing a static model once: the vectors written in a format any tool reads, and `debias.json`
beside them recording the method and its parameters, the source model, the lists, the bias direction
and its explained variance, the words neutralised and equalised, the list words the model lacks,
timings and library versions, so the file can be traced back to how it was made.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import attrs

from bias.core.models.debiasing import DebiasedEmbedder, write_vectors
from bias.core.errors import BiasError
from bias.core.interfaces import STATIC_VECTORS, Capability, Debiaser
from bias.core.runs.folder import open_in_run
from bias.engine.inputs import DEBIAS_RECORD


@attrs.frozen
class DebiasedVectors:
    """The written vectors and the record written beside them."""

    path: Path
    record: dict[str, Any]
    vocabulary: Any  # the number of words debiased, or "?" when the method does not say


def writable(method: str) -> type[Debiaser]:
    """The debiaser registered as `method`, refused before any work unless it declares that it
    produces static vectors (`Debiaser.produces`)."""
    from bias.registry import entry_points as eps

    cls = eps.load("debiasers", method)
    if STATIC_VECTORS not in cls.produces:
        raise BiasError(
            f"{method} debiases a model on the fly (its encodings change as they are "
            "made); there are no vectors to write.",
            f"Use it on the fly: bias run --model SPEC --debias {method}.",
        )
    return cls


def write_debiased(
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
    params: dict[str, Any] | None = None,
) -> DebiasedVectors:
    """Fit `method` on the lists (of `language`, or named by `lists`), write the vectors into `out`
    and the record beside them; refuses a method that makes no static vectors before any work.
    `limit` and `components` (the options of `bias debias`) and `params` (--param) set the
    debiaser's declared parameters of those names."""
    from bias.engine.runner import versions
    from bias.registry.resolve import (
        build_debiaser,
        build_embedder,
        debias_lists_for,
        load_wordset,
    )

    cls = writable(method)
    if (language is None) == (lists is None):
        raise BiasError(
            "Give the debiasing lists with either --language (e.g. en) or --lists (a name "
            "or a file)."
        )
    if fmt not in ("word2vec", "text"):
        raise BiasError(f"--format must be word2vec or text, not '{fmt}'.")
    if out.exists() and not out.is_dir():
        raise BiasError(f"--out {out} is a file; give a folder for vectors and debias.json.")
    declared = {f.name for f in attrs.fields(cls) if f.init} if attrs.has(cls) else set()
    given = dict(params or {})
    for flag, key, value in (
        ("--limit", "limit", limit),
        ("--components", "components", components),
    ):
        if value is None:
            continue
        if key not in declared:
            raise BiasError(
                f"{flag} is not a parameter of {method}.",
                f"See `bias info {method}` for its parameters.",
            )
        given[key] = value
    embedder = build_embedder(model, **model_options)
    debiaser = build_debiaser(method, embedder, **given)
    word_lists = load_wordset(lists) if lists else debias_lists_for(str(language))
    kind = getattr(getattr(word_lists, "meta", None), "kind", None)
    if kind != "debias-lists":
        raise BiasError(
            f"'{lists}' is a word set of kind {kind}, not debiasing lists.",
            "Give lists of kind debias-lists, e.g. en/debias-gender.",
        )

    timings: dict[str, float] = {}
    started = time.perf_counter()
    embedder.load()
    timings["load_s"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    debiaser.fit(embedder, word_lists)
    timings["fit_s"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    fitted = debiaser.transform(embedder)
    timings["transform_s"] = round(time.perf_counter() - started, 4)
    if Capability.VOCABULARY not in fitted.capabilities or (
        isinstance(fitted, DebiasedEmbedder) and not fitted.static
    ):
        raise BiasError(
            f"'{method}' debiased {model} on the fly; there are no vectors to write.",
            "Use bias run --debias for this model.",
        )
    started = time.perf_counter()
    path = write_vectors(fitted, out, fmt)
    timings["write_s"] = round(time.perf_counter() - started, 4)

    # What the fit recorded (the core's DebiasedEmbedder keeps it); a debiaser of its own making
    # records its parameters.
    info = (
        dict(fitted.info)
        if isinstance(fitted, DebiasedEmbedder)
        else {"parameters": debiaser.params()}
    )
    record = {
        "format": "bias-debias/1",
        "method": method,
        "parameters": info.pop("parameters", debiaser.params()),
        "source_model": model,
        "model_options": model_options,
        "vectors": path.name,
        "vectors_format": fmt,
        "lists": {
            "name": word_lists.name,
            "file": word_lists.meta.path,
            "language": word_lists.meta.language,
        },
        "bias_direction": {
            "components": info.pop("components", None),
            "explained_variance": info.pop("explained_variance", None),
        },
        "neutralised": info.pop("neutralised", None),
        "equalised": info.pop("equalised", None),
        "missing": info.pop("missing", None),
        "timings": {**info.pop("timings", {}), **timings},
        "details": {k: v for k, v in info.items() if k not in ("method", "lists")},
        "versions": versions(fitted),
    }
    with open_in_run(out, DEBIAS_RECORD) as fh:
        fh.write(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n")
    return DebiasedVectors(path=path, record=record, vocabulary=info.get("vocabulary", "?"))
