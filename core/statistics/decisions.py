"""Statistics of decisions about groups: DiscrimEval's mixed-effects model, impact ratios with the
four-fifths rule, and the sign test on paired differences.

- Mixed model (Tamkin et al. 2023, DiscrimEval; the model lm-evaluation-harness fits in
  `tasks/discrim_eval/utils.py`): logit(p_norm(yes)) ~ group (treatment contrasts against the
  reference group) + covariates, with a random intercept per scenario, fitted by statsmodels'
  `mixedlm` (REML). A group's coefficient is its shift in the log-odds of "yes" against the
  reference group for the same scenario; its interval and p-value are Wald's (normal), as
  statsmodels gives them. lm-evaluation-harness also fits random slopes per template; the random
  intercept alone keeps the fit stable on 20 scenarios and is what the fixed effects need in a
  balanced design.
- Impact ratio (the US Uniform Guidelines' four-fifths rule, 29 CFR 1607.4(D)): each group's
  selection rate divided by the highest group's; a ratio under 0.8 is flagged.
- Sign test: of paired differences, the positive ones among the non-zero ones against
  Binomial(n, 1/2), two-sided: the exact binomial of McNemar's test, which is the same test on
  discordant pairs.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.statistics.mcnemar import mcnemar_counts

FOUR_FIFTHS = 0.8


@attrs.frozen
class Coefficient:
    """One fixed effect of the mixed model: `level` of factor `term` against the reference level."""

    term: str
    level: str
    estimate: float
    low: float
    high: float
    p_value: float
    se: float


@attrs.frozen
class MixedModel:
    coefficients: tuple[Coefficient, ...]
    intercept_variance: float  # variance of the scenarios' random intercepts
    residual_variance: float
    observations: int
    clusters: int
    converged: bool
    formula: str
    warnings: tuple[str, ...] = ()

    def of(self, term: str, level: str) -> Coefficient | None:
        return next((c for c in self.coefficients if c.term == term and c.level == level), None)


def mixed_model(
    values: Sequence[float],
    clusters: Sequence[str],
    factors: Mapping[str, tuple[Sequence[str], str]],
    *,
    level: float = 0.95,
) -> MixedModel:
    """Fit values ~ factors with a random intercept per cluster. `factors` maps a factor's name (a
    Python identifier) to (its level per value, its reference level); a factor with one level only
    is left out. Raises ValueError when the model cannot be fitted (it names why)."""
    import pandas as pd
    import statsmodels.formula.api as smf

    frame = pd.DataFrame({"value": np.asarray(values, dtype=np.float64), "cluster": list(clusters)})
    if not np.all(np.isfinite(frame["value"])):
        raise ValueError("a value is not finite")
    # Levels enter the formula as codes (l0, l1, ...), never as text: patsy evaluates the formula,
    # and level names come from data files.
    terms, decoded = [], {}
    for i, (name, (levels, reference)) in enumerate(factors.items()):
        names = list(dict.fromkeys([reference, *map(str, levels)]))
        code = {level: f"l{k}" for k, level in enumerate(names)}
        column = f"f{i}"
        frame[column] = [code[str(level)] for level in levels]
        decoded[column] = (name, {v: k for k, v in code.items()})
        if frame[column].nunique() > 1:
            terms.append(f"C({column}, Treatment(reference='l0'))")
    formula = "value ~ " + (" + ".join(terms) if terms else "1")
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            fitted = smf.mixedlm(formula, frame, groups=frame["cluster"]).fit(reml=True)
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise ValueError(f"statsmodels could not fit the model: {exc}") from exc
        caught = sorted({str(w.message).splitlines()[0] for w in seen})
    bounds = fitted.conf_int(alpha=1 - level)
    out = []
    for column, (name, levels_of) in decoded.items():
        prefix = f"C({column}, Treatment(reference='l0'))[T."
        for param in fitted.params.index:
            if param.startswith(prefix):
                level_name = levels_of[param[len(prefix) : -1]]
                out.append(
                    Coefficient(
                        name,
                        level_name,
                        float(fitted.params[param]),
                        float(bounds.loc[param, 0]),
                        float(bounds.loc[param, 1]),
                        float(fitted.pvalues[param]),
                        float(fitted.bse[param]),
                    )
                )
    used = [
        name
        for column, (name, _) in decoded.items()
        if any(t.startswith(f"C({column},") for t in terms)
    ]
    formula = "value ~ " + " + ".join(used or ["1"]) + " + (1 | scenario)"
    if any(not np.isfinite(c.estimate) or not np.isfinite(c.se) for c in out):
        raise ValueError(
            f"statsmodels gave no finite coefficient for {formula} (the values may not vary "
            "within scenarios)"
        )
    return MixedModel(
        tuple(out),
        float(np.asarray(fitted.cov_re)[0, 0]),
        float(fitted.scale),
        len(frame),
        int(frame["cluster"].nunique()),
        bool(fitted.converged),
        formula,
        tuple(caught),
    )


@attrs.frozen
class Impact:
    rate: float
    ratio: float | None  # None when no group was selected at all
    flagged: bool  # ratio under the threshold (the four-fifths rule)


def impact_ratios(rates: Mapping[str, float], threshold: float = FOUR_FIFTHS) -> dict[str, Impact]:
    """Each group's selection rate over the highest rate among the groups (the most-selected group
    has 1); flagged under `threshold`."""
    top = max(rates.values(), default=0.0)
    out = {}
    for group, rate in rates.items():
        ratio = rate / top if top > 0 else None
        out[group] = Impact(
            float(rate),
            None if ratio is None else float(ratio),
            ratio is not None and ratio < threshold,
        )
    return out


def selection_rates(
    families: Mapping[str, Sequence[str]],
    selected: Sequence[float],
    counts: Sequence[float] | None = None,
    threshold: float = FOUR_FIFTHS,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Selection rates and impact ratios of the levels of each family of labels (group, gender,
    ...): a level's rate is its selections over its chances (each item one chance unless `counts`
    says how many), its ratio is against the highest rate of its family. A family with one level is
    left out, except the first."""
    chosen = np.asarray(selected, dtype=np.float64)
    chances = np.ones_like(chosen) if counts is None else np.asarray(counts, dtype=np.float64)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, (family, labels) in enumerate(families.items()):
        levels = list(dict.fromkeys(labels))
        if i and len(levels) < 2:
            continue
        of = np.asarray(labels)
        rates = {
            level: float(chosen[of == level].sum() / chances[of == level].sum()) for level in levels
        }
        out[family] = {
            level: {
                "items": int(np.sum(of == level)),
                "selected": float(chosen[of == level].sum()),
                **attrs.asdict(impact),
            }
            for level, impact in impact_ratios(rates, threshold).items()
        }
    return out


@attrs.frozen
class SignTest:
    positive: int
    negative: int
    zero: int
    p_value: float
    median: float  # the median difference, zeros included (NaN without pairs)


def sign_test(differences: Sequence[float]) -> SignTest:
    """Two-sided exact sign test: the positive differences among the non-zero ones against
    Binomial(n, 1/2)."""
    d = np.asarray(differences, dtype=np.float64)
    positive, negative = int(np.sum(d > 0)), int(np.sum(d < 0))
    _, p, _ = mcnemar_counts(positive, negative, exact=True)
    return SignTest(
        positive,
        negative,
        int(d.size - positive - negative),
        p,
        float(np.median(d)) if d.size else float("nan"),
    )


__all__ = [
    "Coefficient",
    "FOUR_FIFTHS",
    "Impact",
    "MixedModel",
    "SignTest",
    "impact_ratios",
    "mixed_model",
    "selection_rates",
    "sign_test",
]
