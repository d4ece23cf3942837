"""Experiments and their keys: the cross product a run expands into (`bias.engine.run_spec`).

An experiment is (model spec + options, word set, metric + parameters, seed). Its key is a hash of
the canonical JSON of all of these with the metric's defaults filled in, so the same experiment
always gets the same key, whichever way it was written. Execution-only model options (batch size,
device, cache location) are left out of the key: they do not change the result."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.specs import DebiasSettings, ModelSpec, parse_spec, split_debias, split_options
from bias.engine.absolute_paths import absolute_debias, absolute_spec

DEFAULT_SEED = 0


@attrs.frozen
class ModelConfig:
    """A model of a run as configured. However it was written (options in the spec's brackets, in a
    models table, on the command line), it is sorted here, once, into the spec without brackets, the
    embedder's own options and the debiasing settings. `parsed` (the spec parsed) and
    `parsed_debias` are what is passed down to build the embedder, their paths made absolute on this
    machine (`bias.engine.absolute_paths`) so that a worker running in another folder reads the same
    files."""

    spec: str
    options: dict[str, Any] = attrs.Factory(dict)
    # Where a model runs, not what it computes: Ray actor resources (cpus, gpus), never in the key.
    resources: dict[str, Any] = attrs.field(factory=dict, eq=False)
    # a short name for tables and figures; not part of the key
    name: str = attrs.field(default="", eq=False)
    debias: DebiasSettings | None = None
    # The file the model was read from ("" on the command line): what that file may not decide alone
    # is checked against the command line's confirmations (bias.engine.guards). Not part of the key.
    origin: str = attrs.field(default="", eq=False)
    # The options of a file's model that the command line gave (--model-option and the like): the
    # user's own, not the file's, where that matters (a price a file gives can only raise a cost
    # estimate; one the command line gives is the user's word). Not part of the key.
    command_line: frozenset[str] = attrs.field(factory=frozenset, eq=False, converter=frozenset)
    parsed: ModelSpec = attrs.field(init=False, eq=False, repr=False)
    parsed_debias: DebiasSettings | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        bare, in_brackets = split_options(self.spec)
        for key in sorted(set(in_brackets) & set(self.options)):
            if str(in_brackets[key]) != str(self.options[key]):
                where = f"{self.origin}: " if self.origin else ""
                raise BiasError(
                    f"{where}{key} is given twice with different values: {in_brackets[key]!r} in "
                    f"the spec {self.spec} and {self.options[key]!r} in its options.",
                    "Give it once.",
                )
        own, debias = split_debias({**in_brackets, **self.options})
        if debias is not None and self.debias is not None and debias != self.debias:
            raise BiasError(
                f"{self.spec}: debiasing is given twice with different settings.", "Give it once."
            )
        object.__setattr__(self, "spec", bare.strip() if in_brackets else self.spec)
        object.__setattr__(self, "options", own)
        object.__setattr__(self, "debias", self.debias or debias)
        parsed = parse_spec(self.spec)
        object.__setattr__(
            self, "parsed", absolute_spec(ModelSpec(parsed.embedder, parsed.location, own))
        )
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


# Options that change how a result is computed but not its value: where the model runs, how many
# texts go into one forward pass, where encodings are cached. They stay out of the experiment key,
# so a run resumed with a smaller --batch-size, or moved from CPU to GPU, keeps what was done.
# (dtype is kept: half precision changes the numbers.) For embedding services: how many requests are
# in flight, how often and how long they are retried, the price used for the estimate and the key's
# variable.
EXECUTION_OPTIONS = frozenset(
    {
        "batch_size",
        "device",
        "cache",
        "cache_dir",
        "concurrency",
        "retries",
        "backoff",
        "timeout",
        "price",
        "key_env",
    }
)


@attrs.frozen
class Experiment:
    model: ModelConfig
    wordset: str
    metric: str
    params: dict[str, Any] = attrs.Factory(dict)
    seed: int | None = DEFAULT_SEED
    # the run's preset (engine/presets.py), recorded in the result's convention
    preset: str | None = None
    # --limit: only the first N items of each list of the test (a smoke run); part of the key when
    # set, so a limited run is never taken for a finished full one on --resume.
    limit: int | None = None
    # the parameters the preset gave that the run did not set itself: not part of the key (the same
    # values are), told apart from the user's so that a run warns only of what the user set
    from_preset: tuple[str, ...] = attrs.field(default=(), eq=False)
    # the key, hashed at its first use: a grid asks each experiment's key many times
    _key: str | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def canonical(self) -> dict[str, Any]:
        canonical = {
            "model": self.model.spec,
            "model_options": {
                k: v for k, v in self.model.written_options().items() if k not in EXECUTION_OPTIONS
            },
            "wordset": self.wordset,
            "metric": self.metric,
            "params": self.params,
            "seed": self.seed,
            **({"preset": self.preset} if self.preset else {}),
        }
        return canonical if self.limit is None else {**canonical, "limit": self.limit}

    @property
    def key(self) -> str:
        if self._key is None:
            text = json.dumps(
                self.canonical(),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
                default=str,
            )
            object.__setattr__(self, "_key", hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])
        return self._key

    @property
    def legacy_key(self) -> str:
        """The key as written by versions that kept execution options in it, so that a run started
        before can still be resumed: its results are found under either key."""
        canonical = {**self.canonical(), "model_options": self.model.written_options()}
        text = json.dumps(
            canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def expand(
    models: Sequence[ModelConfig],
    wordsets: Sequence[str],
    metrics: Sequence[tuple[str, dict[str, Any]]],
    seeds: Sequence[int | None] = (DEFAULT_SEED,),
    grid: dict[str, Sequence[Any]] | None = None,
    from_preset: Sequence[tuple[str, ...]] = (),
) -> list[Experiment]:
    """Every combination, models outermost so each model is loaded once; `from_preset`, for each
    metric in turn, the parameters its preset gave (see `Experiment.from_preset`)."""
    grid = grid or {}
    keys = sorted(grid)
    combos = [
        dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))
    ] or [{}]
    out = []
    preset_of = dict(enumerate(from_preset))
    for model, wordset, (k, (metric, params)), seed, combo in itertools.product(
        models, wordsets, enumerate(metrics), seeds, combos
    ):
        given = preset_of.get(k, ())
        out.append(Experiment(model, wordset, metric, {**params, **combo}, seed, from_preset=given))
    return out


def refuse_conflicts(
    first: dict[str, Any], second: dict[str, Any], where_first: str, where_second: str
) -> None:
    """One option given two values in two places is refused, naming both; the same value is fine."""
    for key in sorted(set(first) & set(second)):
        a, b = first[key], second[key]
        one = b[0] if isinstance(b, list) and len(b) == 1 else b
        same = a == one or str(a).lower() == str(one).lower()
        if not same:
            raise BiasError(
                f"{key} is given twice with different values: {a!r} in {where_first} and "
                f"{b!r} in {where_second}.",
                "Give it once (in an experiment file, [grid] tries every value listed and "
                "[params] sets one).",
            )


def unique(experiments: Iterable[Experiment]) -> list[Experiment]:
    seen: dict[str, Experiment] = {}
    for e in experiments:
        seen.setdefault(e.key, e)
    return list(seen.values())
