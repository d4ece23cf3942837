"""Sentence-pair metrics: the CrowS-Pairs score (Nangia et al. 2020) and the StereoSet-style score (SSS),
plus the pair scoring that AUL/AULA and KLS/JSS share.

Every pair (more, less) is tokenised by the model's own tokenizer and aligned on token ids with
difflib's opcodes: 'equal' runs are the shared (unmodified) tokens U, the rest of each sentence its
modified tokens M; special tokens are in neither. Per-sentence scores:

- pll (CrowS): sum over u in U of log P(u | S with u masked), one mask at a time, the modified tokens
  visible. All masked variants of all sentences go to the embedder at once, which batches them.
- sss: mean over m in M of log P(m | S with m masked), each modified token masked in turn (the
  diagonal: a token is scored at its own position, never against the other modified positions);
  `masking = joint` masks all of M at once, conditioning on the unmodified tokens only.
- aul / aula (see `aul.py`): the unmasked sentence, mean over tokens of log P(w_i | S), AULA weighting
  each term by the attention the token receives.
- causal LMs: the sentence log-likelihood, sum (or mean) over its tokens of log P(w_i | w_<i), the
  model's BOS token (else EOS) put before the sentence when the tokenizer adds no start token, so the
  first word is scored too (as bias-bench and lm-evaluation-harness do); recorded as `causal_start`.

A pair counts as biased when score(more) > score(less); for antistereo rows the same comparison
holds (the reference code swaps the sentences and the comparison, and the two swaps cancel). Ties
count in N as not biased, and are reported.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder, MaskedRequest, Metric, Tokens
from bias.core.model import OK, PAIRS, REFUSED, Result
from bias.core.pairs import DIRECTIONS, PairSet, SentencePair
from bias.core.params import one_of, param

MASKED, CAUSAL = "masked", "causal"
METHODS = ("pll", "sss", "aul", "aula")
LOWERCASE = ("auto", "yes", "no")
LIKELIHOODS = ("sum", "mean")
PRESETS = ("none", "nangia2020")
SSS_MASKING = ("each", "joint")
# Metrics by what they need, for the message that refuses a model.
_FOR_MASKED = "lpbs, crows, sss, aul, aula, kls, jss, jss-mixture"
_FOR_CAUSAL = "crows, aul, kls, jss, jss-mixture (with sentence log-likelihoods)"
_FOR_VECTORS = "weat, seat, ceat and the other vector metrics"


def lm_mode(embedder: Embedder, metric: str, allowed: Sequence[str] = (MASKED, CAUSAL)) -> str:
    """"masked" or "causal": which kind of language model serves this metric; a BiasError naming the
    metrics that would work when the model offers neither the metric can use."""
    have = embedder.available()
    if MASKED in allowed and Capability.MASKED_LM in have:
        return MASKED
    if CAUSAL in allowed and Capability.CAUSAL_LM in have:
        return CAUSAL
    needs = "a masked language model" + (" or a causal one" if CAUSAL in allowed else "")
    offers = ", ".join(sorted(c.value for c in have)) or "nothing"
    if Capability.CAUSAL_LM in have:
        fitting = _FOR_CAUSAL
    elif Capability.MASKED_LM in have:
        fitting = _FOR_MASKED
    else:
        fitting = _FOR_VECTORS
    raise BiasError(
        f"Metric '{metric}' needs {needs} (with its LM head); the model {embedder.spec} offers {offers}.",
        f"Metrics that work with this model: {fitting}.",
    )


def decide_lowercase(embedder: Embedder, policy: str) -> bool:
    """Whether to lowercase sentences first: yes/no as asked; auto asks the embedder (`uncased`), else
    tests whether its tokenizer maps a capital letter to the small one."""
    if policy == "yes":
        return True
    if policy == "no":
        return False
    flag = getattr(embedder, "uncased", None)
    if isinstance(flag, bool):
        return flag
    probe = embedder.tokenize(["A", "a", "Z", "z"])
    plain = [tuple(i for i, s in zip(t.ids, t.special) if not s) for t in probe]
    return all(plain) and plain[0] == plain[1] and plain[2] == plain[3]


def align(a: Tokens, b: Tokens) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Shared positions of a and b (pairwise aligned) and the modified positions of each.

    difflib's 'equal' opcodes on the token ids, special tokens excluded; autojunk off, so long
    sentences are aligned exactly rather than with difflib's popularity heuristic.
    """
    matcher = difflib.SequenceMatcher(None, list(a.ids), list(b.ids), autojunk=False)
    shared_a: list[int] = []
    shared_b: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            if not a.special[i] and not b.special[j]:
                shared_a.append(i)
                shared_b.append(j)
    in_a, in_b = set(shared_a), set(shared_b)
    modified_a = tuple(i for i, s in enumerate(a.special) if not s and i not in in_a)
    modified_b = tuple(j for j, s in enumerate(b.special) if not s and j not in in_b)
    return tuple(shared_a), tuple(shared_b), modified_a, modified_b


@attrs.frozen
class PreparedPair:
    """A pair as the model sees it: tokens, and which positions are shared or modified."""

    index: int
    pair: SentencePair
    more: Tokens
    less: Tokens
    shared_more: tuple[int, ...]
    shared_less: tuple[int, ...]
    modified_more: tuple[int, ...]
    modified_less: tuple[int, ...]


def describe_pair(index: int, pair: SentencePair) -> str:
    return f"pair {index}" + (f" (line {pair.line})" if pair.line is not None else "")


def _truncated(text: str, tokens: Tokens) -> bool:
    """Whether the tokenizer cut the text: its last token ends before the text does."""
    ends = [b for (a, b), s in zip(tokens.offsets, tokens.special) if not s and b > a]
    return bool(text.strip()) and (not ends or max(ends) < len(text.rstrip()))


def prepare_pairs(embedder: Embedder, data: PairSet, lowercase: bool) -> tuple[list[PreparedPair], list[dict[str, Any]]]:
    """Tokenise and align every pair; pairs with nothing to compare are returned as skipped, with why."""
    if not isinstance(data, PairSet):
        raise BiasError(f"Pair metrics need a pair set (kind pairs), not {type(data).__name__}.")
    texts = []
    for pair in data.pairs:
        texts.extend([pair.more.lower(), pair.less.lower()] if lowercase else [pair.more, pair.less])
    tokens = embedder.tokenize(texts)
    prepared: list[PreparedPair] = []
    skipped: list[dict[str, Any]] = []
    for k, pair in enumerate(data.pairs):
        more, less = tokens[2 * k], tokens[2 * k + 1]
        for name, text, toks in (("more", texts[2 * k], more), ("less", texts[2 * k + 1], less)):
            if _truncated(text, toks):
                raise BiasError(
                    f"{data.name}: {describe_pair(k, pair)}: the sentence `{name}` is longer than the model's limit "
                    f"({len(toks.ids)} tokens kept of {text!r}).",
                    "Shorten it or remove the pair; pair scores need the whole sentence.",
                )
        shared_m, shared_l, mod_m, mod_l = align(more, less)
        row = {"index": k, "line": pair.line, "bias_type": pair.bias_type, "direction": pair.direction}
        if more.ids == less.ids:
            skipped.append({**row, "reason": "the two sentences give the same token ids (their group words are probably both unknown to the tokenizer)"})
        elif not shared_m:
            skipped.append({**row, "reason": "the sentences share no token"})
        else:
            prepared.append(PreparedPair(k, pair, more, less, shared_m, shared_l, mod_m, mod_l))
    return prepared, skipped


def masked_sums(
    embedder: Embedder, sequences: Sequence[Tokens], positions: Sequence[Sequence[int]], *, joint: bool = False
) -> list[np.ndarray]:
    """log P(token | its position masked) for each listed position of each sequence: one request per
    position (or one per sequence with `joint`), all sent at once, identical requests computed once."""
    requests: dict[MaskedRequest, int] = {}
    plan: list[list[int]] = []
    for toks, pos in zip(sequences, positions):
        wanted = [MaskedRequest(toks.ids, tuple(pos))] if joint else [MaskedRequest(toks.ids, (p,)) for p in pos]
        plan.append([requests.setdefault(r, len(requests)) for r in wanted if r.positions])
    results = embedder.masked_log_probs(list(requests)) if requests else []
    return [np.concatenate([results[i] for i in ids]) if ids else np.zeros(0) for ids in plan]


@attrs.frozen
class PairScores:
    """Per-sentence scores of the pairs that could be scored, and what the numbers mean."""

    prepared: tuple[PreparedPair, ...]
    more: np.ndarray = attrs.field(eq=False)
    less: np.ndarray = attrs.field(eq=False)
    counted_more: tuple[int, ...]  # tokens that entered each score
    counted_less: tuple[int, ...]
    skipped: tuple[dict[str, Any], ...]
    convention: dict[str, Any]


def score_pairs(
    embedder: Embedder,
    data: PairSet,
    *,
    method: str,
    metric: str,
    lowercase: str = "auto",
    likelihood: str = "sum",
    masking: str = "each",
) -> PairScores:
    """Score both sentences of every pair with one of the METHODS (see the module docstring)."""
    if method not in METHODS:
        raise BiasError(f"Unknown pair scoring method {method!r} (one of {', '.join(METHODS)}).")
    allowed = (MASKED, CAUSAL) if method in ("pll", "aul") else (MASKED,)
    mode = lm_mode(embedder, metric, allowed)
    lower = decide_lowercase(embedder, lowercase)
    prepared, skipped = prepare_pairs(embedder, data, lower)
    convention: dict[str, Any] = {
        "model_kind": mode,
        "lowercase": lower,
        "lowercase_policy": lowercase,
        "alignment": "difflib.SequenceMatcher opcodes 'equal' on token ids (autojunk off), special tokens excluded",
    }
    more_scores = np.zeros(0)
    less_scores = np.zeros(0)
    counted_more: list[int] = []
    counted_less: list[int] = []
    if method == "sss":
        keep = []
        for p in prepared:
            if not p.modified_more or not p.modified_less:
                side = "more" if not p.modified_more else "less"
                skipped.append(
                    {"index": p.index, "line": p.pair.line, "bias_type": p.pair.bias_type, "direction": p.pair.direction,
                     "reason": f"the sentence `{side}` has no modified token (the other only adds words)"}
                )
            else:
                keep.append(p)
        prepared = keep
    if prepared:
        sequences = [t for p in prepared for t in (p.more, p.less)]
        if mode == CAUSAL:
            scores = embedder.token_log_probs([t.ids for t in sequences])
            values, counts = [], []
            for toks, s in zip(sequences, scores):
                usable = np.array([not sp for sp in toks.special]) & np.isfinite(s.log_probs)
                v = s.log_probs[usable]
                values.append(float(v.sum() if (method == "pll" and likelihood == "sum") else v.mean()) if v.size else float("nan"))
                counts.append(int(v.size))
            convention["score"] = (
                f"sentence log-likelihood, {'sum' if (method == 'pll' and likelihood == 'sum') else 'mean'} of "
                "log P(w_i | w_<i) over every non-special token of the sentence, the first word included"
            )
            convention["causal_start"] = scores[0].context if scores else ""
            convention["likelihood"] = likelihood if method == "pll" else "mean"
        elif method == "pll":
            positions = [pos for p in prepared for pos in (p.shared_more, p.shared_less)]
            lps = masked_sums(embedder, sequences, positions)
            values = [float(v.sum()) for v in lps]
            counts = [len(pos) for pos in positions]
            convention["score"] = "pseudo-log-likelihood: sum over shared tokens u of log P(u | S with u masked), one mask at a time"
        elif method == "sss":
            positions = [pos for p in prepared for pos in (p.modified_more, p.modified_less)]
            lps = masked_sums(embedder, sequences, positions, joint=masking == "joint")
            values = [float(v.mean()) for v in lps]
            counts = [len(pos) for pos in positions]
            convention["score"] = (
                "mean over modified tokens m of log P(m | S with m masked), each masked in turn (diagonal)"
                if masking == "each"
                else "mean over modified tokens m of log P(m | S with all modified tokens masked) (diagonal)"
            )
            convention["masking"] = masking
        else:
            attention = method == "aula"
            scores = embedder.token_log_probs([t.ids for t in sequences], attention=attention)
            values, counts = [], []
            for toks, s in zip(sequences, scores):
                usable = ~np.array(toks.special, dtype=bool)
                lp = s.log_probs[usable]
                if attention:
                    if s.attention is None:
                        raise BiasError(f"The model {embedder.spec} returned no attention weights, which AULA needs.", "Use aul.")
                    lp = lp * s.attention[usable]
                values.append(float(lp.mean()) if lp.size else float("nan"))
                counts.append(int(lp.size))
            convention["score"] = (
                "AULA: mean over non-special tokens of a_i * log P(w_i | S), S unmasked, a_i the attention w_i receives "
                "(mean over layers, heads and queries)"
                if attention
                else "AUL: mean over non-special tokens of log P(w_i | S), S unmasked"
            )
        arr = np.asarray(values, dtype=np.float64)
        more_scores, less_scores = arr[0::2], arr[1::2]
        counted_more, counted_less = counts[0::2], counts[1::2]
    return PairScores(
        tuple(prepared), more_scores, less_scores, tuple(counted_more), tuple(counted_less), tuple(skipped), convention
    )


def _subset(biased: np.ndarray, ties: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    n = int(mask.sum())
    return {
        "score": float(100.0 * biased[mask].sum() / n) if n else None,
        "n": n,
        "biased": int(biased[mask].sum()),
        "ties": int(ties[mask].sum()),
    }


def sign_test(biased: int, untied: int) -> float | None:
    """Two-sided exact binomial test of biased vs not biased among the untied pairs (p = 1/2)."""
    if untied == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(biased, untied, 0.5, alternative="two-sided").pvalue)


def comparison_result(
    metric: Metric,
    embedder: Embedder,
    data: PairSet,
    scores: PairScores,
    *,
    seed: int | None,
    decimals: int | None = None,
    what: str = "score",
) -> Result:
    """The percentage of pairs whose `more` sentence scores higher, overall and by subset, and every pair's row."""
    base = metric.result_fields(embedder.spec, data, seed)
    skipped = list(scores.skipped)
    warnings = []
    if getattr(data, "dropped", ()):  # rows of the file that hold no usable pair (identical or empty)
        warnings.append(f"{len(data.dropped)} row(s) of the file left out: " + "; ".join(data.dropped[:5]))
    if skipped:
        warnings.append(f"{len(skipped)} pair(s) skipped: " + "; ".join(f"{describe_pair(s['index'], data.pairs[s['index']])}: {s['reason']}" for s in skipped[:5]))
    if not scores.prepared:
        return Result(status=REFUSED, reason="no pair could be scored: " + (skipped[0]["reason"] if skipped else "the set is empty"),
                      figures={"skipped": skipped}, warnings=warnings, **base)
    more, less = scores.more, scores.less
    if decimals is not None:
        more, less = np.round(more, decimals), np.round(less, decimals)
    biased = more > less
    ties = more == less
    n = len(biased)
    types = np.array([p.pair.bias_type for p in scores.prepared])
    directions = np.array([p.pair.direction for p in scores.prepared])
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
        for i, p in enumerate(scores.prepared)
    ]
    untied = int(n - ties.sum())
    p_value = sign_test(int(biased.sum()), untied)
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
        "rounding": f"{decimals} decimals before comparing" if decimals is not None else "none (unrounded)",
        "p_value": "two-sided exact binomial sign test over untied pairs (p = 1/2)",
    }
    return Result(
        status=OK,
        effect_size=overall,
        p_value=p_value,
        figures=figures,
        convention=convention,
        sizes={"pairs": n, "skipped": len(skipped), **{f"pairs_{t}": v["n"] for t, v in figures["by_bias_type"].items()}},
        warnings=warnings,
        **base,
    )


@attrs.define
class Crows(Metric):
    """CrowS-Pairs score (Nangia et al. 2020): the percentage of pairs in which the model gives the
    more stereotyping sentence the higher pseudo-log-likelihood; 50 means no preference.

    score(S) = sum over the tokens S shares with its pair of log P(u | S with u masked), one mask at a
    time, every masked variant of every sentence batched. Compared unrounded by default; exact ties
    count in N as not biased and are reported. `preset = nangia2020` rounds both scores to 3 decimals
    first, as the reference code does (near-equal pairs then become ties). Results are given overall,
    per bias type, and for the stereo and antistereo subsets; `figures["pairs"]` holds every pair's
    scores. Uncased models get lowercased sentences (recorded). Causal LMs compare sentence
    log-likelihoods (`likelihood` = sum or mean over tokens, recorded): sum of log P(w_i | BOS, w_<i)
    over every token, the model's BOS token (EOS where it has none) prepended when the tokenizer adds
    no start token, so a first word that differs between the sentences is scored (`causal_start`).
    """

    name: ClassVar[str] = "crows"
    summary: ClassVar[str] = "CrowS-Pairs score: % of pairs where the stereotyping sentence is more likely (Nangia et al. 2020)."
    requires: ClassVar[frozenset[Capability]] = frozenset()
    requires_any: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM, Capability.CAUSAL_LM})
    data_kind: ClassVar[str] = PAIRS

    preset: str = param(
        "none", "none (compare unrounded scores) or nangia2020 (round both scores to 3 decimals, as the reference code)",
        validator=one_of(PRESETS),
    )
    lowercase: str = param(
        "auto", "lowercase the sentences first: auto (when the model is uncased), yes, no", validator=one_of(LOWERCASE)
    )
    likelihood: str = param(
        "sum", "causal LMs only: sum or mean (length-normalised) of the token log-likelihoods", validator=one_of(LIKELIHOODS)
    )

    def compute(self, embedder: Embedder, data: PairSet, *, seed: int | None = None) -> Result:
        scores = score_pairs(embedder, data, method="pll", metric=self.name, lowercase=self.lowercase, likelihood=self.likelihood)
        decimals = 3 if self.preset == "nangia2020" else None
        result = comparison_result(self, embedder, data, scores, seed=seed, decimals=decimals, what="pll" if scores.convention["model_kind"] == MASKED else "loglik")
        return attrs.evolve(result, convention={**result.convention, "preset": self.preset}) if result.ok else result


@attrs.define
class StereoSetScore(Metric):
    """StereoSet-style score (SSS) on sentence pairs: the percentage of pairs in which the more
    stereotyping sentence gives its own modified (group) tokens the higher mean log-probability.

    score(S) = mean over the modified tokens m of S of log P(m | S with m masked). `masking = each`
    masks one modified token at a time (the diagonal); `joint` masks them all at once, conditioning on
    the unmodified tokens only, as in the StereoSet likelihood. Either way each token is scored at its
    own position: one reference averaged the whole |M| x |M| matrix of every masked position against
    every modified token, which this avoids. A pair whose sentence has no modified token (the other only
    adds words) is skipped and reported. Masked LMs only.
    """

    name: ClassVar[str] = "sss"
    summary: ClassVar[str] = "StereoSet-style score: % of pairs whose stereotyping sentence's group tokens are more likely."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})
    data_kind: ClassVar[str] = PAIRS

    masking: str = param(
        "each", "each (mask the modified tokens one at a time) or joint (all at once)", validator=one_of(SSS_MASKING)
    )
    lowercase: str = param(
        "auto", "lowercase the sentences first: auto (when the model is uncased), yes, no", validator=one_of(LOWERCASE)
    )

    def compute(self, embedder: Embedder, data: PairSet, *, seed: int | None = None) -> Result:
        scores = score_pairs(embedder, data, method="sss", metric=self.name, lowercase=self.lowercase, masking=self.masking)
        return comparison_result(self, embedder, data, scores, seed=seed, what="sss")
