"""Multiple-testing correction over the tests of a run: Holm-Bonferroni and Benjamini-Hochberg.

A batch of WEAT/SEAT tests answers many questions at once; at 5% per test, one in twenty null tests
comes out "significant". The adjusted p-values are computed at report time from the results file
(which is never rewritten) and shown beside the raw ones.

- Holm (1979), step-down, controls the family-wise error rate under any dependence:
  with p sorted ascending, p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
- Benjamini & Hochberg (1995), step-up, controls the false discovery rate (independent or positively
  dependent tests): p~_(i) = min_{j >= i} min(1, m / j * p_(j)).

The family is the set of tests corrected together: the whole run (default), or each model, or each
metric separately. Results without a p-value (refused, failed, metrics that give none) are not in
any family.

Seeds are not hypotheses: a run with several seeds repeats each test (model, word set, metric,
settings) once per seed, and the repeats answer the same question. Each hypothesis is counted once
in its family, with the largest of its seeds' p-values (a valid p-value whatever the dependence
between the repeats); every seed's result shows its hypothesis's adjusted p, and `spread_over_seeds`
gives the spread of the effect size and p over the seeds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.statistics import FAMILIES


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, in the order given."""
    p = _checked(p_values)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty(m)
    out[order] = adjusted
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values of the step-up procedure), in the order
    given."""
    p = _checked(p_values)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = m / np.arange(1, m + 1) * p[order]
    adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    return out


def _checked(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    if p.size and (not np.isfinite(p).all() or (p < 0).any() or (p > 1).any()):
        raise ValueError("p-values must be finite numbers between 0 and 1")
    return p


@attrs.frozen
class Adjusted:
    """The corrected p-values of one result and the family they were corrected in."""

    holm: float
    bh: float
    family: str  # e.g. "run", "model=word2vec:x.bin", "metric=weat"
    size: int  # number of hypotheses in the family (a test run with several seeds counts once)
    seeds: int = 1  # results (seeds) of this result's hypothesis combined into its one p-value


def family_of(result: Any, family: str) -> str:
    if family == "run":
        return "run"
    if family == "model":
        return f"model={result.model}"
    if family == "metric":
        return f"metric={result.metric}"
    raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")


def hypothesis_of(result: Any) -> str:
    """What a result tests, whatever its seed: model, word set, metric and settings."""
    params = json.dumps(getattr(result, "params", {}) or {}, sort_keys=True, default=str)
    return "\x1f".join((str(result.model), str(result.wordset), str(result.metric), params))


def adjust(results: Sequence[Any], family: str = "run") -> dict[str, Adjusted]:
    """Adjusted p-values by result key, for every result with status ok and a p-value.

    `results` should hold one result per key (the report keeps the latest line of each key). Results
    that differ only in their seed are one hypothesis, counted once with their largest p-value.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")
    groups: dict[str, dict[str, list[Any]]] = {}
    for r in results:
        if r.status == "ok" and r.p_value is not None:
            groups.setdefault(family_of(r, family), {}).setdefault(hypothesis_of(r), []).append(r)
    out: dict[str, Adjusted] = {}
    for name, hypotheses in groups.items():
        members = list(hypotheses.values())
        p = [max(float(r.p_value) for r in repeats) for repeats in members]
        for repeats, h, b in zip(members, holm(p), benjamini_hochberg(p)):
            for r in repeats:
                out[r.key] = Adjusted(float(h), float(b), name, len(members), len(repeats))
    return out


@attrs.frozen
class SeedSpread:
    """How much one hypothesis's results move over the seeds it was run with."""

    model: str
    wordset: str
    metric: str
    seeds: tuple[Any, ...]
    effect_min: float | None
    effect_max: float | None
    p_min: float | None
    p_max: float | None


def spread_over_seeds(results: Sequence[Any]) -> list[SeedSpread]:
    """One entry per hypothesis with results (status ok) for two or more seeds, in first-seen
    order."""
    groups: dict[str, list[Any]] = {}
    for r in results:
        if r.status == "ok":
            groups.setdefault(hypothesis_of(r), []).append(r)
    out = []
    for repeats in groups.values():
        if len(repeats) < 2:
            continue
        effects = [float(r.effect_size) for r in repeats if r.effect_size is not None]
        ps = [float(r.p_value) for r in repeats if r.p_value is not None]
        first = repeats[0]
        out.append(
            SeedSpread(
                first.model,
                first.wordset,
                first.metric,
                tuple(r.seed for r in repeats),
                min(effects) if effects else None,
                max(effects) if effects else None,
                min(ps) if ps else None,
                max(ps) if ps else None,
            )
        )
    return out
