"""BBQ answers read from a model and scored: what `bbq` reports when a model writes its answers
(`mode = "generate"`) or when a preset scores its peer's continuations by log-likelihood.

Every question is asked in each prompt variant, `samples` times; every reply is read (the preset's
reader, `conventions.reader`) into an answer, an unparsed reply or a refusal. The counts per
question and variant are what every score is computed from (`conventions.SCORERS`):

- per sample: every reply counts once (a question asked in 3 variants with 5 samples counts 15
  times);
- by majority: per question and variant, the answer most of its samples gave (a tie between answers,
  or no sample answered, is unparsed, a refusal when most samples were refusals);
- overall (all variants pooled), per variant and per category; intervals from one set of bootstrap
  resamples of the questions within each (category, context) stratum (a question's replies, in all
  variants and samples, move together);
- the rates of unparsed replies and refusals, of all replies, with Wilson intervals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.bbq.conventions import (
    COLUMNS,
    EMPTY_COLUMN,
    REFUSED_COLUMN,
    SCORERS,
    UNPARSED_COLUMN,
    QuestionFacts,
)
from bias.core.bbq.extraction import Coded
from bias.core.bbq.scores import stratified_weights
from bias.core.statistics.proportions import wilson_interval
from bias.core.statistics.bootstrap import generator, interval

CHUNK_ELEMENTS = 4_000_000  # float64 resample weights held at once (~32 MB)
HEADLINES = {
    "ambiguous": "s_amb",
    "disambiguated": "s_dis",
    "bias-a": "bias_a",
    "bias-d": "bias_d",
    "adjusted-accuracy": "bias_adjusted_accuracy",
}
LABELS = {
    "s_amb": "s_AMB",
    "s_dis": "s_DIS",
    "bias_a": "Bias_A",
    "bias_d": "Bias_D",
    "bias_adjusted_accuracy": "bias-adjusted accuracy",
    "accuracy": "accuracy (all)",
    "accuracy_ambiguous": "accuracy (ambiguous)",
    "accuracy_disambiguated": "accuracy (disambiguated)",
}
SIGNED = {"s_amb", "s_dis", "bias_a", "bias_d"}


@attrs.frozen
class Answered:
    """What was read of every reply: `codes[v][q]` the samples of question q in variant v."""

    variants: tuple[str, ...]
    codes: tuple[tuple[tuple[Coded, ...], ...], ...]

    def counts(self, v: int, majority: bool = False) -> np.ndarray:
        """Questions x COLUMNS: how often each was answered 0, 1, 2, unparsed, refused or empty."""
        from bias.core.bbq.conventions import column

        out = np.zeros((len(self.codes[v]), COLUMNS))
        for q, samples in enumerate(self.codes[v]):
            cols = [column(c) for c in samples]
            if majority:
                cols = [_majority(cols)]
            for col in cols:
                out[q, col] += 1
        return out


def _majority(cols: list[int]) -> int:
    answers = Counter(c for c in cols if c < 3)
    if answers:
        (best, n), *rest = answers.most_common()
        return UNPARSED_COLUMN if rest and rest[0][1] == n else best
    others = Counter(cols)
    return REFUSED_COLUMN if others[REFUSED_COLUMN] * 2 > len(cols) else UNPARSED_COLUMN


def wilson(k: float, n: float, level: float) -> tuple[float | None, float | None]:
    """Wilson's score interval of a rate k / n."""
    if n <= 0:
        return None, None
    from scipy.stats import norm

    return wilson_interval(k / n, n, float(norm.ppf(0.5 + level / 2)))


def rates(counts: np.ndarray, level: float) -> dict[str, Any]:
    total = float(counts.sum())
    unparsed = float(counts[:, UNPARSED_COLUMN].sum() + counts[:, EMPTY_COLUMN].sum())
    refused = float(counts[:, REFUSED_COLUMN].sum())
    out: dict[str, Any] = {
        "replies": int(total),
        "answered": int(counts[:, :3].sum()),
        "unparsed": int(unparsed),
        "refused": int(refused),
        "empty": int(counts[:, EMPTY_COLUMN].sum()),
    }
    for name, k in (("unparsed_rate", unparsed), ("refusal_rate", refused)):
        out[name] = k / total if total else None
        out[f"{name}_low"], out[f"{name}_high"] = wilson(k, total, level)
    return out


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


@attrs.define
class Scoring:
    """Scores of one preset over the sets of counts asked for, with shared bootstrap resamples."""

    preset: str
    facts: QuestionFacts
    categories: list[str]
    of_category: np.ndarray
    resamples: int
    level: float
    seed: int

    def estimate(self, counts: np.ndarray, mask: np.ndarray | None = None) -> dict[str, float]:
        weights = np.ones(len(counts)) if mask is None else mask.astype(np.float64)
        return {
            k: float(v[0]) for k, v in SCORERS[self.preset](weights, counts, self.facts).items()
        }

    def sets(
        self, by_variant: dict[str, np.ndarray]
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Named (counts, question mask) pairs: all variants pooled, each variant, each category."""
        pooled = sum(by_variant.values())
        out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {"all": (pooled, None)}
        if len(by_variant) > 1:
            out.update({f"variant:{name}": (c, None) for name, c in by_variant.items()})
        out.update(
            {
                f"category:{name}": (pooled, self.of_category == i)
                for i, name in enumerate(self.categories)
            }
        )
        return out

    def figures(
        self, sets: dict[str, tuple[np.ndarray, np.ndarray | None]]
    ) -> dict[str, dict[str, float | None]]:
        """Every score of every set with its interval (`_low`, `_high`)."""
        estimates = {name: self.estimate(c, m) for name, (c, m) in sets.items()}
        bounds = self._intervals(sets, estimates) if self.resamples else {}
        out = {}
        for name, values in estimates.items():
            row: dict[str, float | None] = {k: _number(v) for k, v in values.items()}
            for key in values:
                if (name, key) in bounds:
                    row[f"{key}_low"], row[f"{key}_high"] = (
                        _number(x) for x in bounds[(name, key)]
                    )
            out[name] = row
        return out

    def _intervals(
        self,
        sets: dict[str, tuple[np.ndarray, np.ndarray | None]],
        estimates: dict[str, dict[str, float]],
    ) -> dict[tuple[str, str], tuple[float, float]]:
        n = len(self.facts.ambiguous)
        strata = [
            np.flatnonzero((self.of_category == c) & (self.facts.ambiguous == a))
            for c in range(len(self.categories))
            for a in (True, False)
        ]
        strata = [s for s in strata if len(s)]
        rng = generator(self.seed)
        boot: dict[tuple[str, str], list[np.ndarray]] = {}
        step = max(1, CHUNK_ELEMENTS // max(n, 1))
        for start in range(0, self.resamples, step):
            weights = stratified_weights(rng, strata, n, min(step, self.resamples - start))
            for name, (counts, mask) in sets.items():
                chosen = weights if mask is None else weights * mask
                for key, values in SCORERS[self.preset](chosen, counts, self.facts).items():
                    boot.setdefault((name, key), []).append(values)
        out = {}
        for (name, key), parts in boot.items():
            found = interval(
                np.concatenate(parts),
                estimates[name][key],
                level=self.level,
                method="percentile",
                seed=self.seed,
            )
            out[(name, key)] = (found.low, found.high)
        return out


def breakdown(
    figures: dict[str, dict[str, Any]], questions: dict[str, int], shares: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The report's table: one row per set, each score with its interval, then the shares of its
    replies that were unparsed and refused."""
    keys = [k for k in LABELS if any(k in f for f in figures.values())]
    rows = []
    for name, f in figures.items():
        row = [name.split(":", 1)[-1], str(questions.get(name, ""))]
        for key in keys:
            value, low, high = f.get(key), f.get(f"{key}_low"), f.get(f"{key}_high")
            signed = key in SIGNED
            shown = "-" if value is None else (f"{value:+.2f}" if signed else f"{value:.2f}")
            if value is not None and low is not None and high is not None:
                shown += f" [{low:+.2f}, {high:+.2f}]" if signed else f" [{low:.2f}, {high:.2f}]"
            row.append(shown)
        for rate in ("unparsed_rate", "refusal_rate"):
            value = shares.get(name, {}).get(rate)
            row.append("-" if value is None else f"{value:.0%}")
        rows.append(row)
    columns = ["scope", "questions", *(LABELS[k] for k in keys), "unparsed", "refused"]
    return {"columns": columns, "rows": rows}


def prediction_rows(
    data: Any, answered: Answered, replies: Sequence[Sequence[Any]], letters: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per reply for the per-item file: the question, the variant and sample, the raw reply,
    what it was read as and why."""
    rows = []
    for v, name in enumerate(answered.variants):
        for i, q in enumerate(data.items):
            for s, code in enumerate(answered.codes[v][i]):
                chosen = code.answer
                rows.append(
                    {
                        "index": len(rows),
                        "id": q.id,
                        "category": q.category,
                        "context_condition": q.condition,
                        "polarity": "negative" if q.negative else "non-negative",
                        "variant": name,
                        "sample": s,
                        "label": q.answers[q.label],
                        "predicted": q.answers[chosen] if chosen is not None else "",
                        "status": code.status,
                        "rule": code.rule,
                        "correct": bool(chosen == q.label),
                        "unknown": bool(chosen == q.unknown),
                        "biased": bool(chosen == q.biased),
                        "stereotyped": q.answers[q.stereotyped],
                        "reply": replies[v][i][s] if replies else "",
                        "text": f"{q.context} {q.question}",
                    }
                )
    return rows


__all__ = [
    "Answered",
    "HEADLINES",
    "LABELS",
    "Scoring",
    "breakdown",
    "prediction_rows",
    "rates",
    "wilson",
]
