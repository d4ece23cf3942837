"""LPBS's arithmetic on planted sentences and log-probabilities, without a model: the slots found
from character offsets, the words of several pieces, the singular targets and listed copies, the
refusals after dropping words, the masked inputs of each policy, Kurita et al.'s logsumexp scores,
the BIAS Detection Framework's i-th pairs within each number, the WEAT-like target scores and the
per-template summary, each against its definition written here as a loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from bias.core.data.lpbs_tests import LpbsTest
from bias.core.data.templates import Template
from bias.core.interfaces import MaskedRequest, Tokens
from bias.core.model import WordList, WordSetMeta
from bias.core.pair_metrics.lpbs_scores import (
    LpbsItem,
    LpbsScores,
    entries,
    group_scores,
    listed,
    multi_token_words,
    number,
    one_slot_each,
    paired_scores,
    refusal,
    requests,
    set_scores,
    slot_positions,
    stimuli,
    template_summary,
)

NO_TOKENS = Tokens((), (), ())
SG, PL = {"number": "singular"}, {"number": "plural"}


def words(label: str, *listed: str | tuple[str, dict[str, str]]) -> WordList:
    """A set from its entries as a file lists them: a word, or (word, features)."""
    found = [(w, {}) if isinstance(w, str) else w for w in listed]
    return WordList(label, ()).with_entries(found)


def lpbs_of(x: WordList, y: WordList, a: WordList, b: WordList, templates: int = 2) -> LpbsTest:
    meta = WordSetMeta(name="planted-lpbs", kind="lpbs", language="en", bias_type="gender")
    texts = tuple(Template(f"template {i}: {{target}} {{attribute}}") for i in range(templates))
    return LpbsTest(meta, x, y, a, b, texts)


def item(template: int, t_key: str, target: str, attribute: str, a_key: str = "A") -> LpbsItem:
    return LpbsItem(template, t_key, target, a_key, attribute, "", (1,), (2,), NO_TOKENS)


def lse(values: Sequence[float]) -> float:
    return math.log(sum(math.exp(v) for v in values))


# -- slots and pieces -----------------------------------------------------------------------------


def test_slot_positions_are_the_tokens_overlapping_the_span() -> None:
    offsets = ((0, 0), (0, 3), (4, 7), (7, 7), (7, 9), (9, 10), (11, 13), (0, 0))
    special = (True, False, False, False, False, False, False, True)
    tokens = Tokens(tuple(range(8)), offsets, special)
    for span in ((4, 9), (0, 3), (3, 4), (8, 12), (0, 13), (9, 10), (10, 11), (5, 6)):
        expected = tuple(
            i
            for i, ((a, b), s) in enumerate(zip(offsets, special))
            if not s and a != b and max(a, span[0]) < min(b, span[1])
        )
        assert slot_positions(tokens, span) == expected, span
    assert slot_positions(tokens, (4, 9)) == (2, 4)  # the empty token at 7 covers no character
    assert slot_positions(tokens, (3, 4)) == ()  # "the" ends where the span starts


def test_multi_token_words_are_those_split_in_any_sentence() -> None:
    def it(t_key: str, target: str, t_len: int, a_key: str, attribute: str, a_len: int) -> LpbsItem:
        t_pos, a_pos = tuple(range(1, 1 + t_len)), tuple(range(10, 10 + a_len))
        return LpbsItem(0, t_key, target, a_key, attribute, "", t_pos, a_pos, NO_TOKENS)

    items = [
        it("X", "he", 1, "A", "good", 1),
        it("X", "grandson", 2, "A", "good", 1),
        it("Y", "she", 1, "B", "tulipomania", 3),
        it("X", "grandson", 1, "B", "tulipomania", 1),  # one piece here, two above: multi-token
        it("Y", "her", 1, "A", "nice", 1),
    ]
    assert multi_token_words(items) == {"X": ["grandson"], "Y": [], "A": [], "B": ["tulipomania"]}


# -- the stimuli scored ---------------------------------------------------------------------------


def number_test() -> LpbsTest:
    x = words("X", ("man", SG), ("men", PL), "boy", ("man", SG))
    y = words("Y", ("woman", SG), ("woman", PL), ("women", PL))
    return lpbs_of(x, y, words("A", "good", "good", "kind"), words("B", ("bad", PL), "mean"))


def test_a_word_without_a_number_counts_as_singular() -> None:
    assert number({}) == "singular" and number({"gender": "f"}) == "singular"
    assert number(PL) == "plural" and number({"number": "dual"}) == "dual"


def test_singular_targets_keep_their_singular_entries_only() -> None:
    data = stimuli(number_test(), "singular", "drop")
    assert data.X.words == ("man", "boy") and data.Y.words == ("woman",)
    # a word listed in both numbers is one singular target, with its singular features
    assert data.Y.entries() == [("woman", SG)]
    assert data.A.words == ("good", "kind") and data.B.words == ("bad", "mean")  # attributes stay


def test_any_number_with_keep_counts_every_listed_copy() -> None:
    data = stimuli(number_test(), "any", "keep")
    assert data.X.words == ("man", "men", "boy", "man")
    assert data.Y.words == ("woman", "woman", "women") and data.A.words == ("good", "good", "kind")
    dropped = stimuli(number_test(), "any", "drop")
    assert dropped.X.words == ("man", "men", "boy") and dropped.A.words == ("good", "kind")
    kept_singular = stimuli(number_test(), "singular", "keep")
    assert kept_singular.X.words == ("man", "boy", "man") and kept_singular.Y.words == ("woman",)


def test_entries_are_each_listed_copy_or_each_distinct_one() -> None:
    y = number_test().Y
    assert entries(y, "keep") == [("woman", SG), ("woman", PL), ("women", PL)]
    assert entries(y, "drop") == [("woman", SG), ("woman", PL), ("women", PL)]
    a = number_test().A
    assert entries(a, "keep") == [("good", {}), ("good", {}), ("kind", {})]
    assert entries(a, "drop") == [("good", {}), ("kind", {})]


def test_listed_scores_follow_the_set_and_count_each_copy() -> None:
    data = stimuli(number_test(), "any", "keep")
    scores = {"A": {"kind": 2.0, "good": -1.0}, "B": {"mean": 0.5}}
    assert listed(scores, data, "A").tolist() == [-1.0, -1.0, 2.0]
    assert listed(scores, data, "B").tolist() == [0.5]  # "bad" has no score
    assert listed(scores, data, "A").dtype == np.float64


# -- refusals after dropping words ----------------------------------------------------------------


def four(**sizes: int) -> LpbsTest:
    sets = {k: words(k, *(f"{k.lower()}{i}" for i in range(sizes.get(k, 3)))) for k in "XYAB"}
    return lpbs_of(sets["X"], sets["Y"], sets["A"], sets["B"])


def test_nothing_lost_and_enough_words_is_no_refusal() -> None:
    assert refusal(four(X=1, Y=1, A=2, B=2), {}, ("A", "B"), 0.2) is None
    assert refusal(four(A=1, B=1, X=2, Y=2), {}, ("X", "Y"), 0.2) is None


def test_a_set_too_small_is_refused_with_the_words_needed() -> None:
    assert refusal(four(A=1), {}, ("A", "B"), 0.2) == "set A has 1 word; 2 needed"
    assert refusal(four(X=0), {}, ("A", "B"), 0.2) == "set X has 0 words; 1 needed"
    assert refusal(four(X=1), {}, ("X", "Y"), 0.2) == "set X has 1 word; 2 needed"
    assert refusal(four(B=0), {}, ("X", "Y"), 0.2) == "set B has 0 words; 1 needed"


def test_losing_more_than_the_threshold_refuses_and_the_threshold_itself_does_not() -> None:
    data = four(X=5, A=5)
    assert refusal(data, {"X": ["x0"]}, ("A", "B"), 0.2) is None  # 1 of 5 is 20%, allowed
    assert refusal(data, {"A": ["a0"]}, ("A", "B"), 0.2) is None
    assert refusal(data, {"X": ["x0", "x3"]}, ("A", "B"), 0.2) == (
        "set X lost 2 of 5 words as multi-token (40%; at most 20% allowed, and 1 word needed): "
        "x0, x3"
    )
    assert refusal(data, {"X": ["x0", "x3"]}, ("A", "B"), 0.5) is None


def test_losing_all_but_the_words_needed_refuses_whatever_the_threshold() -> None:
    data = four(A=2, X=1)
    assert refusal(data, {"A": ["a1"]}, ("A", "B"), 1.0) == (
        "set A lost 1 of 2 words as multi-token (50%; at most 100% allowed, and 2 words needed): a1"
    )
    assert refusal(data, {"X": ["x0"]}, ("A", "B"), 1.0) == (
        "set X lost 1 of 1 words as multi-token (100%; at most 100% allowed, and 1 word needed): x0"
    )
    assert refusal(four(A=3), {"A": ["a1"]}, ("A", "B"), 1.0) is None  # 2 left


def test_each_listed_copy_of_a_lost_word_counts_and_eight_are_named() -> None:
    a = words("A", "ok", *(f"long{i}" for i in range(9)), "long0")
    data = lpbs_of(words("X", "x"), words("Y", "y"), a.with_duplicates(), words("B", "b1", "b2"))
    lost = {"A": [f"long{i}" for i in range(9)]}
    assert refusal(data, lost, ("A", "B"), 0.95) == (
        "set A lost 10 of 11 words as multi-token (91%; at most 95% allowed, and 2 words needed): "
        "long0, long1, long2, long3, long4, long5, long6, long7"
    )


# -- the masked inputs ----------------------------------------------------------------------------

# [CLS] the wo ##man is ve ##ry ##good [SEP]
IDS = (101, 5, 6, 7, 8, 9, 10, 11, 102)


def sentence(t_pos: tuple[int, ...], a_pos: tuple[int, ...]) -> LpbsItem:
    return LpbsItem(
        0, "X", "t", "A", "a", "", t_pos, a_pos, Tokens(IDS, ((0, 1),) * 9, (False,) * 9)
    )


def test_each_slot_cut_to_its_first_piece_target_first() -> None:
    one, t0, both, t_first, a_first = one_slot_each(sentence((2, 3), (5, 6, 7)))
    assert (one, t0) == ([101, 5, 6, 8, 9, 10, 11, 102], 2)
    assert (both, t_first, a_first) == ([101, 5, 6, 8, 9, 102], 2, 4)


def test_each_slot_cut_to_its_first_piece_attribute_first() -> None:
    one, t0, both, t_first, a_first = one_slot_each(sentence((5, 6, 7), (2, 3)))
    assert (one, t0) == ([101, 5, 6, 7, 8, 9, 102], 5)
    assert (both, t_first, a_first) == ([101, 5, 6, 8, 9, 102], 4, 2)


def test_slots_of_one_piece_stay_where_they_are() -> None:
    one, t0, both, t_first, a_first = one_slot_each(sentence((2,), (5,)))
    assert (one, t0, both, t_first, a_first) == (list(IDS), 2, list(IDS), 2, 5)
    one, t0, both, t_first, a_first = one_slot_each(sentence((6,), (1,)))
    assert (one, t0, both, t_first, a_first) == (list(IDS), 6, list(IDS), 6, 1)
    # one slot of one piece, the other of several, either order
    one, t0, both, t_first, a_first = one_slot_each(sentence((7,), (2, 3)))
    assert (one, t0) == (list(IDS), 7)
    assert (both, t_first, a_first) == ([101, 5, 6, 8, 9, 10, 11, 102], 6, 2)
    one, t0, both, t_first, a_first = one_slot_each(sentence((1,), (5, 6, 7)))
    assert (both, t_first, a_first) == ([101, 5, 6, 7, 8, 9, 102], 1, 5)


@pytest.mark.parametrize("policy", ["joint", "reduce"])
def test_joint_masks_every_piece_of_the_slots(policy: str) -> None:
    assert requests(sentence((2, 3), (5, 6, 7)), policy) == [
        (MaskedRequest(IDS, (2, 3)), MaskedRequest(IDS, (2, 3, 5, 6, 7)), 2)
    ]


def test_first_reads_the_first_piece_at_one_mask() -> None:
    assert requests(sentence((2, 3), (5, 6, 7)), "first") == [
        (
            MaskedRequest((101, 5, 6, 8, 9, 10, 11, 102), (2,)),
            MaskedRequest((101, 5, 6, 8, 9, 102), (2, 4)),
            1,
        )
    ]


def test_one_mask_reads_every_piece_at_one_mask() -> None:
    found = requests(sentence((5, 6, 7), (2, 3)), "one-mask")
    assert found == [
        (
            MaskedRequest((101, 5, 6, 7, 8, piece, 102), (5,)),
            MaskedRequest((101, 5, 6, 8, piece, 102), (4, 2)),
            1,
        )
        for piece in (9, 10, 11)
    ]


# -- scores ---------------------------------------------------------------------------------------


def kurita_items() -> tuple[LpbsTest, list[LpbsItem], np.ndarray, np.ndarray]:
    """Two templates; X = he, him; Y = she, her, hers, theirs; A = good, kind; B = bad, mean, rude.
    Template 1 fits no Y target with "mean"; no sentence has "kind" or "rude" with a Y target, and
    "theirs" only has sentences with "good"."""
    data = lpbs_of(
        words("X", "he", "him"),
        words("Y", "she", "her", "hers", "theirs"),
        words("A", "good", "kind"),
        words("B", "bad", "mean", "rude"),
    )
    pairs = (("A", "good"), ("A", "kind"), ("B", "bad"), ("B", "mean"), ("B", "rude"))
    items = []
    for t in (0, 1):
        for key, targets in (("X", ("he", "him")), ("Y", ("she", "her", "hers", "theirs"))):
            for target in targets:
                for a_key, attribute in pairs:
                    if key == "Y" and (
                        attribute in ("kind", "rude")
                        or (t == 1 and attribute == "mean")
                        or (target == "theirs" and attribute != "good")
                    ):
                        continue
                    items.append(item(t, key, target, attribute, a_key))
    rng = np.random.default_rng(3)
    return data, items, rng.normal(-4, 2, len(items)), rng.normal(-5, 2, len(items))


def kurita(items: list[LpbsItem], tgt: np.ndarray, prior: np.ndarray, t: int, a: str) -> float:
    """Kurita et al.: log sum_X p_tgt - log sum_Y p_tgt - (the same for the prior)."""

    def part(key: str, values: np.ndarray) -> float:
        return lse(
            [
                v
                for it, v in zip(items, values)
                if (it.template, it.t_key, it.attribute) == (t, key, a)
            ]
        )

    return part("X", tgt) - part("Y", tgt) - (part("X", prior) - part("Y", prior))


def test_sets_join_all_targets_by_logsumexp_per_template() -> None:
    _, items, tgt, prior = kurita_items()
    values, per_template = set_scores(items, tgt, prior)
    assert set(per_template) == {(0, "good"), (1, "good"), (0, "bad"), (1, "bad"), (0, "mean")}
    for (t, a), value in per_template.items():
        assert value == pytest.approx(kurita(items, tgt, prior, t, a), abs=1e-12)
    assert values == {
        "good": [per_template[(0, "good")], per_template[(1, "good")]],
        "bad": [per_template[(0, "bad")], per_template[(1, "bad")]],
        "mean": [per_template[(0, "mean")]],
    }


def test_group_scores_with_sets_average_templates_and_score_targets_like_weat() -> None:
    data, items, tgt, prior = kurita_items()
    scores = group_scores(data, items, tgt, prior, "sets", "drop")
    expected = {
        a: np.mean([kurita(items, tgt, prior, t, a) for t in (0, 1) if (t, a) != (1, "mean")])
        for a in ("good", "bad", "mean")
    }
    assert scores.attribute_scores["A"] == pytest.approx({"good": expected["good"]}, abs=1e-12)
    assert scores.attribute_scores["B"] == pytest.approx(
        {"bad": expected["bad"], "mean": expected["mean"]}, abs=1e-12
    )
    assert scores.template_rows == {
        0: {
            "A": [pytest.approx(kurita(items, tgt, prior, 0, "good"), abs=1e-12)],
            "B": [
                pytest.approx(kurita(items, tgt, prior, 0, "bad"), abs=1e-12),
                pytest.approx(kurita(items, tgt, prior, 0, "mean"), abs=1e-12),
            ],
        },
        1: {
            "A": [pytest.approx(kurita(items, tgt, prior, 1, "good"), abs=1e-12)],
            "B": [pytest.approx(kurita(items, tgt, prior, 1, "bad"), abs=1e-12)],
        },
    }
    # s(t) = mean over scored A of asc(t, a) - mean over scored B, asc averaged over templates;
    # "kind" and "rude" have no score of their own (no Y target), so they are left out, and
    # "theirs", with no scored B attribute, gets no score
    asc = tgt - prior
    scored = {"A": ("good",), "B": ("bad", "mean")}
    for key, targets in (("X", ("he", "him")), ("Y", ("she", "her", "hers", "theirs"))):
        expected = {}
        for target in targets:
            means = {}
            for side, attributes in scored.items():
                means[side] = [
                    np.mean(
                        [v for it, v in zip(items, asc) if (it.target, it.attribute) == (target, a)]
                    )
                    for a in attributes
                    if any((it.target, it.attribute) == (target, a) for it in items)
                ]
            if means["A"] and means["B"]:
                expected[target] = np.mean(means["A"]) - np.mean(means["B"])
        assert scores.target_scores[key] == pytest.approx(expected, abs=1e-12)
    assert "theirs" not in scores.target_scores["Y"] and len(scores.target_scores["X"]) == 2
    assert scores.sentences == len(items)
    assert scores.log_tgt is tgt and scores.log_prior is prior


def framework_items(x: WordList, y: WordList) -> tuple[LpbsTest, list[LpbsItem], np.ndarray]:
    """Every target with every attribute in two templates, except that template 1 does not fit
    "bad" with "hers"; asc planted at random."""
    data = lpbs_of(x, y, words("A", "good", "kind", "good"), words("B", "bad"))
    items = [
        item(t, key, w, a, a_key)
        for t in (0, 1)
        for key, wl in (("X", x), ("Y", y))
        for w in dict.fromkeys(wl.words)
        for a_key, a in (("A", "good"), ("A", "kind"), ("B", "bad"))
        if not (t == 1 and w == "hers" and a == "bad")
    ]
    return data, items, np.random.default_rng(5).normal(-3, 1, len(items))


def framework_score(
    items: list[LpbsItem], asc: np.ndarray, pairs: list[tuple[str, str]], a: str
) -> tuple[list[float], dict[int, float]]:
    """The framework: asc(x_i, a) - asc(y_i, a) for each pair in each template that fits both."""
    of = {(it.template, it.t_key, it.target, it.attribute): v for it, v in zip(items, asc)}
    values, per_template = [], {}
    for t in (0, 1):
        found = [
            of[(t, "X", x, a)] - of[(t, "Y", y, a)]
            for x, y in pairs
            if (t, "X", x, a) in of and (t, "Y", y, a) in of
        ]
        values += found
        if found:
            per_template[t] = float(np.mean(found))
    return values, per_template


def test_ith_pairs_are_formed_within_each_number_in_the_files_order() -> None:
    x = words("X", ("he", SG), ("they", PL), ("him", SG), ("his", SG))
    y = words("Y", ("she", SG), ("them", PL), ("hers", SG))
    data, items, asc = framework_items(x, y)
    prior = np.zeros(len(items))
    values, per_template = paired_scores(data, items, asc, prior, "drop")
    pairs = [("he", "she"), ("him", "hers"), ("they", "them")]  # "his" has no 3rd singular Y
    for a in ("good", "kind", "bad"):
        want, want_template = framework_score(items, asc, pairs, a)
        assert values[a] == pytest.approx(want, abs=1e-12), a
        assert {t: per_template[(t, a)] for t in (0, 1)} == pytest.approx(want_template), a
    assert len(values["bad"]) == 5  # template 1 lacks ("him", "hers") with "bad"
    # the prior is subtracted from each sentence's log p_tgt
    prior = np.random.default_rng(8).normal(-2, 1, len(items))
    shifted, _ = paired_scores(data, items, asc + prior, prior, "drop")
    assert shifted["good"] == pytest.approx(values["good"], abs=1e-12)


@pytest.mark.parametrize("duplicates", ["drop", "keep"])
def test_a_pair_listed_twice_counts_once_unless_kept(duplicates: str) -> None:
    x = words("X", "he", "him", "he")
    y = words("Y", "she", "her", "she")
    data, items, asc = framework_items(x, y)
    values, _ = paired_scores(data, items, asc, np.zeros(len(items)), duplicates)
    pairs = [("he", "she"), ("him", "her")] + ([("he", "she")] if duplicates == "keep" else [])
    want, _ = framework_score(items, asc, pairs, "good")
    assert values["good"] == pytest.approx(want, abs=1e-12)


def test_group_scores_with_ith_pairs_count_each_listed_attribute() -> None:
    """A listed twice ("good") gives two group scores per template in the summary rows and one
    attribute score."""
    x = words("X", ("he", SG), ("him", SG))
    y = words("Y", ("she", SG), ("her", SG))
    data, items, asc = framework_items(x, y)
    data = stimuli(data, "singular", "keep")
    scores = group_scores(data, items, asc, np.zeros(len(items)), "i-th", "keep")
    pairs = [("he", "she"), ("him", "her")]
    for a_key, a in (("A", "good"), ("A", "kind"), ("B", "bad")):
        want, per_template = framework_score(items, asc, pairs, a)
        assert scores.attribute_scores[a_key][a] == pytest.approx(np.mean(want), abs=1e-12)
    good = framework_score(items, asc, pairs, "good")[1]
    kind = framework_score(items, asc, pairs, "kind")[1]
    assert scores.template_rows[1]["A"] == pytest.approx([good[1], kind[1], good[1]])


def test_the_template_summary_gives_each_templates_means_and_difference() -> None:
    data = lpbs_of(words("X", "x"), words("Y", "y"), words("A", "a"), words("B", "b"), templates=3)
    rows = {2: {"A": [1.0, 2.0], "B": [0.5]}, 0: {"A": [-1.0], "B": []}, 1: {"A": [], "B": [4.0]}}
    scores = LpbsScores(3, np.zeros(3), np.zeros(3), {}, {}, rows)
    assert template_summary(data, scores) == [
        {
            "template": "template 0: {target} {attribute}",
            "group_scores": 1,
            "mean_score_A": -1.0,
            "mean_score_B": None,
            "difference": None,
        },
        {
            "template": "template 1: {target} {attribute}",
            "group_scores": 1,
            "mean_score_A": None,
            "mean_score_B": 4.0,
            "difference": None,
        },
        {
            "template": "template 2: {target} {attribute}",
            "group_scores": 3,
            "mean_score_A": 1.5,
            "mean_score_B": 0.5,
            "difference": 1.0,
        },
    ]
