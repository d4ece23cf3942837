"""The debiasing building blocks of bias.core.models.debiasing: the one pair-centred PCA and what a debiased
model offers."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np
import pytest
from bias.core.data.debias_lists import DebiasLists
from bias.core.models.debiasing import DebiasedEmbedder, pair_subspace, remove_subspace_, unit_rows_
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordSetMeta, WordVectors
from bias.plugins.debiasers.hard import HardDebias


def test_pair_subspace_of_a_hand_computed_example():
    """Pairs (1,0)/(-1,0) and (3,1)/(1,1) differ along x, (0,1)/(0,-1) along y. Centred on their
    means the six rows are +-(1,0) twice and +-(0,1) once: scatter diag(4, 2), so the directions are
    x then y with shares 2/3 and 1/3; the mean of first - second is (4/3, 2/3), both positive."""
    first = np.array([[1.0, 0.0], [3.0, 1.0], [0.0, 1.0]])
    second = np.array([[-1.0, 0.0], [1.0, 1.0], [0.0, -1.0]])
    basis, ratio = pair_subspace(first, second, 2)
    assert np.allclose(basis, [[1.0, 0.0], [0.0, 1.0]], atol=1e-12)
    assert np.allclose(ratio, [2 / 3, 1 / 3], atol=1e-12)
    # the last pair swapped: y now points from first to second on average, so its direction flips
    first[2], second[2] = second[2].copy(), first[2].copy()
    basis, _ = pair_subspace(first, second, 2)
    assert np.allclose(basis, [[1.0, 0.0], [0.0, -1.0]], atol=1e-12)


def test_a_direction_the_pairs_do_not_order_takes_the_sign_of_its_largest_coordinate():
    """(1,0)/(-1,0) and (-1,0)/(1,0): the pairs cancel (mean difference 0), so the sign of the SVD
    would decide; the rule makes the largest coordinate positive whichever sign the SVD gives."""
    first = np.array([[1.0, 0.0], [-1.0, 0.0]])
    second = -first
    basis, ratio = pair_subspace(first, second, 1)
    assert np.allclose(basis, [[1.0, 0.0]])
    assert np.allclose(ratio, [1.0, 0.0])


def test_identical_pairs_explain_nothing():
    rows = np.random.default_rng(1).normal(size=(3, 4))
    _, ratio = pair_subspace(rows, rows, 1)
    assert not ratio.any()


def test_first_direction_is_the_brute_force_maximum_of_the_projected_variance():
    """Definition, not linear algebra: among many directions on the sphere, none spreads the
    pair-centred rows more than the first direction found."""
    rng = np.random.default_rng(3)
    first, second = rng.normal(size=(7, 3)), rng.normal(size=(7, 3))
    centre = (first + second) / 2
    rows = np.concatenate([first - centre, second - centre])
    candidates = rng.normal(size=(200_000, 3))
    candidates /= np.linalg.norm(candidates, axis=1, keepdims=True)
    variance = ((rows @ candidates.T) ** 2).sum(axis=0)
    best = candidates[np.argmax(variance)]
    basis, ratio = pair_subspace(first, second, 3)
    assert abs(best @ basis[0]) > 0.999
    assert ((rows @ basis[0]) ** 2).sum() >= variance.max() - 1e-9
    assert np.allclose(basis @ basis.T, np.eye(3), atol=1e-12)
    assert ratio.sum() == pytest.approx(1.0)
    assert ratio[0] == pytest.approx(((rows @ basis[0]) ** 2).sum() / (rows**2).sum())
    for v in basis:
        assert (first - second).mean(axis=0) @ v > 0
    flipped, _ = pair_subspace(second, first, 3)
    assert np.allclose(flipped, -basis)


def test_in_place_helpers_change_their_argument():
    matrix = np.array([[3.0, 4.0], [0.0, 0.0], [0.0, 2.0]])
    assert unit_rows_(matrix) == 1  # one zero row, left as it is
    assert np.allclose(matrix, [[0.6, 0.8], [0.0, 0.0], [0.0, 1.0]])
    remove_subspace_(matrix, np.array([[1.0, 0.0]]), keep=np.array([False, False, True]))
    assert np.allclose(matrix, [[0.0, 0.8], [0.0, 0.0], [0.0, 1.0]])


@attrs.define
class _Words(Embedder):
    """A vocabulary in memory that declares `capabilities` as given (as a third-party plugin would)."""

    name: ClassVar[str] = "words"
    summary: ClassVar[str] = "words in memory"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    location: str = "memory"
    matrix: np.ndarray = attrs.field(factory=lambda: np.random.default_rng(0).normal(size=(6, 4)))
    words: tuple[str, ...] = ("he", "she", "man", "woman", "doctor", "nurse")

    def word_vectors(self, words):  # type: ignore[no-untyped-def]
        index = {w: i for i, w in enumerate(self.words)}
        found = [w for w in words if w in index]
        return WordVectors(tuple(found), self.matrix[[index[w] for w in found]].reshape(len(found), 4), tuple(w for w in words if w not in index))

    def all_vectors(self, limit=None):  # type: ignore[no-untyped-def]
        return WordVectors(self.words[:limit], self.matrix[:limit])


@attrs.define
class _Vocabulary(_Words):
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.VOCABULARY})


@attrs.define
class _LanguageModel(_Words):
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL, Capability.MASKED_LM})


def _lists() -> DebiasLists:
    meta = WordSetMeta("lists", "debias-lists", "en", "gender", path="lists.toml")
    return DebiasLists(meta, (("he", "she"), ("man", "woman")), (), ("he", "she", "man", "woman"), ("he", "she"))


def test_a_vocabulary_is_what_the_embedder_declares_not_which_methods_it_overrides():
    """Hard-Debias reads the declaration: a type with an `all_vectors` method but no
    Capability.VOCABULARY is refused, the same type declaring it is debiased."""
    assert HardDebias.supports(_Words()) is not None
    with pytest.raises(BiasError, match="static model with a vocabulary"):
        HardDebias().fit(_Words(), _lists())
    assert HardDebias.supports(_Vocabulary()) is None
    debiased = HardDebias().fit(_Vocabulary(), _lists()).transform(_Vocabulary())
    assert Capability.VOCABULARY in debiased.capabilities and debiased.static


def test_a_debiased_model_keeps_vectors_and_vocabulary_but_never_language_model_scores():
    static = DebiasedEmbedder(source=_Vocabulary(), method="hard")
    assert static.capabilities == {Capability.WORD_VECTORS, Capability.VOCABULARY}
    contextual = DebiasedEmbedder(source=_LanguageModel(), method="sent")
    assert contextual.capabilities == {Capability.CONTEXTUAL}
    assert contextual.available() == {Capability.CONTEXTUAL}


def test_written_vectors_keep_the_vocabulary_order_without_a_gensim_warning(tmp_path, caplog):
    """gensim writes word2vec files by a `count` attribute and warns when there is none; the
    debiased vectors carry descending counts, so the file keeps the model's order, silently."""
    import logging

    import numpy as np
    from gensim.models import KeyedVectors

    from bias.core.models.debiasing.embedder import _write_matrix

    words = ["zebra", "apple", "mango", "kiwi"]
    with caplog.at_level(logging.WARNING):
        path = _write_matrix(words, np.arange(12, dtype=float).reshape(4, 3), tmp_path, "word2vec")
    assert not [r for r in caplog.records if "not present" in r.getMessage()]
    loaded = KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert loaded.index_to_key == words
    assert np.allclose(loaded["mango"], [6.0, 7.0, 8.0])
