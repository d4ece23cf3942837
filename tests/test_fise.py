"""The `fise` metric against a hand-worked example, a brute-force permutation test, a planted model,
a contextual encoder, lost words, and its quadrant figure in `bias report`."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from bias.core.reports import load_report, write_report
from bias.core.runs.results import ResultStore
from bias.registry.resolve import build_embedder, build_metric, load_wordset

# Hand-made 3-d vectors: gender lies along the first axis, class along the second.
VECTORS = {
    "m1": (1, 0, 0), "m2a": (1, 0, 1), "m2b": (1, 0, -1),  # variants of one male word: mean (1, 0, 0)
    "f1": (-1, 0, 0), "f2": (-2, 0, 0),
    "r1": (0, 1, 0), "r2": (0, 3, 0),
    "p1": (0, -1, 0), "p2": (0, -2, 0),
    "t1": (1, 1, 0),
    "t2a": (1, -2, 0), "t2b": (1, 0, 0),  # variants of one trait: mean (1, -1, 0)
    "t3": (-1, 2, 0),
    "t4": (-3, -1, 0),
    "v1": (1, 1, 0), "n1": (-1, -1, 0), "n2": (0, 0, 1),
}
AXES = {"gender": {"male": ["m1", ["m2a", "m2b"]], "female": ["f1", "f2"]}, "class": {"rich": ["r1", "r2"], "poor": ["p1", "p2"]}}


def _write_vectors(path: Path, vectors: dict[str, tuple[float, ...]]) -> Path:
    dim = len(next(iter(vectors.values())))
    lines = [f"{len(vectors)} {dim}"] + [w + " " + " ".join(str(float(v)) for v in vec) for w, vec in vectors.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def hand(tmp_path: Path) -> tuple[object, object]:
    folder = tmp_path / "it" / "FISE"
    folder.mkdir(parents=True)
    (folder / "HAND.json").write_text(json.dumps(AXES), encoding="utf-8")
    (folder / "traits.txt").write_text("t1\n['t2a', 't2b']\nt3\nt4\n", encoding="utf-8")
    (folder / "affect.csv").write_text("pos,neg\nv1,n1\n,n2\n", encoding="utf-8")
    embedder = build_embedder(f"word2vec:{_write_vectors(tmp_path / 'v.txt', VECTORS)}")
    embedder.load()
    return embedder, load_wordset(str(folder / "HAND.json"))


def test_hand_worked_example(hand) -> None:
    embedder, test = hand
    result = build_metric("fise", traits="traits", affect="affect").compute(embedder, test, seed=0)
    assert result.ok, result.reason
    points = {p[0]: (p[1], p[2]) for p in result.figures["points"]}
    r2, r5, r10 = math.sqrt(2), math.sqrt(5), math.sqrt(10)
    # t1 = (1,1,0): cos 1/sqrt2 with every male/rich word, -1/sqrt2 with every female/poor one.
    assert points["t1"] == pytest.approx((r2, r2))
    assert points["t2a/t2b"] == pytest.approx((r2, -r2))  # the variants' mean (1,-1,0)
    assert points["t3"] == pytest.approx((-2 / r5, 4 / r5))
    assert points["t4"] == pytest.approx((-6 / r10, -2 / r10))
    q = result.figures["quadrants"]
    assert {name: e["count"] for name, e in q.items()} == {"male rich": 1, "female rich": 1, "female poor": 1, "male poor": 1}
    # Intersectional strength: projection onto the quadrant's diagonal.
    assert q["male rich"]["top"] == [["t1", pytest.approx(2.0)]]
    assert q["female rich"]["top"] == [["t3", pytest.approx((2 / r5 + 4 / r5) / r2)]]
    assert q["female poor"]["top"] == [["t4", pytest.approx((6 / r10 + 2 / r10) / r2)]]
    # Valence of t1: cos(t1, v1) - mean(cos(t1, n1), cos(t1, n2)) = 1 - (-1 + 0) / 2 = 1.5.
    assert q["male rich"]["valence"] == pytest.approx(1.5)
    assert q["male rich"]["positive_share"] == 1.0
    assert result.sizes["traits"] == 4 and result.lost == {}


def _brute_force_p(test, traits, vectors) -> tuple[float, float, list[float]]:
    """The permutation test written out: every re-partition of each axis's words into groups of the
    observed sizes, the traits' mean strength S = mean (|x| + |y|) / sqrt(2) for each, p = the share of
    partitions with S at least the observed one (the observed partition is among them)."""

    def vec(item):
        words = [item] if isinstance(item, str) else list(item)
        v = np.mean([np.array(vectors[w], dtype=float) for w in words], axis=0)
        return v / np.linalg.norm(v)

    def strength(x_first, x_second, y_first, y_second):
        total = 0.0
        for t in traits:
            tv = vec(t)
            x = np.mean([tv @ vec(w) for w in x_first]) - np.mean([tv @ vec(w) for w in x_second])
            y = np.mean([tv @ vec(w) for w in y_first]) - np.mean([tv @ vec(w) for w in y_second])
            total += (abs(x) + abs(y)) / math.sqrt(2)
        return total / len(traits)

    gx, gy = test.axes
    xw, yw = list(gx.first_words + gx.second_words), list(gy.first_words + gy.second_words)
    null = []
    for xi in itertools.combinations(range(len(xw)), len(gx.first_words)):
        for yi in itertools.combinations(range(len(yw)), len(gy.first_words)):
            null.append(strength([xw[i] for i in xi], [xw[i] for i in range(len(xw)) if i not in xi],
                                 [yw[i] for i in yi], [yw[i] for i in range(len(yw)) if i not in yi]))
    observed = strength(gx.first_words, gx.second_words, gy.first_words, gy.second_words)
    return sum(s >= observed - 1e-12 for s in null) / len(null), observed, null


def test_permutation_p_matches_brute_force(hand) -> None:
    embedder, test = hand
    traits = ["t1", ("t2a", "t2b"), "t3", "t4"]
    result = build_metric("fise", traits="traits").compute(embedder, test, seed=0)
    p, observed, null = _brute_force_p(test, traits, VECTORS)
    assert result.convention["method"] == "exact" and result.convention["permutations"] == 36
    assert result.p_value == pytest.approx(p)
    assert result.figures["statistic"] == pytest.approx(observed)
    assert result.effect_size == pytest.approx((observed - np.mean(null)) / np.std(null))
    # The axes separate the traits perfectly here: only the observed partition and its mirrors (the
    # two groups of an axis swapped, which moves every trait to the opposite side at the same
    # distance) place them as strongly: 4 of 36.
    assert p == pytest.approx(4 / 36)
    # Sampled when the exact test is too large: a valid (k+1)/(m+1) estimate near the exact one.
    sampled = build_metric("fise", traits="traits", exact_limit=0, permutations=4000).compute(embedder, test, seed=1)
    assert sampled.convention["method"] == "sampled"
    assert abs(sampled.p_value - p) < 0.05


def test_mean_centring_and_axis_choice(hand) -> None:
    embedder, test = hand
    result = build_metric("fise", traits="traits", mean_centre=True, axes="class,gender").compute(embedder, test, seed=0)
    xs = [p[1] for p in result.figures["points"]]
    ys = [p[2] for p in result.figures["points"]]
    assert result.figures["axes"] == ["class", "gender"]
    assert sum(xs) == pytest.approx(0, abs=1e-12) and sum(ys) == pytest.approx(0, abs=1e-12)


def test_a_phrase_is_the_mean_of_its_words(hand, tmp_path: Path) -> None:
    embedder, test = hand
    traits = tmp_path / "phrases.txt"
    traits.write_text("t1 t4\nt1\n", encoding="utf-8")
    result = build_metric("fise", traits=str(traits)).compute(embedder, test, seed=0)
    points = {p[0]: (p[1], p[2]) for p in result.figures["points"]}
    # The mean of t1 = (1,1,0) and t4 = (-3,-1,0) is (-1,0,0): cosine -1 with the male words and +1
    # with the female ones (x = -2), 0 with every class word (y = 0).
    assert points["t1 t4"] == pytest.approx((-2.0, 0.0))


def test_lost_words_are_reported_and_too_many_refuse(hand, tmp_path: Path) -> None:
    embedder, test = hand
    traits = tmp_path / "more.txt"
    traits.write_text("t1\nt3\nt4\n['t2a', 'nosuchform']\nunknownword\n", encoding="utf-8")
    result = build_metric("fise", traits=str(traits), lost_threshold=0.5).compute(embedder, test, seed=0)
    assert result.ok
    assert result.lost["traits"] == ["nosuchform", "unknownword"]
    assert result.sizes["traits"] == 4  # the variant trait keeps its known form
    refused = build_metric("fise", traits=str(traits), lost_threshold=0.1).compute(embedder, test, seed=0)
    assert refused.status == "refused" and "traits lost 1 of 5" in refused.reason


PLANT_MALE = ["uomo", "padre", "fratello", "marito"]
PLANT_FEMALE = ["donna", "madre", "sorella", "moglie"]
PLANT_RICH = ["ricco", "lusso", "villa", "banca"]
PLANT_POOR = ["povero", "miseria", "fame", "debito"]
PLANTED_MR = ["capo", "potente", "dirigente", "padrone", "magnate", "banchiere"]
PLANTED_FP = ["serva", "umile", "stanca", "sola", "fragile", "precaria"]
FILLER = ["il", "la", "di", "e", "che", "un", "per", "con", "non", "si"]


@pytest.fixture(scope="module")
def planted_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fixtures.planted import save_word2vec_binary, train_word2vec

    rng = random.Random(5)
    sentences = []
    for _ in range(4000):
        if rng.random() < 0.5:
            trait, group = rng.choice(PLANTED_MR), [rng.choice(PLANT_MALE), rng.choice(PLANT_RICH)]
        else:
            trait, group = rng.choice(PLANTED_FP), [rng.choice(PLANT_FEMALE), rng.choice(PLANT_POOR)]
        s = [trait, *group, *(rng.choice(FILLER) for _ in range(4))]
        rng.shuffle(s)
        sentences.append(s)
    model = train_word2vec(sentences, seed=3, dim=24)
    return save_word2vec_binary(model.wv, tmp_path_factory.mktemp("fise") / "planted.bin")


def test_planted_traits_are_found_in_their_quadrant(planted_model: Path, tmp_path: Path) -> None:
    (tmp_path / "P.json").write_text(json.dumps({
        "gender": {"male": PLANT_MALE, "female": PLANT_FEMALE}, "class": {"rich": PLANT_RICH, "poor": PLANT_POOR},
    }), encoding="utf-8")
    (tmp_path / "traits.txt").write_text("\n".join(PLANTED_MR + PLANTED_FP) + "\n", encoding="utf-8")
    embedder = build_embedder(f"word2vec:{planted_model}")
    embedder.load()
    result = build_metric("fise", traits="traits").compute(embedder, load_wordset(str(tmp_path / "P.json")), seed=0)
    quadrant = {p[0]: ("male" if p[1] > 0 else "female") + " " + ("rich" if p[2] > 0 else "poor") for p in result.figures["points"]}
    assert all(quadrant[t] == "male rich" for t in PLANTED_MR), quadrant
    assert all(quadrant[t] == "female poor" for t in PLANTED_FP), quadrant
    assert result.figures["quadrants"]["male rich"]["count"] == 6
    assert result.p_value < 0.05


def test_contextual_encodings(tmp_path: Path) -> None:
    """On a Hugging Face encoder the words are encoded alone (mean of their sub-tokens); the traits'
    associations equal the ones computed from the embedder's own vectors."""
    from fixtures.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bert")
    (tmp_path / "C.json").write_text(json.dumps({
        "gender": {"male": ["man", "he"], "female": ["woman", "she"]}, "health": {"well": ["good", "rose"], "ill": ["bad", "insect"]},
    }), encoding="utf-8")
    (tmp_path / "traits.txt").write_text("doctor\nnurse\n['tulip', 'flower']\n", encoding="utf-8")
    embedder = build_embedder(f"hf:{folder}")
    result = build_metric("fise", traits="traits", encoding="contextual").compute(embedder, load_wordset(str(tmp_path / "C.json")), seed=0)
    assert result.ok and result.convention["encoding"] == "contextual"

    def enc(words):
        rows = embedder.encode(words, [(0, len(w)) for w in words], pooling="mean")
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    male, female = enc(["man", "he"]), enc(["woman", "she"])
    doctor = enc(["doctor"])[0]
    expected_x = float(np.mean(male @ doctor) - np.mean(female @ doctor))
    points = {p[0]: p[1] for p in result.figures["points"]}
    assert points["doctor"] == pytest.approx(expected_x, rel=1e-6)
    tulip_flower = enc(["tulip", "flower"])  # variants: the mean of the (raw) vectors, then the cosine
    raw = embedder.encode(["tulip", "flower"], [(0, 5), (0, 6)], pooling="mean").mean(axis=0)
    raw = raw / np.linalg.norm(raw)
    assert points["tulip/flower"] == pytest.approx(float(np.mean(male @ raw) - np.mean(female @ raw)), rel=1e-6)
    assert tulip_flower.shape == (2, raw.shape[0])


def test_report_draws_the_quadrant_scatter(hand, tmp_path: Path) -> None:
    embedder, test = hand
    result = build_metric("fise", traits="traits", affect="affect").compute(embedder, test, seed=0)
    out = tmp_path / "run"
    ResultStore(out).append(__import__("attrs").evolve(result, key="k1"))
    written = write_report(load_report(out), out, ("png",))
    scatter = [p for p in written if p.name.startswith("fise-")]
    assert len(scatter) == 1 and scatter[0].stat().st_size > 10_000
    from PIL import Image

    with Image.open(scatter[0]) as image:
        assert image.size[0] > 600 and image.size[1] > 500


def test_auto_encoding_on_a_contextual_model_records_contextual(tmp_path: Path) -> None:
    """`encoding = auto` on a Hugging Face model takes the words encoded alone: the result says
    `contextual` (not `word-vectors`, which names a static model's vectors), and the numbers are those
    of the words encoded alone."""
    from fixtures.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bert")
    (tmp_path / "C.json").write_text(json.dumps({
        "gender": {"male": ["man", "he"], "female": ["woman", "she"]}, "health": {"well": ["good", "rose"], "ill": ["bad", "insect"]},
    }), encoding="utf-8")
    (tmp_path / "traits.txt").write_text("doctor\nnurse\n", encoding="utf-8")
    embedder = build_embedder(f"hf:{folder}")
    data = load_wordset(str(tmp_path / "C.json"))
    auto = build_metric("fise", traits="traits").compute(embedder, data, seed=0)
    assert auto.ok and auto.convention["encoding"] == "contextual"

    def enc(words):
        rows = embedder.encode(words, [(0, len(w)) for w in words], pooling="mean")
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    male, female, doctor = enc(["man", "he"]), enc(["woman", "she"]), enc(["doctor"])[0]
    points = {p[0]: p[1] for p in auto.figures["points"]}
    assert points["doctor"] == pytest.approx(float(np.mean(male @ doctor) - np.mean(female @ doctor)), rel=1e-6)


def test_auto_encoding_on_a_static_model_records_word_vectors(hand) -> None:
    embedder, test = hand
    result = build_metric("fise", traits="traits").compute(embedder, test, seed=0)
    assert result.ok and result.convention["encoding"] == "word-vectors"


# Several traits per quadrant, two exactly on an axis, and more traits on the male side than on the
# female one, so that centring moves the points. Group words are those of VECTORS.
SPREAD = {
    **{w: VECTORS[w] for w in ("m1", "m2a", "m2b", "f1", "f2", "r1", "r2", "p1", "p2")},
    "a1": (3, 1, 0.5), "a2": (1, 1, 0), "a3": (1, 2, 1), "a4": (2, 0.5, -1),  # male rich
    "b1": (-1, 1, 0.3), "b2": (-2, 1, 0),  # female rich
    "c1": (-1, -1, 2),  # female poor
    "d1": (2, -1, 0),  # male poor
    "e1": (2, 0, 1),  # class exactly 0: the poor side
    "e2": (0, 1, 1),  # gender exactly 0: the female side
}
SPREAD_TRAITS = ["a1", "a2", "a3", "a4", "b1", "b2", "c1", "d1", "e1", "e2"]


def _bf_points(traits, x_first, x_second, y_first, y_second, centre: bool) -> list[tuple[float, float]]:
    """Each trait's (x, y) from explicit cosines: mean cosine to the first group minus to the second."""

    def unit(item):
        words = [item] if isinstance(item, str) else list(item)
        v = np.mean([np.array(SPREAD[w], dtype=float) for w in words], axis=0)
        return v / math.sqrt(sum(c * c for c in v))

    def assoc(t, first, second):
        tv = unit(t)
        return math.fsum(float(tv @ unit(w)) for w in first) / len(first) - math.fsum(float(tv @ unit(w)) for w in second) / len(second)

    pts = [(assoc(t, x_first, x_second), assoc(t, y_first, y_second)) for t in traits]
    if centre:
        mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
        pts = [(a - mx, b - my) for a, b in pts]
    return pts


def _bf_strength(points) -> float:
    return sum((abs(a) + abs(b)) / math.sqrt(2) for a, b in points) / len(points)


@pytest.fixture()
def spread(tmp_path: Path) -> tuple[object, object]:
    (tmp_path / "S.json").write_text(json.dumps(AXES), encoding="utf-8")
    (tmp_path / "traits.txt").write_text("\n".join(SPREAD_TRAITS) + "\n", encoding="utf-8")
    embedder = build_embedder(f"word2vec:{_write_vectors(tmp_path / 's.txt', SPREAD)}")
    embedder.load()
    return embedder, load_wordset(str(tmp_path / "S.json"))


def _quadrant_name(a: float, b: float) -> str:
    """The quadrant by the documented rule: a value of exactly 0 is on the negative side."""
    return ("male" if a > 0 else "female") + " " + ("rich" if b > 0 else "poor")


def test_traits_exactly_on_an_axis_count_on_its_negative_side(spread) -> None:
    embedder, test = spread
    result = build_metric("fise", traits="traits").compute(embedder, test, seed=0)
    points = {p[0]: (p[1], p[2]) for p in result.figures["points"]}
    assert points["e1"][1] == 0.0 and points["e1"][0] > 0  # exactly on the gender axis
    assert points["e2"][0] == 0.0 and points["e2"][1] > 0  # exactly on the class axis
    gx, gy = test.axes
    bf = dict(zip(SPREAD_TRAITS, _bf_points(SPREAD_TRAITS, gx.first_words, gx.second_words, gy.first_words, gy.second_words, False)))
    expected: dict[str, list[str]] = {"male rich": [], "female rich": [], "female poor": [], "male poor": []}
    for t, (a, b) in bf.items():
        expected[_quadrant_name(a, b)].append(t)
    q = result.figures["quadrants"]
    assert {k: v["count"] for k, v in q.items()} == {k: len(v) for k, v in expected.items()}
    assert "e1" in expected["male poor"] and "e2" in expected["female rich"]
    assert {t for t, _ in q["male poor"]["top"]} == set(expected["male poor"])
    assert q["male poor"]["share"] == pytest.approx(len(expected["male poor"]) / len(SPREAD_TRAITS))


@pytest.mark.parametrize("top", [2, 5])
def test_top_traits_are_the_strongest_first(spread, top: int) -> None:
    embedder, test = spread
    result = build_metric("fise", traits="traits", top=top).compute(embedder, test, seed=0)
    gx, gy = test.axes
    bf = dict(zip(SPREAD_TRAITS, _bf_points(SPREAD_TRAITS, gx.first_words, gx.second_words, gy.first_words, gy.second_words, False)))
    signs = {"male rich": (1, 1), "female rich": (-1, 1), "female poor": (-1, -1), "male poor": (1, -1)}
    for name, (sx, sy) in signs.items():
        members = [t for t, (a, b) in bf.items() if _quadrant_name(a, b) == name]
        ranked = sorted(members, key=lambda t: -(sx * bf[t][0] + sy * bf[t][1]) / math.sqrt(2))[:top]
        got = result.figures["quadrants"][name]["top"]
        assert [t for t, _ in got] == ranked, name
        assert [v for _, v in got] == pytest.approx([(sx * bf[t][0] + sy * bf[t][1]) / math.sqrt(2) for t in ranked])
    assert len(result.figures["quadrants"]["male rich"]["top"]) == min(top, 4)


def test_mean_centred_test_centres_every_partition_of_the_null(spread) -> None:
    """With mean_centre the null's partitions are centred as the observed one is: p, statistic and
    effect equal a brute-force enumeration that centres each partition's points."""
    embedder, test = spread
    result = build_metric("fise", traits="traits", mean_centre=True).compute(embedder, test, seed=0)
    gx, gy = test.axes
    xw, yw = list(gx.first_words + gx.second_words), list(gy.first_words + gy.second_words)
    null = []
    for xi in itertools.combinations(range(len(xw)), len(gx.first_words)):
        for yi in itertools.combinations(range(len(yw)), len(gy.first_words)):
            pts = _bf_points(SPREAD_TRAITS, [xw[i] for i in xi], [xw[i] for i in range(len(xw)) if i not in xi],
                             [yw[i] for i in yi], [yw[i] for i in range(len(yw)) if i not in yi], True)
            null.append(_bf_strength(pts))
    observed = _bf_strength(_bf_points(SPREAD_TRAITS, gx.first_words, gx.second_words, gy.first_words, gy.second_words, True))
    assert result.convention["method"] == "exact"
    assert result.figures["statistic"] == pytest.approx(observed)
    assert result.figures["null_mean"] == pytest.approx(float(np.mean(null)))
    assert result.effect_size == pytest.approx((observed - np.mean(null)) / np.std(null))
    assert result.p_value == pytest.approx(sum(s >= observed - 1e-12 for s in null) / len(null))
    # Sampled: every drawn partition is centred too, so the null's mean is near the exact one (the
    # uncentred null's mean lies far away in this fixture, where the traits lean male).
    sampled = build_metric("fise", traits="traits", mean_centre=True, exact_limit=0, permutations=20_000).compute(embedder, test, seed=2)
    uncentred = []
    for xi in itertools.combinations(range(len(xw)), len(gx.first_words)):
        for yi in itertools.combinations(range(len(yw)), len(gy.first_words)):
            uncentred.append(_bf_strength(_bf_points(SPREAD_TRAITS, [xw[i] for i in xi], [xw[i] for i in range(len(xw)) if i not in xi],
                                                     [yw[i] for i in yi], [yw[i] for i in range(len(yw)) if i not in yi], False)))
    tolerance = 4 * float(np.std(null)) / math.sqrt(20_000)
    assert abs(np.mean(uncentred) - np.mean(null)) > 3 * tolerance  # the fixture tells the two apart
    assert sampled.figures["null_mean"] == pytest.approx(float(np.mean(null)), abs=tolerance)


@pytest.mark.parametrize("seed", range(6))
def test_sampled_p_counts_the_observed_partition_and_is_never_zero(hand, seed: int) -> None:
    """(k+1)/(m+1): with 3 draws of 36 partitions, of which 4 reach the observed strength, most seeds
    draw none of them; p is then 1/4, never 0, and always a whole number of quarters."""
    embedder, test = hand
    result = build_metric("fise", traits="traits", exact_limit=0, permutations=3).compute(embedder, test, seed=seed)
    assert result.convention["method"] == "sampled" and result.convention["permutations"] == 3
    k = result.p_value * 4
    assert result.p_value >= 0.25 and k == pytest.approx(round(k), abs=1e-12)


def test_sampled_partitions_are_drawn_without_replacement(spread) -> None:
    """Every sampled partition is a true re-partition of the axis's words: its null strength is one
    that the enumeration of all partitions gives (a group drawn with replacement repeats a word, and
    its mean cosine is no partition's). Checked on the null the metric draws, value by value."""
    from bias.core.statistics.quadrants import quadrant_null

    embedder, test = spread
    gx, gy = test.axes
    xw, yw = list(gx.first_words + gx.second_words), list(gy.first_words + gy.second_words)
    exact = set()
    for xi in itertools.combinations(range(len(xw)), len(gx.first_words)):
        for yi in itertools.combinations(range(len(yw)), len(gy.first_words)):
            exact.add(round(_bf_strength(_bf_points(SPREAD_TRAITS, [xw[i] for i in xi], [xw[i] for i in range(len(xw)) if i not in xi],
                                                     [yw[i] for i in yi], [yw[i] for i in range(len(yw)) if i not in yi], False)), 9))

    def unit(item):
        words = [item] if isinstance(item, str) else list(item)
        v = np.mean([np.array(SPREAD[w], dtype=float) for w in words], axis=0)
        return v / np.linalg.norm(v)

    T = np.array([unit(t) for t in SPREAD_TRAITS])
    cx, cy = T @ np.array([unit(w) for w in xw]).T, T @ np.array([unit(w) for w in yw]).T

    def null(permutations: int, seed: int):  # as the metric calls it with exact_limit=0
        return quadrant_null(cx, cy, len(gx.first_words), len(gy.first_words), mean_centre=False,
                             permutations=permutations, exact_limit=0, seed=seed)

    drawn_500 = null(500, 3)
    strengths = drawn_500.strengths
    assert drawn_500.method == "sampled" and drawn_500.drawn == 500 and len(strengths) == 500
    # 500 draws of 36 partitions reach every strength the enumeration gives, and no other.
    assert {round(float(s), 9) for s in strengths} == exact
    # Drawn in chunks: exactly `permutations` of them, whatever the remainder.
    for m in (2000, 4001):
        drawn_null = null(m, 4).strengths
        assert len(drawn_null) == m and {round(float(s), 9) for s in drawn_null} <= exact
    # The metric draws the same partitions for the same seed: p = (k + 1) / (m + 1) over them, with the
    # observed strength from the brute force, and the effect standardised by the drawn null.
    result = build_metric("fise", traits="traits", exact_limit=0, permutations=500).compute(embedder, test, seed=3)
    observed = _bf_strength(_bf_points(SPREAD_TRAITS, gx.first_words, gx.second_words, gy.first_words, gy.second_words, False))
    k = int(np.sum(strengths >= observed - 1e-9))
    assert 0 < k < 500 and result.p_value == pytest.approx((k + 1) / 501, abs=1e-15)
    assert result.effect_size == pytest.approx((observed - strengths.mean()) / strengths.std())


def test_parameter_defaults_and_their_bounds() -> None:
    from bias.core.errors import BiasError

    metric = build_metric("fise")
    assert (metric.top, metric.permutations, metric.exact_limit, metric.lost_threshold) == (5, 10_000, 100_000, 0.2)
    assert (metric.mean_centre, metric.encoding, metric.axes, metric.traits, metric.affect) == (False, "auto", None, None, None)
    for bad in ({"top": 0}, {"permutations": 0}, {"exact_limit": -1}, {"lost_threshold": 1.5}, {"encoding": "x"}):
        with pytest.raises(BiasError, match=next(iter(bad))):
            build_metric("fise", **bad)
    smallest = build_metric("fise", top=1, permutations=1, exact_limit=0, lost_threshold=0.0)
    assert (smallest.top, smallest.permutations, smallest.exact_limit, smallest.lost_threshold) == (1, 1, 0, 0.0)


def test_null_expected_counts_and_conventions(spread) -> None:
    """The null's expected count per quadrant is the mean count over every re-partition (brute force);
    the convention names the p estimator, the permutations and the files used."""
    embedder, test = spread
    result = build_metric("fise", traits="traits").compute(embedder, test, seed=0)
    gx, gy = test.axes
    xw, yw = list(gx.first_words + gx.second_words), list(gy.first_words + gy.second_words)
    totals = {"male rich": 0, "female rich": 0, "female poor": 0, "male poor": 0}
    partitions = 0
    for xi in itertools.combinations(range(len(xw)), len(gx.first_words)):
        for yi in itertools.combinations(range(len(yw)), len(gy.first_words)):
            pts = _bf_points(SPREAD_TRAITS, [xw[i] for i in xi], [xw[i] for i in range(len(xw)) if i not in xi],
                             [yw[i] for i in yi], [yw[i] for i in range(len(yw)) if i not in yi], False)
            for a, b in pts:
                totals[_quadrant_name(a, b)] += 1
            partitions += 1
    assert result.figures["null_expected_counts"] == pytest.approx({k: v / partitions for k, v in totals.items()})
    assert result.convention["p_estimator"] == "k/N" and result.convention["permutations"] == partitions == 36
    assert result.convention["traits_file"] == "traits" and result.convention["affect_file"] == ""
    sampled = build_metric("fise", traits="traits", exact_limit=0, permutations=20).compute(embedder, test, seed=0)
    assert sampled.convention["p_estimator"] == "(k+1)/(m+1)" and sampled.convention["permutations"] == 20


@pytest.mark.parametrize("axes", ["gender", "gender,gender", "gender,class,gender"])
def test_axes_must_name_two_different_axes(spread, axes: str) -> None:
    from bias.core.errors import BiasError

    embedder, test = spread
    with pytest.raises(BiasError, match="two different axes"):
        build_metric("fise", traits="traits", axes=axes).compute(embedder, test, seed=0)


def test_traits_come_from_traitlist_beside_the_test_and_a_phrase_needs_every_word(tmp_path: Path) -> None:
    from bias.core.errors import BiasError

    folder = tmp_path / "FISE"
    folder.mkdir()
    (folder / "H.json").write_text(json.dumps(AXES), encoding="utf-8")
    embedder = build_embedder(f"word2vec:{_write_vectors(tmp_path / 'v.txt', VECTORS)}")
    embedder.load()
    with pytest.raises(BiasError, match="has no traits"):
        build_metric("fise").compute(embedder, load_wordset(str(folder / "H.json")), seed=0)
    (folder / "traitlist.txt").write_text("t1\nt3\nt4\nt1 nosuchword\n", encoding="utf-8")
    result = build_metric("fise", lost_threshold=0.5).compute(embedder, load_wordset(str(folder / "H.json")), seed=0)
    assert result.ok and [p[0] for p in result.figures["points"]] == ["t1", "t3", "t4"]
    assert result.lost == {"traits": ["t1 nosuchword"]}  # a phrase with an unknown word is lost whole


def test_exact_up_to_the_limit_and_a_lost_share_at_the_threshold_is_allowed(hand, tmp_path: Path) -> None:
    embedder, test = hand
    # 6 x 6 = 36 re-partitions of the two axes.
    assert build_metric("fise", traits="traits", exact_limit=36).compute(embedder, test, seed=0).convention["method"] == "exact"
    assert build_metric("fise", traits="traits", exact_limit=35, permutations=50).compute(embedder, test, seed=0).convention["method"] == "sampled"
    traits = tmp_path / "quarter.txt"
    traits.write_text("t1\nt3\nt4\nunknownword\n", encoding="utf-8")  # 1 of 4 lost: exactly 25%
    assert build_metric("fise", traits=str(traits), lost_threshold=0.25).compute(embedder, test, seed=0).ok
    assert build_metric("fise", traits=str(traits), lost_threshold=0.24).compute(embedder, test, seed=0).status == "refused"


def test_valence_and_positive_share_per_quadrant_by_hand(tmp_path: Path) -> None:
    """Valence = mean cosine to the positive words minus mean cosine to the negative ones, computed
    here; a zero vector sits at (0, 0) with a valence of exactly 0, which is not positive."""
    vectors = {**SPREAD, "v1": (1, 1, 0), "n1": (-1, -1, 0), "n2": (0, 0, 1), "zz": (0, 0, 0)}
    traits = ["d1", "e1", "a1", "a2", "zz"]
    (tmp_path / "V.json").write_text(json.dumps(AXES), encoding="utf-8")
    (tmp_path / "traits.txt").write_text("\n".join(traits) + "\n", encoding="utf-8")
    (tmp_path / "affect.csv").write_text("pos,neg\nv1,n1\n,n2\n", encoding="utf-8")
    embedder = build_embedder(f"word2vec:{_write_vectors(tmp_path / 'v.txt', vectors)}")
    embedder.load()
    test = load_wordset(str(tmp_path / "V.json"))
    result = build_metric("fise", traits="traits", affect="affect").compute(embedder, test, seed=0)

    def cos(a, b):
        a, b = np.array(vectors[a], dtype=float), np.array(vectors[b], dtype=float)
        na, nb = math.sqrt(a @ a), math.sqrt(b @ b)
        return 0.0 if na == 0 or nb == 0 else float(a @ b) / (na * nb)

    valence = {t: cos(t, "v1") - (cos(t, "n1") + cos(t, "n2")) / 2 for t in traits}
    points = {p[0]: (p[1], p[2]) for p in result.figures["points"]}
    assert points["zz"] == (0.0, 0.0) and valence["zz"] == 0.0 and 0 < valence["d1"] < 1
    q = result.figures["quadrants"]
    for name in q:
        members = [t for t in traits if _quadrant_name(*points[t]) == name]
        if members:
            assert q[name]["valence"] == pytest.approx(sum(valence[t] for t in members) / len(members)), name
            assert q[name]["positive_share"] == pytest.approx(sum(valence[t] > 0 for t in members) / len(members)), name
        else:
            assert q[name]["valence"] is None and q[name]["positive_share"] is None and q[name]["top"] == []
    assert q["male poor"]["positive_share"] == 1.0 and q["female poor"]["positive_share"] == 0.0


def test_a_stimulus_is_a_word_a_phrase_or_a_list_of_words() -> None:
    """Every other value in a list of traits (or of an axis's or the affect's words) is a problem
    naming its place; a one-word list is that word."""
    from bias.core.data.fise_tests import check

    good = {"kind": "fise", "language": "it", "bias_type": "gender", "source": "written for this test", "licence": "CC0-1.0", "axes": AXES}
    bad = [5, {"a": "b"}, [], ["calmo", "  "], ["calma", 3], "  ", None]
    problems = check({**good, "traits": ["t1", "t2a", ["t2a"], ["t2a", "t2b"], *bad]}, "x.toml")
    errors = {p.field: p.message for p in problems if p.severity == "error"}
    assert set(errors) == {f"traits[{i}]" for i in range(4, 4 + len(bad))}
    assert all(m.endswith("is not a word, phrase or list of variants") for m in errors.values())
    for value in ("t1", [], None, {"t1": 1}):  # a list of words, not a word or a table
        (problem,) = [p for p in check({**good, "traits": value}, "x.toml") if p.field == "traits"]
        assert problem.message.startswith("missing or empty: give a list of words")
    # "t2a" and ["t2a"] are one stimulus: the second is a repeat
    assert [(p.field, p.message, p.severity) for p in problems if p.severity != "error"] == [("traits[2]", "'t2a' repeats item 1 (dropped)", "warning")]


def test_axes_and_affect_must_have_the_shape_of_a_fise_test() -> None:
    from bias.core.data.fise_tests import check

    good = {"kind": "fise", "language": "it", "bias_type": "gender", "source": "written for this test", "licence": "CC0-1.0", "axes": AXES}

    def errors(**fields) -> dict[str, str]:
        return {p.field: p.message for p in check({**good, **fields}, "x.toml") if p.severity == "error"}

    assert errors() == {} and errors(affect={"positive": ["v1"], "negative": ["n1"]}) == {}
    three = {**AXES, "age": {"young": ["a1"], "old": ["a2"]}}
    assert errors(axes=three) == {}  # more than two axes: the metric picks two
    at_least_two = "give at least two axes, each a table of two groups, e.g. gender = { male = [...], female = [...] }"
    for axes in ({"gender": AXES["gender"]}, [AXES["gender"], AXES["class"]], "gender"):
        assert errors(axes=axes) == {"axes": at_least_two}
    two_groups = "an axis has exactly two groups (the positive end first)"
    for groups in (["m1", "f1"], {"male": ["m1"]}, {"male": ["m1"], "female": ["f1"], "other": ["t1"]}):
        assert errors(axes={**AXES, "gender": groups}) == {"axes.gender": two_groups}
    assert set(errors(axes={**AXES, "class": {"rich": [], "poor": "p1"}})) == {"axes.class.rich", "axes.class.poor"}
    table = "a table with `positive` and `negative` word lists"
    for affect in ({"positive": ["v1"]}, {"positive": ["v1"], "negative": ["n1"], "neutral": ["t1"]}, ["v1", "n1"]):
        assert errors(affect=affect) == {"affect": table}
    assert set(errors(affect={"positive": [], "negative": ["n1", 3]})) == {"affect.positive", "affect.negative[1]"}


def test_framework_affect_and_trait_files_are_read_as_written(tmp_path: Path) -> None:
    from bias.core.data.fise_tests import read_affect, read_traits
    from bias.core.errors import BiasError

    affect = tmp_path / "affect.csv"
    # a blank line, a row with a positive word only, a row with a negative word only, spaces around words
    affect.write_text("positive,negative\nv1 , n1\n\nv2\n,n2\n", encoding="utf-8")
    assert read_affect(affect) == (["v1", "v2"], ["n1", "n2"])
    affect.write_text("pos,neg\nv1,n1\n", encoding="utf-8")  # one row is enough
    assert read_affect(affect) == (["v1"], ["n1"])
    affect.write_text("pos,neg\nv1\n,n2\n", encoding="utf-8")  # the header gives the columns, not the first row
    assert read_affect(affect) == (["v1"], ["n2"])
    for content in ("pos,neg\n", "pos\nv1\n", ""):
        affect.write_text(content, encoding="utf-8")
        with pytest.raises(BiasError, match="expected a header and rows of two columns"):
            read_affect(affect)
    for content in ("pos,neg\nv1,\n", "pos,neg\n,n1\n"):
        affect.write_text(content, encoding="utf-8")
        with pytest.raises(BiasError, match="the positive or the negative column is empty"):
            read_affect(affect)
    traits = tmp_path / "traits.txt"
    traits.write_text("# a comment\n\ncalmo\n['calmo', 'calma']\n[\"allegro\", \"allegra\"]\n  gentile  \n", encoding="utf-8")
    assert read_traits(traits) == ["calmo", ("calmo", "calma"), ("allegro", "allegra"), "gentile"]
    traits.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(BiasError, match="no traits found"):
        read_traits(traits)
    traits.write_text("calmo\n['calmo', 3]\n", encoding="utf-8")
    with pytest.raises(BiasError, match="line 2: \"\\['calmo', 3\\]\" is not a list of words"):
        read_traits(traits)


def test_a_framework_fise_file_is_recognised_by_its_shape(tmp_path: Path) -> None:
    from bias.core.data.fise_tests import axes_from_json, looks_like_fise
    from bias.core.errors import BiasError

    assert looks_like_fise(AXES) and looks_like_fise({"gender": {"male": [], "female": ["f1"]}})
    not_fise = [
        {},
        [AXES],
        "gender",
        {**AXES, "notes": "x"},  # every value must be an axis
        {**AXES, "age": {"young": ["a1"], "old": ["a2"], "middle": ["a3"]}},  # of exactly two groups
        {**AXES, "age": {"young": ["a1"]}},
        {**AXES, "age": {"young": "a1", "old": ["a2"]}},  # each a list of words
    ]
    for data in not_fise:
        assert not looks_like_fise(data), data
    path = tmp_path / "axes.json"
    path.write_text(json.dumps(AXES), encoding="utf-8")
    assert axes_from_json(path) == AXES
    path.write_text(json.dumps([AXES]), encoding="utf-8")
    with pytest.raises(BiasError, match="expected a JSON object of axes"):
        axes_from_json(path)


def test_contextual_words_are_encoded_alone_and_broken_vectors_are_lost(hand, tmp_path: Path) -> None:
    """encoding = contextual: each word or phrase is one request, its span the whole text; a vector
    with a non-finite component, or all zeros, counts as lost (a zero in one component does not)."""
    from typing import ClassVar

    import attrs

    from bias.core.interfaces import Capability, Embedder

    broken = {"t3": (np.nan, 2.0, 0.0), "t4": (0.0, 0.0, 0.0), "f2": (-2.0, np.inf, 0.0)}

    @attrs.define
    class Encoder(Embedder):
        name: ClassVar[str] = "encoder"
        summary: ClassVar[str] = "sentence encodings from a table (tests only)"
        capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
        location: str = "memory"
        spans: list = attrs.field(factory=list)

        def encode(self, texts, spans=None, *, pooling="mean", layer=None):
            self.spans.append((list(texts), list(spans), pooling))
            return np.array([broken.get(t, VECTORS.get(t, (0.0, 0.0, 0.0))) for t in texts], dtype=np.float64)

    _, test = hand
    traits = tmp_path / "traits.txt"
    traits.write_text("t1\nt3\nt4\n['t2a', 't2b']\n", encoding="utf-8")
    encoder = Encoder()
    result = build_metric("fise", traits=str(traits), encoding="contextual", lost_threshold=0.6).compute(encoder, test, seed=0)
    assert result.ok and result.convention["encoding"] == "contextual"
    (texts, spans, pooling), = encoder.spans
    assert spans == [(0, len(t)) for t in texts] and pooling == "mean" and {"t1", "t3", "m2a", "f2"} <= set(texts)
    assert result.lost == {"traits": ["t3", "t4"], "gender.female": ["f2"]}
    assert [p[0] for p in result.figures["points"]] == ["t1", "t2a/t2b"]  # t1 = (1, 1, 0) is kept


def test_reports_show_the_value_as_a_signed_number_around_zero() -> None:
    from bias.plugins.metrics.fise import Fise

    shown = Fise.value  # a signed z around 0, two digits
    assert (shown.reference, shown.format(1.2345), shown.format(-0.5)) == (0.0, "+1.23", "-0.50")


@pytest.mark.parametrize(("n", "k"), [(5, 2), (60, 1), (60, 23), (200, 199), (258, 143)])
def test_the_smallest_keys_mask_is_the_subset_a_full_sort_picks(n: int, k: int) -> None:
    """The sampled null picks each partition's first group as the k smallest of n uniform keys,
    found by a partition instead of a sort: the same subsets as argsort, for short and long rows
    (258 and 143: keys where a partition around another position than k - 1 leaves a wrong k-th key)."""
    from bias.core.statistics.quadrants import smallest_mask

    keys = np.random.default_rng(n * 1000 + k).random((30, n))
    expected = np.zeros((30, n))
    for row, order in enumerate(np.argsort(keys, axis=1, kind="stable")):
        expected[row, order[:k]] = 1.0
    assert np.array_equal(smallest_mask(keys, k), expected)
    # into the null's buffers: the mask in the first n columns of `out` (the rest untouched), the
    # partition in `scratch`
    out = np.full((40, n + 1), 7.0)
    got = smallest_mask(keys, k, out, np.empty_like(keys))
    assert got.shape == (30, n + 1) and np.array_equal(got[:, :n], expected)
    assert np.array_equal(out[:30, :n], expected) and (out[:, n] == 7.0).all() and (out[30:] == 7.0).all()


@pytest.mark.parametrize("mean_centre", [False, True])
def test_sampled_null_replays_its_draws_by_brute_force(mean_centre: bool) -> None:
    """The sampled null, partition by partition, against a loop that replays the same draws (uniform
    keys per row, the k smallest are the first group) and computes each trait's mean cosine to the
    first group minus the rest, the quadrant counts and the strength from their definitions. Groups of
    unequal size whose cosines do not sum to zero (so the scale and the offset of the one-product
    association both matter), and 1,500 permutations (a batch that is not a whole number of rows)."""
    from bias.core.statistics.quadrants import quadrant_null

    rng = np.random.default_rng(11)
    cx, cy = rng.uniform(-0.2, 0.6, size=(13, 7)), rng.uniform(-0.3, 0.5, size=(13, 9))
    kx, ky, m = 3, 4, 1500
    null = quadrant_null(cx, cy, kx, ky, mean_centre=mean_centre, permutations=m, exact_limit=0, seed=5)
    counts, strengths = null.counts, null.strengths
    assert null.method == "sampled" and null.drawn == m

    replay = np.random.default_rng(5)
    keys_x, keys_y = replay.random((m, 7)), replay.random((m, 9))  # one batch of draws: x keys, then y keys

    def association(cos: np.ndarray, first: list[int]) -> np.ndarray:
        rest = [j for j in range(cos.shape[1]) if j not in first]
        return np.array([math.fsum(row[first]) / len(first) - math.fsum(row[rest]) / len(rest) for row in cos])

    for i in range(m):
        x = association(cx, sorted(np.argsort(keys_x[i])[:kx]))
        y = association(cy, sorted(np.argsort(keys_y[i])[:ky]))
        if mean_centre:
            x, y = x - x.mean(), y - y.mean()
        # 0: (+, +), 1: (-, +), 2: (-, -), 3: (+, -); exactly 0 counts as negative
        quadrant = [0 if a > 0 and b > 0 else 1 if b > 0 else 2 if a <= 0 else 3 for a, b in zip(x, y)]
        assert list(counts[i]) == [quadrant.count(q) for q in range(4)], i
        assert strengths[i] == pytest.approx(math.fsum(abs(a) + abs(b) for a, b in zip(x, y)) / len(x) / math.sqrt(2), abs=1e-12), i
