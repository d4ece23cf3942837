"""The WEAT metric's own logic: what it hands to the statistics, what it records, when it refuses.

The statistics themselves are checked against brute force in test_stats.py; here an in-memory
embedder stands in for a real model so that every vector, and every lost word, is chosen by the test.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
import pytest

from bias.core.statistics import association as stats
from bias.core.errors import BiasError
from bias.core.compatibility import check_compatible
from bias.core.interfaces import Capability, Embedder
from bias.core.model import ASSOCIATION, OK, REFUSED, AssociationTest, Result, WordList, WordSetMeta, WordVectors
from bias.plugins.metrics.weat import Weat

DIM = 16


@attrs.define
class DictEmbedder(Embedder):
    """A static vocabulary held in memory; words not in it are reported as lost, like a real model."""

    name: ClassVar[str] = "dict"
    summary: ClassVar[str] = "word vectors from an in-memory dict (tests only)"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    location: str = "memory"
    table: dict[str, np.ndarray] = attrs.field(factory=dict)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        found = [w for w in words if w in self.table]
        lost = tuple(w for w in words if w not in self.table)
        vectors = np.array([self.table[w] for w in found], dtype=np.float64).reshape(len(found), DIM)
        return WordVectors(words=tuple(found), vectors=vectors, lost=lost)


def make_case(n_x=8, n_y=8, n_a=8, n_b=8, *, seed=0, strength=0.6):
    """Word sets and vectors in which X leans towards A and Y towards B."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=DIM)
    axis /= np.linalg.norm(axis)
    words = {key: [f"{key.lower()}{i}" for i in range(n)] for key, n in (("X", n_x), ("Y", n_y), ("A", n_a), ("B", n_b))}
    sign = {"X": 1.0, "A": 1.0, "Y": -1.0, "B": -1.0}
    table = {w: rng.normal(size=DIM) + sign[key] * strength * 3 * axis for key, ws in words.items() for w in ws}
    return words, table


def make_test(words, name="test/weat-toy") -> AssociationTest:
    meta = WordSetMeta(name=name, kind=ASSOCIATION, language="en", bias_type="gender")
    return AssociationTest(
        meta=meta,
        X=WordList("targets x", tuple(words["X"])),
        Y=WordList("targets y", tuple(words["Y"])),
        A=WordList("attributes a", tuple(words["A"])),
        B=WordList("attributes b", tuple(words["B"])),
    )


def matrix(table, words):
    return np.array([table[w] for w in words], dtype=np.float64)


def expected_from_stats(table, words, metric: Weat, seed):
    A, B = matrix(table, words["A"]), matrix(table, words["B"])
    sx = stats.association_scores(matrix(table, words["X"]), A, B)
    sy = stats.association_scores(matrix(table, words["Y"]), A, B)
    d = stats.effect_size(sx, sy, ddof=metric.ddof)
    test = stats.permutation_test(
        sx, sy, alternative=metric.alternative, permutations=metric.permutations, exact_limit=metric.exact_limit, seed=seed
    )
    return sx, sy, d, test


def bf_effect_size(sx, sy, ddof):
    both = [float(v) for v in sx] + [float(v) for v in sy]
    mean = math.fsum(both) / len(both)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in both) / (len(both) - ddof))
    return (math.fsum(sx) / len(sx) - math.fsum(sy) / len(sy)) / std


# --------------------------------------------------------------------------------------------------
# The in-memory embedder is a proper Embedder
# --------------------------------------------------------------------------------------------------


def test_dict_embedder_fits_the_weat_metric():
    words, table = make_case()
    embedder = DictEmbedder(table=table)
    assert isinstance(embedder, Embedder)
    assert attrs.has(DictEmbedder)
    check_compatible(Weat, embedder, ASSOCIATION)
    got = embedder.word_vectors(["x0", "nope", "a1"])
    assert got.words == ("x0", "a1") and got.lost == ("nope",)
    assert got.vectors.shape == (2, DIM)


# --------------------------------------------------------------------------------------------------
# Figures and conventions
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_exact_result_equals_stats_on_the_same_vectors(ddof, alternative):
    words, table = make_case(8, 8, seed=1)
    metric = Weat(ddof=ddof, alternative=alternative)
    result = metric.compute(DictEmbedder(table=table), make_test(words), seed=5)
    sx, sy, d, test = expected_from_stats(table, words, metric, seed=5)

    assert result.status == OK and result.ok
    assert result.reason is None
    assert result.effect_size == d
    assert result.effect_size == pytest.approx(bf_effect_size(sx, sy, ddof), rel=1e-12)
    assert result.p_value == test.p_value
    assert result.figures["statistic"] == test.statistic
    assert result.figures["parametric_p"] == test.parametric_p
    assert result.figures["mean_s_X"] == pytest.approx(float(np.mean(sx)), abs=1e-15)
    assert result.figures["mean_s_Y"] == pytest.approx(float(np.mean(sy)), abs=1e-15)
    assert result.figures["std_s"] == pytest.approx(float(np.concatenate([sx, sy]).std(ddof=ddof)), rel=1e-14)
    assert result.sizes == {"X": 8, "Y": 8, "A": 8, "B": 8}
    assert result.lost == {}
    assert result.warnings == []
    assert result.metric == "weat" and result.wordset == "test/weat-toy" and result.model == "dict:memory"
    assert result.seed == 5

    assert result.convention["ddof"] == ddof
    assert result.convention["alternative"] == alternative
    assert result.convention["method"] == "exact"
    assert result.convention["permutations"] == math.comb(16, 8) == 12_870
    assert result.convention["p_estimator"] == "k/C(N,|X|)"
    assert "seed" in result.convention
    assert result.convention["seed"] is None  # enumeration draws nothing
    assert result.convention["ties"] == "counted"


def test_positive_effect_for_x_near_a():
    words, table = make_case(8, 8, seed=2, strength=1.0)
    result = Weat().compute(DictEmbedder(table=table), make_test(words))
    assert result.effect_size > 1.0
    assert result.p_value < 0.01
    assert result.p_value >= 1 / math.comb(16, 8)


def test_sampled_result_records_its_convention():
    words, table = make_case(12, 12, seed=3)
    metric = Weat(exact_limit=1000, permutations=4000)
    result = metric.compute(DictEmbedder(table=table), make_test(words), seed=11)
    _, _, d, test = expected_from_stats(table, words, metric, seed=11)

    assert math.comb(24, 12) > 1000
    assert result.status == OK
    assert result.effect_size == d
    assert result.p_value == test.p_value
    assert result.p_value >= 1 / 4001
    assert result.convention["method"] == "sampled"
    assert result.convention["permutations"] == 4000
    assert result.convention["exact_limit"] == 1000
    assert result.convention["seed"] == 11
    assert result.convention["p_estimator"] == "(k+1)/(m+1)"
    assert result.convention["ddof"] == 1
    assert result.convention["alternative"] == "greater"
    assert result.params["permutations"] == 4000 and result.params["exact_limit"] == 1000


def test_sampled_result_is_reproducible_and_seed_dependent():
    words, table = make_case(12, 12, seed=4, strength=0.1)
    metric = Weat(exact_limit=0, permutations=3000)
    embedder, data = DictEmbedder(table=table), make_test(words)
    first = metric.compute(embedder, data, seed=1)
    assert metric.compute(embedder, data, seed=1) == first
    other = metric.compute(embedder, data, seed=2)
    assert (other.p_value, other.figures["null_mean"]) != (first.p_value, first.figures["null_mean"])


def test_unseeded_sampled_run_records_a_seed_that_reproduces_it():
    words, table = make_case(12, 12, seed=5, strength=0.1)
    metric = Weat(exact_limit=0, permutations=2000)
    embedder, data = DictEmbedder(table=table), make_test(words)
    first = metric.compute(embedder, data, seed=None)
    used = first.convention["seed"]
    assert isinstance(used, int)
    again = metric.compute(embedder, data, seed=used)
    assert again.p_value == first.p_value
    assert again.figures["null_mean"] == first.figures["null_mean"]


def test_unequal_targets_run_with_a_warning():
    words, table = make_case(8, 6, seed=6)
    metric = Weat()
    result = metric.compute(DictEmbedder(table=table), make_test(words), seed=0)
    _, _, d, test = expected_from_stats(table, words, metric, seed=0)
    assert result.status == OK
    assert result.effect_size == d and result.p_value == test.p_value
    assert result.sizes["X"] == 8 and result.sizes["Y"] == 6
    assert result.convention["permutations"] == math.comb(14, 8)
    assert "8/6" in result.convention["partitions"]
    assert len(result.warnings) == 1
    assert "size" in result.warnings[0] and "8" in result.warnings[0] and "6" in result.warnings[0]
    assert "two-sided" not in result.warnings[0]  # a one-sided run is not told about the two-sided test
    both = Weat(alternative="two-sided", bootstrap=0).compute(DictEmbedder(table=table), make_test(words), seed=0)
    assert "two-sided test measures distance from the null mean" in both.warnings[0]
    assert "normal approximation" in result.convention["parametric_p"]


# --------------------------------------------------------------------------------------------------
# Lost words and broken vectors
# --------------------------------------------------------------------------------------------------


def drop(table, *gone):
    return {w: v for w, v in table.items() if w not in gone}


@pytest.mark.parametrize("key", ["X", "Y", "A", "B"])
def test_refuses_a_set_that_lost_more_than_a_fifth(key):
    words, table = make_case(10, 10, 10, 10, seed=7)
    gone = words[key][:3]  # 30% of the set
    result = Weat().compute(DictEmbedder(table=drop(table, *gone)), make_test(words), seed=0)
    assert result.status == REFUSED and not result.ok
    assert result.effect_size is None and result.p_value is None
    assert f"set {key}" in result.reason
    for w in gone:
        assert w in result.reason
    assert result.lost == {key: gone}


@pytest.mark.parametrize(("size", "n_lost"), [(10, 2), (5, 1)])
def test_runs_when_exactly_a_fifth_is_lost(size, n_lost):
    words, table = make_case(size, size, 8, 8, seed=8)
    gone = words["X"][:n_lost]
    metric = Weat()
    result = metric.compute(DictEmbedder(table=drop(table, *gone)), make_test(words), seed=0)
    assert result.status == OK
    assert result.lost == {"X": gone}
    assert result.sizes["X"] == size - n_lost
    kept = {**words, "X": words["X"][n_lost:]}
    _, _, d, test = expected_from_stats(table, kept, metric, seed=0)
    assert result.effect_size == d and result.p_value == test.p_value


def test_threshold_is_a_parameter():
    words, table = make_case(10, 10, seed=9)
    gone = words["Y"][:3]
    embedder, data = DictEmbedder(table=drop(table, *gone)), make_test(words)
    assert Weat(lost_threshold=0.3).compute(embedder, data).status == OK
    assert Weat(lost_threshold=0.05).compute(DictEmbedder(table=drop(table, gone[0])), data).status == REFUSED


# An empty set must reach the refusal, not crash while its (0 x dim) matrix is built.
@pytest.mark.parametrize("threshold", [0.2, 1.0])
@pytest.mark.parametrize("key", ["X", "A"])
def test_refuses_when_every_word_of_a_set_is_lost(key, threshold):
    words, table = make_case(6, 6, 6, 6, seed=10)
    metric = Weat(lost_threshold=threshold)
    result = metric.compute(DictEmbedder(table=drop(table, *words[key])), make_test(words))
    assert result.status == REFUSED
    assert result.reason and key in result.reason
    assert result.lost[key] == words[key]


@pytest.mark.parametrize("bad", ["zero", "nan", "inf"])
@pytest.mark.parametrize("key", ["Y", "B"])
def test_refuses_zero_or_non_finite_vectors_naming_the_word(bad, key):
    words, table = make_case(6, 6, 6, 6, seed=11)
    culprit = words[key][2]
    vector = np.zeros(DIM)
    if bad != "zero":
        vector = np.ones(DIM)
        vector[3] = np.nan if bad == "nan" else np.inf
    table[culprit] = vector
    result = Weat().compute(DictEmbedder(table=table), make_test(words))
    assert result.status == REFUSED
    assert culprit in result.reason
    assert f"set {key}" in result.reason


# --------------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"permutations": 0},
        {"permutations": -10},
        {"ddof": 2},
        {"ddof": -1},
        {"alternative": "bigger"},
        {"alternative": "two_sided"},
        {"lost_threshold": 1.5},
    ],
)
def test_invalid_parameters_raise_bias_error(kwargs):
    with pytest.raises(BiasError):
        Weat(**kwargs)


def test_defaults_follow_the_reference_convention():
    metric = Weat()
    assert (metric.ddof, metric.alternative, metric.permutations, metric.exact_limit, metric.lost_threshold) == (
        1,
        "greater",
        100_000,
        100_000,
        0.2,
    )
    assert (metric.bootstrap, metric.ci_level, metric.ci_method, metric.ties, metric.duplicates) == (2000, 0.95, "bca", "counted", "drop")
    assert Weat(permutations=1).permutations == 1  # the smallest sampled test is allowed


def test_cost_is_the_permutation_test_plus_the_bootstrap():
    from bias.core.runs.budget import bootstrap_cost, permutation_cost

    words, _ = make_case(30, 30, 8, 9)
    metric = Weat(permutations=50_000, bootstrap=3000)
    cost = metric.cost(make_test(words))
    parts = [permutation_cost(30, 30, 50_000, 100_000), bootstrap_cost({"X": 30, "Y": 30, "A": 8, "B": 9}, 3000)]
    assert cost.seconds == pytest.approx(parts[0].seconds + parts[1].seconds) and parts[1].seconds > 0
    assert cost.causes == parts[0].causes + parts[1].causes


def test_words_built_from_sub_words_are_recorded_and_warned_about():
    @attrs.define
    class SubWordEmbedder(DictEmbedder):
        def word_vectors(self, words: Sequence[str]) -> WordVectors:
            found = super().word_vectors(words)
            return attrs.evolve(found, approximated=tuple(w for w in found.words if w in ("x1", "b0")))

    words, table = make_case(6, 6, seed=2)
    result = Weat(bootstrap=0).compute(SubWordEmbedder(table=table), make_test(words), seed=0)
    assert result.status == OK and result.approximated == {"X": ["x1"], "B": ["b0"]}
    assert "2 word(s) had no vector of their own and were built from sub-words" in result.warnings


def test_the_comparison_recorded_names_what_the_p_value_counts():
    words, table = make_case(5, 5, seed=3)
    embedder, data = DictEmbedder(table=table), make_test(words)
    exact = Weat(bootstrap=0).compute(embedder, data, seed=0).convention
    sampled = Weat(bootstrap=0, exact_limit=0, permutations=100).compute(embedder, data, seed=0).convention
    strict = Weat(bootstrap=0, ties="strict").compute(embedder, data, seed=0).convention
    assert exact["comparison"] == ">= (the observed partition is among the N)" and exact["method"] == "exact"
    assert sampled["comparison"] == ">= (the observed statistic adds 1)" and sampled["method"] == "sampled"
    assert strict["comparison"] == "> (the observed partition is among the N)"


# --------------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric", [Weat(), Weat(exact_limit=10, permutations=500, ddof=0, alternative="two-sided")], ids=["exact", "sampled"]
)
def test_result_json_round_trip(metric):
    words, table = make_case(6, 7, seed=12)
    result = metric.compute(DictEmbedder(table=drop(table, words["A"][0])), make_test(words), seed=3)
    assert result.status == OK and result.warnings and result.lost
    line = result.to_json()
    assert "\n" not in line
    back = Result.from_json(line)
    assert back == result
    assert back.to_json() == line


def test_refused_result_json_round_trip():
    words, table = make_case(6, 6, seed=13)
    result = Weat().compute(DictEmbedder(table=drop(table, *words["B"][:4])), make_test(words))
    assert result.status == REFUSED
    assert Result.from_json(result.to_json()) == result


def test_nan_figures_become_null_in_json():
    # A figure that is not a number (a parametric p of a null distribution without spread, say) is
    # written as null: the JSON writer forbids NaN.
    words, table = make_case(5, 5, seed=14)
    result = Weat(bootstrap=0).compute(DictEmbedder(table=table), make_test(words))
    result = attrs.evolve(result, effect_size=float("nan"), figures={**result.figures, "parametric_p": float("nan")})
    assert result.status == OK and 0 < result.p_value <= 1

    line = result.to_json()  # must not raise: the writer forbids NaN
    data = json.loads(line)
    assert data["effect_size"] is None
    assert data["figures"]["parametric_p"] is None
    assert "NaN" not in line and "Infinity" not in line
    back = Result.from_json(line)
    assert back.effect_size is None
    assert back.p_value == result.p_value


def test_non_finite_values_anywhere_become_null():
    result = Result(
        key="k",
        model="dict:memory",
        wordset="w",
        metric="weat",
        effect_size=float("inf"),
        p_value=np.float64("nan"),
        figures={"a": np.float32("nan"), "b": [1.0, float("-inf")], "c": np.array([0.5, np.nan]), "n": np.int64(3)},
    )
    data = json.loads(result.to_json())
    assert data["effect_size"] is None and data["p_value"] is None
    assert data["figures"] == {"a": None, "b": [1.0, None], "c": [0.5, None], "n": 3}


def test_a_degenerate_test_is_refused_and_never_enters_a_correction_family():
    """All targets sharing one vector: the std of s is zero, d is 0/0 and the permutation p is 1.
    Reported as ok, it read as "no bias" and counted in the Holm family; it must be refused."""
    from bias.core.statistics.multiple_testing import adjust

    words, table = make_case(seed=4)
    shared = table[words["X"][0]]
    flat = {**table, **{w: shared for w in words["X"] + words["Y"]}}
    result = Weat(permutations=200, bootstrap=0).compute(DictEmbedder(table=flat), make_test(words), seed=0)
    assert result.status == REFUSED and "same association score" in result.reason and "0/0" in result.reason
    assert result.effect_size is None and result.p_value is None
    normal = attrs.evolve(Weat(permutations=200, bootstrap=0).compute(DictEmbedder(table=table), make_test(words), seed=0), key="k1")
    family = adjust([attrs.evolve(result, key="k0"), normal])
    assert set(family) == {"k1"} and family["k1"].size == 1


# --------------------------------------------------------------------------------------------------
# Repeats are case-sensitive, unless the run looks words up lowercased
# --------------------------------------------------------------------------------------------------


def _case_file(tmp_path):
    """A test in the WEAT text format of the Lauscher-Glavas files, with `Paradiso` and `paradiso` in X."""
    folder = tmp_path / "it" / "WEAT"
    folder.mkdir(parents=True)
    path = folder / "LG_case.txt"
    path.write_text(
        "Paradiso, paradiso, fiore, rosa,\ninsetto, ape, mosca, vespa,\nbello, buono, gioia, pace,\nbrutto, male, odio, guerra,\n",
        encoding="utf-8",
    )
    return path


def _case_table():
    rng = np.random.default_rng(21)
    words = "Paradiso paradiso fiore rosa insetto ape mosca vespa bello buono gioia pace brutto male odio guerra".split()
    return {w: rng.normal(size=DIM) for w in words}


def _d(table, x, y, a, b, ddof=1):
    def s(w):
        cos = lambda u, v: float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))  # noqa: E731
        return math.fsum(cos(table[w], table[t]) for t in a) / len(a) - math.fsum(cos(table[w], table[t]) for t in b) / len(b)

    return bf_effect_size([s(w) for w in x], [s(w) for w in y], ddof)


def test_repeats_are_case_sensitive_by_default(tmp_path):
    """`Paradiso` and `paradiso` are two stimuli, as the BIAS Detection Framework counts them."""
    from bias.registry.resolve import load_wordset

    data = load_wordset(str(_case_file(tmp_path)))
    assert data.X.words == ("Paradiso", "paradiso", "fiore", "rosa") and data.repeats() == {}
    table = _case_table()
    result = Weat(bootstrap=0, ddof=0).compute(DictEmbedder(table=table), data, seed=0)
    assert result.sizes["X"] == 4 and not any("repeated" in w for w in result.warnings)
    expected = _d(table, ["Paradiso", "paradiso", "fiore", "rosa"], ["insetto", "ape", "mosca", "vespa"],
                  ["bello", "buono", "gioia", "pace"], ["brutto", "male", "odio", "guerra"], ddof=0)
    assert result.effect_size == pytest.approx(expected, abs=1e-12)


def test_lowercased_lookup_makes_case_variants_repeats(tmp_path):
    """With `case = lower` both forms look up `paradiso`: one stimulus, listed twice, dropped or kept."""
    from bias.registry.resolve import load_wordset

    data = load_wordset(str(_case_file(tmp_path)))
    table = _case_table()
    del table["Paradiso"]
    sets = (["insetto", "ape", "mosca", "vespa"], ["bello", "buono", "gioia", "pace"], ["brutto", "male", "odio", "guerra"])
    dropped = Weat(bootstrap=0, case="lower").compute(DictEmbedder(table=table), data, seed=0)
    assert dropped.sizes["X"] == 3 and any("repeated stimuli dropped" in w and "Paradiso x2" in w for w in dropped.warnings)
    assert dropped.effect_size == pytest.approx(_d(table, ["paradiso", "fiore", "rosa"], *sets), abs=1e-12)
    kept = Weat(bootstrap=0, case="lower", duplicates="keep").compute(DictEmbedder(table=table), data, seed=0)
    assert kept.sizes["X"] == 4
    assert kept.effect_size == pytest.approx(_d(table, ["paradiso", "paradiso", "fiore", "rosa"], *sets), abs=1e-12)


# --------------------------------------------------------------------------------------------------
# The exact p: the observed partition counted (>=), or the paper's strict >
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strength", [0.1, 3.0])
def test_exact_p_counts_the_observed_partition_unless_strict(strength):
    import itertools

    words, table = make_case(5, 5, 6, 6, seed=31, strength=strength)
    data, embedder = make_test(words), DictEmbedder(table=table)
    counted = Weat(bootstrap=0).compute(embedder, data)
    strict = Weat(bootstrap=0, ties="strict").compute(embedder, data)
    A, B = matrix(table, words["A"]), matrix(table, words["B"])

    def s(w):
        v = table[w] / np.linalg.norm(table[w])
        return float(np.mean([v @ (a / np.linalg.norm(a)) for a in A]) - np.mean([v @ (b / np.linalg.norm(b)) for b in B]))

    pool = [s(w) for w in words["X"] + words["Y"]]
    observed = sum(pool[:5]) - sum(pool[5:])
    null = [2 * sum(pool[i] for i in idx) - sum(pool) for idx in itertools.combinations(range(10), 5)]
    assert len(null) == 252
    at_least = sum(v >= observed - 1e-12 for v in null)
    more = sum(v > observed + 1e-12 for v in null)
    assert counted.p_value == pytest.approx(at_least / 252, abs=1e-15) and counted.p_value >= 1 / 252
    assert strict.p_value == pytest.approx(more / 252, abs=1e-15)
    assert counted.convention["ties"] == "counted" and counted.convention["comparison"].startswith(">=")
    assert strict.convention["ties"] == "strict" and strict.convention["comparison"].startswith("> ")
    if strength > 1:
        assert strict.p_value == 0.0 and counted.p_value == pytest.approx(1 / 252)
    assert counted.effect_size == strict.effect_size
