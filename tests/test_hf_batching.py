"""The one token limit, collator, batcher and out-of-memory guard of bias.core.models.hf.batching, on
stand-in tokenizers and configs with hand-computed expectations."""

from __future__ import annotations

import logging
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bias.core.errors import FAILURE, BiasError
from bias.core.models.hf.batching import (
    OFFSET_POSITIONS,
    id_rows,
    in_length_batches,
    length_order,
    memory_guard,
    pad_id,
    right_pad,
    token_limit,
)
from bias.core.models.hf.loading import choose_head


def _model(model_type: str, positions: Any, pad: Any = 1) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(model_type=model_type, max_position_embeddings=positions, pad_token_id=pad))


def _tokenizer(limit: Any = None, **ids: Any) -> SimpleNamespace:
    return SimpleNamespace(model_max_length=limit, **ids)


def test_token_limit_is_the_smaller_of_tokenizer_and_position_table() -> None:
    assert token_limit(_model("bert", 512, pad=0), _tokenizer(128)) == 128
    assert token_limit(_model("bert", 512, pad=0), _tokenizer(int(1e30))) == 512  # "no limit" from the tokenizer
    assert token_limit(_model("bert", 512, pad=0), _tokenizer(0)) == 512
    assert token_limit(_model("bert", None), _tokenizer(None)) is None
    assert token_limit(SimpleNamespace(), _tokenizer(64)) == 64  # a model without config


@pytest.mark.parametrize("model_type", OFFSET_POSITIONS)
def test_roberta_style_models_lose_the_positions_up_to_their_padding_index(model_type: str) -> None:
    assert token_limit(_model(model_type, 514, pad=1), _tokenizer(None)) == 512  # 514 - (1 + 1)
    assert token_limit(_model(model_type, 514, pad=0), _tokenizer(None)) == 513  # pad id 0: one position only
    assert token_limit(_model(model_type, 514, pad=None), _tokenizer(None)) == 512  # RoBERTa's default padding index 1
    assert token_limit(_model(model_type, 66, pad=1), _tokenizer(int(1e30))) == 64


def test_every_offset_family_is_listed() -> None:
    assert set(OFFSET_POSITIONS) == {
        "roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod", "roberta-prelayernorm"
    }
    assert token_limit(_model("bert", 514, pad=1), _tokenizer(None)) == 514  # not an offset family


def test_pad_id_falls_back_to_eos_then_unk_then_zero() -> None:
    assert pad_id(SimpleNamespace(pad_token_id=0, eos_token_id=2)) == 0  # 0 is a pad id, not "missing"
    assert pad_id(SimpleNamespace(pad_token_id=None, eos_token_id=50256)) == 50256
    assert pad_id(SimpleNamespace(unk_token_id=3)) == 3
    assert pad_id(SimpleNamespace()) == 0


def test_right_pad_pads_every_column_on_the_right() -> None:
    tokenizer = SimpleNamespace(pad_token_id=None, eos_token_id=9, pad_token_type_id=0)
    rows = [
        {"input_ids": [5, 6, 7], "attention_mask": [1, 1, 1], "token_type_ids": [0, 0, 0]},
        {"input_ids": [8], "attention_mask": [1], "token_type_ids": [0]},
    ]
    out = right_pad(rows, tokenizer, "cpu")
    assert out["input_ids"].tolist() == [[5, 6, 7], [8, 9, 9]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert out["token_type_ids"].tolist() == [[0, 0, 0], [0, 0, 0]]
    ids_only = right_pad(id_rows([[4], [1, 2]]), SimpleNamespace(pad_token_id=0), "cpu")
    assert ids_only["input_ids"].tolist() == [[4, 0], [1, 2]] and ids_only["attention_mask"].tolist() == [[1, 0], [1, 1]]


def test_length_order_is_longest_first_ties_in_request_order() -> None:
    assert length_order([2, 5, 5, 1]) == [1, 2, 0, 3]
    assert length_order([]) == []


def test_batches_halve_on_out_of_memory_and_keep_the_size_that_fitted(caplog: pytest.LogCaptureFixture) -> None:
    lengths = [3, 9, 4, 7, 1]  # order: 1, 3, 2, 0, 4
    tried: list[list[int]] = []
    done: list[list[int]] = []

    def work(batch: list[int]) -> None:
        tried.append(batch)
        if len(batch) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        done.append(batch)

    with caplog.at_level(logging.WARNING):
        in_length_batches(lengths, 4, work)
    assert tried[0] == [1, 3, 2, 0]
    assert done == [[1, 3], [2, 0], [4]]
    assert "batches of 4; carrying on with batches of 2" in caplog.text


def test_batches_pass_other_errors_and_a_single_row_that_does_not_fit() -> None:
    def broken(batch: list[int]) -> None:
        raise ValueError("not memory")

    with pytest.raises(ValueError, match="not memory"):
        in_length_batches([1, 2], 2, broken)

    def full(batch: list[int]) -> None:
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        in_length_batches([1, 2, 3], 4, full)
    with pytest.raises(BiasError, match="batch_size"):
        in_length_batches([1], 0, full)


def test_memory_guard_gives_one_failure_with_the_cause_chained() -> None:
    cause = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    with pytest.raises(BiasError) as err:
        with memory_guard("cuda:0", 16):
            raise cause
    assert err.value.exit_code == FAILURE and err.value.__cause__ is cause
    assert err.value.message == "The device cuda:0 ran out of memory with batches of 16 texts."
    assert "--batch-size" in (err.value.hint or "")
    with pytest.raises(KeyError):
        with memory_guard("cpu", 1):
            raise KeyError("other")
    mine = BiasError("already a user error")
    with pytest.raises(BiasError) as err:
        with memory_guard("cpu", 1):
            raise mine
    assert err.value is mine


def test_choose_head_follows_the_architectures_unless_one_is_asked_for() -> None:
    def config(*names: str) -> SimpleNamespace:
        return SimpleNamespace(architectures=list(names))

    assert choose_head("auto", config("BertForMaskedLM")) == "masked"
    assert choose_head("auto", config("GPT2LMHeadModel")) == "causal"
    assert choose_head("auto", config("LlamaForCausalLM")) == "causal"
    assert choose_head("auto", config("BertModel")) == "none"
    assert choose_head("auto", SimpleNamespace()) == "none"
    assert choose_head("none", config("BertForMaskedLM")) == "none"


def test_importing_the_hf_modules_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys\n"
        "import bias.core.models.hf.batching, bias.core.models.hf.fingerprint, bias.core.models.hf.lm_scoring, bias.core.models.hf.loading\n"
        "import bias.core.models.hf.spans, bias.core.models.hf.vectors\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _added_to_tokenizer(source, folder, *, tokens=(), special=None) -> int:
    """A copy of the model folder `source` in `folder` whose tokenizer was given `tokens` (and
    `special` tokens) after the model was saved, the model not resized; the tokenizer's size
    before."""
    import shutil

    from transformers import AutoTokenizer

    shutil.copytree(source, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = len(tokenizer)
    tokenizer.add_tokens(list(tokens))
    if special:
        tokenizer.add_special_tokens(special)
    tokenizer.save_pretrained(folder)
    return rows


def test_a_token_id_the_model_has_no_embedding_for_is_refused_naming_the_token(
    tiny_gpt2_dir, tmp_path
) -> None:
    """A causal LM whose tokenizer was given a token after the model was saved: the scores stop
    with a message naming the token and the sizes, not torch's IndexError."""
    from bias.registry.resolve import build_embedder

    rows = _added_to_tokenizer(tiny_gpt2_dir, tmp_path / "gpt2", tokens=["qqqword"])
    embedder = build_embedder(f"hf:{tmp_path / 'gpt2'}")
    (plain,) = embedder.tokenize(["the cat"])
    assert len(embedder.token_log_probs([plain.ids])[0].log_probs) == len(plain.ids)  # others run
    (odd,) = embedder.tokenize(["the qqqword"])
    with pytest.raises(BiasError) as err:
        embedder.token_log_probs([odd.ids])
    assert err.value.message.startswith(
        f"The tokenizer gives the token 'qqqword' the id {rows}, but the model (GPT2LMHeadModel) has "
        f"embeddings for ids below {rows} only"
    ), err.value.message


def test_vectors_of_a_word_the_model_has_no_embedding_for_are_refused(tiny_bert_dir, tmp_path) -> None:
    """The same for vectors (WEAT, SEAT on a Hugging Face model): a word of the added vocabulary."""
    from bias.registry.resolve import build_embedder

    rows = _added_to_tokenizer(tiny_bert_dir, tmp_path / "bert", tokens=["qqqword"])
    embedder = build_embedder(f"hf:{tmp_path / 'bert'}")
    assert embedder.encode(["the"]).shape[0] == 1  # the others still run
    with pytest.raises(BiasError) as err:
        embedder.encode(["qqqword"])
    assert err.value.message.startswith(
        f"The tokenizer gives the token 'qqqword' the id {rows}, but the model (BertForMaskedLM) "
        f"has embeddings for ids below {rows} only"
    ), err.value.message


def test_a_pad_token_the_model_has_no_embedding_for_is_not_written_into_padding(
    tiny_gpt2_dir, tmp_path
) -> None:
    """A pad token added to the tokenizer, the model not resized: every real token fits, so the
    scores are those of the model as saved (padding takes EOS, which the model has)."""
    from bias.registry.resolve import build_embedder

    _added_to_tokenizer(tiny_gpt2_dir, tmp_path / "gpt2", special={"pad_token": "[PAD]"})
    texts = ["the cat sat on the mat", "a dog"]  # two lengths: the shorter row is padded
    padded = build_embedder(f"hf:{tmp_path / 'gpt2'}")
    plain = build_embedder(f"hf:{tiny_gpt2_dir}")
    got = padded.token_log_probs([t.ids for t in padded.tokenize(texts)])
    expected = plain.token_log_probs([t.ids for t in plain.tokenize(texts)])
    assert len(got) == 2 and all(len(g.log_probs) > 1 for g in got)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.log_probs, e.log_probs, rtol=0, atol=1e-6)
