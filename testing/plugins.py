"""Contract checks for plugins, in the spirit of scikit-learn's `check_estimator`: run on a class,
they exercise what the framework relies on, so a third party's metric, embedder, debiaser or format
importer finds out in its own tests what `bias run` would otherwise find out half-way through a
batch.

    from bias.testing import check_metric, parametrize_with_checks

    def test_my_metric(word2vec_model, my_test):
        check_metric(MyMetric, embedder=word2vec_model, data=my_test)

    @parametrize_with_checks([MyMetric, MyEmbedder])      # one test per named check
    def test_contract(check):
        check()

Without what a plugin runs on, the checks exercise the class alone: its declarations (name, summary,
needs, data kind, how reports label its number, what a debiaser produces, the files an importer
reads), its parameters (documented, no mutable default, read by its code, round-tripping through the
command line's text, a bad value refused with a BiasError). With it (run mode) they run the plugin.
Each check is a named function (`checks_of(cls)` lists them) that raises AssertionError naming the
plugin and what to fix; `check_*` run them all and return how many things were checked.
A check a plugin is known to fail is named in `expected_failed_checks={name: why}`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from bias.core.data.kinds import known_kinds
from bias.core.errors import BiasError
from bias.core.data.importers import WordSetFormat
from bias.core.interfaces import ON_THE_FLY, STATIC_VECTORS, Capability, Debiaser, Embedder, Metric
from bias.core.params import describe_params
from bias.testing.contract import (
    Bare,
    Check,
    accepted_bad_values,
    calling,
    check_capabilities,
    check_name_and_summary,
    check_no_mutable_defaults,
    check_parameters_documented,
    check_parameters_round_trip,
    check_parameters_used,
    run_checks,
    say,
)
from bias.testing.metric_checks import metric_checks

# --- embedders ------------------------------------------------------------------------------------


def _embedder_params(cls: type, e: Any) -> dict[str, Any]:
    names = {i.name for i in describe_params(cls)}
    return {k: v for k, v in attrs.asdict(e, recurse=False).items() if k in names}


def check_embedder_declarations(cls: type) -> int:
    return check_name_and_summary(cls, Embedder) + check_capabilities(cls, "capabilities")


def check_embedder_parameters(cls: type) -> int:
    build = lambda p: cls(**{"location": "model-file", **p})  # noqa: E731
    checks = check_parameters_documented(cls, required=("location",)) + check_no_mutable_defaults(
        cls
    )
    checks += check_parameters_used(cls, Embedder, exempt=("location",))  # the base's spec reads it
    checks += check_parameters_round_trip(cls, build, lambda e: _embedder_params(cls, e))
    accepted_bad_values(cls, build)
    return checks + 1


def check_embedder_loads(
    cls: type, *, location: str, params: Mapping[str, Any] | None = None, **_: Any
) -> int:
    embedder = cls(location=location, **dict(params or {}))
    calling(cls, "check()", embedder.check)
    calling(cls, "load()", embedder.load)
    available = embedder.available()
    assert available <= embedder.capabilities, say(
        cls, f"available() offers more than declared: {sorted(available - embedder.capabilities)}"
    )
    assert embedder.fingerprint() == embedder.fingerprint(), say(cls, "fingerprint() is not stable")
    return 3


def check_embedder_vectors(
    cls: type,
    *,
    location: str,
    params: Mapping[str, Any] | None = None,
    words: tuple[str, ...] = ("the",),
    texts: tuple[str, ...] = ("A text.",),
    **_: Any,
) -> int:
    """Word vectors one row per word found, an unknown word lost (never raised); encodings one row
    per text; a vocabulary that all_vectors agrees with."""
    embedder = cls(location=location, **dict(params or {}))
    embedder.load()
    available, checks = embedder.available(), 0
    if Capability.WORD_VECTORS in available:
        unknown = "zzq-no-such-word-qzz"
        found = calling(cls, "word_vectors()", lambda: embedder.word_vectors([*words, unknown]))
        assert len(found.words) == found.vectors.shape[0] and found.vectors.ndim == 2, say(
            cls, "word_vectors(): one row per word found"
        )
        assert unknown in found.lost or unknown in found.words, say(
            cls, "an unknown word is neither found nor lost"
        )
        assert np.isfinite(found.vectors).all(), say(
            cls, "word_vectors() gives a vector that is not finite"
        )
        checks += 3
    if Capability.CONTEXTUAL in available:
        encoded = np.asarray(calling(cls, "encode()", lambda: embedder.encode(list(texts))))
        assert encoded.ndim == 2 and encoded.shape[0] == len(texts), say(
            cls, f"encode(): one row per text, not shape {encoded.shape}"
        )
        checks += 1
    if Capability.VOCABULARY in available:
        vocabulary = embedder.vocabulary(limit=5)
        every = embedder.all_vectors(limit=5)
        assert list(every.words) == list(vocabulary), say(
            cls, "all_vectors() and vocabulary() disagree on the words"
        )
        checks += 1
    return checks


def embedder_checks(cls: type) -> list[Check]:
    return [
        Check("check_embedder_declarations", cls, check_embedder_declarations),
        Check("check_embedder_parameters", cls, check_embedder_parameters),
        Check("check_embedder_loads", cls, check_embedder_loads, run=True),
        Check("check_embedder_vectors", cls, check_embedder_vectors, run=True),
    ]


# --- debiasers ------------------------------------------------------------------------------------


def check_debiaser_declarations(cls: type) -> int:
    checks = check_name_and_summary(cls, Debiaser) + check_capabilities(cls, "requires")
    produces = getattr(cls, "produces", frozenset())
    assert (
        isinstance(produces, frozenset) and produces and produces <= {STATIC_VECTORS, ON_THE_FLY}
    ), say(cls, f"produces must name {STATIC_VECTORS} and/or {ON_THE_FLY}, not {produces!r}")
    supported = cls.supports(Bare(location="-")) if cls.requires else None
    assert supported is None or (isinstance(supported, str) and supported), say(
        cls, "supports() must give None or a reason"
    )
    return checks + 2


def check_debiaser_parameters(cls: type) -> int:
    build = lambda p: cls(**p)  # noqa: E731
    checks = (
        check_parameters_documented(cls)
        + check_no_mutable_defaults(cls)
        + check_parameters_used(cls, Debiaser)
    )
    checks += check_parameters_round_trip(cls, build, lambda d: d.params())
    accepted_bad_values(cls, build)
    return checks + 1


def check_debiaser_fits(cls: type, *, embedder: Embedder, lists: Any, **_: Any) -> int:
    """fit() returns the debiaser, transform() an Embedder; the same fit twice gives the same
    vectors; the lists are left as they were."""
    reason = cls.supports(embedder)
    assert reason is None, say(cls, f"does not support the model given: {reason}")
    embedder.load()
    before = copy.deepcopy(lists)
    vectors = []
    for _ in range(2):
        debiaser = cls()
        fitted = calling(cls, "fit()", lambda d=debiaser: d.fit(embedder, lists))
        assert fitted is debiaser, say(cls, "fit() must return the debiaser itself")
        debiased = calling(cls, "transform()", lambda d=debiaser: d.transform(embedder))
        assert isinstance(debiased, Embedder), say(cls, "transform() must return an Embedder")
        if STATIC_VECTORS in cls.produces and Capability.VOCABULARY in debiased.capabilities:
            found = debiased.all_vectors()
            assert len(found.words) == found.vectors.shape[0], say(
                cls, "all_vectors(): one row per word"
            )
            vectors.append(np.asarray(found.vectors, dtype=np.float64))
    if vectors:
        assert np.array_equal(vectors[0], vectors[1]), say(
            cls, "two fits on the same model and lists give different vectors"
        )
    assert lists == before, say(cls, "fit() changed the lists it was given: work on a copy")
    return 4


def debiaser_checks(cls: type) -> list[Check]:
    return [
        Check("check_debiaser_declarations", cls, check_debiaser_declarations),
        Check("check_debiaser_parameters", cls, check_debiaser_parameters),
        Check("check_debiaser_fits", cls, check_debiaser_fits, run=True),
    ]


# --- format importers -----------------------------------------------------------------------------


def check_format_declarations(cls: type) -> int:
    checks = check_name_and_summary(cls, WordSetFormat)
    suffixes = getattr(cls, "suffixes", None)
    assert (
        isinstance(suffixes, tuple)
        and suffixes
        and all(isinstance(s, str) and s.startswith(".") and s == s.lower() for s in suffixes)
    ), say(
        cls, f"suffixes must be a tuple of lower-case file endings such as '.txt', not {suffixes!r}"
    )
    assert cls.kind in known_kinds(), say(
        cls, f"kind {cls.kind!r} is not an installed kind of word set"
    )
    assert isinstance(cls.folders, tuple) and all(isinstance(f, str) for f in cls.folders), say(
        cls, "folders must be a tuple of text"
    )
    return checks + 3


def check_format_reads(cls: type, *, path: Path, broken: Path | None = None, **_: Any) -> int:
    """A file of the format becomes a house-format record of the declared kind, loads and validates
    without a problem; a file that is not of the format is refused with a BiasError naming it."""
    importer = cls()
    assert importer.sniff(path), say(cls, f"sniff() does not recognise {path.name}")
    record = calling(cls, "record()", lambda: importer.record(path))
    assert isinstance(record, dict) and record.get("kind") == cls.kind, say(
        cls, f"record() must give a dict of kind {cls.kind!r}"
    )
    loaded = calling(cls, "load()", lambda: importer.load(path))
    assert getattr(loaded, "meta", None) is not None and loaded.meta.kind == cls.kind, say(
        cls, "load() gives no word set of its kind"
    )
    problems = calling(cls, "validate()", lambda: importer.validate(path))
    errors = [p for p in problems if getattr(p, "severity", "error") == "error"]
    assert not errors, say(cls, f"validate() finds errors in a good file: {errors[:2]}")
    if broken is not None:
        try:
            importer.record(broken)
        except BiasError as exc:
            assert broken.name in exc.message, say(
                cls, f"the refusal of a broken file does not name it: {exc.message}"
            )
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(
                say(
                    cls,
                    f"a broken file raised {type(exc).__name__}: {exc} "
                    "instead of a BiasError naming it",
                )
            ) from exc
        else:
            raise AssertionError(
                say(cls, f"record() accepts {broken.name}, which is not of its format")
            )
    return 5


def format_checks(cls: type) -> list[Check]:
    return [
        Check("check_format_declarations", cls, check_format_declarations),
        Check("check_format_reads", cls, check_format_reads, run=True),
    ]


# --- the entry points -----------------------------------------------------------------------------


def checks_of(cls: type) -> list[Check]:
    """Every named check of a plugin class, whatever its kind."""
    for base, make in (
        (Metric, metric_checks),
        (Embedder, embedder_checks),
        (Debiaser, debiaser_checks),
        (WordSetFormat, format_checks),
    ):
        if isinstance(cls, type) and issubclass(cls, base):
            return make(cls)
    raise AssertionError(say(cls, "is not a Metric, Embedder, Debiaser or WordSetFormat class"))


def check_metric(
    cls: type,
    *,
    embedder: Embedder | None = None,
    data: Any = None,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    expected_failed_checks: Mapping[str, str] | None = None,
) -> int:
    """The contract of a Metric class; with `embedder` and `data` (and the `inputs` its
    `inputs(data)` asks for, resolved), also runs of it, built with `params` (the defaults where
    none are given: parameters that suit a tiny model, say)."""
    run = embedder is not None and data is not None
    context = (
        {"embedder": embedder, "data": data, "inputs": inputs, "seed": seed, "params": params}
        if run
        else {}
    )
    return run_checks(metric_checks(cls), context, expected_failed_checks)


def check_embedder(
    cls: type,
    *,
    location: str | None = None,
    params: Mapping[str, Any] | None = None,
    words: tuple[str, ...] = ("the",),
    texts: tuple[str, ...] = ("A text.",),
    expected_failed_checks: Mapping[str, str] | None = None,
) -> int:
    """The contract of an Embedder class; with `location` (a model it can load, opened with
    `params`), also a use of it."""
    context = (
        {"location": location, "params": params, "words": words, "texts": texts}
        if location is not None
        else {}
    )
    return run_checks(embedder_checks(cls), context, expected_failed_checks)


def check_debiaser(
    cls: type,
    *,
    embedder: Embedder | None = None,
    lists: Any = None,
    expected_failed_checks: Mapping[str, str] | None = None,
) -> int:
    """The contract of a Debiaser class; with an `embedder` it supports and debiasing `lists`,
    also fits."""
    context = (
        {"embedder": embedder, "lists": lists} if embedder is not None and lists is not None else {}
    )
    return run_checks(debiaser_checks(cls), context, expected_failed_checks)


def check_format(
    cls: type,
    *,
    path: Path | str | None = None,
    broken: Path | str | None = None,
    expected_failed_checks: Mapping[str, str] | None = None,
) -> int:
    """The contract of a WordSetFormat class; with `path` (a file of the format) and optionally
    `broken` (a file with its suffix that is not of the format), also reads of them."""
    context = (
        {"path": Path(path), "broken": Path(broken) if broken else None} if path is not None else {}
    )
    return run_checks(format_checks(cls), context, expected_failed_checks)


def parametrize_with_checks(plugins: Iterable[type], *, run: bool = False) -> Any:
    """A pytest decorator: one test per (plugin, check), named `<plugin>-<check>` and selectable
    with -k. With `run`, only the run checks, which the test calls with what the plugin runs on
    (`check(embedder=..., data=...)`); else the class checks, called as `check()`."""
    import pytest

    checks = [c for cls in plugins for c in checks_of(cls) if c.run == run]
    return pytest.mark.parametrize("check", checks, ids=[c.id for c in checks])
