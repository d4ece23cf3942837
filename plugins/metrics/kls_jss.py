"""KLS and JSS (Liu 2024): distribution-level bias scores of sentence-pair likelihoods.

Instead of counting, pair by pair, which sentence the model prefers, the per-sentence scores of the
stereotype sentences (`more`) and of the anti-stereotype sentences (`less`) of each bias type are
summarised as two Gaussians, N(mu_s, sigma_s^2) and N(mu_a, sigma_a^2) (sample std, ddof=1), and
compared by divergences in nats:

- KL(P||Q) = ln(sigma_q / sigma_p) + (sigma_p^2 + (mu_p - mu_q)^2) / (2 sigma_q^2) - 1/2 (closed
  form);
- KLS = 100 * max(KL_sa, KL_as) / (KL_sa + KL_as), 50 = no preference;
- JSS = 100 * (1 - J) / (1 + C), the paper's definition, with M = N((mu_s + mu_a)/2, sqrt((sigma_s^2
  + sigma_a^2)/2)), J = (KL(s||M) + KL(a||M)) / 2 and C = |sigma_s - sigma_a|, each folded to min(x,
  1) / max(x, 1);
- JSS-mixture: the same with J the true Jensen-Shannon divergence between the Gaussians and their
  50/50 mixture, integrated numerically and divided by ln 2 (so it lies in [0, 1] and needs no
  folding).

The overall score is the mean over bias types weighted by their number of pairs. The per-sentence
score is the CrowS pseudo-log-likelihood by default (`score = pll`); the paper itself uses AUL,
which `score = aul` selects. `more` is always the stereotype-consistent sentence (for antistereo
rows the author's original sentence is `less`), so the stereotype distribution is that of the `more`
scores."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import ValueKind
from bias.api import Measured, PairMetric, PairScores, PairSet, Refusal, one_of, param
from bias.api.lm import CAUSAL, LIKELIHOODS, lowercase_param, skipped_warnings

SCORES = ("pll", "aul", "aula")
LN2 = math.log(2.0)


def kl_gauss(mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> float:
    """KL(N(mu_p, sigma_p^2) || N(mu_q, sigma_q^2)) in nats, closed form."""
    return (
        math.log(sigma_q / sigma_p) + (sigma_p**2 + (mu_p - mu_q) ** 2) / (2.0 * sigma_q**2) - 0.5
    )


def fold(x: float) -> float:
    """min(x, 1) / max(x, 1): x itself up to 1, its reciprocal beyond (the reference's folding)."""
    return min(x, 1.0) / max(x, 1.0)


def kls(
    mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
) -> tuple[float | None, float, float]:
    """KLS and the two divergences; KLS is None when both are 0 (identical distributions: 0/0)."""
    kl_sa = kl_gauss(mu_s, sigma_s, mu_a, sigma_a)
    kl_as = kl_gauss(mu_a, sigma_a, mu_s, sigma_s)
    total = kl_sa + kl_as
    if not total > 0.0:
        return None, kl_sa, kl_as
    return 100.0 * max(kl_sa, kl_as) / total, kl_sa, kl_as


def jss_reference(
    mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
) -> tuple[float, float, float]:
    """The paper's JSS with its Gaussian M; returns (JSS, J before folding, C before folding)."""
    mu_m = (mu_s + mu_a) / 2.0
    sigma_m = math.sqrt((sigma_s**2 + sigma_a**2) / 2.0)
    j = (kl_gauss(mu_s, sigma_s, mu_m, sigma_m) + kl_gauss(mu_a, sigma_a, mu_m, sigma_m)) / 2.0
    c = abs(sigma_s - sigma_a)
    return 100.0 * (1.0 - fold(j)) / (1.0 + fold(c)), j, c


def js_mixture(mu_s: float, sigma_s: float, mu_a: float, sigma_a: float) -> float:
    """Jensen-Shannon divergence (nats) between two Gaussians, M their true 50/50 mixture, by
    quadrature.

    Integrated in log space (p log p/m with log m = logaddexp(log p, log q) - ln 2) over the means
    +- 40 of the larger std, split at the means, so tails and narrow peaks are both resolved.
    """
    from scipy import integrate

    def logpdf(x: float, mu: float, sigma: float) -> float:
        return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2.0 * math.pi)

    lo = min(mu_s, mu_a) - 40.0 * max(sigma_s, sigma_a)
    hi = max(mu_s, mu_a) + 40.0 * max(sigma_s, sigma_a)
    inner = {m + k * s for m, s in ((mu_s, sigma_s), (mu_a, sigma_a)) for k in (-8, -1, 0, 1, 8)}
    cuts = sorted({lo, hi, *(c for c in inner if lo < c < hi)})

    def part(mu: float, sigma: float, mu_o: float, sigma_o: float) -> float:
        """KL(P || M) for P = N(mu, sigma^2), M the mixture of P and N(mu_o, sigma_o^2)."""

        def f(x: float) -> float:
            lp = logpdf(x, mu, sigma)
            lm = float(np.logaddexp(lp, logpdf(x, mu_o, sigma_o))) - LN2
            return math.exp(lp) * (lp - lm)

        return sum(
            integrate.quad(f, a, b, limit=200, epsabs=1e-13, epsrel=1e-10)[0]
            for a, b in zip(cuts, cuts[1:])
        )

    value = 0.5 * part(mu_s, sigma_s, mu_a, sigma_a) + 0.5 * part(mu_a, sigma_a, mu_s, sigma_s)
    return min(max(value, 0.0), LN2)


def jss_mixture(mu_s: float, sigma_s: float, mu_a: float, sigma_a: float) -> tuple[float, float]:
    """100 * (1 - JS/ln 2) / (1 + fold(|sigma_s - sigma_a|)) and the JS divergence in nats."""
    js = js_mixture(mu_s, sigma_s, mu_a, sigma_a)
    return 100.0 * (1.0 - js / LN2) / (1.0 + fold(abs(sigma_s - sigma_a))), js


_SCORE_HELP = (
    "per-sentence score: pll (CrowS pseudo-log-likelihood, default), aul (the paper's choice), aula"
)
_LIKELIHOOD_HELP = (
    "causal LMs with score = pll: sum or mean of the token log-likelihoods log P(w_i | BOS, w_<i), "
    "the first word included (BOS, else EOS, prepended when the tokenizer adds no start token)"
)


@attrs.define
class _Divergence(PairMetric):
    """What KLS, JSS and JSS-mixture share: fitting the Gaussians per bias type to the pair scores,
    and the count-weighted overall score. Subclasses say how one type's two Gaussians become a
    number."""

    figure: ClassVar[str]

    score: str = param("pll", _SCORE_HELP, validator=one_of(SCORES))
    lowercase: str = lowercase_param()
    likelihood: str = param("sum", _LIKELIHOOD_HELP, validator=one_of(LIKELIHOODS), only_for=CAUSAL)

    def scoring_method(self) -> str:
        return self.score

    def type_score(
        self, mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
    ) -> tuple[float | None, dict[str, Any], str | None]:
        raise NotImplementedError

    def formula(self) -> dict[str, Any]:
        """The formula of the type score, for the result's convention."""
        return {}

    def type_row(self, more: np.ndarray, less: np.ndarray) -> dict[str, Any]:
        """One bias type's Gaussians and score (`value` None with the `reason` when there is
        none)."""
        row: dict[str, Any] = {"n": len(more)}
        if len(more) < 2:
            row.update(value=None, reason="fewer than 2 pairs: no standard deviation")
            return row
        mu_s, sigma_s, mu_a, sigma_a = (
            float(more.mean()),
            float(more.std(ddof=1)),
            float(less.mean()),
            float(less.std(ddof=1)),
        )
        row.update(mu_s=mu_s, sigma_s=sigma_s, mu_a=mu_a, sigma_a=sigma_a)
        if not (sigma_s > 0.0 and sigma_a > 0.0) or not all(
            map(math.isfinite, (mu_s, sigma_s, mu_a, sigma_a))
        ):
            row.update(
                value=None,
                reason="a standard deviation is zero or not finite: the Gaussians are degenerate",
            )
            return row
        value, extra, reason = self.type_score(mu_s, sigma_s, mu_a, sigma_a)
        row.update(extra)
        row.update(value=value, reason=reason)
        return row

    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        warnings = skipped_warnings(data, scores)
        types = [p.pair.bias_type for p in scores.aligned]
        by_type: dict[str, dict[str, Any]] = {}
        weighted, total = 0.0, 0
        for t in sorted(set(types)):
            idx = [i for i, x in enumerate(types) if x == t]
            row = by_type[t] = self.type_row(scores.more[idx], scores.less[idx])
            if row["value"] is not None:
                weighted += row["value"] * row["n"]
                total += row["n"]
        left_out = {t: r["reason"] for t, r in by_type.items() if r["value"] is None}
        if left_out:
            warnings.append(
                "left out of the overall score: "
                + "; ".join(f"{t}: {why}" for t, why in left_out.items())
            )
        figures = {
            "by_bias_type": by_type,
            "n": len(scores.aligned),
            "scored_in_overall": total,
            "mean_score_more": float(np.mean(scores.more)) if len(scores.more) else None,
            "mean_score_less": float(np.mean(scores.less)) if len(scores.less) else None,
            "skipped": list(scores.skipped),
        }
        convention = {
            **scores.convention,
            "per_sentence_score": self.score,
            "distributions": "stereotype = scores of `more`, anti-stereotype = scores of "
            "`less`, one "
            "Gaussian each per bias type (ddof=1)",
            "overall": "mean over bias types weighted by their number of pairs (types without "
            "a value "
            "left out)",
            "divergences": "nats",
            **self.formula(),
        }
        if total == 0:
            reason = (
                "; ".join(f"{t}: {why}" for t, why in left_out.items()) or "no pair could be scored"
            )
            return Refusal(
                f"no bias type gives a {self.figure}: {reason}",
                figures=figures,
                convention=convention,
                warnings=warnings,
            )
        overall = weighted / total
        figures[self.figure] = overall
        return Measured(
            effect_size=overall, figures=figures, convention=convention, warnings=warnings
        )


@attrs.define
class Kls(_Divergence):
    """KL-divergence score (Liu 2024): per bias type, KLS = 100 * max(KL_sa, KL_as) / (KL_sa +
    KL_as) between Gaussians fitted (ddof=1) to the stereotype and anti-stereotype sentence scores;
    overall, the mean over types weighted by their number of pairs. 50 means no preference.

    Known properties: KLS = 50 whenever sigma_s = sigma_a, whatever the gap between the means (the
    two KL divergences are then equal), so it measures a difference in spread more than a shift.
    Identical distributions give 0/0; that type's KLS is None with the reason, and it is left out of
    the overall score. A type needs at least 2 pairs. The per-sentence score (`score`) is recorded.
    """

    name: ClassVar[str] = "kls"
    summary: ClassVar[str] = (
        "KL-divergence score of stereotype vs anti-stereotype sentence scores (Liu 2024)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "KLS", "KL-divergence score (0-100)", reference=50.0, signed=False, digits=3
    )
    figure: ClassVar[str] = "kls"

    def type_score(
        self, mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
    ) -> tuple[float | None, dict[str, Any], str | None]:
        value, kl_sa, kl_as = kls(mu_s, sigma_s, mu_a, sigma_a)
        reason = (
            None if value is not None else "identical distributions: KL_sa + KL_as = 0, KLS is 0/0"
        )
        return value, {"kl_sa": kl_sa, "kl_as": kl_as}, reason

    def formula(self) -> dict[str, Any]:
        return {
            "formula": "KLS = 100 * max(KL_sa, KL_as) / (KL_sa + KL_as), closed-form Gaussian KL"
        }


@attrs.define
class Jss(_Divergence):
    """Jensen-Shannon score as defined by Liu (2024): JSS = 100 * (1 - J) / (1 + C) per bias type,
    with M = N((mu_s + mu_a)/2, sqrt((sigma_s^2 + sigma_a^2)/2)), J = (KL(s||M) + KL(a||M)) / 2 and
    C = |sigma_s - sigma_a|, both folded to min(x, 1) / max(x, 1); overall, the count-weighted mean.
    Higher means less bias; identical distributions give 100.

    Known properties: M is a Gaussian, not the mixture of the two, so J is not the Jensen-Shannon
    divergence and is not bounded by ln 2; the folding maps J > 1 back below 1, so the reference JSS
    is non-monotone in the gap between the means (it falls, then rises again as the distributions
    move apart). `jss-mixture` computes the true Jensen-Shannon divergence instead."""

    name: ClassVar[str] = "jss"
    summary: ClassVar[str] = (
        "Jensen-Shannon score as defined by Liu (2024) (Gaussian M, folded terms)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "JSS",
        "Jensen-Shannon score (0-100, higher: less bias)",
        reference=100.0,
        signed=False,
        digits=3,
        more_biased="lower",
    )
    figure: ClassVar[str] = "jss"

    def type_score(
        self, mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
    ) -> tuple[float | None, dict[str, Any], str | None]:
        value, j, c = jss_reference(mu_s, sigma_s, mu_a, sigma_a)
        return value, {"J": j, "J_folded": fold(j), "C": c, "C_folded": fold(c)}, None

    def formula(self) -> dict[str, Any]:
        return {
            "formula": "JSS = 100 * (1 - fold(J)) / (1 + fold(C)), M = N(mean of means, "
            "sqrt(mean of "
            "variances)), fold(x) = min(x,1)/max(x,1)"
        }


@attrs.define
class JssMixture(_Divergence):
    """Jensen-Shannon score with the true mixture (a corrected variant of Liu 2024's JSS):
    JSS-mixture = 100 * (1 - JS / ln 2) / (1 + C) per bias type, JS the Jensen-Shannon divergence in
    nats between the two Gaussians with M = (P + Q) / 2 their 50/50 mixture, integrated numerically
    (scipy quad), and C = |sigma_s - sigma_a| folded as in the reference. JS / ln 2 is JS in bits,
    in [0, 1], so no folding is needed and the score falls monotonically as the means move apart.
    Higher means less bias; identical distributions give 100. Overall, the count-weighted mean over
    bias types."""

    name: ClassVar[str] = "jss-mixture"
    summary: ClassVar[str] = (
        "Jensen-Shannon score with the true mixture, numerically integrated (corrected JSS)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "JSS",
        "Jensen-Shannon score, true mixture (0-100, higher: less bias)",
        reference=100.0,
        signed=False,
        digits=3,
        more_biased="lower",
    )
    figure: ClassVar[str] = "jss_mixture"

    def type_score(
        self, mu_s: float, sigma_s: float, mu_a: float, sigma_a: float
    ) -> tuple[float | None, dict[str, Any], str | None]:
        value, js = jss_mixture(mu_s, sigma_s, mu_a, sigma_a)
        return value, {"js_nats": js, "js_bits": js / LN2, "C": abs(sigma_s - sigma_a)}, None

    def formula(self) -> dict[str, Any]:
        return {
            "formula": "100 * (1 - JS/ln 2) / (1 + fold(|sigma_s - sigma_a|)), JS with the 50/50 "
            "mixture by quadrature"
        }
