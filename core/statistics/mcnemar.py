"""McNemar's test on paired predictions: did a change of model (debiasing, say) change how often the
same texts are classified correctly?

Two accuracies measured on the same texts are not independent samples, so comparing their intervals
is the wrong test. McNemar's test uses only the discordant texts: b, right before and wrong after;
c, wrong before and right after. Under "no change" each discordant text falls either way with
probability 1/2.

- exact: two-sided binomial test of b among the b + c discordant texts, p = min(1, 2 P(X <= min(b,
  c))) for X ~ Binomial(b + c, 1/2); used when b + c < 25, where the chi-square approximation is
  poor;
- chi-square with Edwards' continuity correction: (|b - c| - 1)^2 / (b + c), one degree of freedom,
  for larger counts (|b - c| - 1 taken as 0 when b = c).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

EXACT_BELOW = 25  # discordant texts below which the exact binomial form is used
EXACT = "exact binomial"
CHI2 = "chi-square with continuity correction"


@attrs.frozen
class McNemar:
    n: int  # paired texts
    both_correct: int
    before_only: int  # b: right before, wrong after
    after_only: int  # c: wrong before, right after
    both_wrong: int
    statistic: float | None  # the chi-square statistic (None for the exact form)
    p_value: float
    method: str

    @property
    def discordant(self) -> int:
        return self.before_only + self.after_only

    @property
    def accuracy_before(self) -> float:
        return (self.both_correct + self.before_only) / self.n if self.n else float("nan")

    @property
    def accuracy_after(self) -> float:
        return (self.both_correct + self.after_only) / self.n if self.n else float("nan")

    @property
    def change(self) -> float:
        """Accuracy after minus before on the paired texts: (c - b) / n."""
        return (self.after_only - self.before_only) / self.n if self.n else float("nan")


def mcnemar_counts(b: int, c: int, *, exact: bool | None = None) -> tuple[float | None, float, str]:
    """(statistic, two-sided p, method) from the discordant counts; `exact` None chooses by b +
    c."""
    from scipy.stats import binom, chi2

    n = b + c
    use_exact = n < EXACT_BELOW if exact is None else exact
    if n == 0:
        return (None if use_exact else 0.0), 1.0, EXACT if use_exact else CHI2
    if use_exact:
        return None, float(min(1.0, 2.0 * binom.cdf(min(b, c), n, 0.5))), EXACT
    statistic = max(0.0, abs(b - c) - 1.0) ** 2 / n
    return float(statistic), float(chi2.sf(statistic, 1)), CHI2


def mcnemar(
    before_correct: Sequence[bool], after_correct: Sequence[bool], *, exact: bool | None = None
) -> McNemar:
    """McNemar's test on two equally long sequences of correct/wrong for the same items."""
    if len(before_correct) != len(after_correct):
        raise ValueError("McNemar's test needs the same items on both sides")
    pairs = list(zip(map(bool, before_correct), map(bool, after_correct)))
    both = sum(1 for x, y in pairs if x and y)
    b = sum(1 for x, y in pairs if x and not y)
    c = sum(1 for x, y in pairs if y and not x)
    none = len(pairs) - both - b - c
    statistic, p, method = mcnemar_counts(b, c, exact=exact)
    return McNemar(len(pairs), both, b, c, none, statistic, p, method)


__all__ = ["McNemar", "mcnemar", "mcnemar_counts", "EXACT", "CHI2", "EXACT_BELOW"]
