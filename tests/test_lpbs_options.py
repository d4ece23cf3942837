"""The lpbs metric's settings, its price, and the result it builds from scores planted here (no
model): the effect size against Cohen's d written here, the p-value against every partition
enumerated here, the other unit's effect, the refusals, the warnings about words of several pieces
and the convention of each setting.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bias.core.data.lpbs_tests import LpbsTest
from bias.core.data.templates import Template
from bias.core.errors import BiasError
from bias.core.model import WordList, WordSetMeta
from bias.core.pair_metrics.lpbs_scores import LpbsScores
from bias.core.runs.budget import permutation_cost
from bias.plugins.embedders.completion_server import CompletionServer
from bias.plugins.metrics.lpbs import Lpbs

MODEL = CompletionServer(location="http://127.0.0.1:9/v1")  # only its name is used; never contacted
SG, PL = {"number": "singular"}, {"number": "plural"}


def words(label: str, *listed: str | tuple[str, dict[str, str]]) -> WordList:
    return WordList(label, ()).with_entries([(w, {}) if isinstance(w, str) else w for w in listed])


def lpbs_data(x: WordList, y: WordList, a: WordList, b: WordList) -> LpbsTest:
    meta = WordSetMeta(name="planted-lpbs", kind="lpbs", language="en", bias_type="gender")
    templates = (Template("{target} is {attribute}"), Template("the {attribute} {target}"))
    return LpbsTest(meta, x, y, a, b, templates)


DATA = lpbs_data(
    words("X", "he", "him", "his"),
    words("Y", "she", "her"),
    words("A", "good", "kind", "calm"),
    words("B", "bad", "mean", "rude"),
)
ATTRIBUTES = {
    "A": {"good": 0.9, "kind": 0.4, "calm": 0.7},
    "B": {"bad": -0.2, "mean": 0.1, "rude": -0.6},
}
TARGETS = {"X": {"he": 0.3, "him": 0.8, "his": 0.5}, "Y": {"she": -0.1, "her": 0.2}}
ROWS = {0: {"A": [0.9, 0.5], "B": [-0.3]}, 1: {"A": [0.2], "B": [0.1, -0.5]}}


def scores(attributes=ATTRIBUTES, targets=TARGETS, rows=ROWS) -> LpbsScores:
    return LpbsScores(12, np.arange(12.0) - 20, np.arange(12.0) - 25, attributes, targets, rows)


def cohen(first: list[float], second: list[float], ddof: int) -> float:
    both = first + second
    mean = sum(both) / len(both)
    std = math.sqrt(sum((v - mean) ** 2 for v in both) / (len(both) - ddof))
    return (sum(first) / len(first) - sum(second) / len(second)) / std


def exact_p(first: list[float], second: list[float]) -> float:
    """Two-sided: the share of all partitions whose |sum - sum - null mean| reaches the observed."""
    pooled, k = first + second, len(first)
    stats = []
    for chosen in itertools.combinations(range(len(pooled)), k):
        inside = sum(pooled[i] for i in chosen)
        stats.append(inside - (sum(pooled) - inside))
    centre = sum(stats) / len(stats)
    observed = abs(sum(first) - sum(second) - centre)
    return sum(abs(s - centre) >= observed - 1e-12 for s in stats) / len(stats)


# -- parameters and price -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "allowed", "refused"),
    [
        ("ddof", (0, 1), (2, -1)),
        ("permutations", (1, 10), (0,)),
        ("exact_limit", (0, 5), (-1,)),
        ("lost_threshold", (0.0, 1.0), (1.01, -0.01)),
    ],
)
def test_each_parameter_takes_its_documented_range(
    name: str, allowed: tuple, refused: tuple
) -> None:
    for value in allowed:
        assert getattr(Lpbs(**{name: value}), name) == value
    for value in refused:
        with pytest.raises(BiasError, match=name):
            Lpbs(**{name: value})


def test_the_price_is_the_permutation_test_of_the_unit_compared_as_scored() -> None:
    data = lpbs_data(
        words("X", ("he", SG), ("they", PL), ("him", SG), ("he", SG)),
        words("Y", ("she", SG), ("women", PL)),
        words("A", "good", "kind", "good", "calm"),
        words("B", "bad", "mean"),
    )
    assert Lpbs().cost(data) == permutation_cost(3, 2, 100_000, 100_000)
    assert Lpbs(duplicates="keep").cost(data) == permutation_cost(4, 2, 100_000, 100_000)
    assert Lpbs(unit="target", exact_limit=3, permutations=7).cost(data) == permutation_cost(
        3, 2, 7, 3
    )
    assert Lpbs(unit="target", target_number="singular", duplicates="keep").cost(
        data
    ) == permutation_cost(3, 1, 100_000, 100_000)


def test_other_data_is_refused_naming_the_kind() -> None:
    with pytest.raises(BiasError, match=r"needs an LPBS test \(kind lpbs\), not WordList"):
        Lpbs().compute(MODEL, DATA.X)


# -- the result from scores -----------------------------------------------------------------------


@pytest.mark.parametrize("ddof", [0, 1])
def test_the_attribute_effect_is_cohens_d_with_an_exact_two_sided_p(ddof: int) -> None:
    result = Lpbs(ddof=ddof)._result(MODEL, DATA, 5, scores(), {k: [] for k in "XYAB"}, {})
    a, b = [0.9, 0.4, 0.7], [-0.2, 0.1, -0.6]
    assert result.status == "ok"
    assert result.effect_size == pytest.approx(cohen(a, b, ddof), abs=1e-12)
    assert result.p_value == pytest.approx(exact_p(a, b), abs=1e-12)
    figures = result.figures
    assert figures["mean_A"] == pytest.approx(np.mean(a)) and figures["mean_B"] == pytest.approx(
        np.mean(b)
    )
    assert figures["std"] == pytest.approx(np.std(a + b, ddof=ddof))
    x, y = [0.3, 0.8, 0.5], [-0.1, 0.2]
    assert figures["effect_size_other_unit"] == pytest.approx(cohen(x, y, ddof), abs=1e-12)
    assert figures["mean_log_p_target"] == pytest.approx(-14.5)
    assert figures["mean_log_p_prior"] == pytest.approx(-19.5)
    assert figures["sentences"] == 12
    assert figures["attribute_scores"] == ATTRIBUTES and figures["target_scores"] == TARGETS
    assert [t["difference"] for t in figures["templates"]] == pytest.approx([1.0, 0.4])
    assert result.sizes == {"X": 3, "Y": 2, "A": 3, "B": 3}
    assert result.convention["p_estimator"] == "k/C(N,|A|)" and result.convention["ddof"] == ddof
    assert result.seed == 5 and result.warnings == []


def test_the_target_unit_compares_x_and_y() -> None:
    result = Lpbs(unit="target", ddof=0)._result(MODEL, DATA, 1, scores(), {}, {})
    x, y = [0.3, 0.8, 0.5], [-0.1, 0.2]
    assert result.effect_size == pytest.approx(cohen(x, y, 0), abs=1e-12)
    assert result.p_value == pytest.approx(exact_p(x, y), abs=1e-12)
    assert result.figures["mean_X"] == pytest.approx(np.mean(x))
    assert result.figures["mean_Y"] == pytest.approx(np.mean(y))
    a, b = [0.9, 0.4, 0.7], [-0.2, 0.1, -0.6]
    assert result.figures["effect_size_other_unit"] == pytest.approx(cohen(a, b, 0), abs=1e-12)
    assert result.convention["unit"] == "target"


def test_the_other_units_effect_needs_two_scores_on_each_side() -> None:
    one_y = {"X": TARGETS["X"], "Y": {"she": -0.1}}
    result = Lpbs()._result(MODEL, DATA, 1, scores(targets=one_y), {}, {})
    assert result.status == "ok" and result.figures["effect_size_other_unit"] is None
    one_x = {"X": {"he": 0.3}, "Y": TARGETS["Y"]}
    result = Lpbs()._result(MODEL, DATA, 1, scores(targets=one_x), {}, {})
    assert result.figures["effect_size_other_unit"] is None
    two = {"X": {"he": 0.3, "his": 0.5}, "Y": TARGETS["Y"]}
    result = Lpbs()._result(MODEL, DATA, 1, scores(targets=two), {}, {})
    assert result.figures["effect_size_other_unit"] == pytest.approx(
        cohen([0.3, 0.5], [-0.1, 0.2], 1)
    )


@pytest.mark.parametrize("short", ["A", "B"])
def test_two_scored_words_on_each_side_are_needed(short: str) -> None:
    two = {**ATTRIBUTES, short: dict(list(ATTRIBUTES[short].items())[:2])}
    assert Lpbs()._result(MODEL, DATA, 1, scores(attributes=two), {}, {}).status == "ok"
    one = {**ATTRIBUTES, short: dict(list(ATTRIBUTES[short].items())[:1])}
    result = Lpbs()._result(MODEL, DATA, 1, scores(attributes=one), {}, {})
    sizes = {"A": 3, "B": 3, short: 1}
    assert (result.status, result.reason) == (
        "refused",
        f"too few scored attributes (A {sizes['A']}, B {sizes['B']}): templates must fit each "
        "word with words of the other slot from both sets",
    )


def test_scores_without_spread_are_refused() -> None:
    flat = {"A": {w: 0.25 for w in ATTRIBUTES["A"]}, "B": {w: 0.25 for w in ATTRIBUTES["B"]}}
    result = Lpbs()._result(MODEL, DATA, 1, scores(attributes=flat), {}, {})
    assert result.status == "refused" and result.reason.startswith(
        "every attribute has the same score (+0.25)"
    )


def test_words_of_several_pieces_are_named_in_a_warning() -> None:
    multi = {"X": ["him"], "Y": [], "A": [f"w{i}" for i in range(9)], "B": ["rude"]}
    for policy in ("joint", "first", "one-mask"):
        result = Lpbs(multi_token=policy)._result(MODEL, DATA, 1, scores(), multi, {})
        assert result.warnings == [
            f"11 word(s) are several sub-tokens, scored by policy '{policy}': "
            "him, w0, w1, w2, w3, w4, w5, w6"
        ]
        assert result.figures["multi_token_words"] == multi
    lost = {"A": ["calm"], "X": ["his", "him"]}
    result = Lpbs(multi_token="reduce")._result(MODEL, DATA, 1, scores(), multi, lost)
    assert result.warnings == ["dropped as multi-token (reduce): A: calm; X: his, him"]


def test_the_convention_says_how_each_setting_scored() -> None:
    def convention(**params) -> dict:
        return Lpbs(**params)._result(MODEL, DATA, 3, scores(), {}, {}).convention

    found = convention()
    assert found["score"].startswith("log space: logsumexp_X log p_tgt - logsumexp_Y")
    assert found["prior_attribute_slot"] == "one mask per sub-token of the attribute word"
    assert (found["method"], found["seed"], found["alternative"]) == ("exact", None, "two-sided")
    assert (found["pairing"], found["target_number"], found["duplicates"]) == (
        "sets",
        "any",
        "drop",
    )
    assert convention(pairing="i-th")["score"].startswith("log space: mean over the i-th (X, Y)")
    assert convention(multi_token="first")["prior_attribute_slot"].startswith(
        "one mask: with multi_token=first"
    )
    assert convention(multi_token="one-mask")["prior_attribute_slot"].startswith(
        "one mask: with multi_token=one-mask"
    )
    sampled = convention(exact_limit=0, permutations=50)
    assert (sampled["method"], sampled["permutations"], sampled["seed"]) == ("sampled", 50, 3)
    assert sampled["p_estimator"] == "(k+1)/(m+1)"
