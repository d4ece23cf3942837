"""LPBS, the log-probability bias score (Kurita, Vyas, Pareek, Black & Tsvetkov 2019).

For a template with a target slot and an attribute slot, e.g. "{Target} is {attribute.article}
{attribute}.":

- p_tgt(t | a): the probability of target t in its slot, the target slot masked and the attribute
  filled;
- p_prior(t): the same with both slots masked, read at the target slot;
- association asc(t, a) = log p_tgt(t | a) - log p_prior(t).

The group score of attribute a in a template is logsumexp_X log p_tgt - logsumexp_Y log p_tgt minus
the same for the prior, and score(a) its mean over the templates that fit a. Everything is in log
space (log_softmax in float64, logsumexp), since products of probabilities underflow. The slots are
found from the character spans the template renderer returns, mapped to tokens through the
tokenizer's offsets, never by searching the text. Every masked sentence of the test is sent to the
embedder at once, which batches them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import ValueKind
from bias.api.association import EFFECT_SIZE_D
from bias.api import (
    LPBS,
    OK,
    REFUSED,
    BiasError,
    Capability,
    Cost,
    Embedder,
    LpbsTest,
    Metric,
    PermutationTest,
    Result,
    between,
    effect_size,
    int_at_least,
    no_spread,
    one_of,
    param,
    permutation_cost,
    permutation_test,
)
from bias.api.association import duplicates_param
from bias.api.lm import (
    ATTRIBUTES,
    MASKED,
    TARGETS,
    LpbsItem,
    LpbsScores,
    computed_once,
    entries,
    group_scores,
    is_truncated,
    listed,
    lm_mode,
    multi_token_words,
    refusal,
    requests,
    slot_positions,
    stimuli,
    template_summary,
)

MULTI_TOKEN = ("joint", "first", "one-mask", "reduce")
UNITS = ("attribute", "target")
PAIRINGS = ("sets", "i-th")
TARGET_NUMBERS = ("any", "singular")


@attrs.define
class Lpbs(Metric):
    """Log-probability bias score (Kurita et al. 2019): an effect size over attributes with a
    two-sided permutation p-value. A positive effect means X is relatively more probable with
    A-attributes and Y with B-attributes (X ~ A, Y ~ B).

    unit = attribute (default): score(a) per attribute (see the module docstring), effect size (mean
    score(A) - mean score(B)) / std score(A u B), permutations over A u B. unit = target: the
    WEAT-like variant, s(t) = mean_A asc(t, a) - mean_B asc(t, b), effect over X u Y; the prior
    cancels in it unless the prior sentence differs between attributes (e.g. their number of
    sub-tokens). Multi-token words: joint masks every sub-token of the slot at once and sums their
    log-probabilities; first replaces the slot by one mask scored against the first piece (the
    compatibility choice of implementations that assume one token per word), and collapses the
    prior's attribute slot to one mask as well (recorded as `prior_attribute_slot`); one-mask also
    gives each slot one mask and reads every sub-token of the target at it, their log-probabilities
    summed (the BIAS Detection Framework's product of probabilities); reduce drops words that are
    not one token in every sentence (the "reduced" sets), reported as lost.

    pairing = sets (default): an attribute's score per template joins all of X and all of Y by
    logsumexp (Kurita et al.). pairing = i-th: the i-th target of X is set against the i-th of Y,
    score(a) = mean over those pairs and the templates of asc(x_i, a) - asc(y_i, a), as the BIAS
    Detection Framework computes it (the longer list is cut to the shorter; the i-th as the file
    lists them, among the targets of one `number`, a repeated pair counted once unless `duplicates =
    keep`). `target_number = singular` drops the targets whose `number` feature is other than
    singular (a word without one stays), and so, in the framework's files, whose templates are
    written per number, the plural lists and templates.

    `lost_threshold` means what it means for WEAT and the other association metrics: a set that
    loses more than this share of its words refuses the test. Here a word can only be lost by
    `reduce` (the lpbs data kind already refuses a word that no template fits). The two sets
    compared need 2 words left, the other two 1 (the framework's files pair one singular target of
    each list).
    """

    name: ClassVar[str] = "lpbs"
    summary: ClassVar[str] = (
        "Log-probability bias score of a masked LM: effect size and permutation p "
        "(Kurita et al. 2019)."
    )
    value: ClassVar[ValueKind] = EFFECT_SIZE_D
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})
    data_kind: ClassVar[str] = LPBS

    multi_token: str = param(
        "joint",
        "words of several sub-tokens: joint (mask all, sum log-probs), first (first piece only), "
        "one-mask (all pieces read at one mask, as the BIAS Detection Framework), "
        "reduce (drop them)",
        validator=one_of(MULTI_TOKEN),
    )
    unit: str = param(
        "attribute",
        "what the effect size compares: attribute (scores of A vs B) or target (WEAT-like, X vs Y)",
        validator=one_of(UNITS),
    )
    pairing: str = param(
        "sets",
        "how an attribute's score joins the targets: sets (logsumexp over X and over Y, "
        "Kurita et al.) or i-th (the i-th X target against the i-th Y target, as the BIAS "
        "Detection Framework)",
        validator=one_of(PAIRINGS),
    )
    target_number: str = param(
        "any",
        "targets scored: any, or singular (drop words whose number feature is not singular, "
        "as the BIAS Detection Framework)",
        validator=one_of(TARGET_NUMBERS),
    )
    duplicates: str = duplicates_param()
    ddof: int = param(
        1, "delta degrees of freedom of the std in the effect size", validator=one_of((0, 1))
    )
    permutations: int = param(
        100_000, "random permutations when the exact test is too large", validator=int_at_least(1)
    )
    exact_limit: int = param(
        100_000,
        "enumerate all partitions when there are at most this many (0: always sample)",
        validator=int_at_least(0),
    )
    lost_threshold: float = param(
        0.2,
        "refuse the test if a set loses more than this share of its words (multi_token = reduce)",
        validator=between(0.0, 1.0),
    )

    def cost(self, data: LpbsTest) -> Cost:
        """The permutation test over the scores of the unit compared (A u B, or X u Y)."""
        first, second = ("A", "B") if self.unit == "attribute" else ("X", "Y")
        data = stimuli(
            data, self.target_number, self.duplicates
        )  # the sets as scored: repeats kept, plural targets left out
        n_1, n_2 = len(getattr(data, first).words), len(getattr(data, second).words)
        return permutation_cost(n_1, n_2, self.permutations, self.exact_limit)

    def compute(self, embedder: Embedder, data: LpbsTest, *, seed: int | None = None) -> Result:
        if not isinstance(data, LpbsTest):
            raise BiasError(
                f"Metric 'lpbs' needs an LPBS test (kind lpbs), not {type(data).__name__}."
            )
        lm_mode(embedder, self.name, (MASKED,))
        data = stimuli(data, self.target_number, self.duplicates)
        for key in TARGETS:
            if not getattr(data, key).words:
                raise BiasError(
                    f"{data.name}: target_number = singular leaves set {key} "
                    f"({getattr(data, key).label}) no target (it lists no "
                    "singular word, or no template is written for one): give it singular "
                    "targets, or set target_number = any."
                )
        items = self._items(embedder, data)
        multi = multi_token_words(items)
        lost: dict[str, list[str]] = {}
        if self.multi_token == "reduce":
            lost = {key: words for key, words in multi.items() if words}
            dropped = {(key, w) for key, words in lost.items() for w in words}
            items = [
                it
                for it in items
                if (it.t_key, it.target) not in dropped and (it.a_key, it.attribute) not in dropped
            ]
        compared = ATTRIBUTES if self.unit == "attribute" else TARGETS
        reason = refusal(data, lost, compared, self.lost_threshold)
        if reason:
            return self.make_result(
                embedder.spec,
                data,
                seed,
                lost=lost,
                status=REFUSED,
                reason=reason,
                figures={"multi_token_words": multi},
            )
        scores = group_scores(
            data, items, *self._score(embedder, items), self.pairing, self.duplicates
        )
        return self._result(embedder, data, seed, scores, multi, lost)

    def _result(
        self,
        embedder: Embedder,
        data: LpbsTest,
        seed: int | None,
        scores: LpbsScores,
        multi: dict[str, list[str]],
        lost: dict[str, list[str]],
    ) -> Result:
        """The effect size of the chosen unit with its permutation p-value, or the refusal when it
        has none."""
        attribute_scores, target_scores = scores.attribute_scores, scores.target_scores
        first, second = ("A", "B") if self.unit == "attribute" else ("X", "Y")
        chosen = attribute_scores if self.unit == "attribute" else target_scores
        s1, s2 = (listed(chosen, data, key) for key in (first, second))
        if len(s1) < 2 or len(s2) < 2:
            return self.make_result(
                embedder.spec,
                data,
                seed,
                lost=lost,
                status=REFUSED,
                reason=f"too few scored {self.unit}s ({first} {len(s1)}, {second} {len(s2)}): "
                "templates must fit each word with words of the other slot from both sets",
            )
        degenerate = no_spread(s1, s2, self.unit, "score")
        if degenerate:
            return self.make_result(
                embedder.spec, data, seed, lost=lost, status=REFUSED, reason=degenerate
            )
        test = permutation_test(
            s1,
            s2,
            alternative="two-sided",
            permutations=self.permutations,
            exact_limit=self.exact_limit,
            seed=seed,
        )
        other = target_scores if self.unit == "attribute" else attribute_scores
        o1, o2 = ("X", "Y") if self.unit == "attribute" else ("A", "B")
        t1, t2 = (listed(other, data, key) for key in (o1, o2))
        other_effect = effect_size(t1, t2, ddof=self.ddof) if len(t1) > 1 and len(t2) > 1 else None
        warnings = []
        if self.multi_token != "reduce" and any(multi.values()):
            words = [w for key in ("X", "Y", "A", "B") for w in multi[key]]
            warnings.append(
                f"{len(words)} word(s) are several sub-tokens, scored by policy "
                f"'{self.multi_token}': {', '.join(words[:8])}"
            )
        if lost:
            warnings.append(
                "dropped as multi-token (reduce): "
                + "; ".join(f"{k}: {', '.join(v)}" for k, v in lost.items())
            )
        templates = template_summary(data, scores)
        both = np.concatenate([s1, s2])
        return self.make_result(
            embedder.spec,
            data,
            seed,
            lost=lost,
            status=OK,
            effect_size=effect_size(s1, s2, ddof=self.ddof),
            p_value=test.p_value,
            figures={
                "attribute_scores": attribute_scores,
                "target_scores": target_scores,
                f"mean_{first}": float(s1.mean()),
                f"mean_{second}": float(s2.mean()),
                "std": float(both.std(ddof=self.ddof)),
                "effect_size_other_unit": other_effect,
                "templates": templates,
                "sentences": scores.sentences,
                "mean_log_p_target": float(scores.log_tgt.mean()),
                "mean_log_p_prior": float(scores.log_prior.mean()),
                "multi_token_words": multi,
                "parametric_p": test.parametric_p,
                "statistic": test.statistic,
            },
            convention=self._convention(test),
            sizes={
                key: len(
                    listed(attribute_scores if key in ATTRIBUTES else target_scores, data, key)
                )
                for key in (*TARGETS, *ATTRIBUTES)
            },
            warnings=warnings,
        )

    def _convention(self, test: PermutationTest) -> dict[str, Any]:
        """The choices behind the numbers: unit, test, and how the sentences were scored."""
        return {
            **test.convention(f"ddof={self.ddof}"),
            "unit": self.unit,
            "ddof": self.ddof,
            "multi_token": self.multi_token,
            "alternative": "two-sided",
            "method": test.method,
            "permutations": test.permutations,
            "exact_limit": self.exact_limit,
            "seed": test.seed,
            "p_estimator": "k/C(N,|A|)" if test.method == "exact" else "(k+1)/(m+1)",
            "score": (
                "log space: mean over the i-th (X, Y) target pairs and the templates of "
                "asc(x_i, a) - asc(y_i, a)"
                if self.pairing == "i-th"
                else "log space: logsumexp_X log p_tgt - logsumexp_Y log p_tgt - (same for the "
                "prior), mean over templates"
            ),
            "prior": "target and attribute slots both masked, read at the target slot",
            "prior_attribute_slot": (
                "one mask: with multi_token=first the attribute word's sub-tokens collapse to a "
                "single mask too (as in the reference code), so the prior does not depend on how "
                "many pieces the attribute has"
                if self.multi_token == "first"
                else "one mask: with multi_token=one-mask every slot is a single mask, as the BIAS "
                "Detection Framework writes it"
                if self.multi_token == "one-mask"
                else "one mask per sub-token of the attribute word"
            ),
            "pairing": self.pairing,
            "target_number": self.target_number,
            "duplicates": self.duplicates,
            "slots": "rendered character spans mapped to tokens through the tokenizer's offsets",
        }

    def _items(self, embedder: Embedder, data: LpbsTest) -> list[LpbsItem]:
        """Every (template, target, attribute) sentence, tokenised once, with its slots located."""
        rendered: list[tuple[int, str, str, str, str, Any]] = []
        for ti, template in enumerate(data.templates):
            for t_key in TARGETS:
                for target in entries(getattr(data, t_key), self.duplicates):
                    for a_key in ATTRIBUTES:
                        for attribute in entries(getattr(data, a_key), self.duplicates):
                            found = data.render(template, target, attribute)
                            if found is not None:
                                rendered.append((ti, t_key, target[0], a_key, attribute[0], found))
        if not rendered:
            raise BiasError(
                f"{data.name}: no template fits any (target, attribute) pair.",
                "Check the templates' `when` conditions and the words' features.",
            )
        texts = list(dict.fromkeys(r[5].text for r in rendered))
        tokens = dict(zip(texts, embedder.tokenize(texts)))
        items = []
        for ti, t_key, t, a_key, a, found in rendered:
            toks = tokens[found.text]
            if is_truncated(found.text, toks):
                raise BiasError(
                    f"{data.name}: the sentence {found.text!r} is longer than the model's limit.",
                    "Shorten the template.",
                )
            t_pos = slot_positions(toks, found.spans["target"])
            a_pos = slot_positions(toks, found.spans["attribute"])
            where = f"{data.name}: template {data.templates[ti].text!r}"
            if not t_pos or not a_pos:
                raise BiasError(
                    f"{where}: the {'target' if not t_pos else 'attribute'} slot covers no token "
                    f"in {found.text!r}."
                )
            if set(t_pos) & set(a_pos):
                raise BiasError(
                    f"{where}: the target and attribute slots share a token in {found.text!r}, "
                    "so one cannot be masked alone.",
                    "Separate the two slots (e.g. by a space) in the template.",
                )
            items.append(LpbsItem(ti, t_key, t, a_key, a, found.text, t_pos, a_pos, toks))
        return items

    def _score(
        self, embedder: Embedder, items: Sequence[LpbsItem]
    ) -> tuple[np.ndarray, np.ndarray]:
        """log p_tgt and log p_prior of every item, from one batched call (identical requests
        once)."""

        plan = [
            requests(it, self.multi_token) for it in items
        ]  # per item: (target request, prior request, positions read)
        found = computed_once(
            [r for parts in plan for tgt, prior, _ in parts for r in (tgt, prior)],
            embedder.masked_log_probs,
        )
        results = iter(found)
        read = [[(next(results), next(results), n) for _, _, n in parts] for parts in plan]
        log_tgt = np.array(
            [sum(t[:n].sum() for t, _, n in parts) for parts in read], dtype=np.float64
        )
        log_prior = np.array(
            [sum(p[:n].sum() for _, p, n in parts) for parts in read], dtype=np.float64
        )
        return log_tgt, log_prior
