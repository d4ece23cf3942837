"""LPBS, the log-probability bias score (Kurita, Vyas, Pareek, Black & Tsvetkov 2019).

For a template with a target slot and an attribute slot, e.g. "{Target} is {attribute.article}
{attribute}.":

- p_tgt(t | a): the probability of target t in its slot, the target slot masked and the attribute filled;
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

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from scipy.special import logsumexp

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
    MaskedRequest,
    Metric,
    PermutationTest,
    Result,
    Tokens,
    WordList,
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
from bias.api.lm import ATTRIBUTES, MASKED, TARGETS, computed_once, is_truncated, lm_mode

MULTI_TOKEN = ("joint", "first", "one-mask", "reduce")
UNITS = ("attribute", "target")
PAIRINGS = ("sets", "i-th")
TARGET_NUMBERS = ("any", "singular")


@attrs.frozen
class _Item:
    """One rendered sentence: which template, target and attribute, and where their slots are."""

    template: int
    t_key: str
    target: str
    a_key: str
    attribute: str
    text: str
    t_pos: tuple[int, ...]
    a_pos: tuple[int, ...]
    tokens: Tokens


def slot_positions(tokens: Tokens, span: tuple[int, int]) -> tuple[int, ...]:
    """The non-special tokens whose characters overlap the slot's span [start, end)."""
    start, end = span
    return tuple(
        i
        for i, ((a, b), s) in enumerate(zip(tokens.offsets, tokens.special))
        if not s and b > a and a < end and b > start
    )


def _multi_token_words(items: Sequence[_Item]) -> dict[str, list[str]]:
    """The words of each set (X, Y, A, B) that are several sub-tokens in at least one sentence."""
    pieces: dict[str, dict[str, int]] = {key: {} for key in ("X", "Y", "A", "B")}
    for it in items:
        pieces[it.t_key][it.target] = max(pieces[it.t_key].get(it.target, 0), len(it.t_pos))
        pieces[it.a_key][it.attribute] = max(pieces[it.a_key].get(it.attribute, 0), len(it.a_pos))
    return {key: [w for w, n in found.items() if n > 1] for key, found in pieces.items()}


@attrs.frozen
class _Scores:
    """What the scoring of a test's sentences found, for the result."""

    sentences: int
    log_tgt: np.ndarray = attrs.field(eq=False)
    log_prior: np.ndarray = attrs.field(eq=False)
    attribute_scores: dict[str, dict[str, float]]
    target_scores: dict[str, dict[str, float]]
    template_rows: dict[
        int, dict[str, list[float]]
    ]  # template -> group scores of its A and B attributes


def _collapse(ids: Sequence[int], positions: Sequence[int]) -> tuple[list[int], int]:
    """The ids with a slot's sub-tokens replaced by its first piece alone, and that piece's position."""
    first, last = positions[0], positions[-1]
    return list(ids[:first]) + [ids[first]] + list(ids[last + 1 :]), first


def _one_slot_each(it: _Item) -> tuple[list[int], int, list[int], int, int]:
    """The sentence with each slot cut to its first piece: the ids with only the target slot cut and its
    position, the ids with both cut and the target's and attribute's positions there."""
    one, t0 = _collapse(it.tokens.ids, it.t_pos)
    both = list(it.tokens.ids)
    # collapse the later slot first so the earlier slot's position stays valid
    for pos in sorted((it.t_pos, it.a_pos), key=lambda p: -p[0]):
        both, _ = _collapse(both, pos)
    t_first = it.t_pos[0] if it.t_pos[0] < it.a_pos[0] else it.t_pos[0] - (len(it.a_pos) - 1)
    a_first = it.a_pos[0] if it.a_pos[0] < it.t_pos[0] else it.a_pos[0] - (len(it.t_pos) - 1)
    return one, t0, both, t_first, a_first


def _number(features: dict[str, str]) -> str:
    return features.get("number", "singular")  # a word without one counts as singular


def _listed(scores: dict[str, dict[str, float]], data: LpbsTest, key: str) -> np.ndarray:
    """The scores of a set's words in its order, a word listed twice counted twice (`duplicates = keep`)."""
    found = scores[key]
    return np.array([found[w] for w in getattr(data, key).words if w in found], dtype=np.float64)


@attrs.define
class Lpbs(Metric):
    """Log-probability bias score (Kurita et al. 2019): an effect size over attributes with a two-sided
    permutation p-value. A positive effect means X is relatively more probable with A-attributes and Y
    with B-attributes (X ~ A, Y ~ B).

    unit = attribute (default): score(a) per attribute (see the module docstring), effect size
    (mean score(A) - mean score(B)) / std score(A u B), permutations over A u B. unit = target: the
    WEAT-like variant, s(t) = mean_A asc(t, a) - mean_B asc(t, b), effect over X u Y; the prior cancels
    in it unless the prior sentence differs between attributes (e.g. their number of sub-tokens).
    Multi-token words: joint masks every sub-token of the slot at once and sums their log-probabilities;
    first replaces the slot by one mask scored against the first piece (the compatibility choice of
    implementations that assume one token per word), and collapses the prior's attribute slot to one
    mask as well (recorded as `prior_attribute_slot`); one-mask also gives each slot one mask and reads
    every sub-token of the target at it, their log-probabilities summed (the BIAS Detection Framework's
    product of probabilities); reduce drops words that are not one token in every sentence (the
    "reduced" sets), reported as lost.

    pairing = sets (default): an attribute's score per template joins all of X and all of Y by
    logsumexp (Kurita et al.). pairing = i-th: the i-th target of X is set against the i-th of Y,
    score(a) = mean over those pairs and the templates of asc(x_i, a) - asc(y_i, a), as the BIAS
    Detection Framework computes it (the longer list is cut to the shorter; the i-th as the file lists
    them, among the targets of one `number`, a repeated pair counted once unless `duplicates = keep`). `target_number = singular` drops
    the targets whose `number` feature is other than singular (a word without one stays), and so, in
    the framework's files, whose templates are written per number, the plural lists and templates.

    `lost_threshold` means what it means for WEAT and the other association metrics: a set that loses
    more than this share of its words refuses the test. Here a word can only be lost by `reduce` (the
    lpbs data kind already refuses a word that no template fits). The two sets compared need 2 words
    left, the other two 1 (the framework's files pair one singular target of each list).
    """

    name: ClassVar[str] = "lpbs"
    summary: ClassVar[str] = (
        "Log-probability bias score of a masked LM: effect size and permutation p (Kurita et al. 2019)."
    )
    value: ClassVar[ValueKind] = EFFECT_SIZE_D
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})
    data_kind: ClassVar[str] = LPBS

    multi_token: str = param(
        "joint",
        "words of several sub-tokens: joint (mask all, sum log-probs), first (first piece only), "
        "one-mask (all pieces read at one mask, as the BIAS Detection Framework), reduce (drop them)",
        validator=one_of(MULTI_TOKEN),
    )
    unit: str = param(
        "attribute",
        "what the effect size compares: attribute (scores of A vs B) or target (WEAT-like, X vs Y)",
        validator=one_of(UNITS),
    )
    pairing: str = param(
        "sets",
        "how an attribute's score joins the targets: sets (logsumexp over X and over Y, Kurita et al.) "
        "or i-th (the i-th X target against the i-th Y target, as the BIAS Detection Framework)",
        validator=one_of(PAIRINGS),
    )
    target_number: str = param(
        "any",
        "targets scored: any, or singular (drop words whose number feature is not singular, as the BIAS Detection Framework)",
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
        data = self._stimuli(data)  # the sets as scored: repeats kept, plural targets left out
        n_1, n_2 = len(getattr(data, first).words), len(getattr(data, second).words)
        return permutation_cost(n_1, n_2, self.permutations, self.exact_limit)

    def compute(self, embedder: Embedder, data: LpbsTest, *, seed: int | None = None) -> Result:
        if not isinstance(data, LpbsTest):
            raise BiasError(
                f"Metric 'lpbs' needs an LPBS test (kind lpbs), not {type(data).__name__}."
            )
        lm_mode(embedder, self.name, (MASKED,))
        data = self._stimuli(data)
        for key in TARGETS:
            if not getattr(data, key).words:
                raise BiasError(
                    f"{data.name}: target_number = singular leaves set {key} ({getattr(data, key).label}) no target (it lists no "
                    "singular word, or no template is written for one): give it singular targets, or set target_number = any."
                )
        items = self._items(embedder, data)
        multi = _multi_token_words(items)
        lost: dict[str, list[str]] = {}
        if self.multi_token == "reduce":
            lost = {key: words for key, words in multi.items() if words}
            dropped = {(key, w) for key, words in lost.items() for w in words}
            items = [
                it
                for it in items
                if (it.t_key, it.target) not in dropped and (it.a_key, it.attribute) not in dropped
            ]
        reason = self._refusal(data, lost)
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
        scores = self._group_scores(data, items, *self._score(embedder, items))
        return self._result(embedder, data, seed, scores, multi, lost)

    def _stimuli(self, data: LpbsTest) -> LpbsTest:
        """The test as scored: each listed copy of a stimulus with `duplicates = keep`, and only the
        singular targets with `target_number = singular`."""
        sets = data.sets()
        if self.target_number == "singular":
            # by entry, not by word: a word listed as singular and as plural keeps its singular entry only
            for key in TARGETS:
                sets[key] = sets[key].with_entries(
                    [(w, f) for w, f in sets[key].entries() if _number(f) == "singular"]
                )
        if self.duplicates == "keep":
            sets = {key: wl.with_duplicates() for key, wl in sets.items()}
        return attrs.evolve(data, **sets)

    def _entries(self, wl: WordList) -> list[tuple[str, dict[str, str]]]:
        """The (word, features) a set's sentences are rendered for: each listed entry with `duplicates =
        keep`, else each distinct one (a word that is singular and plural has two)."""
        if self.duplicates == "keep":
            return wl.entries()
        return list({(w, tuple(sorted(f.items()))): (w, f) for w, f in wl.entries()}.values())

    def _group_scores(
        self, data: LpbsTest, items: Sequence[_Item], log_tgt: np.ndarray, log_prior: np.ndarray
    ) -> _Scores:
        """The score of every attribute (see `pairing`), its mean per template, and the WEAT-like score
        of every target from its associations."""
        asc = log_tgt - log_prior
        joined = self._paired if self.pairing == "i-th" else self._sets
        values, per_template = joined(data, items, log_tgt, log_prior)
        template_rows: dict[int, dict[str, list[float]]] = defaultdict(lambda: {"A": [], "B": []})
        for a_key in ATTRIBUTES:
            for a in getattr(
                data, a_key
            ).words:  # each copy a set lists (`duplicates = keep`) counts
                for t in range(len(data.templates)):
                    if (t, a) in per_template:
                        template_rows[t][a_key].append(per_template[(t, a)])
        attribute_scores = {
            key: {a: float(np.mean(values[a])) for a in getattr(data, key).words if values.get(a)}
            for key in ATTRIBUTES
        }
        pair_asc: dict[tuple[str, str], list[float]] = defaultdict(list)
        for i, it in enumerate(items):
            pair_asc[(it.target, it.attribute)].append(float(asc[i]))
        target_scores: dict[str, dict[str, float]] = {}
        for key in TARGETS:
            target_scores[key] = {}
            for t in getattr(data, key).words:
                mean_a = [
                    np.mean(pair_asc[(t, a)])
                    for a in data.A.words
                    if a in attribute_scores["A"] and pair_asc.get((t, a))
                ]
                mean_b = [
                    np.mean(pair_asc[(t, b)])
                    for b in data.B.words
                    if b in attribute_scores["B"] and pair_asc.get((t, b))
                ]
                if mean_a and mean_b:
                    target_scores[key][t] = float(np.mean(mean_a) - np.mean(mean_b))
        return _Scores(
            len(items), log_tgt, log_prior, attribute_scores, target_scores, dict(template_rows)
        )

    def _sets(
        self, data: LpbsTest, items: Sequence[_Item], log_tgt: np.ndarray, log_prior: np.ndarray
    ) -> tuple[dict[str, list[float]], dict[tuple[int, str], float]]:
        """Kurita et al.: per (template, attribute), logsumexp over X minus over Y of log p_tgt, minus
        the same for the prior; the values of each attribute, and its value in each template."""
        groups: dict[tuple[int, str], dict[str, list[int]]] = defaultdict(
            lambda: {"X": [], "Y": []}
        )
        for i, it in enumerate(items):
            groups[(it.template, it.attribute)][it.t_key].append(i)
        values: dict[str, list[float]] = defaultdict(list)
        per_template: dict[tuple[int, str], float] = {}
        for (template, attribute), members in groups.items():
            if not members["X"] or not members["Y"]:
                continue
            x, y = members["X"], members["Y"]
            value = (logsumexp(log_tgt[x]) - logsumexp(log_tgt[y])) - (
                logsumexp(log_prior[x]) - logsumexp(log_prior[y])
            )
            values[attribute].append(float(value))
            per_template[(template, attribute)] = float(value)
        return values, per_template

    def _paired(
        self, data: LpbsTest, items: Sequence[_Item], log_tgt: np.ndarray, log_prior: np.ndarray
    ) -> tuple[dict[str, list[float]], dict[tuple[int, str], float]]:
        """The BIAS Detection Framework: asc(x_i, a) - asc(y_i, a) for the i-th targets of X and Y in
        every template that fits both; the values of each attribute (their mean is its score), and its
        value in each template (the mean over the pairs). The i-th target is the file's, among the
        targets of its number (singular unless told): pairs are formed on the lists as listed, and with
        `duplicates = drop` a pair listed twice counts once."""
        asc = log_tgt - log_prior
        index = {(it.template, it.t_key, it.target, it.attribute): i for i, it in enumerate(items)}
        numbered: dict[str, dict[str, list[str]]] = {"X": defaultdict(list), "Y": defaultdict(list)}
        for key in TARGETS:
            for w, f in getattr(data, key).entries():
                numbered[key][_number(f)].append(w)
        pairs = [
            pair
            for number, xs in numbered["X"].items()
            for pair in zip(xs, numbered["Y"].get(number, []))
        ]
        if self.duplicates == "drop":
            pairs = list(dict.fromkeys(pairs))
        values: dict[str, list[float]] = defaultdict(list)
        per_template: dict[tuple[int, str], float] = {}
        for a in dict.fromkeys(data.A.words + data.B.words):
            for t in range(len(data.templates)):
                found = [
                    float(asc[index[(t, "X", x, a)]] - asc[index[(t, "Y", y, a)]])
                    for x, y in pairs
                    if (t, "X", x, a) in index and (t, "Y", y, a) in index
                ]
                if found:
                    values[a].extend(found)
                    per_template[(t, a)] = float(np.mean(found))
        return values, per_template

    def _result(
        self,
        embedder: Embedder,
        data: LpbsTest,
        seed: int | None,
        scores: _Scores,
        multi: dict[str, list[str]],
        lost: dict[str, list[str]],
    ) -> Result:
        """The effect size of the chosen unit with its permutation p-value, or the refusal when it has none."""
        attribute_scores, target_scores = scores.attribute_scores, scores.target_scores
        first, second = ("A", "B") if self.unit == "attribute" else ("X", "Y")
        chosen = attribute_scores if self.unit == "attribute" else target_scores
        s1, s2 = (_listed(chosen, data, key) for key in (first, second))
        if len(s1) < 2 or len(s2) < 2:
            return self.make_result(
                embedder.spec,
                data,
                seed,
                lost=lost,
                status=REFUSED,
                reason=f"too few scored {self.unit}s ({first} {len(s1)}, {second} {len(s2)}): templates must fit each word with words of the other slot from both sets",
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
        t1, t2 = (_listed(other, data, key) for key in (o1, o2))
        other_effect = effect_size(t1, t2, ddof=self.ddof) if len(t1) > 1 and len(t2) > 1 else None
        warnings = []
        if self.multi_token != "reduce" and any(multi.values()):
            words = [w for key in ("X", "Y", "A", "B") for w in multi[key]]
            warnings.append(
                f"{len(words)} word(s) are several sub-tokens, scored by policy '{self.multi_token}': {', '.join(words[:8])}"
            )
        if lost:
            warnings.append(
                "dropped as multi-token (reduce): "
                + "; ".join(f"{k}: {', '.join(v)}" for k, v in lost.items())
            )
        templates = [
            {
                "template": data.templates[t].text,
                "group_scores": len(rows["A"]) + len(rows["B"]),
                "mean_score_A": float(np.mean(rows["A"])) if rows["A"] else None,
                "mean_score_B": float(np.mean(rows["B"])) if rows["B"] else None,
                "difference": float(np.mean(rows["A"]) - np.mean(rows["B"]))
                if rows["A"] and rows["B"]
                else None,
            }
            for t, rows in sorted(scores.template_rows.items())
        ]
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
                    _listed(attribute_scores if key in ATTRIBUTES else target_scores, data, key)
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
                "log space: mean over the i-th (X, Y) target pairs and the templates of asc(x_i, a) - asc(y_i, a)"
                if self.pairing == "i-th"
                else "log space: logsumexp_X log p_tgt - logsumexp_Y log p_tgt - (same for the prior), mean over templates"
            ),
            "prior": "target and attribute slots both masked, read at the target slot",
            "prior_attribute_slot": (
                "one mask: with multi_token=first the attribute word's sub-tokens collapse to a single mask too "
                "(as in the reference code), so the prior does not depend on how many pieces the attribute has"
                if self.multi_token == "first"
                else "one mask: with multi_token=one-mask every slot is a single mask, as the BIAS Detection Framework writes it"
                if self.multi_token == "one-mask"
                else "one mask per sub-token of the attribute word"
            ),
            "pairing": self.pairing,
            "target_number": self.target_number,
            "duplicates": self.duplicates,
            "slots": "rendered character spans mapped to tokens through the tokenizer's offsets",
        }

    def _refusal(self, data: LpbsTest, lost: dict[str, list[str]]) -> str | None:
        """Why the test is refused after dropping multi-token words, if it is (see `lost_threshold`): the
        sets compared (A, B, or X, Y with unit = target) need 2 words left, the other two 1."""
        compared = ATTRIBUTES if self.unit == "attribute" else TARGETS
        for key, wl in data.sets().items():
            n, gone = (
                len(wl.words),
                sum(w in lost.get(key, []) for w in wl.words),
            )  # each listed copy
            share, needed = (gone / n if n else 0.0), (2 if key in compared else 1)
            if gone and (share > self.lost_threshold or n - gone < needed):
                return (
                    f"set {key} lost {gone} of {n} words as multi-token ({share:.0%}; at most "
                    f"{self.lost_threshold:.0%} allowed, and {needed} word{'s' if needed > 1 else ''} needed): {', '.join(lost[key][:8])}"
                )
            if n < needed:
                return f"set {key} has {n} word{'s' if n != 1 else ''}; {needed} needed"
        return None

    def _items(self, embedder: Embedder, data: LpbsTest) -> list[_Item]:
        """Every (template, target, attribute) sentence, tokenised once, with its slots located."""
        rendered: list[tuple[int, str, str, str, str, Any]] = []
        for ti, template in enumerate(data.templates):
            for t_key in TARGETS:
                for target in self._entries(getattr(data, t_key)):
                    for a_key in ATTRIBUTES:
                        for attribute in self._entries(getattr(data, a_key)):
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
                    f"{where}: the {'target' if not t_pos else 'attribute'} slot covers no token in {found.text!r}."
                )
            if set(t_pos) & set(a_pos):
                raise BiasError(
                    f"{where}: the target and attribute slots share a token in {found.text!r}, so one cannot be masked alone.",
                    "Separate the two slots (e.g. by a space) in the template.",
                )
            items.append(_Item(ti, t_key, t, a_key, a, found.text, t_pos, a_pos, toks))
        return items

    def _score(self, embedder: Embedder, items: Sequence[_Item]) -> tuple[np.ndarray, np.ndarray]:
        """log p_tgt and log p_prior of every item, from one batched call (identical requests once)."""
        plan = [
            self._requests(it) for it in items
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

    def _requests(self, it: _Item) -> list[tuple[MaskedRequest, MaskedRequest, int]]:
        """The masked inputs of an item's p_tgt and p_prior, and how many of their first positions are
        the target's. `one-mask` asks once per sub-token of the target, the piece under the one mask
        being what is read there; the model sees one input for them all."""
        if self.multi_token in ("joint", "reduce"):
            return [
                (
                    MaskedRequest(it.tokens.ids, it.t_pos),
                    MaskedRequest(it.tokens.ids, it.t_pos + it.a_pos),
                    len(it.t_pos),
                )
            ]
        one, t0, both, t_first, a_first = _one_slot_each(it)
        pieces = (
            [it.tokens.ids[it.t_pos[0]]]
            if self.multi_token == "first"
            else [it.tokens.ids[p] for p in it.t_pos]
        )
        out = []
        for piece in pieces:
            one[t0], both[t_first] = piece, piece
            out.append(
                (
                    MaskedRequest(tuple(one), (t0,)),
                    MaskedRequest(tuple(both), (t_first, a_first)),
                    1,
                )
            )
        return out
