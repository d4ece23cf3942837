"""The pair-scoring library (bias.core.pair_metrics.alignment and .scoring) and the PairMetric base (bias.core.pair_metrics.metric) on a
fake language model whose log-probabilities are simple functions of the token ids, so that every
score below is computed by hand. The real models are in test_crows.py and test_kls_jss.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder, Measured
from bias.core.lm_requests import MaskedRequest, Tokens, TokenScores
from bias.core.pair_metrics.alignment import AlignedPair, align, decide_lowercase, is_truncated, prepare_pairs
from bias.core.pair_metrics.scoring import CAUSAL, MASKED, SCORERS, PairScores, ScoringOptions, lm_mode, score_pairs
from bias.core.model import WordSetMeta
from bias.core.pair_metrics.metric import PairMetric, Refusal, compare_pairs, pair_sizes, sign_test
from bias.core.data.minimal_pairs import PairSet, SentencePair

CLS, SEP, UNK = 0, 1, 9
VOCAB = {"a": 2, "b": 3, "c": 4, "d": 5, "e": 6, "f": 7}


class FakeLM(Embedder):
    """Whitespace tokens, [CLS] ... [SEP], lowercase vocabulary (a capital word is unknown).

    masked LM: log P(token at p | request) = -ids[p] / 10 - len(request.positions) / 100, so masking
    more positions at once costs 0.01 per extra mask; unmasked/causal: log P(w_i) = -ids[i] / 10, with
    NaN at the first position of a causal model, and attention 1, 2, 3, ... by position."""

    name: ClassVar[str] = "fake"
    summary: ClassVar[str] = "fake"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.MASKED_LM})

    def __init__(self, offers: frozenset[Capability] = frozenset({Capability.MASKED_LM}), limit: int = 50) -> None:
        self.location = "fake"
        self.offers = offers
        self.limit = limit
        self.masked_calls: list[list[MaskedRequest]] = []

    def available(self) -> frozenset[Capability]:
        return self.offers

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        out = []
        for text in texts:
            ids, offsets, at = [CLS], [(0, 0)], 0
            for word in text.split():
                start = text.index(word, at)
                at = start + len(word)
                ids.append(VOCAB.get(word, UNK))
                offsets.append((start, at))
            ids, offsets = ids[: self.limit - 1] + [SEP], offsets[: self.limit - 1] + [(0, 0)]
            out.append(Tokens(tuple(ids), tuple(offsets), tuple(i in (CLS, SEP) for i in ids)))
        return out

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        self.masked_calls.append(list(requests))
        return [np.array([-r.ids[p] / 10 - len(r.positions) / 100 for p in r.positions]) for r in requests]

    def token_log_probs(self, sequences: Sequence[Sequence[int]], *, attention: bool = False) -> list[TokenScores]:
        causal = Capability.CAUSAL_LM in self.offers
        out = []
        for ids in sequences:
            lp = -np.array(ids, dtype=np.float64) / 10
            if causal:
                lp[0] = np.nan
            att = np.arange(1, len(ids) + 1, dtype=np.float64) if attention else None
            out.append(TokenScores(lp, att, "bos token prepended" if causal else ""))
        return out


def pairs(*rows: tuple[str, str], direction: str = "stereo", bias_type: str = "gender") -> PairSet:
    meta = WordSetMeta(name="fake-pairs", kind="pairs", language="en", bias_type="mixed")
    return PairSet(meta, tuple(SentencePair(m, l, direction, bias_type, line=i + 2) for i, (m, l) in enumerate(rows)))


def aligned(data: PairSet, embedder: Embedder | None = None) -> list[AlignedPair]:
    found, skipped = prepare_pairs(embedder or FakeLM(), data, lowercase=False)
    assert not skipped
    return found


# -- model kind, lowercasing, truncation, alignment -------------------------------------------------


def test_lm_mode_prefers_a_masked_lm_and_names_the_metrics_that_fit_otherwise() -> None:
    both = FakeLM(frozenset({Capability.MASKED_LM, Capability.CAUSAL_LM}))
    assert lm_mode(both, "crows") == MASKED
    assert lm_mode(FakeLM(frozenset({Capability.CAUSAL_LM})), "crows") == CAUSAL
    with pytest.raises(BiasError) as err:
        lm_mode(FakeLM(frozenset({Capability.CAUSAL_LM})), "sss", (MASKED,))
    assert "needs a masked language model (with" in err.value.message and "crows, aul" in (err.value.hint or "")
    with pytest.raises(BiasError) as err:
        lm_mode(FakeLM(frozenset({Capability.WORD_VECTORS})), "crows")
    assert "or a causal one" in err.value.message and "weat" in (err.value.hint or "")


def test_lowercase_policy_probes_the_tokenizer_when_the_model_does_not_say() -> None:
    lm = FakeLM()
    assert decide_lowercase(lm, "yes") is True and decide_lowercase(lm, "no") is False
    assert decide_lowercase(lm, "auto") is False  # "A" is unknown, "a" is not: a cased vocabulary

    class Says(FakeLM):  # an embedder that declares its tokenizer lowercases (Embedder.uncased)
        uncased = True

    assert decide_lowercase(Says(), "auto") is True


def test_truncation_is_seen_from_the_last_token_offset() -> None:
    (whole,) = FakeLM().tokenize(["a b c"])
    (cut,) = FakeLM(limit=3).tokenize(["a b c"])
    assert cut.ids == (CLS, 2, SEP)
    assert not is_truncated("a b c ", whole)  # trailing space is no lost text
    assert is_truncated("a b c", cut)
    assert not is_truncated("   ", FakeLM().tokenize(["   "])[0])  # nothing to cut


def test_align_splits_shared_and_modified_positions_specials_excluded() -> None:
    more, less = FakeLM().tokenize(["a b c d", "a e c d f"])
    # more: [CLS] a b c d [SEP]; less: [CLS] a e c d f [SEP]
    assert align(more, less) == ((1, 3, 4), (1, 3, 4), (2,), (2, 5))


def test_pairs_with_nothing_to_compare_are_skipped_with_the_reason() -> None:
    data = pairs(("a b", "c d"), ("X a", "Y a"), ("a b", "a c"))  # no shared token; X and Y both unknown
    found, skipped = prepare_pairs(FakeLM(), data, lowercase=False)
    assert [p.index for p in found] == [2]
    assert [(s["index"], s["line"], s["reason"]) for s in skipped] == [
        (0, 2, "the sentences share no token"),
        (1, 3, "the two sentences give the same token ids (their group words are probably both unknown to the tokenizer)"),
    ]
    with pytest.raises(BiasError) as err:
        prepare_pairs(FakeLM(limit=3), data, lowercase=False)
    assert "pair 0 (line 2): the sentence `more` is longer than the model's limit" in err.value.message


# -- one function per scoring method ----------------------------------------------------------------


def test_pll_sums_the_shared_tokens_each_masked_alone() -> None:
    lm = FakeLM()
    found = SCORERS["pll"](lm, aligned(pairs(("a b c", "a d c")), lm), ScoringOptions())
    # shared a (id 2) and c (id 4), one mask each: -(0.2 + 0.01) - (0.4 + 0.01) on both sides
    assert found.values == pytest.approx([-0.62, -0.62])
    assert found.counts == [2, 2]
    assert "pseudo-log-likelihood" in found.convention["score"]
    assert len(lm.masked_calls) == 1 and len(lm.masked_calls[0]) == 4  # every mask of every sentence in one call


def test_identical_masked_requests_are_computed_once() -> None:
    lm = FakeLM()
    SCORERS["pll"](lm, aligned(pairs(("a b c", "a d c"), ("a b c", "a d c")), lm), ScoringOptions())
    assert len(lm.masked_calls[0]) == 4  # the second pair asks for the same four masked sentences


def test_sss_averages_the_modified_tokens_each_or_jointly_masked() -> None:
    lm = FakeLM()
    data = aligned(pairs(("a b e c", "a d c")), lm)  # modified: b, e (ids 3, 6) vs d (id 5)
    each = SCORERS["sss"](lm, data, ScoringOptions(masking="each"))
    assert each.values == pytest.approx([-(0.31 + 0.61) / 2, -0.51])
    assert each.counts == [2, 1] and each.convention["masking"] == "each"
    joint = SCORERS["sss"](lm, data, ScoringOptions(masking="joint"))
    assert joint.values == pytest.approx([-(0.32 + 0.62) / 2, -0.51])  # two masks at once: 0.02 each
    assert "all modified tokens masked" in joint.convention["score"]


def test_aul_and_aula_average_every_non_special_token_of_the_unmasked_sentence() -> None:
    lm = FakeLM()
    data = aligned(pairs(("a b", "a c")), lm)
    aul = SCORERS["aul"](lm, data, ScoringOptions())
    assert aul.values == pytest.approx([-(0.2 + 0.3) / 2, -(0.2 + 0.4) / 2]) and aul.counts == [2, 2]
    aula = SCORERS["aula"](lm, data, ScoringOptions())
    # attention received: 2 and 3 at positions 1 and 2 ([CLS] has 1)
    assert aula.values == pytest.approx([-(0.2 * 2 + 0.3 * 3) / 2, -(0.2 * 2 + 0.4 * 3) / 2])
    assert aula.convention["score"].startswith("AULA")


def test_aula_refuses_a_model_that_returns_no_attention() -> None:
    class NoAttention(FakeLM):
        def token_log_probs(self, sequences: Sequence[Sequence[int]], *, attention: bool = False) -> list[TokenScores]:
            return [attrs.evolve(s, attention=None) for s in super().token_log_probs(sequences, attention=attention)]

    lm = NoAttention()
    with pytest.raises(BiasError, match="no attention weights"):
        SCORERS["aula"](lm, aligned(pairs(("a b", "a c")), lm), ScoringOptions())


def test_causal_sums_or_averages_the_finite_non_special_token_log_likelihoods() -> None:
    lm = FakeLM(frozenset({Capability.CAUSAL_LM}))
    data = aligned(pairs(("a b", "a c")), lm)
    summed = SCORERS["causal"](lm, data, ScoringOptions(likelihood="sum"))
    assert summed.values == pytest.approx([-0.5, -0.6]) and summed.counts == [2, 2]
    assert summed.convention["causal_start"] == "bos token prepended" and summed.convention["likelihood"] == "sum"
    mean = SCORERS["causal"](lm, data, ScoringOptions(likelihood="mean"))
    assert mean.values == pytest.approx([-0.25, -0.3]) and "mean of log P" in mean.convention["score"]


def test_score_pairs_picks_the_scorer_by_method_and_model_kind() -> None:
    data = pairs(("a b c", "a d c"), ("a e", "a f"), direction="antistereo")
    masked = score_pairs(FakeLM(), data, method="pll", metric="crows")
    assert masked.convention["model_kind"] == MASKED and masked.convention["lowercase"] is False
    assert masked.more == pytest.approx([-0.62, -0.21]) and masked.counted_less == (2, 1)
    causal_lm = FakeLM(frozenset({Capability.CAUSAL_LM}))
    causal = score_pairs(causal_lm, data, method="aul", metric="aul", likelihood="sum")
    # aul on a causal LM is the mean log-likelihood whatever `likelihood` says
    assert causal.more == pytest.approx([-0.3, -0.4]) and causal.convention["likelihood"] == "mean"
    with pytest.raises(BiasError, match="needs a masked language model"):
        score_pairs(causal_lm, data, method="sss", metric="sss")
    with pytest.raises(BiasError, match="Unknown pair scoring method 'causal'"):
        score_pairs(FakeLM(), data, method="causal", metric="x")


def test_sss_skips_a_pair_whose_sentence_only_loses_words() -> None:
    data = pairs(("a b", "a e b"), ("a b", "a c"))
    scores = score_pairs(FakeLM(), data, method="sss", metric="sss")
    assert [p.index for p in scores.aligned] == [1]
    assert scores.skipped == ({"index": 0, "line": 2, "bias_type": "gender", "direction": "stereo",
                               "reason": "the sentence `more` has no modified token (the other only adds words)"},)
    nothing = score_pairs(FakeLM(), pairs(("a b", "a e b")), method="sss", metric="sss")
    assert nothing.aligned == () and "score" not in nothing.convention


# -- the comparison and the base class ----------------------------------------------------------------


def hand_scores(data: PairSet, more: list[float], less: list[float]) -> PairScores:
    found = aligned(data)
    return PairScores(tuple(found), np.array(more), np.array(less), (1,) * len(more), (1,) * len(more), (), {"model_kind": "masked"})


def test_sign_test_by_hand() -> None:
    assert sign_test(3, 3) == pytest.approx(0.25)  # two-sided: 2 * (1/2)^3
    assert sign_test(1, 2) == pytest.approx(1.0)
    assert sign_test(0, 0) is None


def test_compare_pairs_counts_by_type_and_direction_and_rounds_when_asked() -> None:
    data = PairSet(
        WordSetMeta(name="fake-pairs", kind="pairs", language="en", bias_type="mixed"),
        (
            SentencePair("a b", "a c", "stereo", "gender"),
            SentencePair("a d", "a e", "antistereo", "gender"),
            SentencePair("b a", "c a", "stereo", "age"),
        ),
    )
    scores = hand_scores(data, [-1.0, -2.0, -3.00001], [-2.0, -1.0, -3.0])
    found = compare_pairs(data, scores, what="pll")
    assert isinstance(found, Measured)
    assert found.effect_size == pytest.approx(100 / 3) and found.p_value == pytest.approx(1.0)
    assert found.figures["by_bias_type"]["gender"] == {"score": 50.0, "n": 2, "biased": 1, "ties": 0}
    assert found.figures["by_direction"]["antistereo"] == {"score": 0.0, "n": 1, "biased": 0, "ties": 0}
    assert found.convention["comparison"] == "pll(more) > pll(less) for stereo and antistereo rows alike"
    rounded = compare_pairs(data, scores, decimals=3)
    assert isinstance(rounded, Measured) and rounded.figures["ties"] == 1
    assert rounded.figures["pairs"][2]["score_more"] == -3.00001  # the rows keep the unrounded scores
    assert pair_sizes(scores) == {"pairs": 3, "skipped": 0, "pairs_age": 1, "pairs_gender": 2}
    empty = compare_pairs(data, attrs.evolve(scores, aligned=()))
    assert isinstance(empty, Refusal) and empty.reason == "no pair could be scored: the set is empty"


@attrs.define
class MeanGap(PairMetric):
    """A third-party style pair metric: the mean score gap, refused when it is zero."""

    name: ClassVar[str] = "mean-gap"
    summary: ClassVar[str] = "mean of score(more) - score(less)"
    scoring: ClassVar[str] = "aul"

    def measure(self, data: PairSet, scores: PairScores) -> Measured | Refusal:
        gap = float(np.mean(scores.more - scores.less))
        if gap == 0.0:
            return Refusal("no gap", figures={"gap": gap})
        return Measured(effect_size=gap, figures={"gap": gap}, convention=scores.convention)


def test_a_pair_metric_is_a_scoring_method_and_a_measure() -> None:
    data = pairs(("a b", "a c"), ("a d", "a e"))
    result = MeanGap().compute(FakeLM(), data, seed=4)
    assert result.ok and result.effect_size == pytest.approx(((-0.25 + 0.3) + (-0.35 + 0.4)) / 2)
    assert result.sizes == {"pairs": 2, "skipped": 0, "pairs_gender": 2}
    assert result.metric == "mean-gap" and result.wordset == "fake-pairs" and result.seed == 4
    assert result.convention["score"].startswith("AUL:")
    refused = MeanGap().compute(FakeLM(), pairs(("a b", "b a")), seed=None)
    assert refused.status == "refused" and refused.reason == "no gap" and refused.figures == {"gap": 0.0}
    assert MeanGap.requires_any == frozenset({Capability.MASKED_LM, Capability.CAUSAL_LM}) and MeanGap.data_kind == "pairs"


# -- edge cases of the model probes, the alignment and the bookkeeping ------------------------------


def test_a_model_that_offers_nothing_is_told_so() -> None:
    with pytest.raises(BiasError) as err:
        lm_mode(FakeLM(frozenset()), "crows")
    assert "the model fake:fake offers nothing." in err.value.message


class TableTokenizer(FakeLM):
    """A tokenizer given as a table: text -> token ids (no special tokens; empty for unknown text)."""

    def __init__(self, table: dict[str, tuple[int, ...]]) -> None:
        super().__init__()
        self.table = table

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        return [Tokens(self.table.get(t, ()), ((0, len(t)),) * len(self.table.get(t, ())), (False,) * len(self.table.get(t, ()))) for t in texts]


@pytest.mark.parametrize(
    ("table", "uncased"),
    [
        ({"A": (2,), "a": (2,), "Z": (8,), "z": (8,)}, True),  # both capitals mapped to their small letters
        ({"A": (2,), "a": (2,), "Z": (7,), "z": (8,)}, False),  # Z kept apart
        ({"A": (1,), "a": (2,), "Z": (8,), "z": (8,)}, False),  # A kept apart
        ({"A": (2,), "a": (2,), "Z": (2,), "z": (2,)}, True),
        ({"Z": (8,), "z": (8,)}, False),  # A and a give no token: nothing to tell
    ],
)
def test_lowercasing_is_decided_from_both_letter_pairs(table, uncased: bool) -> None:
    assert decide_lowercase(TableTokenizer(table), "auto") is uncased


def test_truncation_counts_only_real_text_tokens() -> None:
    """A special token's span, or a token that covers no character, does not show that the end of
    the text was read."""
    text = "a b c"
    special_at_end = Tokens((0, 2, 1), ((0, 0), (0, 1), (4, 5)), (True, False, True))
    empty_at_end = Tokens((0, 2, 7, 1), ((0, 0), (0, 1), (5, 5), (0, 0)), (True, False, False, True))
    assert is_truncated(text, special_at_end) and is_truncated(text, empty_at_end)
    whole = Tokens((0, 2, 7, 1), ((0, 0), (0, 1), (4, 5), (0, 0)), (True, False, False, True))
    assert not is_truncated(text, whole)


def test_a_token_special_on_either_side_is_never_shared() -> None:
    a = Tokens((0, 2, 3, 1), ((0, 0), (0, 1), (2, 3), (0, 0)), (True, False, False, True))
    b = Tokens((0, 2, 4, 1), ((0, 0), (0, 0), (2, 3), (0, 0)), (True, True, False, True))  # id 2 special in b only
    assert align(a, b) == ((), (), (1, 2), (2,))


def test_long_sentences_are_aligned_exactly_not_by_difflibs_popularity_heuristic() -> None:
    """difflib's autojunk treats a token making up more than 1% of a 200+ token sequence as junk,
    which would leave a long sentence of common words with nothing shared (here no special token
    anchors the match either, as with GPT-2's tokenizer)."""
    more = " ".join(["a"] * 150 + ["b"] + ["c"] * 60)
    less = " ".join(["a"] * 150 + ["d"] + ["c"] * 60)
    lm = BosLM(frozenset({Capability.CAUSAL_LM}), limit=1000)
    (found,), skipped = prepare_pairs(lm, pairs((more, less)), lowercase=False)
    assert not skipped
    expected_shared = tuple(range(150)) + tuple(range(151, 211))  # every word but the 151st
    assert found.shared_more == found.shared_less == expected_shared
    assert found.modified_more == found.modified_less == (150,)


def test_a_cut_sentence_is_named_by_its_own_pair_and_side() -> None:
    data = pairs(("a b", "a c"), ("a b c d e f a b", "a b"))
    with pytest.raises(BiasError) as err:
        prepare_pairs(FakeLM(limit=6), data, lowercase=False)
    assert err.value.message.startswith("fake-pairs: pair 1 (line 3): the sentence `more` is longer than the model's limit of 6 tokens")
    with pytest.raises(BiasError) as err:
        prepare_pairs(FakeLM(limit=6), pairs(("a b", "a c"), ("a b", "a b c d e f a b")), lowercase=False)
    assert err.value.message.startswith("fake-pairs: pair 1 (line 3): the sentence `less` is longer than the model's limit of 6 tokens")


def test_a_sequence_with_no_position_asks_the_model_nothing() -> None:
    from bias.core.pair_metrics.scoring import masked_sums

    lm = FakeLM()
    toks = lm.tokenize(["a b", "a c"])
    got = masked_sums(lm, toks, [[], [1]])
    assert got[0].shape == (0,) and got[1].tolist() == pytest.approx([-0.21])
    assert [r.positions for r in lm.masked_calls[0]] == [(1,)]
    assert masked_sums(lm, toks, [[], []])[1].shape == (0,) and len(lm.masked_calls) == 1  # no call at all


class BosLM(FakeLM):
    """A causal LM without special tokens: with a start token every token scores -id/10 - 0.5, without
    it -id/10 and the first token is not scored (NaN)."""

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        return [Tokens(t.ids[1:-1], t.offsets[1:-1], t.special[1:-1]) for t in super().tokenize(texts)]

    def token_log_probs(self, sequences, *, attention=False, start=True) -> list[TokenScores]:
        out = []
        for ids in sequences:
            lp = -np.array(ids, dtype=np.float64) / 10 - (0.5 if start else 0.0)
            if not start:
                lp[0] = np.nan
            out.append(TokenScores(lp, None, "bos" if start else "none"))
        return out


def test_bos_first_token_takes_the_first_token_with_bos_and_the_rest_without() -> None:
    lm = BosLM(frozenset({Capability.CAUSAL_LM}))
    data = pairs(("a b c", "a d c"))
    rolling = score_pairs(lm, data, method="pll", metric="crows", causal_start="bos")
    # a b c: ids 2, 3, 4
    assert rolling.more == pytest.approx([-(0.2 + 0.3 + 0.4) - 3 * 0.5]) and rolling.counted_more == (3,)
    first = score_pairs(lm, data, method="pll", metric="crows", causal_start="bos-first-token")
    assert first.more == pytest.approx([-(0.2 + 0.5) - 0.3 - 0.4]) and first.less == pytest.approx([-(0.2 + 0.5) - 0.5 - 0.4])
    assert first.counted_more == first.counted_less == (3,)
    assert first.convention["causal_start"] == "bos"  # what the first token saw
    assert first.convention["causal_context"].startswith("only the first token conditioned on BOS")


def test_counts_and_scores_are_split_by_side_for_every_pair() -> None:
    data = pairs(("a b e c", "a d c"), ("a b", "a c"), ("b e f", "b d"))
    scores = score_pairs(FakeLM(), data, method="sss", metric="sss")
    # modified tokens: (b e | d), (b | c), (e f | d)
    assert scores.counted_more == (2, 1, 2) and scores.counted_less == (1, 1, 1)
    assert scores.more == pytest.approx([-(0.31 + 0.61) / 2, -0.31, -(0.61 + 0.71) / 2])
    assert scores.less == pytest.approx([-0.51, -0.41, -0.51])
    assert scores == score_pairs(FakeLM(), data, method="sss", metric="sss")  # compared by what was scored, never element-wise
    nothing = score_pairs(FakeLM(), pairs(("a b", "a e b")), method="sss", metric="sss")
    assert nothing.more.shape == nothing.less.shape == (0,) and nothing.counted_more == nothing.counted_less == ()
