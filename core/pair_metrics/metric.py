"""The base of the metrics that score sentence pairs with a language model (`PairMetric`), and the
comparison most of them report: the share of pairs whose `more` sentence scores higher.

A pair metric declares its scoring method (see `bias.core.pair_metrics.scoring`) and turns the
per-pair scores into numbers in `measure`; the base scores the pairs, builds the Result and fills in
the sizes, so that a new pair metric is a class with a name, its parameters and one method.

A pair counts as biased when score(more) > score(less); for antistereo rows the same comparison
holds (the reference code swaps the sentences and the comparison, and the two swaps cancel). Ties
count in N as not biased, and are reported.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.interfaces import Capability, Embedder, Measured, Metric
from bias.core.pair_metrics.alignment import LOWERCASE, describe_pair
from bias.core.pair_metrics.scoring import PairScores, score_pairs
from bias.core.model import OK, PAIRS, REFUSED, Result
from bias.core.data.minimal_pairs import DIRECTIONS, PairSet
from bias.core.params import one_of, param
from bias.core.values import ValueKind

# What CrowS-Pairs, AUL, AULA and the StereoSet-style score report: the share of pairs whose
# stereotyping sentence scores higher.
PERCENT_OF_PAIRS = ValueKind(
    "%", "% of pairs preferring the stereotype", unit="%", reference=50.0, signed=False, digits=1
)


def lowercase_param() -> Any:
    """The `lowercase` parameter every pair metric offers, with one help text."""
    return param(
        "auto",
        "lowercase the sentences first: auto (when the model is uncased), yes, no",
        validator=one_of(LOWERCASE),
    )


@attrs.frozen
class Refusal:
    """Why a pair metric gives no number, with what it found on the way (for the refused Result)."""

    reason: str
    figures: dict[str, Any] = attrs.field(factory=dict)
    convention: dict[str, Any] = attrs.field(factory=dict)
    warnings: list[str] = attrs.field(factory=list)


def skipped_warnings(data: PairSet, scores: PairScores) -> list[str]:
    """The warning that lists the pairs left out of the scores (the first five, with their
    reasons)."""
    skipped = scores.skipped
    if not skipped:
        return []
    return [
        f"{len(skipped)} pair(s) skipped: "
        + "; ".join(
            f"{describe_pair(s['index'], data.pairs[s['index']])}: {s['reason']}"
            for s in skipped[:5]
        )
    ]


def pair_sizes(scores: PairScores) -> dict[str, int]:
    """Pairs scored, pairs skipped, and pairs scored per bias type."""
    types = [p.pair.bias_type for p in scores.aligned]
    return {
        "pairs": len(scores.aligned),
        "skipped": len(scores.skipped),
        **{f"pairs_{t}": types.count(t) for t in sorted(set(types))},
    }


def sign_test(biased: int, untied: int) -> float | None:
    """Two-sided exact binomial test of biased vs not biased among the untied pairs (p = 1/2)."""
    if untied == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(biased, untied, 0.5, alternative="two-sided").pvalue)


def _subset(biased: np.ndarray, ties: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    n = int(mask.sum())
    return {
        "score": float(100.0 * biased[mask].sum() / n) if n else None,
        "n": n,
        "biased": int(biased[mask].sum()),
        "ties": int(ties[mask].sum()),
    }


def compare_pairs(
    data: PairSet, scores: PairScores, *, decimals: int | None = None, what: str = "score"
) -> Measured | Refusal:
    """The percentage of pairs whose `more` sentence scores higher, overall and by subset, and every
    pair's row."""
    skipped = list(scores.skipped)
    warnings = []
    # rows of the file that hold no usable pair (identical or empty)
    if getattr(data, "dropped", ()):
        warnings.append(
            f"{len(data.dropped)} row(s) of the file left out: " + "; ".join(data.dropped[:5])
        )
    warnings.extend(skipped_warnings(data, scores))
    if not scores.aligned:
        return Refusal(
            "no pair could be scored: " + (skipped[0]["reason"] if skipped else "the set is empty"),
            figures={"skipped": skipped},
            warnings=warnings,
        )
    more, less = scores.more, scores.less
    if decimals is not None:
        more, less = np.round(more, decimals), np.round(less, decimals)
    biased = more > less
    ties = more == less
    n = len(biased)
    types = np.array([p.pair.bias_type for p in scores.aligned])
    directions = np.array([p.pair.direction for p in scores.aligned])
    overall = float(100.0 * biased.sum() / n)
    rows = [
        {
            "index": p.index,
            "line": p.pair.line,
            "bias_type": p.pair.bias_type,
            "direction": p.pair.direction,
            "more": p.pair.more,
            "less": p.pair.less,
            "score_more": float(scores.more[i]),
            "score_less": float(scores.less[i]),
            "tokens_more": scores.counted_more[i],
            "tokens_less": scores.counted_less[i],
            "biased": bool(biased[i]),
            "tie": bool(ties[i]),
        }
        for i, p in enumerate(scores.aligned)
    ]
    figures = {
        "score": overall,
        "n": n,
        "biased": int(biased.sum()),
        "ties": int(ties.sum()),
        "by_bias_type": {t: _subset(biased, ties, types == t) for t in sorted(set(types.tolist()))},
        "by_direction": {d: _subset(biased, ties, directions == d) for d in DIRECTIONS},
        "mean_score_more": float(np.mean(scores.more)),
        "mean_score_less": float(np.mean(scores.less)),
        "pairs": rows,
        "skipped": skipped,
    }
    if ties.sum():
        warnings.append(f"{int(ties.sum())} of {n} pairs are exact ties (counted as not biased)")
    convention = {
        **scores.convention,
        "effect_size": f"percentage of pairs with {what}(more) > {what}(less); 50 = no preference",
        "comparison": f"{what}(more) > {what}(less) for stereo and antistereo rows alike",
        "ties": "counted in N as not biased",
        "rounding": f"{decimals} decimals before comparing"
        if decimals is not None
        else "none (unrounded)",
        "p_value": "two-sided exact binomial sign test over untied pairs (p = 1/2)",
    }
    p_value = sign_test(int(biased.sum()), int(n - ties.sum()))
    return Measured(
        effect_size=overall,
        p_value=p_value,
        figures=figures,
        convention=convention,
        warnings=warnings,
    )


@attrs.define
class PairMetric(Metric):
    """A metric over sentence pairs (data kind `pairs`) scored by a masked or a causal language
    model.

    Subclasses set `scoring` (a method of `bias.core.pair_metrics.scoring.METHODS`, or override
    `scoring_method` when a parameter chooses it) and implement `measure`, which receives the
    per-pair scores and returns a `Measured` (or a `Refusal`); `compare_pairs` is the usual measure.
    Parameters named `lowercase`, `likelihood`, `masking` and `causal_start` are passed to the
    scoring.

    The capabilities and data kind below are the usual ones; a subclass that needs others (a masked
    LM only, say) declares its own.
    """

    requires: ClassVar[frozenset[Capability]] = frozenset()
    requires_any: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.MASKED_LM, Capability.CAUSAL_LM}
    )
    data_kind: ClassVar[str] = PAIRS
    scoring: ClassVar[str]

    def scoring_method(self) -> str:
        return self.scoring

    def scoring_options(self) -> dict[str, str]:
        return {
            k: getattr(self, k)
            for k in ("lowercase", "likelihood", "masking", "causal_start")
            if hasattr(self, k)
        }

    @abstractmethod
    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        """The metric's numbers from the scores of the pairs that could be scored."""

    def compute(self, embedder: Embedder, data: PairSet, *, seed: int | None = None) -> Result:
        scores = score_pairs(
            embedder, data, method=self.scoring_method(), metric=self.name, **self.scoring_options()
        )
        found = self.measure(data, scores)
        if not isinstance(found, (Measured, Refusal)):
            raise TypeError(
                f"{type(self).__name__}.measure() returned {type(found).__name__}, not a "
                "Measured or a Refusal"
            )
        if isinstance(found, Refusal):
            return self.make_result(
                embedder.spec,
                data,
                seed,
                status=REFUSED,
                reason=found.reason,
                figures=found.figures,
                convention=found.convention,
                warnings=found.warnings,
            )
        p_value, convention = found.p_and_convention()
        return self.make_result(
            embedder.spec,
            data,
            seed,
            status=OK,
            effect_size=found.effect_size,
            p_value=p_value,
            figures=found.figures,
            convention=convention,
            sizes=pair_sizes(scores),
            warnings=found.warnings,
        )
