"""The association-test library in core: the case vocabulary, the lost-word threshold and refusal, and
the public `AssociationMetric` base a third-party metric derives from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
import pytest
from bias.core.association import (
    CASES,
    AssociationMetric,
    SetVectors,
    lookup,
    lost_word_refusal,
    too_many_lost,
)
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder, Measured
from bias.core.model import ASSOCIATION, OK, REFUSED, AssociationTest, WordList, WordSetMeta, WordVectors
from bias.core.params import describe_params
from bias.registry import build_metric, load

DIM = 3


@attrs.define
class TableEmbedder(Embedder):
    """Word vectors from a dict; words listed in `approximate` are reported as built from sub-words."""

    name: ClassVar[str] = "table"
    summary: ClassVar[str] = "in-memory word vectors (tests only)"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    location: str = "memory"
    table: dict[str, tuple[float, ...]] = attrs.field(factory=dict)
    approximate: frozenset[str] = frozenset()
    asked: list[list[str]] = attrs.field(factory=list)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.asked.append(list(words))
        found = [w for w in words if w in self.table]
        vectors = np.array([self.table[w] for w in found], dtype=np.float64).reshape(len(found), DIM)
        approximated = tuple(w for w in found if w in self.approximate)
        return WordVectors(words=tuple(found), vectors=vectors, lost=tuple(w for w in words if w not in self.table), approximated=approximated)


def test_too_many_lost_keeps_exactly_the_threshold_and_lists_eight_words() -> None:
    assert too_many_lost(["a"], 5, 0.2) is None  # 20% is allowed at 0.2
    assert too_many_lost(["a", "b"], 5, 0.2) == "(40% > 20% allowed): a, b"
    assert too_many_lost([], 0, 0.0) is None
    many = [f"w{i}" for i in range(10)]
    assert too_many_lost(many, 10, 0.5) == "(100% > 50% allowed): " + ", ".join(many[:8])


def test_lost_word_refusal_names_the_first_problem() -> None:
    ok = {k: np.eye(DIM)[:2] for k in "XYAB"}
    originals = {k: 2 for k in "XYAB"}
    assert lost_word_refusal(ok, originals, {}, 0.2, None) is None
    empty = {**ok, "Y": np.zeros((0, DIM))}
    assert lost_word_refusal(empty, originals, {"Y": ["ant", "bee"]}, 0.2, None) == "every word of set Y is missing from the model (ant, bee...)"
    assert lost_word_refusal(empty, originals, {}, 0.2, None) == "set Y is empty"
    three = {**originals, "A": 3}
    assert lost_word_refusal(ok, three, {"A": ["joy"]}, 0.2, None) == "set A lost 1 of 3 words (33% > 20% allowed): joy"
    assert lost_word_refusal(ok, three, {"A": ["joy"]}, 0.5, None) is None
    broken = {**ok, "B": np.array([[1.0, 0, 0], [0, 0, 0]])}
    assert "zero or non-finite vectors for war (set B)" in lost_word_refusal(broken, originals, {}, 0.2, {"B": ["peace", "war"]})


def test_the_lookup_policies_do_what_the_vocabulary_says() -> None:
    emb = TableEmbedder(table={"Anna": (1, 0, 0), "anna": (0, 1, 0), "bob": (0, 0, 1)})
    words = ["Anna", "Bob", "carl"]
    exact, _, _ = lookup(emb, words, "exact")
    assert set(exact) == {"Anna"} and exact["Anna"].tolist() == [1, 0, 0]
    lower, _, _ = lookup(emb, words, "lower")
    assert set(lower) == {"Anna", "Bob"} and lower["Anna"].tolist() == [0, 1, 0]  # lowercased even though "Anna" exists
    fallback, _, dim = lookup(emb, words, "fallback")
    assert set(fallback) == {"Anna", "Bob"} and fallback["Anna"].tolist() == [1, 0, 0] and dim == DIM
    assert emb.asked[-1] == ["bob"]  # only the missing capitalised word is asked again, lowercased


def test_every_case_name_has_one_meaning_in_every_metric() -> None:
    for name in ("weat", "seat", "rnd", "rnsb", "mac", "ect", "ripa", "direct-bias", "ceat", "analogy"):
        cls = load("metrics", name)
        info = {p.name: p for p in describe_params(cls)}
        if name == "seat":
            assert "case" not in info  # SEAT looks no word up
            continue
        allowed = [c for c in CASES if f"{c}: {CASES[c]}" in info["case"].help]
        assert allowed, name
        for bad in sorted(set(CASES) - set(allowed)) + ["upper"]:
            with pytest.raises(BiasError, match="case must be one of"):
                build_metric(name, case=bad)
    assert load("metrics", "analogy")().case == "insensitive" and load("metrics", "ceat")().case == "exact"


def test_lost_threshold_is_one_parameter_everywhere() -> None:
    declared = set()
    for name in ("weat", "seat", "ceat", "rnd", "ripa", "direct-bias"):
        (p,) = [p for p in describe_params(load("metrics", name)) if p.name == "lost_threshold"]
        declared.add((p.default, p.help))
        with pytest.raises(BiasError, match="lost_threshold must lie between"):
            build_metric(name, lost_threshold=1.5)
    assert len(declared) == 1 and next(iter(declared))[0] == 0.2


# --- the public base: a new metric in a few lines ---------------------------------------------------


@attrs.define
class MeanGap(AssociationMetric):
    """Mean cos(X, A) minus mean cos(Y, A): what a third party would write."""

    name: ClassVar[str] = "mean-gap"
    summary: ClassVar[str] = "Difference of the mean cosines of X and Y to A."

    seen: list[SetVectors] = attrs.field(factory=list, eq=False, repr=False, metadata={"help": "test only"})

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        self.seen.append(sets)
        unit = {k: m / np.linalg.norm(m, axis=1, keepdims=True) for k, m in sets.matrices.items()}
        to_a = {k: (unit[k] @ unit["A"].T).mean(axis=1) for k in "XY"}
        gap = float(to_a["X"].mean() - to_a["Y"].mean())
        per_word = dict(zip(sets.words["X"] + sets.words["Y"], np.concatenate([to_a["X"], to_a["Y"]])))
        return Measured(gap, figures={"gap": gap, "cos_to_A": per_word}, convention={"sign": "X closer to A"}, warnings=["note"])


def association_test(**sets: Sequence[str]) -> AssociationTest:
    meta = WordSetMeta(name="toy", kind=ASSOCIATION, language="en", bias_type="gender")
    return AssociationTest(meta, *(WordList(k, tuple(sets[k])) for k in "XYAB"))


def test_an_association_metric_gets_the_vectors_found_and_a_full_result() -> None:
    table = {"x1": (1, 0, 0), "x2": (1, 1, 0), "y1": (0, 1, 0), "a1": (1, 0, 0), "b1": (0, 0, 1), "b2": (0, 1, 1)}
    emb = TableEmbedder(table=table, approximate=frozenset({"x2"}))
    metric = MeanGap(lost_threshold=0.5)
    data = association_test(X=["x1", "x2"], Y=["y1", "gone"], A=["a1"], B=["b1", "b2"])
    result = metric.compute(emb, data, seed=4)
    (sets,) = metric.seen
    assert sets.words == {"X": ["x1", "x2"], "Y": ["y1"], "A": ["a1"], "B": ["b1", "b2"]}
    assert sets.matrices["X"].dtype == np.float64 and sets.matrices["X"].tolist() == [[1, 0, 0], [1, 1, 0]]
    # cos(x1, a1) = 1, cos(x2, a1) = 1/sqrt(2), cos(y1, a1) = 0
    assert result.status == OK and result.effect_size == pytest.approx((1 + 2**-0.5) / 2)
    assert result.p_value is None and result.seed == 4 and result.metric == "mean-gap" and result.wordset == "toy"
    assert result.convention == {"sign": "X closer to A", "case": "exact"}
    assert result.lost == {"Y": ["gone"]} and result.approximated == {"X": ["x2"]}
    assert result.sizes == {"X": 2, "Y": 1, "A": 1, "B": 2}
    assert result.warnings == ["note", "1 word(s) had no vector of their own and were built from sub-words"]
    rows = {r["item"]: r for r in result.figures["scores"]}
    assert rows["y1"] == {"set": "Y", "item": "y1", "cos_to_A": 0.0} and rows["x2"]["cos_to_A"] == pytest.approx(2**-0.5)
    assert result.params["lost_threshold"] == 0.5 and result.params["case"] == "exact"


def test_an_association_metric_refuses_a_test_that_lost_too_many_words() -> None:
    emb = TableEmbedder(table={"x1": (1, 0, 0), "y1": (0, 1, 0), "a1": (1, 0, 0), "b1": (0, 0, 1)})
    metric = MeanGap()
    result = metric.compute(emb, association_test(X=["x1"], Y=["y1", "gone"], A=["a1"], B=["b1"]), seed=0)
    assert result.status == REFUSED and result.reason == "set Y lost 1 of 2 words (50% > 20% allowed): gone"
    assert not metric.seen  # measure is never called on a refused test
    assert MeanGap().requires == frozenset({Capability.WORD_VECTORS}) and MeanGap.data_kind == ASSOCIATION
