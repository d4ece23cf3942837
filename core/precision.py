"""Reduced precision as a recorded convention: no reported verdict depends on it.

bfloat16, float16 and TF32 matrix units make a language model several times faster on a GPU, and
move its log-probabilities by up to a few hundredths of a nat per token. A metric's verdicts (which
sentence of a pair the model prefers, which answer it chooses) are comparisons of such scores; where
two scores lie closer than the reduced precision's error, the comparison could come out the other
way than in float32. `settle` finds those items and scores them again with the same model in float32
(`Embedder.reduced_precision`), so every verdict is float32's; the result says how many were
rescored.

The error bound is measured, not assumed: a calibration sample of items (spread evenly over the
run, at least 8, about a tenth, at most 32) is scored both ways, and each score's deviation is put
on one scale by its size (sqrt(tokens) for a sum of token log-probabilities, 1 / sqrt(tokens) for a
mean: the growth of independent rounding errors). The bound of a score is SAFETY (3) times the
largest scaled deviation seen, times its own size. An item is close when its preferred choice's
interval overlaps another choice's. Every rescored item is a further check: were any of its scores
off by more than its bound, the bound is raised to what was seen and the remaining items are
checked again, until no rescored item contradicts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

SAFETY = 3.0
REDUCED = ("bfloat16", "float16", "tf32")


def calibration_items(count: int) -> np.ndarray:
    """Indices of the calibration sample: evenly spread, about a tenth of the items (8 to 32)."""
    size = min(count, max(8, min(32, math.ceil(count / 10))))
    return (
        np.unique(np.linspace(0, count - 1, size).round().astype(np.int64))
        if count
        else np.zeros(0, np.int64)
    )


def scales(tokens: np.ndarray, summed: bool) -> np.ndarray:
    """The size of each score's rounding error, up to a common factor: sqrt(n) for a sum over n
    token log-probabilities, 1 / sqrt(n) for their mean."""
    n = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)
    return np.sqrt(n) if summed else 1.0 / np.sqrt(n)


def close_items(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Items whose highest score's interval (value +- bound) overlaps another choice's."""
    top = np.argmax(values, axis=1)
    rows = np.arange(len(values))
    low = values[rows, top] - bounds[rows, top]
    high = values + bounds
    high[rows, top] = -np.inf
    return np.flatnonzero((high >= low[:, None]).any(axis=1))


@attrs.frozen
class Settled:
    """Scores whose verdicts are float32's, and what was done to make them so."""

    values: np.ndarray
    rescored: np.ndarray  # indices of the items whose scores are float32's
    convention: dict


def settle(
    values: np.ndarray,
    sizes: np.ndarray,
    rescore: Callable[[np.ndarray], np.ndarray],
    precision: str,
) -> Settled:
    """`values` (items x choices) computed in `precision`, `sizes` their error scales (`scales`),
    `rescore(indices)` the same items' values in float32. Returns the values with every close item,
    and the calibration sample, replaced by float32's."""
    values = np.array(values, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    count = len(values)
    if precision not in REDUCED or count == 0:
        return Settled(values, np.zeros(0, dtype=np.int64), {})
    done = np.zeros(count, dtype=bool)

    def redo(indices: np.ndarray) -> float:
        """Score `indices` in float32; the largest scaled deviation they show."""
        exact = np.asarray(rescore(indices), dtype=np.float64)
        deviation = float(np.max(np.abs(exact - values[indices]) / sizes[indices], initial=0.0))
        values[indices] = exact
        done[indices] = True
        return deviation

    calibration = calibration_items(count)
    scale = redo(calibration)
    while True:
        close = close_items(values, SAFETY * scale * sizes)
        todo = close[~done[close]]
        if not len(todo):
            break
        # the bound follows the largest deviation seen so far: a rescored item that was further off
        # than its bound widens it, and the items not rescored yet are looked at again
        scale = max(scale, redo(todo))
    rescored = np.flatnonzero(done)
    convention = {
        "precision": precision,
        "rescored_in_float32": int(len(rescored)),
        "rescored_close": int(len(rescored) - len(calibration)),
        "calibration_items": int(len(calibration)),
        "verdict_bound": (
            f"{SAFETY:g} x the largest deviation per unit of error scale (sqrt(tokens) for "
            "sums, 1/sqrt(tokens) "
            "for means) of the items scored both ways; items whose preferred choice lies "
            "within it of another "
            "are rescored in float32, so every verdict is float32's"
        ),
        "deviation_per_scale": scale,
    }
    return Settled(values, rescored, convention)


def settle_choices(
    embedder: Any, requests: Sequence[Any], scored: list[Any], summed: bool
) -> tuple[list[Any], dict]:
    """Multiple-choice scores (`Embedder.choice_log_probs`) whose chosen answers are float32's: the
    answer decided by the highest sum (`summed`) or mean of its token log-probabilities; the close
    questions' scores replaced by the float32 twin's. Returns them and the convention to record."""
    reduced = embedder.reduced_precision()
    if reduced is None or not scored:
        return scored, {}
    precision, twin = reduced
    scored = list(scored)
    width = max(len(s.log_probs) for s in scored)
    values = np.full((len(scored), width), -np.inf)
    tokens = np.ones((len(scored), width))
    for i, s in enumerate(scored):
        for j, lp in enumerate(s.log_probs):
            values[i, j] = float(np.sum(lp)) if summed else float(np.mean(lp))
            tokens[i, j] = len(lp)

    def rescore(indices: np.ndarray) -> np.ndarray:
        exact = twin.choice_log_probs([requests[i] for i in indices])
        out = values[indices].copy()
        for row, (i, s) in enumerate(zip(indices, exact)):
            scored[i] = s
            for j, lp in enumerate(s.log_probs):
                out[row, j] = float(np.sum(lp)) if summed else float(np.mean(lp))
        return out

    settled = settle(values, scales(tokens, summed), rescore, precision)
    return scored, settled.convention
