"""What the linear-erasure debiasers (INLP, LEACE) share: parameters (defaults and bounds), the training
words reported, the vocabulary read once and updated in chunks, and the training data of each level."""

from __future__ import annotations

import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.registry.resolve import coerce_params, eps


@pytest.mark.parametrize("name", ["inlp", "leace"])
def test_defaults_bounds_and_hidden_state(name: str) -> None:
    cls = eps.load("debiasers", name)
    debiaser = cls(**coerce_params(cls, {}, name))
    assert (debiaser.training, debiaser.per_class, debiaser.level, debiaser.corpus, debiaser.limit) == ("projection", 1000, "auto", None, None)
    for bad in ({"per_class": 0}, {"limit": 0}):
        with pytest.raises(BiasError, match=next(iter(bad))):
            cls(**coerce_params(cls, bad, name))
    smallest = cls(**coerce_params(cls, {"per_class": 1, "limit": 1}, name))
    assert (smallest.per_class, smallest.limit) == (1, 1)
    assert "_state" not in repr(debiaser) and "state=" not in repr(debiaser)  # the fitted state is not shown
    for hidden in ("_state", "state"):  # attrs names the argument of `_state` "state"
        with pytest.raises(TypeError):
            cls(**{hidden: {}})  # nor can it be passed in
    assert cls.check_word_pairs is (name == "leace")  # INLP declares its own; LEACE keeps the default


def test_training_words_are_reported_per_class(planted_gender) -> None:
    from bias.core.data.debias_lists import DebiasLists
    from bias.core.model import WordSetMeta
    from bias.plugins.debiasers.inlp import Inlp
    from bias.registry import build_embedder
    from conftest import GENDER_FEMALE, GENDER_MALE

    pairs = tuple(zip(GENDER_MALE, GENDER_FEMALE))
    lists = DebiasLists(WordSetMeta("planted-lists", "debias-lists", "en", "gender"), pairs, pairs, GENDER_MALE + GENDER_FEMALE, ("he", "she"))
    embedder = build_embedder(f"word2vec:{planted_gender}")
    paired = Inlp(training="pairs", iterations=2).fit(embedder, lists).transform(embedder)
    assert paired.info["training_words"] == {"male": list(GENDER_MALE), "female": list(GENDER_FEMALE)}
    shown = Inlp(per_class=20, iterations=2).fit(embedder, lists).transform(embedder).info["training_words"]
    assert len(shown["male"]) == len(shown["female"]) == 20 and not set(shown["male"]) & set(shown["female"])


def _lists(pairs: tuple[tuple[str, str], ...], direction: tuple[str, str] | None = None):
    from bias.core.data.debias_lists import DebiasLists
    from bias.core.model import WordSetMeta

    return DebiasLists(WordSetMeta("pairs", "debias-lists", "en", "gender"), pairs, direction=direction)


def test_at_most_fifty_training_words_per_class_are_reported(tmp_path) -> None:
    """The record shows the first 50 words of each class (a vocabulary-sized list would swamp
    debias.json); the fit uses all of them. 130 words at known angles to he - she: word i has cosine
    cos(t_i) with the direction, t_i increasing, so the 60 most male are words 0..59 and the 60 most
    female words 129..70 (the least aligned last)."""
    from gensim.models import KeyedVectors

    from bias.plugins.debiasers.leace import Leace
    from bias.registry import build_embedder

    n = 130
    angles = np.linspace(0.1, np.pi - 0.1, n)
    words = ["he", "she"] + [f"w{i:03d}" for i in range(n)]
    vectors = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]] + [[np.cos(t), np.sin(t), 0.5] for t in angles])
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(words, vectors.astype(np.float32))
    kv.save_word2vec_format(str(tmp_path / "angles.bin"), binary=True)
    embedder = build_embedder(f"word2vec:{tmp_path / 'angles.bin'}")
    debiased = Leace(per_class=60).fit(embedder, _lists((("he", "she"),))).transform(embedder)
    # brute force: cosines with he - she, written out, ranked
    cosine = {w: v[0] / np.linalg.norm(v) for w, v in zip(words[2:], vectors[2:])}
    ranked = sorted(cosine, key=lambda w: -cosine[w])
    assert debiased.info["training_words"] == {"male": ranked[:50], "female": ranked[-60:][:50]}
    assert debiased.info["training_vectors"] == 120  # the fit saw all 60 + 60


@pytest.fixture()
def counted_reads(planted_gender, monkeypatch):
    """A real static model whose whole-vocabulary reads are counted."""
    from bias.registry import build_embedder

    embedder = build_embedder(f"word2vec:{planted_gender}")
    reads = []
    original = type(embedder).all_vectors

    def all_vectors(self, limit=None):
        reads.append(limit)
        return original(self, limit)

    monkeypatch.setattr(type(embedder), "all_vectors", all_vectors)
    return embedder, reads


@pytest.mark.parametrize("name", ["inlp", "leace"])
def test_the_vocabulary_is_read_once_and_every_row_is_changed(name: str, counted_reads) -> None:
    """transform() on the fitted model updates the matrix read at fit (one read of the vocabulary, not
    two), every row of it, in chunks; a second transform() of the same model reads it afresh and
    gives the same vectors."""
    from bias.registry.resolve import eps
    from conftest import GENDER_FEMALE, GENDER_MALE

    embedder, reads = counted_reads
    cls = eps.load("debiasers", name)
    debiaser = cls(training="pairs", **({"iterations": 2} if name == "inlp" else {})).fit(embedder, _lists(tuple(zip(GENDER_MALE, GENDER_FEMALE))))
    original = embedder.all_vectors().vectors.astype(np.float64)
    del reads[:]
    first = debiaser.transform(embedder)
    assert reads == []  # the fit's matrix is used
    expected = first.transform.words(original, list(first.vocab))  # the fitted map, on every word at once
    assert first.matrix.shape == original.shape
    assert np.allclose(first.matrix, expected, atol=1e-5)  # the first row included
    second = debiaser.transform(embedder)
    assert len(reads) == 1 and np.array_equal(second.matrix, first.matrix)


def test_the_chunked_update_covers_every_chunk(planted_gender, monkeypatch) -> None:
    """Chunks of 7 rows over a 95-word vocabulary: every row changed once, the last partial chunk too."""
    from bias.core.models.debiasing import linear_erasure
    from bias.plugins.debiasers.leace import Leace
    from bias.registry import build_embedder
    from conftest import GENDER_FEMALE, GENDER_MALE

    monkeypatch.setattr(linear_erasure, "CHUNK_ROWS", 7)
    embedder = build_embedder(f"word2vec:{planted_gender}")
    original = embedder.all_vectors().vectors.astype(np.float64)
    debiased = Leace(training="pairs").fit(embedder, _lists(tuple(zip(GENDER_MALE, GENDER_FEMALE)))).transform(embedder)
    eraser = debiased.transform
    assert original.shape[0] % 7 != 0
    assert np.allclose(debiased.matrix, original - (original - eraser.mean) @ eraser.matrix().T, atol=1e-5)


def test_two_sentence_pairs_are_enough_and_one_is_refused(planted_gender, tmp_path) -> None:
    """Sentence level needs at least two swapped pairs: a corpus giving exactly two is fitted, one
    giving a single pair is refused with the count."""
    from bias.core.errors import BiasError
    from bias.plugins.debiasers.leace import Leace
    from bias.registry import build_embedder

    embedder = build_embedder(f"word2vec:{planted_gender}")
    lists = _lists((("he", "she"), ("man", "woman")))
    two = tmp_path / "two.txt"
    two.write_text("he works at the office\nthe woman is at home\nthe office is new\n", encoding="utf-8")
    debiased = Leace(level="sentences", corpus=str(two)).fit(embedder, lists).transform(embedder)
    assert debiased.info["sentence_pairs"] == 2
    one = tmp_path / "one.txt"
    one.write_text("he works at the office\nthe office is new\n", encoding="utf-8")
    with pytest.raises(BiasError, match="Only 1 sentence pair"):
        Leace(level="sentences", corpus=str(one)).fit(embedder, lists)


def test_word_vectors_of_a_sentence_level_fit_learn_from_the_list_pairs_found(planted_gender, tmp_path) -> None:
    """Word vectors asked of a model debiased at sentence level get a map of their own, fitted on the
    vectors of the list pairs the model has (a pair with a word it lacks is left out): the male words'
    rows first, labelled 1, then their partners', labelled 0, the hook's contract."""
    import attrs

    from bias.core.errors import BiasError
    from bias.plugins.debiasers.leace import Leace
    from bias.registry import build_embedder

    seen: list[tuple[np.ndarray, np.ndarray]] = []

    @attrs.define
    class Recording(Leace):
        def _fit_map(self, X, y):
            seen.append((X, y))
            return super()._fit_map(X, y)

    embedder = build_embedder(f"word2vec:{planted_gender}")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("he works at the office\nthe woman is at home\nthe boy is here\n", encoding="utf-8")
    # the third pair has a word the model lacks; the fourth has neither
    lists = _lists((("he", "she"), ("man", "woman"), ("boy", "zzgirl"), ("zzlad", "zzlass")))
    debiased = Recording(level="sentences", corpus=str(corpus)).fit(embedder, lists).transform(embedder)
    del seen[:]
    debiased.word_vectors(["office", "home"])
    (X, y), = seen
    raw = embedder.word_vectors(["he", "man", "she", "woman"]).as_dict()
    assert np.array_equal(X, np.array([raw[w] for w in ("he", "man", "she", "woman")], dtype=np.float64))
    assert y.tolist() == [1, 1, 0, 0]
    # LEACE refuses fewer than two pairs found in the model
    few = _lists((("he", "she"), ("boy", "zzgirl")))
    with pytest.raises(BiasError, match="Only 1 sentence pair"):
        Leace(level="sentences", corpus=str(corpus)).fit(embedder, few).transform(embedder).word_vectors(["office"])
