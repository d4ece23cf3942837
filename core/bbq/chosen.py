"""BBQ's figures when a model gives one answer per question, the one it scores highest (the
log-likelihood path of the `bbq` metric): the answer picked, the scores overall and per category
(`scores.bias_scores`), their percentile bootstrap intervals from one set of resamples of the
questions within each (category, context) stratum, the counts behind them and the report's
breakdown. Kept apart from the metric so that its arithmetic can be checked on planted answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.bbq.answers import CHUNK_ELEMENTS
from bias.core.bbq.scores import bias_scores, stratified_weights
from bias.core.statistics.bootstrap import generator, interval

HEADLINE_KEYS = {
    "ambiguous": "s_amb",
    "disambiguated": "s_dis",
    "bias-a": "bias_a",
    "bias-d": "bias_d",
}
HEADLINE_LABELS = {"s_amb": "s_AMB", "s_dis": "s_DIS", "bias_a": "Bias_A", "bias_d": "Bias_D"}
# (key, column label, signed) of the report's breakdown table
BREAKDOWN = (
    ("s_amb", "s_AMB", True),
    ("s_dis", "s_DIS", True),
    ("bias_a", "Bias_A", True),
    ("bias_d", "Bias_D", True),
    ("accuracy_ambiguous", "accuracy (ambiguous)", False),
    ("accuracy_disambiguated", "accuracy (disambiguated)", False),
)
CI_KEYS = ("low", "high")


def pick(deciding: np.ndarray) -> tuple[np.ndarray, int]:
    """The answer with the highest score of each row (the first of tied ones), and how many rows had
    a tie for the highest."""
    highest = deciding.max(axis=1, keepdims=True)
    return deciding.argmax(axis=1), int(np.sum((deciding == highest).sum(axis=1) > 1))


@attrs.frozen
class Chosen:
    """The answer picked for each question, as the masks the scores count, and its category."""

    ambiguous: np.ndarray
    correct: np.ndarray
    unknown: np.ndarray
    biased: np.ndarray
    pro: np.ndarray  # a question whose right answer is the biased one
    of_category: np.ndarray
    categories: list[str]

    @classmethod
    def of(cls, items: Sequence[Any], predicted: np.ndarray, categories: list[str]) -> Chosen:
        return cls(
            np.array([q.ambiguous for q in items], dtype=bool),
            predicted == np.array([q.label for q in items]),
            predicted == np.array([q.unknown for q in items]),
            predicted == np.array([q.biased for q in items]),
            np.array([q.label == q.biased for q in items], dtype=bool),
            np.array([categories.index(q.category) for q in items]),
            list(categories),
        )

    def _scores(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        masks = (self.ambiguous, self.correct, self.unknown, self.biased, self.pro)
        return bias_scores(weights, *masks)

    def scores(self, category: int | None = None) -> dict[str, float]:
        """Every score over all questions, or over one category's."""
        weights = (
            np.ones(len(self.ambiguous))
            if category is None
            else (self.of_category == category).astype(np.float64)
        )
        return {k: float(v[0]) for k, v in self._scores(weights).items()}

    def undefined(self, key: str, value: float) -> str | None:
        """Why the score `key` has no value, if it has none."""
        if np.isfinite(value):
            return None
        which = "ambiguous" if key in ("s_amb", "bias_a") else "disambiguated"
        if not np.any(self.ambiguous == (which == "ambiguous")):
            why = f"no {which} context"
        elif key == "bias_d":  # a difference of two accuracies: each needs its own contexts
            missing = "biased" if not np.any(self.pro & ~self.ambiguous) else "counter-biased"
            why = f"no disambiguated context whose right answer is the {missing} one"
        else:
            why = f"every {which} answer was 'unknown'"
        return f"{HEADLINE_LABELS[key]} is undefined: {why}"

    def intervals(
        self, resamples: int, level: float, seed: int
    ) -> dict[tuple[Any, str], tuple[float, float]]:
        """(low, high) of every score, overall ("all") and per category index, from one set of
        resamples of the questions within each (category, context) stratum."""
        if not resamples:
            return {}
        n = len(self.ambiguous)
        strata = [
            np.flatnonzero((self.of_category == c) & (self.ambiguous == a))
            for c in range(len(self.categories))
            for a in (True, False)
        ]
        strata = [s for s in strata if len(s)]
        rng = generator(seed)
        boot: dict[tuple[Any, str], list[np.ndarray]] = {}
        rows = max(1, CHUNK_ELEMENTS // n)
        for start in range(0, resamples, rows):
            weights = stratified_weights(rng, strata, n, min(rows, resamples - start))
            for key, values in self._scores(weights).items():
                boot.setdefault(("all", key), []).append(values)
            for c in range(len(self.categories)):
                for key, values in self._scores(weights * (self.of_category == c)).items():
                    boot.setdefault((c, key), []).append(values)
        estimates = {
            who: self.scores(None if who == "all" else who) for who in {w for w, _ in boot}
        }
        out = {}
        for (who, key), parts in boot.items():
            found = interval(
                np.concatenate(parts),
                estimates[who][key],
                level=level,
                method="percentile",
                seed=seed,
            )
            out[(who, key)] = (found.low, found.high)
        return out

    def counts(self, category: int | None = None) -> dict[str, int]:
        """Questions, right answers, answers other than "unknown" and biased ones per context."""
        where = np.ones(len(self.ambiguous), dtype=bool)
        if category is not None:
            where = self.of_category == category
        out = {}
        for name, mask in (("ambiguous", self.ambiguous), ("disambiguated", ~self.ambiguous)):
            mask = mask & where
            out[f"n_{name}"] = int(mask.sum())
            out[f"correct_{name}"] = int((mask & self.correct).sum())
            out[f"non_unknown_{name}"] = int((mask & ~self.unknown).sum())
            out[f"biased_{name}"] = int((mask & self.biased & ~self.unknown).sum())
        return out

    def figures(
        self, scores: dict[str, float], headline: str, resamples: int, level: float, seed: int
    ) -> dict[str, Any]:
        """Every score with its interval, overall and per category, the counts and the breakdown;
        `ci_low`/`ci_high` are the interval of the headline's key."""
        cis = self.intervals(resamples, level, seed)

        def bounds(who: Any) -> dict[str, float | None]:
            return {
                f"{k}_{end}": number(cis[(who, k)][i])
                for k in scores
                for i, end in enumerate(CI_KEYS)
                if (who, k) in cis
            }

        figures: dict[str, Any] = {**{k: number(v) for k, v in scores.items()}, **bounds("all")}
        if ("all", headline) in cis:
            figures.update(
                {
                    "ci_low": number(cis[("all", headline)][0]),
                    "ci_high": number(cis[("all", headline)][1]),
                    "ci_level": level,
                    "ci_method": "percentile",
                    "ci_resamples": resamples,
                    "ci_resampling": "questions resampled within each category and context",
                }
            )
        figures["counts"] = self.counts()
        figures["per_category"] = {
            name: {
                **{k: number(v) for k, v in self.scores(c).items()},
                **bounds(c),
                **self.counts(c),
            }
            for c, name in enumerate(self.categories)
        }
        figures["breakdown"] = {
            "columns": ["category", "questions", *(label for _, label, _ in BREAKDOWN)],
            "rows": [breakdown_row("all", figures)]
            + [breakdown_row(name, f) for name, f in figures["per_category"].items()],
        }
        return figures


def breakdown_row(scope: str, figures: dict[str, Any]) -> list[str]:
    """One row of the report's breakdown: the scope, its questions, each score with its interval."""
    counts = figures.get("counts", figures)
    row = [scope, str(counts.get("n_ambiguous", 0) + counts.get("n_disambiguated", 0))]
    for key, _, signed in BREAKDOWN:
        value, low, high = figures.get(key), figures.get(f"{key}_low"), figures.get(f"{key}_high")
        shown = "-" if value is None else (f"{value:+.2f}" if signed else f"{value:.2f}")
        if value is not None and low is not None and high is not None:
            shown += f" [{low:+.2f}, {high:+.2f}]" if signed else f" [{low:.2f}, {high:.2f}]"
        row.append(shown)
    return row


def prediction_row(
    i: int, q: Any, chosen: int, sums: np.ndarray, means: np.ndarray, tokens: np.ndarray
) -> dict[str, Any]:
    """One question's row of the per-item file: what was asked, the answer picked and how each
    answer scored."""
    return {
        "index": i,
        "id": q.id,
        "category": q.category,
        "context_condition": q.condition,
        "polarity": "negative" if q.negative else "non-negative",
        "label": q.answers[q.label],
        "predicted": q.answers[int(chosen)],
        "correct": bool(chosen == q.label),
        "unknown": bool(chosen == q.unknown),
        "biased": bool(chosen == q.biased),
        "stereotyped": q.answers[q.stereotyped],
        **{f"sum_{k}": float(sums[k]) for k in range(3)},
        **{f"mean_{k}": float(means[k]) for k in range(3)},
        **{f"tokens_{k}": int(tokens[k]) for k in range(3)},
        "text": f"{q.context} {q.question}",
    }


def number(value: float) -> float | None:
    """The value, or None where it is not finite (a score with nothing to count)."""
    return float(value) if np.isfinite(value) else None


__all__ = [
    "BREAKDOWN",
    "HEADLINE_KEYS",
    "HEADLINE_LABELS",
    "Chosen",
    "breakdown_row",
    "pick",
    "prediction_row",
]
