"""The WEAT statistics on one matrix of vectors per set, and the conventions every WEAT-style test
shares (WEAT on word vectors, SEAT on sentence vectors).

s(w, A, B) is computed once per target stimulus; the effect size and the permutation test are then
vectorised over that vector (see `bias.core.statistics.association`).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from bias.core.statistics import association as stats
from bias.core.association.lookup import (
    duplicates_param,
    lost_threshold_param,
    lost_word_refusal,
    same_under_case,
)
from bias.core.runs.budget import Cost, bootstrap_cost, permutation_cost
from bias.core.interfaces import Metric
from bias.core.model import OK, REFUSED, AssociationTest, Result
from bias.core.params import between, int_at_least, one_of, param
from bias.core.values import ValueKind

# WEAT's effect size, which SEAT and LPBS report too.
EFFECT_SIZE_D = ValueKind(
    "d",
    "effect size d",
    reference=0.0,
    scale="d",
    meaning="d > 0: X closer to A and Y closer to B (Cohen's d of the association s(w)).",
)


@attrs.define
class AssociationConventions(Metric):
    """The conventions every WEAT-style test shares (WEAT, SEAT): the permutation test, the std of
    the effect size, the lost-word threshold and the bootstrap interval, declared once."""

    permutations: int = param(
        100_000,
        "random permutations when the exact test is too large",
        validator=int_at_least(1, "For example --permutations 100000."),
    )
    exact_limit: int = param(
        100_000,
        "enumerate all partitions when there are at most this many (0: always sample)",
        validator=int_at_least(0),
    )
    ddof: int = param(
        1,
        "delta degrees of freedom of the std in the effect size (1: SEAT/CEAT, 0: WEFE)",
        validator=one_of((0, 1), "1 (sample std) is the SEAT/CEAT convention, 0 that of WEFE."),
    )
    alternative: str = param(
        "greater",
        "greater (X~A, one-sided), less, or two-sided",
        validator=one_of(stats.ALTERNATIVES),
    )
    ties: str = param(
        "counted",
        "permutation p counts partitions at least as extreme (counted: >=, the observed "
        "one included, as "
        "sent-bias) or only more extreme (strict: >, as the WEAT paper writes; an exact p "
        "can then be 0)",
        validator=one_of(stats.TIES),
    )
    lost_threshold: float = lost_threshold_param()
    bootstrap: int = param(
        2000,
        "bootstrap resamples of the stimuli for a confidence interval of the effect size (0: none)",
        validator=int_at_least(0, "For example --bootstrap 2000, or 0 to skip the interval."),
    )
    ci_level: float = param(
        0.95, "confidence level of the bootstrap interval", validator=between(0.5, 0.999)
    )
    ci_method: str = param(
        "bca",
        "bootstrap interval: bca (bias-corrected and accelerated) or percentile",
        validator=one_of(("bca", "percentile")),
    )
    duplicates: str = duplicates_param()

    def cost(self, data: AssociationTest) -> Cost:
        """The permutation test over X u Y (exact or sampled) and the bootstrap of the effect
        size."""
        sizes = {key: len(wl.words) for key, wl in data.sets().items()}
        return permutation_cost(
            sizes["X"], sizes["Y"], self.permutations, self.exact_limit
        ) + bootstrap_cost(sizes, self.bootstrap)

    def stimuli(self, data: AssociationTest) -> AssociationTest:
        """The test with repeated stimuli kept when `duplicates = "keep"`, else as loaded (repeats
        dropped). Repeats are case-sensitive, unless the run looks words up lowercased (`case =
        lower`): then `Paradiso` and `paradiso` are one word listed twice."""
        data = same_under_case(data, getattr(self, "case", "exact"))
        return data.with_duplicates() if self.duplicates == "keep" else data


def association_result(
    metric: AssociationConventions,
    matrices: Mapping[str, np.ndarray],
    data: AssociationTest,
    *,
    model: str,
    seed: int | None,
    lost: Mapping[str, list[str]],
    approximated: Mapping[str, list[str]] | None = None,
    words: Mapping[str, list[str]] | None = None,
    source_words: Mapping[str, list[str]] | None = None,
) -> Result:
    """The WEAT figures from one matrix of vectors per set (rows in the order of `words`).

    `source_words` gives, for stimuli that are sentences (SEAT), the word each sentence was built
    for; the per-item scores s(w) then name both."""
    sizes = {key: int(m.shape[0]) for key, m in matrices.items()}
    originals = {key: len(wl.words) for key, wl in data.sets().items()}
    base = {
        "sizes": sizes,
        "lost": {k: list(v) for k, v in lost.items() if v},
        "approximated": {k: list(v) for k, v in (approximated or {}).items() if v},
    }
    reason = lost_word_refusal(matrices, originals, lost, metric.lost_threshold, words)
    if reason:
        return metric.make_result(model, data, seed, status=REFUSED, reason=reason, **base)

    s = {
        key: stats.association_scores(matrices[key], matrices["A"], matrices["B"])
        for key in ("X", "Y")
    }
    degenerate = stats.no_spread(s["X"], s["Y"], "target word", "association score s(w)")
    if degenerate:
        return metric.make_result(
            model,
            data,
            seed,
            status=REFUSED,
            reason=degenerate
            + "; the targets' vectors do not differ (e.g. one shared vector, or a pooling "
            "that gives "
            "every sentence the same vector)",
            **base,
        )
    test = stats.permutation_test(
        s["X"],
        s["Y"],
        alternative=metric.alternative,
        permutations=metric.permutations,
        exact_limit=metric.exact_limit,
        seed=seed,
        ties=metric.ties,
    )
    warnings = []
    equal = sizes["X"] == sizes["Y"]
    if not equal:
        warnings.append(
            f"targets differ in size (X {sizes['X']}, Y {sizes['Y']}): partitions keep the "
            "observed sizes"
            + (
                ", and the two-sided test measures distance from the null mean"
                if test.alternative == "two-sided"
                else ""
            )
        )
    repeats = data.repeats() if hasattr(data, "repeats") else {}
    if repeats:
        how = "kept (each copy counts)" if metric.duplicates == "keep" else "dropped (counted once)"
        listed = "; ".join(
            f"{key}: " + ", ".join(f"{w} x{n}" for w, n in found.items())
            for key, found in repeats.items()
        )
        warnings.append(f"repeated stimuli {how}: {listed}")
    if base["approximated"]:
        n = sum(len(v) for v in base["approximated"].values())
        warnings.append(f"{n} word(s) had no vector of their own and were built from sub-words")
    both = np.concatenate([s["X"], s["Y"]])
    ci = _bootstrap_figures(metric, matrices, seed)
    scores = []
    if words:
        for key in ("X", "Y"):
            for i, item in enumerate(words[key]):
                row = {"set": key, "item": item}
                if source_words:
                    row["word"] = source_words[key][i]
                row["s"] = float(s[key][i])
                scores.append(row)
    return metric.make_result(
        model,
        data,
        seed,
        status=OK,
        effect_size=stats.effect_size(s["X"], s["Y"], ddof=metric.ddof),
        p_value=test.p_value,
        figures={
            "statistic": test.statistic,
            "mean_s_X": float(s["X"].mean()),
            "mean_s_Y": float(s["Y"].mean()),
            "std_s": float(both.std(ddof=metric.ddof)),
            "parametric_p": test.parametric_p,
            "null_mean": test.null_mean,
            "null_std": test.null_std,
            **ci,
            **(
                {"scores": scores} if scores else {}
            ),  # s(w, A, B) per target stimulus: written as a CSV beside the results
        },
        convention={
            "ddof": metric.ddof,
            **test.convention(f"ddof={metric.ddof}"),
            "exact_limit": metric.exact_limit,
            "partitions": "equal sizes" if equal else f"observed sizes {sizes['X']}/{sizes['Y']}",
            "ties": metric.ties,
            "comparison": (">" if metric.ties == "strict" else ">=")
            + (
                " (the observed partition is among the N)"
                if test.method == "exact"
                else " (the observed statistic adds 1)"
            ),
            "parametric_p": "figures.parametric_p: normal approximation, a normal with the "
            "mean and std "
            "(ddof=1) "
            f"of the {'enumerated' if test.method == 'exact' else 'sampled'} null "
            "statistics, same alternative; "
            "for comparison only, p_value is the permutation p",
            **({"case": metric.case} if hasattr(metric, "case") else {}),  # SEAT looks no word up
            "duplicates": metric.duplicates,
            **({"bootstrap": "stimuli resampled within X, Y, A and B"} if ci else {}),
        },
        warnings=warnings,
        **base,
    )


def _bootstrap_figures(
    metric: AssociationConventions, matrices: Mapping[str, np.ndarray], seed: int | None
) -> dict[str, object]:
    """ci_low, ci_high, ci_method, ci_level, ci_resamples of the effect size (empty when `bootstrap`
    is 0).

    The cosine matrices X.A, X.B, Y.A, Y.B are computed once; resamples only reweight them, so 2,000
    resamples of a 25 x 25 test take milliseconds (benchmarks/bench_bootstrap.py)."""
    from bias.core.statistics import bootstrap

    resamples = metric.bootstrap
    if not resamples:
        return {}
    if seed is None:  # unseeded runs still record the seed that reproduces their interval
        seed = stats.fresh_seed()
    blocks = bootstrap.cosine_blocks(matrices["X"], matrices["Y"], matrices["A"], matrices["B"])
    interval = bootstrap.association_ci(
        *blocks,
        ddof=metric.ddof,
        resamples=resamples,
        seed=seed,
        level=metric.ci_level,
        method=metric.ci_method,
    )
    return {**interval.figures(), "ci_seed": seed}
