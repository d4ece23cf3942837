"""Scoring both sentences of minimal pairs with a language model: what CrowS-Pairs, SSS, AUL/AULA
and KLS/JSS share (the comparison of the scores is in `bias.core.pair_metrics.metric`).

Every pair (more, less) is tokenised and aligned first (`bias.core.pair_metrics.alignment`): the
shared (unmodified) tokens U and each sentence's modified tokens M. Per-sentence scores, one
function each in `SCORERS`:

- pll (CrowS): sum over u in U of log P(u | S with u masked), one mask at a time, the modified
  tokens visible. All masked variants of all sentences go to the embedder at once, which batches
  them.
- sss: mean over m in M of log P(m | S with m masked), each modified token masked in turn (the
  diagonal: a token is scored at its own position, never against the other modified positions);
  `masking = joint` masks all of M at once, conditioning on the unmodified tokens only.
- modified-mean: the same mean over the modified tokens, each masked in turn, as CrowS-Pairs'
  masked-LM score of bias-bench (Meade et al. 2022); on a causal LM, the sentence log-likelihood.
- aul / aula: the unmasked sentence, mean over tokens of log P(w_i | S), AULA weighting each term by
  the attention the token receives.
- causal LMs (pll and aul): the sentence log-likelihood, sum (or mean) over its tokens of
  log P(w_i | w_<i), the model's BOS token (else EOS) put before the sentence when the tokenizer
  adds no start token, so the first word is scored too. `causal_starts` "bos" (default) keeps BOS
  in the context of every token (lm-evaluation-harness's rolling log-likelihood); "bos-first-token"
  takes only the first token's log-probability from the pass with BOS and tokens 2..n from a pass
  on the sentence without it (bias-bench). Recorded as `causal_start` (what the first token saw)
  and `causal_context`.

Every scorer sends each distinct input to the model once (`computed_once`) and gives its number to
every sentence that asked for it: the model's rounding depends on the batch an input falls in, so
two identical sentences scored in different batches could differ in the last bits and an exact tie
could turn into a verdict that changes with the batch size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from bias.core.data.minimal_pairs import PairSet
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.lm_requests import MaskedRequest, Tokens, TokenScores
from bias.core.pair_metrics.alignment import (
    AlignedPair,
    decide_lowercase,
    prepare_pairs,
    skipped_row,
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MASKED, CAUSAL = "masked", "causal"
LIKELIHOODS = ("sum", "mean")
CAUSAL_STARTS = ("bos", "bos-first-token")
CAUSAL_CONTEXTS = {
    "bos": "BOS in the context of every token (lm-evaluation-harness's rolling log-likelihood)",
    "bos-first-token": (
        "only the first token conditioned on BOS; tokens 2..n from a pass without BOS (bias-bench)"
    ),
}
SSS_MASKING = ("each", "joint")
# Metrics by what they need, for the message that refuses a model.
_FOR_MASKED = "lpbs, crows, sss, aul, aula, kls, jss, jss-mixture, stereoset"
_FOR_CAUSAL = "crows, aul, kls, jss, jss-mixture, stereoset (with sentence log-likelihoods)"
_FOR_VECTORS = "weat, seat, ceat and the other vector metrics"


def lm_mode(embedder: Embedder, metric: str, allowed: Sequence[str] = (MASKED, CAUSAL)) -> str:
    """ "masked" or "causal": which kind of language model serves this metric; a BiasError naming
    the metrics that would work when the model offers neither the metric can use."""
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
        f"Metric '{metric}' needs {needs} (with its LM head); "
        f"the model {embedder.spec} offers {offers}.",
        f"Metrics that work with this model: {fitting}.",
    )


def computed_once(items: Sequence[K], compute: Callable[[list[K]], Sequence[V]]) -> list[V]:
    """`compute` over the distinct items (in first-seen order, one call), its answers given back to
    every item: identical inputs get the very same number, whichever batch the model would have put
    them in."""
    index: dict[K, int] = {}
    plan = [index.setdefault(item, len(index)) for item in items]
    found = compute(list(index)) if index else []
    return [found[i] for i in plan]


def masked_sums(
    embedder: Embedder,
    sequences: Sequence[Tokens],
    positions: Sequence[Sequence[int]],
    *,
    joint: bool = False,
) -> list[np.ndarray]:
    """log P(token | its position masked) for each listed position of each sequence: one request
    per position (or one per sequence with `joint`), all sent at once, identical requests computed
    once."""
    wanted = [
        [MaskedRequest(toks.ids, tuple(pos))]
        if joint
        else [MaskedRequest(toks.ids, (p,)) for p in pos]
        for toks, pos in zip(sequences, positions)
    ]
    wanted = [[r for r in rows if r.positions] for rows in wanted]
    found = iter(computed_once([r for rows in wanted for r in rows], embedder.masked_log_probs))
    return [np.concatenate([next(found) for _ in rows]) if rows else np.zeros(0) for rows in wanted]


def token_log_probs_once(
    embedder: Embedder,
    sequences: Sequence[Sequence[int]],
    *,
    attention: bool = False,
    start: bool = True,
) -> list[TokenScores]:
    """`embedder.token_log_probs`, each distinct sequence scored once (see `computed_once`); `start`
    is passed only when False, so an embedder written before that option still serves the rest."""
    options = {"attention": attention, **({} if start else {"start": False})}
    return computed_once(
        [tuple(s) for s in sequences], lambda unique: embedder.token_log_probs(unique, **options)
    )


# -- one function per scoring method ------------------------------------------------------------


@attrs.frozen
class ScoringOptions:
    """The settings a scoring method may read; `likelihood` is already "mean" for every method but
    pll."""

    likelihood: str = "sum"
    masking: str = "each"
    causal_start: str = "bos"


@attrs.frozen
class SentenceScores:
    """A scoring method's numbers: one score and the count of tokens in it per sentence, the two
    sentences of each pair interleaved (more, less, more, ...), and what the numbers mean."""

    values: list[float]
    counts: list[int]
    convention: dict[str, Any]


def _sentences(pairs: Sequence[AlignedPair]) -> list[Tokens]:
    return [t for p in pairs for t in (p.more, p.less)]


def score_pll(
    embedder: Embedder, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """CrowS pseudo-log-likelihood: the shared tokens, each masked in turn, summed."""
    positions = [pos for p in pairs for pos in (p.shared_more, p.shared_less)]
    lps = masked_sums(embedder, _sentences(pairs), positions)
    score = (
        "pseudo-log-likelihood: sum over shared tokens u of log P(u | S with u masked), "
        "one mask at a time"
    )
    return SentenceScores(
        [float(v.sum()) for v in lps], [len(pos) for pos in positions], {"score": score}
    )


def score_sss(
    embedder: Embedder, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """StereoSet-style score: the modified tokens, masked one at a time or all at once, averaged."""
    positions = [pos for p in pairs for pos in (p.modified_more, p.modified_less)]
    lps = masked_sums(embedder, _sentences(pairs), positions, joint=options.masking == "joint")
    if options.masking == "each":
        score = "mean over modified tokens m of log P(m | S with m masked), each masked in turn"
    else:
        score = "mean over modified tokens m of log P(m | S with all modified tokens masked)"
    score += " (diagonal)"
    return SentenceScores(
        [float(v.mean()) for v in lps],
        [len(pos) for pos in positions],
        {"score": score, "masking": options.masking},
    )


def _unmasked(embedder: Embedder, pairs: Sequence[AlignedPair], attention: bool) -> SentenceScores:
    sequences = _sentences(pairs)
    scores = token_log_probs_once(embedder, [t.ids for t in sequences], attention=attention)
    values, counts = [], []
    for toks, s in zip(sequences, scores):
        usable = ~np.array(toks.special, dtype=bool)
        lp = s.log_probs[usable]
        if attention:
            if s.attention is None:
                raise BiasError(
                    f"The model {embedder.spec} returned no attention weights, which AULA needs.",
                    "Use aul.",
                )
            lp = lp * s.attention[usable]
        values.append(float(lp.mean()) if lp.size else float("nan"))
        counts.append(int(lp.size))
    score = (
        "AULA: mean over non-special tokens of a_i * log P(w_i | S), S unmasked, a_i the attention "
        "w_i receives (mean over layers, heads and queries)"
        if attention
        else "AUL: mean over non-special tokens of log P(w_i | S), S unmasked"
    )
    return SentenceScores(values, counts, {"score": score})


def score_aul(
    embedder: Embedder, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """All Unmasked Likelihood: every non-special token of the unmasked sentence, averaged."""
    return _unmasked(embedder, pairs, attention=False)


def score_aula(
    embedder: Embedder, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """AUL with each term weighted by the attention its token receives."""
    return _unmasked(embedder, pairs, attention=True)


def score_causal(
    embedder: Embedder, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """A causal LM's sentence log-likelihood, summed or averaged over every non-special token."""
    return causal_sentence_scores(
        embedder,
        _sentences(pairs),
        likelihood=options.likelihood,
        causal_start=options.causal_start,
    )


def causal_sentence_scores(
    embedder: Embedder,
    sequences: Sequence[Tokens],
    *,
    likelihood: str = "sum",
    causal_start: str = "bos",
) -> SentenceScores:
    """Each sentence's log-likelihood under a causal LM, the sum (`likelihood = sum`) or per-token
    mean of log P(w_i | context) over its non-special tokens, the first included; `causal_start`
    says what the context is (`CAUSAL_CONTEXTS`). The one causal scorer of the sentence metrics:
    CrowS-Pairs and friends call it through `score_causal`, StereoSet on its candidate sentences."""
    options = ScoringOptions(likelihood=likelihood, causal_start=causal_start)
    ids = [t.ids for t in sequences]
    if options.causal_start == "bos-first-token":
        scores = _first_token_after_start(embedder, ids)
    else:
        scores = token_log_probs_once(embedder, ids)
    summed = options.likelihood == "sum"
    values, counts = [], []
    for toks, s in zip(sequences, scores):
        usable = np.array([not sp for sp in toks.special]) & np.isfinite(s.log_probs)
        v = s.log_probs[usable]
        values.append(float(v.sum() if summed else v.mean()) if v.size else float("nan"))
        counts.append(int(v.size))
    convention = {
        "score": (
            f"sentence log-likelihood, {'sum' if summed else 'mean'} of "
            "log P(w_i | w_<i) over every non-special token of the sentence, "
            "the first word included"
        ),
        "causal_start": scores[0].context if scores else "",
        "causal_context": CAUSAL_CONTEXTS[options.causal_start],
        "likelihood": options.likelihood,
    }
    return SentenceScores(values, counts, convention)


def _first_token_after_start(
    embedder: Embedder, sequences: Sequence[Sequence[int]]
) -> list[TokenScores]:
    """bias-bench's causal scores in one pass and one short one: tokens 2..n from a pass on the
    sequences without a start token; token 1 from its own row after the start token, which is
    log P(w_1 | BOS) exactly as in the whole sequence (a causal model's first position sees only the
    start token), so only the distinct first tokens are scored there, each a row of two tokens."""
    plain = token_log_probs_once(embedder, sequences, start=False)
    firsts = token_log_probs_once(embedder, [tuple(s[:1]) for s in sequences])
    return [
        attrs.evolve(f, log_probs=np.concatenate([f.log_probs[:1], p.log_probs[1:]]))
        for f, p in zip(firsts, plain)
    ]


Scorer = Callable[[Embedder, Sequence[AlignedPair], ScoringOptions], SentenceScores]
# The scoring methods a metric may ask for, by name; "causal" scores every method on a causal LM.
SCORERS: dict[str, Scorer] = {
    "pll": score_pll,
    "sss": score_sss,
    "modified-mean": score_sss,
    "aul": score_aul,
    "aula": score_aula,
    "causal": score_causal,
}
METHODS = ("pll", "sss", "modified-mean", "aul", "aula")
# The methods that have a causal-LM reading (a sentence log-likelihood); the others need a masked
# LM.
CAUSAL_METHODS = ("pll", "modified-mean", "aul")
# The methods whose causal reading may be a sum (`likelihood`); the others are means by definition.
SUMMABLE = ("pll", "modified-mean")


def _without_modified_token(pair: AlignedPair) -> str | None:
    if pair.modified_more and pair.modified_less:
        return None
    side = "more" if not pair.modified_more else "less"
    return f"the sentence `{side}` has no modified token (the other only adds words)"


# Why a method cannot score an aligned pair (None: it can), for the methods that need more than a
# shared token.
UNSCORABLE: dict[str, Callable[[AlignedPair], str | None]] = {
    "sss": _without_modified_token,
    "modified-mean": _without_modified_token,
}


@attrs.frozen
class PairScores:
    """Per-sentence scores of the pairs that could be scored, and what the numbers mean."""

    aligned: tuple[AlignedPair, ...]
    more: np.ndarray = attrs.field(eq=False)
    less: np.ndarray = attrs.field(eq=False)
    counted_more: tuple[int, ...]  # tokens that entered each score
    counted_less: tuple[int, ...]
    skipped: tuple[dict[str, Any], ...]
    convention: dict[str, Any]


def _in_float32_where_close(
    embedder: Embedder, scorer: Scorer, pairs: Sequence[AlignedPair], options: ScoringOptions
) -> SentenceScores:
    """The scorer's sentence scores; with a reduced precision, the pairs whose preferred sentence it
    could have turned scored again in float32 (`bias.core.precision.settle`)."""
    found = scorer(embedder, pairs, options)
    reduced = embedder.reduced_precision()
    if reduced is None:
        return found
    precision_name, twin = reduced
    from bias.core.precision import scales, settle

    summed = scorer is score_pll or (scorer is score_causal and options.likelihood == "sum")
    values = np.asarray(found.values, dtype=np.float64).reshape(-1, 2)
    sizes = scales(np.asarray(found.counts).reshape(-1, 2), summed)

    def rescore(indices: np.ndarray) -> np.ndarray:
        return np.asarray(
            scorer(twin, [pairs[i] for i in indices], options).values, dtype=np.float64
        ).reshape(-1, 2)

    settled = settle(values, sizes, rescore, precision_name)
    return SentenceScores(
        settled.values.ravel().tolist(), found.counts, {**found.convention, **settled.convention}
    )


def score_pairs(
    embedder: Embedder,
    data: PairSet,
    *,
    method: str,
    metric: str,
    lowercase: str = "auto",
    likelihood: str = "sum",
    masking: str = "each",
    causal_start: str = "bos",
) -> PairScores:
    """Score both sentences of every pair with one of the METHODS (see the module docstring)."""
    if method not in METHODS:
        raise BiasError(f"Unknown pair scoring method {method!r} (one of {', '.join(METHODS)}).")
    mode = lm_mode(embedder, metric, (MASKED, CAUSAL) if method in CAUSAL_METHODS else (MASKED,))
    lower = decide_lowercase(embedder, lowercase)
    aligned, skipped = prepare_pairs(embedder, data, lower)
    convention: dict[str, Any] = {
        "model_kind": mode,
        "lowercase": lower,
        "lowercase_policy": lowercase,
        "alignment": (
            "difflib.SequenceMatcher opcodes 'equal' on token ids (autojunk off), "
            "special tokens excluded"
        ),
    }
    unscorable = UNSCORABLE.get(method)
    if unscorable is not None:
        keep = []
        for p in aligned:
            reason = unscorable(p)
            if reason is None:
                keep.append(p)
            else:
                skipped.append(skipped_row(p.index, p.pair, reason))
        aligned = keep
    if not aligned:
        return PairScores((), np.zeros(0), np.zeros(0), (), (), tuple(skipped), convention)
    options = ScoringOptions(
        likelihood=likelihood if method in SUMMABLE else "mean",
        masking="each" if method == "modified-mean" else masking,
        causal_start=causal_start,
    )
    found = _in_float32_where_close(
        embedder, SCORERS[CAUSAL if mode == CAUSAL else method], aligned, options
    )
    convention.update(found.convention)
    arr = np.asarray(found.values, dtype=np.float64)
    return PairScores(
        tuple(aligned),
        arr[0::2],
        arr[1::2],
        tuple(found.counts[0::2]),
        tuple(found.counts[1::2]),
        tuple(skipped),
        convention,
    )
