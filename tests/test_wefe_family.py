"""RND, RNSB, MAC, ECT and RIPA: hand-worked examples on tiny vectors (written to a word2vec text file
and read by the real word2vec embedder), brute-force checks, the two WEFE pitfalls, and the planted
flowers/insects models."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bias import registry
from bias.core.errors import BiasError
from bias.core.model import (
    ASSOCIATION,
    OK,
    REFUSED,
    AssociationTest,
    Result,
    WordList,
    WordSetMeta,
)
from bias.plugins.metrics.wefe_family import relation_vector, rnsb_divergence
from fixtures.planted import PlantedFiles


def write_vectors(path: Path, table: dict[str, tuple[float, ...]]) -> str:
    """A word2vec text file of hand-chosen vectors; returns its model spec."""
    dim = len(next(iter(table.values())))
    lines = [f"{len(table)} {dim}"] + [f"{w} " + " ".join(repr(float(x)) for x in v) for w, v in table.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"word2vec:{path}"


def make_test(X, Y, A, B, name="hand") -> AssociationTest:
    meta = WordSetMeta(name=name, kind=ASSOCIATION, language="en", bias_type="gender")
    return AssociationTest(meta, WordList("X", tuple(X)), WordList("Y", tuple(Y)), WordList("A", tuple(A)), WordList("B", tuple(B)))


def run(metric: str, spec: str, test: AssociationTest, **params) -> Result:
    return registry.build_metric(metric, **params).compute(registry.build_embedder(spec), test, seed=0)


# --- RND -------------------------------------------------------------------------------------------

RND_TABLE = {"xa": (1.0, 0.0), "xb": (0.6, 0.8), "ya": (0.0, 1.0), "yb": (-0.6, 0.8), "a1": (1.0, 0.0), "b1": (0.0, 1.0)}


def test_rnd_by_hand(tmp_path: Path) -> None:
    spec = write_vectors(tmp_path / "rnd.txt", RND_TABLE)
    result = run("rnd", spec, make_test(["xa", "xb"], ["ya", "yb"], ["a1"], ["b1"]))
    # mean X = (0.8, 0.4), mean Y = (-0.3, 0.9)
    # a1 = (1, 0): |(0.2, -0.4)| - |(1.3, -0.9)| = sqrt(0.2) - sqrt(2.5)
    # b1 = (0, 1): |(-0.8, 0.6)| - |(0.3, 0.1)| = 1 - sqrt(0.1)
    assert result.status == OK
    assert result.figures["rnd_A"] == pytest.approx(math.sqrt(0.2) - math.sqrt(2.5), abs=1e-6)
    assert result.figures["rnd_B"] == pytest.approx(1 - math.sqrt(0.1), abs=1e-6)
    assert result.effect_size == pytest.approx(math.sqrt(0.2) - math.sqrt(2.5) + 1 - math.sqrt(0.1), abs=1e-6)
    assert result.p_value is None


def test_rnd_cosine_keeps_the_sign_convention(tmp_path: Path) -> None:
    """WEFE's cosine RND sums similarities and so flips the sign; ours uses 1 - cos and agrees with
    the Euclidean variant word by word: a1 lies nearer X (negative), b1 nearer Y (positive)."""
    spec = write_vectors(tmp_path / "rnd.txt", RND_TABLE)
    test = make_test(["xa", "xb"], ["ya", "yb"], ["a1"], ["b1"])
    euclid = run("rnd", spec, test)
    cosine = run("rnd", spec, test, distance="cosine")
    # a1: (1 - 0.8/sqrt(0.8)) - (1 + 0.3/sqrt(0.9))
    assert cosine.figures["per_word"]["a1"] == pytest.approx((1 - math.sqrt(0.8)) - (1 + 0.3 / math.sqrt(0.9)), abs=1e-6)
    for word in ("a1", "b1"):
        assert np.sign(cosine.figures["per_word"][word]) == np.sign(euclid.figures["per_word"][word]) != 0
    assert euclid.figures["per_word"]["a1"] < 0 < euclid.figures["per_word"]["b1"]


# --- MAC -------------------------------------------------------------------------------------------


def test_mac_by_hand(tmp_path: Path) -> None:
    spec = write_vectors(tmp_path / "mac.txt", {"x": (1.0, 0.0), "y": (0.0, 2.0), "a": (3.0, 0.0), "b": (1.0, 1.0)})
    result = run("mac", spec, make_test(["x"], ["y"], ["a"], ["b"]))
    r = 1 - 1 / math.sqrt(2)
    # S(x, A) = 0, S(x, B) = 1 - 1/sqrt2, S(y, A) = 1, S(y, B) = 1 - 1/sqrt2
    assert result.figures["S_X_A"] == pytest.approx(0.0, abs=1e-7)
    assert result.figures["S_Y_A"] == pytest.approx(1.0, abs=1e-7)
    assert result.figures["S_X_B"] == pytest.approx(r, abs=1e-7)
    assert result.effect_size == pytest.approx((0 + r + 1 + r) / 4, abs=1e-7)


# --- ECT -------------------------------------------------------------------------------------------


def _unit3(p: float, q: float) -> tuple[float, float, float]:
    return (p, q, math.sqrt(1 - p * p - q * q))


@pytest.mark.parametrize(
    "qs, expected",
    [
        ((0.2, 0.1, 0.3, 0.4), 1 - 6 * 2 / (4 * 15)),  # ranks under X 1,2,3,4; under Y 2,1,3,4
        ((0.4, 0.3, 0.2, 0.1), -1.0),  # reversed ranks
        ((0.1, 0.2, 0.3, 0.4), 1.0),  # the same ranks: no bias
    ],
)
def test_ect_by_hand(tmp_path: Path, qs, expected) -> None:
    ps = (0.1, 0.2, 0.3, 0.4)
    table = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0)}
    table.update({f"a{i}": _unit3(p, q) for i, (p, q) in enumerate(zip(ps, qs))})
    spec = write_vectors(tmp_path / "ect.txt", table)
    result = run("ect", spec, make_test(["x"], ["y"], ["a0", "a1"], ["a2", "a3"]))
    assert result.effect_size == pytest.approx(expected, abs=1e-9)


# --- RIPA ------------------------------------------------------------------------------------------

RIPA_TABLE = {"x1": (1.0, 0.0), "x2": (1.0, 2.0), "y1": (-1.0, 0.0), "y2": (-1.0, 2.0), "a": (3.0, 5.0), "b": (-1.0, 7.0)}


@pytest.mark.parametrize("relation, explained", [("all-pairs", 2 / 3), ("means", 1.0), ("paired", 1.0)])
def test_ripa_by_hand(tmp_path: Path, relation: str, explained: float) -> None:
    # differences x_i - y_j: (2,0), (2,-2), (2,2), (2,0); sum d d^T = [[16,0],[0,8]]: b = (1,0), 16/24
    spec = write_vectors(tmp_path / "ripa.txt", RIPA_TABLE)
    result = run("ripa", spec, make_test(["x1", "x2"], ["y1", "y2"], ["a"], ["b"]), relation=relation)
    assert result.figures["ripa"] == pytest.approx({"a": 3.0, "b": -1.0}, abs=1e-6)
    assert result.effect_size == pytest.approx(4.0, abs=1e-6)
    assert result.figures["explained"] == pytest.approx(explained, abs=1e-9)


def test_ripa_all_pairs_matches_brute_force_pca() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(5, 6)) + 1.0, rng.normal(size=(7, 6))
    b, explained = relation_vector(x, y, "all-pairs")
    diffs = np.array([xi - yj for xi in x for yj in y])
    _, s, vt = np.linalg.svd(diffs, full_matrices=False)
    assert abs(float(b @ vt[0])) == pytest.approx(1.0, abs=1e-10)
    assert explained == pytest.approx(s[0] ** 2 / (s**2).sum(), abs=1e-10)
    assert b @ (x.mean(0) - y.mean(0)) > 0  # points from Y to X


def test_ripa_does_not_depend_on_list_order_unless_paired() -> None:
    """WEFE pairs X and Y by position; reordering Y then changes the relation vector. all-pairs and
    means do not care; paired does, which is why it is opt-in."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(4, 5)) + 0.5, rng.normal(size=(4, 5))
    shuffled = y[[2, 0, 3, 1]]
    for relation in ("all-pairs", "means"):
        assert np.allclose(relation_vector(x, y, relation)[0], relation_vector(x, shuffled, relation)[0])
    assert not np.allclose(relation_vector(x, y, "paired")[0], relation_vector(x, shuffled, "paired")[0])


def test_ripa_paired_needs_equal_sizes() -> None:
    with pytest.raises(BiasError, match="equal size"):
        relation_vector(np.ones((3, 2)), np.zeros((2, 2)), "paired")


# --- RNSB ------------------------------------------------------------------------------------------


def test_rnsb_divergence_by_hand() -> None:
    assert rnsb_divergence(np.array([0.2, 0.2, 0.2]))[0] == pytest.approx(0.0, abs=1e-12)
    kl, P = rnsb_divergence(np.array([0.1, 0.3]))
    assert P == pytest.approx([0.25, 0.75])
    assert kl == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5), abs=1e-12)


def test_rnsb_orientation_and_figures(tmp_path: Path) -> None:
    """B (label 1) words sit at -e1, A at +e1; Y words near B must get the higher P(B)."""
    rng = np.random.default_rng(0)
    table = {}
    for key, centre in (("a", 1.0), ("b", -1.0), ("x", 0.8), ("y", -0.8)):
        for i in range(6):
            table[f"{key}{i}"] = (centre + 0.1 * rng.normal(), rng.normal(), rng.normal())
    spec = write_vectors(tmp_path / "rnsb.txt", table)
    words = {k: [f"{k}{i}" for i in range(6)] for k in "xyab"}
    result = run("rnsb", spec, make_test(words["x"], words["y"], words["a"], words["b"]))
    assert result.figures["training_accuracy"] == 1.0
    assert result.figures["mean_p_B_Y"] > 0.5 > result.figures["mean_p_B_X"]
    # independently: scikit-learn's classifier on the vectors as written (not unit-normalised, the
    # recorded convention), P normalised over the identity words, KL to uniform written out
    from sklearn.linear_model import LogisticRegression

    vec = {w: np.array(v, dtype=np.float64) for w, v in table.items()}
    train = np.array([vec[w] for w in words["a"] + words["b"]])
    clf = LogisticRegression(C=1.0, max_iter=5000).fit(train, [0] * 6 + [1] * 6)
    p = clf.predict_proba(np.array([vec[w] for w in words["x"] + words["y"]]))[:, 1]
    P = p / p.sum()
    kl = float(sum(q * np.log(q * len(P)) for q in P))
    assert result.effect_size == pytest.approx(kl, abs=1e-6) and result.effect_size > 0.1
    assert "not unit-normalised" in result.convention["vectors"]


# --- common behaviour ------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["rnd", "rnsb", "mac", "ect", "ripa"])
def test_too_many_lost_words_refuse(tmp_path: Path, metric: str) -> None:
    spec = write_vectors(tmp_path / "v.txt", RIPA_TABLE)
    result = run(metric, spec, make_test(["x1", "x2"], ["y1", "y2"], ["a", "zzz"], ["b"]))
    assert result.status == REFUSED and "zzz" in result.reason


@pytest.mark.parametrize("metric", ["rnd", "rnsb", "mac", "ect", "ripa"])
def test_docstring_states_the_data_mapping_and_direction(metric: str) -> None:
    doc = registry.entry_points.load("metrics", metric).__doc__
    assert "Data:" in doc and ("Direction" in doc or "Sign" in doc or "positive" in doc)


# --- planted flowers/insects models ----------------------------------------------------------------


def _planted(metric: str, path: Path, test: AssociationTest, **params) -> Result:
    return run(metric, f"word2vec:{path}", test, **params)


def test_planted_association_has_the_documented_signs(planted_files: PlantedFiles, planted_test: AssociationTest) -> None:
    planted, reversed_ = planted_files.word2vec_bin, planted_files.reversed_bin
    # RIPA: pleasant (A) lies towards flowers (X) in the planted model, away in the reversed one.
    assert _planted("ripa", planted, planted_test).effect_size > 0 > _planted("ripa", reversed_, planted_test).effect_size
    # RND: pleasant words closer to flowers (negative part), unpleasant closer to insects (positive).
    rnd = _planted("rnd", planted, planted_test)
    assert rnd.figures["rnd_A"] < 0 < rnd.figures["rnd_B"]
    # RNSB: insects are called unpleasant more often than flowers.
    rnsb = _planted("rnsb", planted, planted_test)
    assert rnsb.figures["mean_p_B_Y"] > rnsb.figures["mean_p_B_X"]
    # MAC: flowers nearer pleasant than unpleasant, insects the other way.
    mac = _planted("mac", planted, planted_test)
    assert mac.figures["S_X_A"] < mac.figures["S_X_B"] and mac.figures["S_Y_B"] < mac.figures["S_Y_A"]


def test_planted_model_is_more_biased_than_the_controls(planted_files: PlantedFiles, planted_test: AssociationTest) -> None:
    planted = planted_files.word2vec_bin
    controls = planted_files.control_bins
    ripa = [abs(_planted("ripa", c, planted_test).effect_size) for c in controls]
    assert _planted("ripa", planted, planted_test).effect_size > 2 * max(ripa)
    rnsb = [_planted("rnsb", c, planted_test).effect_size for c in controls]
    assert _planted("rnsb", planted, planted_test).effect_size > max(rnsb)
    ect = [_planted("ect", c, planted_test).effect_size for c in controls]
    assert _planted("ect", planted, planted_test).effect_size < min(ect)


# --- normalisation, with vectors of different lengths ----------------------------------------------

SCALED = {
    "x1": (3.0, 0.5, 0.2), "x2": (0.4, 0.1, 0.05), "y1": (0.2, 2.5, 0.1), "y2": (0.05, 0.3, 0.6),
    "a1": (5.0, 1.0, 0.5), "a2": (0.3, 0.9, 0.0), "b1": (0.1, 0.2, 4.0), "b2": (1.0, 0.1, 0.2),
}


def _arr(*words: str, unit: bool) -> np.ndarray:
    m = np.array([SCALED[w] for w in words], dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True) if unit else m


@pytest.mark.parametrize("normalise", [True, False])
def test_rnd_normalises_only_when_asked(tmp_path: Path, normalise: bool) -> None:
    """Vectors of very different lengths: unit-normalising first (Garg et al.) or not gives different
    sums; each is checked against the definition written here."""
    spec = write_vectors(tmp_path / "rnd.txt", SCALED)
    result = run("rnd", spec, make_test(["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"]), normalise=normalise)
    mx, my = _arr("x1", "x2", unit=normalise).mean(axis=0), _arr("y1", "y2", unit=normalise).mean(axis=0)
    expected = sum(float(np.linalg.norm(v - mx) - np.linalg.norm(v - my)) for v in _arr("a1", "a2", "b1", "b2", unit=normalise))
    assert result.effect_size == pytest.approx(expected, abs=1e-5)
    other = run("rnd", spec, make_test(["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"]), normalise=not normalise)
    assert abs(other.effect_size - result.effect_size) > 0.05
    assert result.convention["normalise"] is normalise


def test_ect_unit_normalises_before_taking_the_group_means(tmp_path: Path) -> None:
    """Two words per group with very different lengths: the group vector is the mean of *unit*
    vectors, so the long word does not dominate. Spearman's rho written out (no ties)."""
    table = dict(SCALED, a3=(1.0, 1.0, 1.0), b3=(2.0, 0.2, 1.0))
    spec = write_vectors(tmp_path / "ect.txt", table)
    result = run("ect", spec, make_test(["x1", "x2"], ["y1", "y2"], ["a1", "a2", "a3"], ["b1", "b2", "b3"]))

    def unit(v):
        v = np.asarray(v, dtype=np.float64)
        return v / np.linalg.norm(v)

    gx = np.mean([unit(table[w]) for w in ("x1", "x2")], axis=0)
    gy = np.mean([unit(table[w]) for w in ("y1", "y2")], axis=0)
    attrs_ = [unit(table[w]) for w in ("a1", "a2", "a3", "b1", "b2", "b3")]
    sx = [float(a @ unit(gx)) for a in attrs_]
    sy = [float(a @ unit(gy)) for a in attrs_]
    rank = lambda xs: [sorted(xs).index(x) + 1 for x in xs]  # noqa: E731
    n = len(sx)
    rho = 1 - 6 * sum((p - q) ** 2 for p, q in zip(rank(sx), rank(sy))) / (n * (n * n - 1))
    assert result.effect_size == pytest.approx(rho, abs=1e-12)
    # the raw-vector means rank the attributes differently here, so a missing normalisation shows
    rx = np.array([table[w] for w in ("x1", "x2")]).mean(axis=0)
    ry = np.array([table[w] for w in ("y1", "y2")]).mean(axis=0)
    raw = 1 - 6 * sum((p - q) ** 2 for p, q in zip(rank([float(a @ unit(rx)) for a in attrs_]), rank([float(a @ unit(ry)) for a in attrs_]))) / (n * (n * n - 1))
    assert raw != pytest.approx(rho)


def test_ripa_per_pair_is_wefes_mean_over_the_pairs_unit_directions(tmp_path: Path) -> None:
    """WEFE's RIPA (published definition): for each attribute word a, the mean over the i-th pairs of
    a . (x_i - y_i)/|x_i - y_i|; the set's score is the mean over its words. Written here as a loop;
    the preset `wefe` selects it."""
    rng = np.random.default_rng(11)
    words = {f"x{i}": rng.normal(size=4) + 0.7 for i in range(3)} | {f"y{i}": rng.normal(size=4) for i in range(3)}
    words |= {f"a{i}": rng.normal(size=4) for i in range(4)} | {f"b{i}": rng.normal(size=4) for i in range(4)}
    spec = write_vectors(tmp_path / "wefe.txt", {w: tuple(float(v) for v in vec) for w, vec in words.items()})

    def wefe_ripa(attribute: list[str]) -> float:
        per_word = []
        for a in attribute:
            scores = []
            for i in range(3):
                d = words[f"x{i}"] - words[f"y{i}"]
                scores.append(float(words[a] @ (d / math.sqrt(float(d @ d)))))
            per_word.append(sum(scores) / len(scores))
        return sum(per_word) / len(per_word)

    test = make_test([f"x{i}" for i in range(3)], [f"y{i}" for i in range(3)], [f"a{i}" for i in range(4)], [f"b{i}" for i in range(4)])
    result = run("ripa", spec, test, relation="per-pair")
    expected_a, expected_b = wefe_ripa([f"a{i}" for i in range(4)]), wefe_ripa([f"b{i}" for i in range(4)])
    assert result.figures["mean_ripa_A"] == pytest.approx(expected_a, abs=1e-6)
    assert result.figures["mean_ripa_B"] == pytest.approx(expected_b, abs=1e-6)
    assert result.effect_size == pytest.approx(expected_a - expected_b, abs=1e-6)
    assert result.figures["explained"] is None and result.convention["relation"] == "per-pair"
    assert abs(expected_a - run("ripa", spec, test, relation="paired").figures["mean_ripa_A"]) > 1e-3  # a different vector

