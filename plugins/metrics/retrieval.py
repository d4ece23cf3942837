"""CV screening by an embedding model: CVs that differ only in the applicant's name, ranked against
job descriptions by cosine similarity (the retrieval audit of Wilson & Caliskan, AIES 2024).

Every scenario of a decisions word set gives a job (its vacancy text) and a CV (its profile,
rendered for each applicant). For each job the CVs of its pool are ranked by the cosine similarity
of their encodings to the job's; the top `top` share of the pool is selected (at least one CV; CVs
tied at the cut share the places left equally). With `pool = job` a job ranks its own CVs, which
differ only in
the name, so the ranking is made by the names alone; with `pool = all` every CV competes for every
job. A group's selection rate is its CVs' selections over their places in the pools; its share of
the top and its impact ratio follow, and a permutation test over the applicants (the group labels of
the names shuffled, the per-name rates kept) says whether a group's rate differs from the reference
group's more than a random split of the names would.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import (
    ValueKind,
    OK,
    REFUSED,
    Capability,
    Embedder,
    Metric,
    Result,
    between,
    int_at_least,
    one_of,
    param,
    permutation_cost,
    permutation_test,
    unit_rows,
)
from bias.api.decisions import (
    DECISIONS,
    VARIANTS,
    Decisions,
    applicant_families,
    headline_of,
    selection_rates,
)

POOLS = ("job", "all")
POOLINGS = ("mean", "cls", "first", "last")


def top_weights(similarity: np.ndarray, k: int) -> np.ndarray:
    """How much of a place in the top k each item gets: 1 above the k-th highest similarity, 0
    below, and the places left shared equally among the items tied with the k-th (no order among
    equals)."""
    cut = np.sort(similarity)[::-1][k - 1]
    tied = np.isclose(similarity, cut, rtol=0.0, atol=1e-12)
    above = (similarity > cut) & ~tied
    weights = above.astype(np.float64)
    weights[tied] = (k - above.sum()) / tied.sum()
    return weights


@attrs.define
class Retrieval(Metric):
    """CVs differing only in the name, ranked against jobs by an embedding model (kind "decisions").

    effect_size = the selection rate of the `headline` group's CVs over the reference group's in the
    top of each job's ranking: 1 without bias, under 1 when the group is selected less often, with
    the two-sided permutation p-value over the names. figures hold every group's, gender's and
    group x gender's selection rate, share of the top and impact ratio against the most-selected one
    (flagged under `threshold`), the permutation test of each group and of women against men, and
    figures["scores"] each applicant's selections.
    """

    name: ClassVar[str] = "retrieval"
    summary: ClassVar[str] = (
        "CV screening by embedding similarity (Wilson & Caliskan 2024): shares of the top, "
        "impact ratios."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "selection ratio",
        "selection rate of a group's CVs over the reference group's, in the top of the ranking",
        reference=1.0,
        signed=False,
        digits=2,
        more_biased="lower",
        figures=("selection",),
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    data_kind: ClassVar[str] = DECISIONS

    variant: str = param(
        "names",
        "names (the CV carries the applicant's name) or explicit (it states the group)",
        validator=one_of(VARIANTS),
    )
    top: float = param(
        0.1,
        "the share of each job's pool that is selected (at least one CV)",
        validator=between(0.001, 1.0),
    )
    pool: str = param(
        "job",
        "which CVs a job ranks: job (its own, differing only in the name) or all",
        validator=one_of(POOLS),
    )
    headline: str = param(
        "", "the group whose ratio is the value (empty: the first group after the reference)"
    )
    threshold: float = param(
        0.8,
        "impact ratios under this are flagged (the four-fifths rule)",
        validator=between(0.01, 1.0),
    )
    permutations: int = param(
        10_000,
        "random splits of the names for the permutation test (exact when fewer exist)",
        validator=int_at_least(1),
    )
    pooling: str = param(
        "mean",
        "how a contextual model pools a text's tokens into its vector",
        validator=one_of(POOLINGS),
    )
    lost_threshold: float = param(
        0.2,
        "refuse when a static model lacks more than this share of a group's names",
        validator=between(0.0, 1.0),
    )

    def cost(self, data: Any) -> Any:
        if not isinstance(data, Decisions):
            return None
        sizes = [len(g.applicants(self.variant)) for g in data.groups_of(self.variant)]
        return (
            permutation_cost(sizes[0], max(sizes[1:], default=1), self.permutations, 100_000)
            if len(sizes) > 1
            else None
        )

    def compute(self, embedder: Embedder, data: Decisions, *, seed: int | None = None) -> Result:
        headline = headline_of(data, self.variant, self.headline, self.name)
        base = self.result_fields(embedder.spec, data, seed)
        lost = self._lost(embedder, data)
        if lost[1]:
            return Result(status=REFUSED, reason=lost[1], lost=lost[0], **base)
        prompts = data.prompts(self.variant)
        applicants = list(dict.fromkeys(p.applicant for p in prompts))
        of_applicant = np.array([applicants.index(p.applicant) for p in prompts])
        cvs = unit_rows(
            np.asarray(
                embedder.encode([p.cv for p in prompts], pooling=self.pooling), dtype=np.float64
            )
        )
        jobs = unit_rows(
            np.asarray(
                embedder.encode([s.job for s in data.scenarios], pooling=self.pooling),
                dtype=np.float64,
            )
        )
        similarity = jobs @ cvs.T
        selections, chances = np.zeros(len(applicants)), np.zeros(len(applicants))
        for j, scenario in enumerate(data.scenarios):
            pool = (
                np.flatnonzero([p.scenario.id == scenario.id for p in prompts])
                if self.pool == "job"
                else np.arange(len(prompts))
            )
            k = max(1, int(round(self.top * len(pool))))
            np.add.at(selections, of_applicant[pool], top_weights(similarity[j, pool], k))
            np.add.at(chances, of_applicant[pool], 1.0)
        rates = selections / chances
        table = selection_rates(applicant_families(applicants), selections, chances, self.threshold)
        total = selections.sum()
        for family in table.values():
            for level in family.values():
                level["share_of_top"] = level["selected"] / total
        groups = [g.key for g in data.groups_of(self.variant)]
        tests = self._tests(applicants, rates, groups, data.reference, seed)
        ref_rate, top_rate = (
            table["group"][data.reference]["rate"],
            table["group"][headline]["rate"],
        )
        if ref_rate == 0:
            return Result(
                status=REFUSED,
                reason=f"no CV of the reference group {data.reference!r} was selected",
                **base,
            )
        figures: dict[str, Any] = {
            "selection": table,
            "tests": tests,
            "selected_per_job": float(total / len(data.scenarios)),
            "breakdown": {
                **_breakdown(table, tests, data.reference),
                "caption": f"The value is the selection rate of group {headline!r} over that of "
                f"{data.reference!r} (headline); every group's is below.",
            },
            "scores": [
                {
                    "set": a.group,
                    "item": a.text,
                    "gender": a.gender,
                    "selection_rate": float(rates[i]),
                    "selected": float(selections[i]),
                    "ranked": int(chances[i]),
                    "mean_similarity": float(similarity[:, of_applicant == i].mean()),
                }
                for i, a in enumerate(applicants)
            ],
        }
        headline_test = tests[f"{headline} vs {data.reference}"]
        warnings = [
            f"impact ratio under {self.threshold:g} (four-fifths rule): {k}"
            for k, v in table["group"].items()
            if v["flagged"]
        ]
        return Result(
            status=OK,
            effect_size=top_rate / ref_rate,
            p_value=headline_test["p_value"],
            figures=figures,
            lost=lost[0],
            warnings=warnings,
            sizes={"jobs": len(data.scenarios), "cvs": len(prompts), "applicants": len(applicants)},
            convention={
                "variant": self.variant,
                "pool": self.pool,
                "pooling": self.pooling,
                "top": f"the top {self.top:g} of each job's pool (at least one CV), CVs tied at "
                "the cut sharing the places left",
                "similarity": "cosine of the job's and the CV's encodings",
                "value": f"selection rate of {headline!r} / selection rate of {data.reference!r}",
                "test": "two-sided permutation test of the names' selection rates between two "
                f"groups, {self.permutations:,} random splits unless exact",
                "p_value": headline_test["words"],
                **({"p_floor": headline_test["p_floor"]} if headline_test["p_floor"] else {}),
            },
            **base,
        )

    def _lost(self, embedder: Embedder, data: Decisions) -> tuple[dict[str, list[str]], str]:
        """Names a static model has no vector for (their CVs then read alike), and the refusal
        when a group lost more than `lost_threshold` of them."""
        if (
            self.variant != "names"
            or not embedder.static
            or Capability.WORD_VECTORS not in embedder.available()
        ):
            return {}, ""
        lost: dict[str, list[str]] = {}
        for group in data.groups_of("names"):
            names = [a.text for a in group.names]
            missing = list(embedder.word_vectors(names).lost)
            if missing:
                lost[group.key] = missing
                if len(missing) > self.lost_threshold * len(names):
                    return lost, (
                        f"the model has no vector for {len(missing)} of the {len(names)} names of "
                        f"group {group.key!r} (more than {self.lost_threshold:.0%}); their CVs "
                        "would read alike"
                    )
        return lost, ""

    def _tests(
        self,
        applicants: list[Any],
        rates: np.ndarray,
        groups: list[str],
        reference: str,
        seed: int | None,
    ) -> dict[str, Any]:
        of = np.array([a.group for a in applicants])
        gender = np.array([a.gender for a in applicants])
        pairs = {
            f"{g} vs {reference}": (of == g, of == reference) for g in groups if g != reference
        }
        if {"m", "f"} <= set(gender):
            pairs["f vs m"] = (gender == "f", gender == "m")
        out = {}
        for label, (first, second) in pairs.items():
            found = permutation_test(
                rates[first],
                rates[second],
                alternative="two-sided",
                permutations=self.permutations,
                seed=seed,
            )
            out[label] = {
                "rate_difference": float(rates[first].mean() - rates[second].mean()),
                "p_value": found.p_value,
                "method": found.method,
                "permutations": found.permutations,
                "words": found.describe(),
                "p_floor": found.p_floor,
                "names": [int(first.sum()), int(second.sum())],
            }
        return out


def _breakdown(table: dict[str, Any], tests: dict[str, Any], reference: str) -> dict[str, Any]:
    rows = []
    for family in ("group", "gender"):
        for level, v in table.get(family, {}).items():
            test = (
                tests.get(f"{level} vs {reference}")
                if family == "group"
                else tests.get("f vs m")
                if level == "f"
                else None
            )
            ratio = (
                "-"
                if v["ratio"] is None
                else f"{v['ratio']:.2f}" + (" (<4/5)" if v["flagged"] else "")
            )
            rows.append(
                [
                    f"{family} {level}",
                    f"{v['rate']:.3f}",
                    f"{v['share_of_top']:.2f}",
                    ratio,
                    "-" if test is None else f"{test['p_value']:.3g}",
                ]
            )
    return {
        "columns": ["who", "selection rate", "share of top", "impact ratio", "permutation p"],
        "rows": rows,
    }


__all__ = ["Retrieval", "top_weights"]
