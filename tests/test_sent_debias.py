"""Sent-Debias: sentence pairs built by swapping, the subspace and projection as defined, and the
planted association of a tiny masked LM reduced as seen by s-SEAT."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import attrs
import numpy as np
import pytest
from bias.core.data.debias_lists import DebiasLists
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordSetMeta
from bias.plugins.debiasers.sent import SentDebias, sentence_pairs
from bias.core.models.debiasing import DebiasedEmbedder
from bias.registry import build_embedder, build_metric
from bias.registry.resolve import build_debiaser, sentence_templates
from fixtures.inputs import compute_with_inputs
from fixtures.planted import X_WORDS, Y_WORDS, association_test


def lists_of_pairs(pairs, language="en") -> DebiasLists:
    return DebiasLists(WordSetMeta("pairs", "debias-lists", language, "gender"), tuple(pairs))


def test_pairs_swap_whole_words_both_ways_keeping_case():
    lists = lists_of_pairs([("he", "she"), ("his", "her"), ("father", "mother")])
    found = sentence_pairs(
        ["He said his MOTHER was there.", "She and the hero left.", "She and the hero left.", "Nothing gendered here.", "Where is her theory?"],
        lists,
    )
    assert [(p.male.text, p.female.text) for p in found] == [
        ("He said his FATHER was there.", "She said her MOTHER was there."),
        ("He and the hero left.", "She and the hero left."),
        ("Where is his theory?", "Where is her theory?"),
    ]
    for pair in found:
        for version in (pair.male, pair.female):
            start, end = version.span
            assert version.text[start:end].lower() in {"he", "she", "his", "her"}


def encoder_and_lists(tmp_path: Path):
    from fixtures.tiny_bert import build_tiny_bert

    return build_embedder(f"hf:{build_tiny_bert(tmp_path / 'bert')}"), lists_of_pairs([("he", "she"), ("man", "woman")])


def test_subspace_and_projection_follow_the_definition(tmp_path):
    encoder, lists = encoder_and_lists(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the man works here.\nshe sees a rose.\nhe is good and the woman is bad.\na tulip is here.\n", encoding="utf-8")
    debiaser = SentDebias(corpus=str(corpus)).fit(encoder, lists)
    debiased = debiaser.transform(encoder)
    pairs = sentence_pairs(corpus.read_text().splitlines(), lists)
    assert debiased.info["sentence_pairs"] == len(pairs) == 3
    # By hand: normalise, centre each pair, take the top right-singular vector.
    male = encoder.encode([p.male.text for p in pairs])
    female = encoder.encode([p.female.text for p in pairs])
    male /= np.linalg.norm(male, axis=1, keepdims=True)
    female /= np.linalg.norm(female, axis=1, keepdims=True)
    centre = (male + female) / 2
    _, _, vt = np.linalg.svd(np.concatenate([male - centre, female - centre]))
    v = vt[0] * np.sign((male - female).mean(axis=0) @ vt[0])
    basis = debiased.transform.get(("sentence", "mean", None)).basis
    assert np.allclose(basis[0], v, atol=1e-10)
    texts = ["the doctor is good.", "he likes the nurse."]
    e = encoder.encode(texts)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    expected = e - np.outer(e @ v, v)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    got = debiased.encode(texts)
    assert np.allclose(got, expected, atol=1e-10)
    assert np.allclose(got @ v, 0, atol=1e-12)
    # Span vectors get their own subspace, fitted from the swapped words' spans.
    debiased.encode(texts, [(4, 10), (0, 2)])
    assert "span:mean:None" in debiased.info["subspaces"]


@attrs.define
class WordsOnly(Embedder):
    """An embedder type that gives word vectors and nothing else (as a third-party plugin may)."""

    name: ClassVar[str] = "words-only"
    summary: ClassVar[str] = "word vectors only"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    location: str = "nowhere"


def test_refused_for_word_vectors_only():
    with pytest.raises(BiasError) as caught:
        build_debiaser("sent", WordsOnly())
    assert "encodes sentences" in caught.value.message and "Methods that fit words-only:nowhere: none" in caught.value.hint
    with pytest.raises(BiasError, match="hard, inlp"):
        SentDebias().fit(WordsOnly(), lists_of_pairs([("he", "she"), ("man", "woman")]))


def test_too_few_pairs_is_a_clear_error(tmp_path):
    encoder, lists = encoder_and_lists(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a rose is here.\nthe man is good.\n", encoding="utf-8")
    with pytest.raises(BiasError, match="Only 1 sentence pair"):
        SentDebias(corpus=str(corpus)).fit(encoder, lists)
    with pytest.raises(BiasError, match="not found"):
        SentDebias(corpus=str(tmp_path / "missing.txt")).fit(encoder, lists)


def test_on_the_fly_wrapper_fits_when_first_loaded(tmp_path):
    from fixtures.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bert")
    from bias.core.specs import DebiasSettings

    wrapped = build_embedder(f"hf:{folder}", DebiasSettings("sent", lists="en/debias-gender"))
    assert isinstance(wrapped, DebiasedEmbedder) and wrapped.pending is not None
    vectors = wrapped.encode(["the doctor is here."])
    assert wrapped.pending is None and wrapped.info["sentences_from"] == "en/seat-templates"
    assert vectors.shape == (1, 32) and np.isclose(np.linalg.norm(vectors), 1.0)
    assert Capability.MASKED_LM not in wrapped.available()


def test_planted_association_is_reduced(planted_mlm):
    """X/Y (flowers/insects) play the definitional pairs of the planted attribute."""
    embedder = build_embedder(f"hf:{planted_mlm}")
    lists = attrs.evolve(lists_of_pairs(zip(X_WORDS, Y_WORDS)), templates=sentence_templates("en"))
    seat = build_metric("seat", permutations=2000, pooling="mean")  # the tiny model's [CLS] is never trained
    before = compute_with_inputs(seat, embedder, association_test(), seed=0)
    assert before.effect_size > 0.8 and before.p_value < 0.01
    debiased = SentDebias().fit(embedder, lists).transform(embedder)
    after = compute_with_inputs(seat, debiased, association_test(), seed=0)
    assert abs(after.effect_size) < 0.3 and after.p_value > 0.05
    assert debiased.info["subspaces"]["sentence:mean:None"]["explained_variance"][0] > 0.5


def test_templates_that_fail_to_load_are_an_error_not_a_switch_to_bare_words(tmp_path, monkeypatch, caplog):
    """A language whose template file is broken got English bare-word frames without a word; a
    language without templates gets them with a warning, and the source is recorded."""
    import shutil

    from bias.core.models.debiasing.counterfactual_sentences import template_sentences
    from bias.registry import load_wordset

    root = tmp_path / "site"
    pkg = root / "bias_lang_xq_broken_templates"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\nfrom bias.core.data.wordsets import DataPackage\n"
        "PACKAGE = DataPackage(language='xq', root=Path(__file__).parent / 'data')\n"
    )
    shutil.copy(load_wordset("en/seat-templates").meta.path, pkg / "data" / "seat-templates.toml")
    text = (pkg / "data" / "seat-templates.toml").read_text(encoding="utf-8").replace('language = "en"', 'language = "xq"')
    (pkg / "data" / "seat-templates.toml").write_text(text + "\n[[templates]]\ntext = 42\n", encoding="utf-8")
    info = root / "bias_lang_xq_broken_templates-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bias-lang-xq-broken-templates\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[bias.wordsets]\nxq = bias_lang_xq_broken_templates:PACKAGE\n")
    monkeypatch.syspath_prepend(str(root))  # a module name no other test imports: sys.modules holds no stale copy
    broken = sentence_templates("xq")
    assert broken.templates is None and broken.error is not None  # kept, raised only when sentences are needed
    with pytest.raises(BiasError, match="xq/seat-templates") as err:
        template_sentences(attrs.evolve(lists_of_pairs([("he", "she"), ("man", "woman")], language="xq"), templates=broken))
    assert "--debias-corpus" in (err.value.hint or "")
    with caplog.at_level("WARNING"):
        sentences, origin = template_sentences(
            attrs.evolve(lists_of_pairs([("he", "she"), ("man", "woman")], language="zz"), templates=sentence_templates("zz"))
        )
    assert origin == "bare words" and sentences
    assert any("Language 'zz' has no sentence templates (zz/seat-templates)" in r.getMessage() for r in caplog.records)


def test_lists_loaded_through_the_registry_bring_their_templates_and_hand_built_ones_do_not(caplog):
    from bias.core.models.debiasing.counterfactual_sentences import BARE_TEMPLATES, template_sentences
    from bias.registry import load_wordset

    loaded = load_wordset("en/debias-gender")
    assert loaded.templates is not None and loaded.templates.name == "en/seat-templates"
    assert loaded == attrs.evolve(loaded, templates=None)  # the templates are no part of the lists' identity
    sentences, origin = template_sentences(loaded)
    assert origin == "en/seat-templates" and len(sentences) >= 2
    with caplog.at_level("WARNING"):
        sentences, origin = template_sentences(lists_of_pairs([("he", "she"), ("man", "woman")]))
    assert origin == "bare words" and len(sentences) == 2 * len(BARE_TEMPLATES)
    assert sentences == ["he", "He.", "He!", "He?", "man", "Man.", "Man!", "Man?"]
    assert any("come without their language's sentence templates" in r.getMessage() for r in caplog.records)
