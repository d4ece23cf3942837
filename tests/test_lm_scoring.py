"""The batched LM scoring engine (bias.core.models.hf.lm_scoring) against plain, unbatched
transformers computations on tiny real models (BERT WordPiece, RoBERTa byte-level BPE, GPT-2).

Every expected number is recomputed here one sequence at a time with a plain forward call, so a
wrong gather, a padding leak, a lost request order or a float32 softmax shows up as a mismatch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias.core.errors import FAILURE, BiasError
from bias.core.lm_requests import MaskedRequest
from bias.core.models.hf import batching, lm_scoring, scoring_plan

TOL = 1e-6
TEXTS = (
    "the man is here",
    "the doctor likes the nurse and the rose",
    "she works",
    "unbelievableness of the tulip",
    "a good flower is a good flower",
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (tests/conftest.py)


def _load(folder: Path, cls: str) -> tuple[Any, Any]:
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model = getattr(transformers, cls).from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return model, tokenizer


@pytest.fixture(scope="module")
def bert(tiny_bert_dir: Path) -> tuple[Any, Any]:
    return _load(tiny_bert_dir, "AutoModelForMaskedLM")


@pytest.fixture(scope="module")
def roberta(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    from fixtures.tiny_bert import build_tiny_roberta

    return _load(build_tiny_roberta(tmp_path_factory.mktemp("engine-roberta")), "AutoModelForMaskedLM")


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir: Path) -> tuple[Any, Any]:
    return _load(tiny_gpt2_dir, "AutoModelForCausalLM")


def reference_masked(model: Any, tokenizer: Any, request: MaskedRequest) -> np.ndarray:
    """One sequence, one plain forward call, softmax computed in float64 by hand."""
    import torch

    ids = torch.tensor([list(request.ids)])
    for p in request.positions:
        ids[0, p] = tokenizer.mask_token_id
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].double().numpy()
    out = []
    for p in request.positions:
        row = logits[p]
        log_z = row.max() + np.log(np.exp(row - row.max()).sum())
        out.append(row[request.ids[p]] - log_z)
    return np.array(out)


def requests_for(tokenizer: Any) -> list[MaskedRequest]:
    out = []
    for text in TEXTS:
        ids = tuple(tokenizer(text)["input_ids"])
        inner = range(1, len(ids) - 1)
        out.extend(MaskedRequest(ids, (p,)) for p in inner)  # one mask at a time (CrowS)
        out.append(MaskedRequest(ids, (1, len(ids) - 2)))  # two masks at once (LPBS prior)
        out.append(MaskedRequest(ids, (len(ids) - 2, 1)))  # order of positions is the order of answers
    return out


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_masked_log_probs_match_unbatched_forward(bert: tuple[Any, Any], batch_size: int) -> None:
    model, tokenizer = bert
    requests = requests_for(tokenizer)
    got = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, batch_size)
    assert len(got) == len(requests)
    for request, values in zip(requests, got):
        assert values.dtype == np.float64 and values.shape == (len(request.positions),)
        np.testing.assert_allclose(values, reference_masked(model, tokenizer, request), atol=TOL, rtol=0)


def test_roberta_masked_log_probs_match(roberta: tuple[Any, Any]) -> None:
    model, tokenizer = roberta
    requests = requests_for(tokenizer)
    got = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 7)
    for request, values in zip(requests, got):
        np.testing.assert_allclose(values, reference_masked(model, tokenizer, request), atol=TOL, rtol=0)


def test_head_on_masked_rows_only_equals_the_full_forward(bert: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = bert
    requests = requests_for(tokenizer)
    assert scoring_plan.split_head(model) is not None
    fast = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 16)
    monkeypatch.setattr(scoring_plan, "SPLIT_HEADS", {})
    assert scoring_plan.split_head(model) is None
    full = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 16)
    for a, b in zip(fast, full):
        np.testing.assert_allclose(a, b, atol=TOL, rtol=0)


def test_masked_variants_share_forward_calls(bert: tuple[Any, Any]) -> None:
    """Never one forward call per mask: n requests take ceil(n / batch_size) calls."""
    model, tokenizer = bert
    requests = requests_for(tokenizer)
    calls = []
    handle = model.bert.embeddings.register_forward_hook(lambda *args: calls.append(1))
    try:
        lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 16)
    finally:
        handle.remove()
    assert len(calls) == -(-len(requests) // 16)


def test_requests_without_positions_need_no_model_call(bert: tuple[Any, Any]) -> None:
    model, tokenizer = bert
    calls = []
    handle = model.bert.embeddings.register_forward_hook(lambda *args: calls.append(1))
    try:
        out = lm_scoring.masked_log_probs(model, tokenizer, "cpu", [MaskedRequest((2, 10, 3), ())], 8)
    finally:
        handle.remove()
    assert calls == [] and out[0].shape == (0,)


def test_huge_logits_stay_finite(tmp_path: Path) -> None:
    """Logits of +-thousands underflow a float32 softmax (log 0 = -inf); float64 log_softmax does not."""
    import torch
    from fixtures.tiny_bert import build_tiny_bert

    model, tokenizer = _load(build_tiny_bert(tmp_path / "sharp", seed=3), "AutoModelForMaskedLM")
    with torch.no_grad():
        model.cls.predictions.decoder.weight.mul_(2000.0)
    ids = tuple(tokenizer("unbelievableness of the tulip")["input_ids"])
    request = MaskedRequest(ids, tuple(range(1, len(ids) - 1)))
    with torch.no_grad():
        masked = torch.tensor([list(ids)])
        masked[0, 1:-1] = tokenizer.mask_token_id
        naive = torch.log(torch.softmax(model(input_ids=masked).logits[0], dim=-1))
    assert torch.isinf(naive).any(), "the test model must be sharp enough to underflow a float32 softmax"
    values = lm_scoring.masked_log_probs(model, tokenizer, "cpu", [request], 4)[0]
    assert np.isfinite(values).all() and values.min() < -50
    np.testing.assert_allclose(values, reference_masked(model, tokenizer, request), rtol=1e-6)


def test_token_log_probs_masked_lm(bert: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = bert
    sequences = [tokenizer(t)["input_ids"] for t in TEXTS]
    got = lm_scoring.token_log_probs(model, tokenizer, "cpu", sequences, 2, causal=False, attention=False)
    for ids, scores in zip(sequences, got):
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1).numpy()
        np.testing.assert_allclose(scores.log_probs, lp[np.arange(len(ids)), ids], atol=TOL, rtol=0)
        assert scores.attention is None


def test_attention_received_matches_eager_reference(bert: tuple[Any, Any]) -> None:
    """Column means over layers, heads and real queries; padding queries of shorter rows excluded."""
    import torch

    model, tokenizer = bert
    before = model.config._attn_implementation
    sequences = [tokenizer(t)["input_ids"] for t in TEXTS]
    got = lm_scoring.token_log_probs(model, tokenizer, "cpu", sequences, 8, causal=False, attention=True)
    assert model.config._attn_implementation == before, "the model's attention setting must be restored"
    model.set_attn_implementation("eager")
    try:
        for ids, scores in zip(sequences, got):
            with torch.no_grad():
                att = model(input_ids=torch.tensor([ids]), output_attentions=True).attentions
            expected = np.mean([a[0].double().numpy() for a in att], axis=(0, 1)).mean(axis=0)
            np.testing.assert_allclose(scores.attention, expected, atol=TOL, rtol=0)
            assert abs(scores.attention.sum() - 1.0) < 1e-6  # each query row sums to 1
    finally:
        model.set_attn_implementation(before)


def test_causal_log_probs_are_next_token(gpt2: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = gpt2
    sequences = [tokenizer(t)["input_ids"] for t in TEXTS]
    got = lm_scoring.token_log_probs(model, tokenizer, "cpu", sequences, 3, causal=True, attention=True)
    bos = tokenizer.bos_token_id
    for ids, scores in zip(sequences, got):
        assert ids[0] != bos  # GPT-2's tokenizer adds no start token: the scorer puts BOS in front
        full = [bos] + list(ids)
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([full])).logits[0].double(), -1).numpy()
        expected = lp[np.arange(len(full) - 1), full[1:]]  # every token of `ids`, the first included
        np.testing.assert_allclose(scores.log_probs, expected, atol=TOL, rtol=0)
        assert "bos token" in scores.context
        assert scores.attention is not None and scores.attention.shape == (len(ids),)


@pytest.mark.parametrize("batch_size", [1, 2, 64])
def test_requests_with_one_masked_input_each_read_their_own_tokens(bert: tuple[Any, Any], batch_size: int) -> None:
    """Requests that differ only under their masks give the model one input and may share a forward
    row; each still reads its own original tokens, in its own position order, in request order. The
    same positions in another order, or one position more, are another input's answer."""
    model, tokenizer = bert
    ids = list(tokenizer("the doctor likes the nurse and the rose")["input_ids"])
    n = len(ids)
    swapped = list(ids)
    swapped[2], swapped[5] = ids[5], ids[2]  # other tokens under the masks at 2 and 5
    requests = [
        MaskedRequest(tuple(ids), (2, 5)),
        MaskedRequest(tuple(ids), (5, 2)),
        MaskedRequest(tuple(swapped), (2, 5)),
        MaskedRequest(tuple(ids), (2,)),
        MaskedRequest(tuple(swapped), (5, 2)),
        MaskedRequest(tuple(ids[:2] + [ids[1]] + ids[3:]), (2, 5)),
        MaskedRequest(tuple(ids), (2, 5, n - 2)),
        MaskedRequest(tuple(swapped), (2,)),
    ]
    got = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, batch_size)
    for i, (request, values) in enumerate(zip(requests, got)):
        np.testing.assert_allclose(values, reference_masked(model, tokenizer, request), atol=TOL, rtol=0, err_msg=str(i))


def test_too_long_request_is_named_by_its_place_among_the_requests(bert: tuple[Any, Any]) -> None:
    """Requests that share a forward row do not shift the number the message gives."""
    model, tokenizer = bert
    limit = batching.token_limit(model, tokenizer)
    short = [2, 10, 11, 3]
    long = tuple([2] + [10] * limit + [3])
    requests = [MaskedRequest(tuple(short), (1,)), MaskedRequest((2, 12, 11, 3), (1,)), MaskedRequest(long, (5,))]
    with pytest.raises(BiasError) as err:
        lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 4)
    assert "the first, number 2, has" in err.value.message


def test_tokenizer_without_mask_token_is_refused(gpt2: tuple[Any, Any]) -> None:
    model, tokenizer = gpt2
    assert tokenizer.mask_token_id is None
    with pytest.raises(BiasError) as err:
        lm_scoring.masked_log_probs(model, tokenizer, "cpu", [MaskedRequest((1, 2, 3), (1,))], 4)
    assert "no mask token" in err.value.message


def test_sequences_longer_than_the_model_are_refused(bert: tuple[Any, Any]) -> None:
    model, tokenizer = bert
    limit = batching.token_limit(model, tokenizer)
    assert limit == 128
    long = tuple([2] + [10] * limit + [3])
    with pytest.raises(BiasError) as err:
        lm_scoring.masked_log_probs(model, tokenizer, "cpu", [MaskedRequest(long, (5,))], 4)
    assert "limit of 128 tokens" in err.value.message
    with pytest.raises(BiasError):
        lm_scoring.token_log_probs(model, tokenizer, "cpu", [long], 4, causal=False, attention=False)


def test_roberta_limit_leaves_out_the_padding_offset(roberta: tuple[Any, Any]) -> None:
    model, tokenizer = roberta
    assert batching.token_limit(model, tokenizer) == 64


def test_uncased_is_read_from_the_tokenizer(bert: tuple[Any, Any], tmp_path: Path) -> None:
    from fixtures.tiny_bert import build_tiny_bert

    assert lm_scoring.is_uncased(bert[1]) is True
    _, cased = _load(build_tiny_bert(tmp_path / "cased", lowercase=False), "AutoModelForMaskedLM")
    assert lm_scoring.is_uncased(cased) is False


class _DeviceWithRoomFor:
    """Wraps a model so that a forward call with more than `rows` sequences fails as a GPU without
    the memory for it does (torch raises a RuntimeError saying "out of memory")."""

    def __init__(self, model: Any, rows: int) -> None:
        self.model, self.rows, self.sizes = model, rows, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        size = int(kwargs["input_ids"].shape[0])
        self.sizes.append(size)
        if size > self.rows:
            raise RuntimeError(f"CUDA out of memory. Tried to allocate a batch of {size} sequences.")
        return self.model(*args, **kwargs)


def test_out_of_memory_halves_the_batch_and_carries_on(bert: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    model, tokenizer = bert
    requests = requests_for(tokenizer)
    expected = lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 64)
    monkeypatch.setattr(scoring_plan, "SPLIT_HEADS", {})  # the generic path calls the wrapper
    small = _DeviceWithRoomFor(model, rows=5)
    with caplog.at_level("WARNING"):
        got = lm_scoring.masked_log_probs(small, tokenizer, "cpu", requests, 32)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=TOL, rtol=0)
    assert len(requests) > 40 and small.sizes[:4] == [32, 16, 8, 4] and max(small.sizes[4:]) <= 4  # later batches keep the size that fitted
    assert "out of memory" in caplog.text and "batches of 4" in caplog.text
    sequences = [list(r.ids) for r in requests[:9]]
    plain = lm_scoring.token_log_probs(model, tokenizer, "cpu", sequences, 64, causal=False, attention=False)
    shrunk = lm_scoring.token_log_probs(_DeviceWithRoomFor(model, rows=2), tokenizer, "cpu", sequences, 64, causal=False, attention=False)
    for a, b in zip(shrunk, plain):
        np.testing.assert_allclose(a.log_probs, b.log_probs, atol=TOL, rtol=0)


def test_out_of_memory_on_a_single_sequence_is_a_clear_error(bert: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = bert
    monkeypatch.setattr(scoring_plan, "SPLIT_HEADS", {})
    with pytest.raises(BiasError) as err:
        lm_scoring.masked_log_probs(_DeviceWithRoomFor(model, rows=0), tokenizer, "cpu", requests_for(tokenizer)[:3], 8)
    assert err.value.message == "The device cpu ran out of memory with batches of 8 texts."  # as for vectors
    assert err.value.exit_code == FAILURE and isinstance(err.value.__cause__, RuntimeError)


def test_bfloat16_scores_agree_with_float32_within_the_stated_tolerance(bert: tuple[Any, Any]) -> None:
    """The half-precision path (bfloat16 runs on CPU too; float16 takes the same code on CUDA): the
    log-probabilities are still computed in float64 from the model's logits, so they differ from
    float32 only by the weights' rounding: within 0.1 nats per token on this model, ranking kept."""
    import copy

    import torch

    model, tokenizer = bert
    half = copy.deepcopy(model).to(torch.bfloat16)
    requests = [r for r in requests_for(tokenizer) if len(r.positions) == 1]
    full = np.concatenate(lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 16))
    low = np.concatenate(lm_scoring.masked_log_probs(half, tokenizer, "cpu", requests, 16))
    assert low.dtype == np.float64 and np.isfinite(low).all()
    assert np.max(np.abs(low - full)) < 0.1
    assert np.corrcoef(low, full)[0, 1] > 0.99


def _wide_vocabulary(model: Any, size: int = 6000, seed: int = 5) -> Any:
    """The model with its vocabulary grown to `size` rows of seeded random weights (the tokenizer keeps
    its own ids), so that the head is the larger part of the work, as with a real 30k-word vocabulary."""
    import copy

    import torch

    wide = copy.deepcopy(model)
    wide.resize_token_embeddings(size)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        out = wide.get_output_embeddings()
        out.weight.normal_(0.0, 0.2, generator=generator)
        if getattr(out, "bias", None) is not None:
            out.bias.normal_(0.0, 0.2, generator=generator)
    assert wide.config.vocab_size == size
    return wide.eval()


def _full_head_log_probs(model: Any, ids: list[int]) -> np.ndarray:
    """Every position's log-probabilities from the model's own full forward (the head at every position)."""
    import torch

    with torch.no_grad():
        return torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1).numpy()


def test_head_on_scored_positions_only_matches_the_full_head_bert(bert: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = bert
    wide = _wide_vocabulary(model)
    assert scoring_plan.split_head(wide) is not None
    sequences = [tokenizer(t)["input_ids"] for t in TEXTS]
    got = lm_scoring.token_log_probs(wide, tokenizer, "cpu", sequences, 3, causal=False, attention=False)
    for ids, scores in zip(sequences, got):
        expected = _full_head_log_probs(wide, ids)[np.arange(len(ids)), ids]
        np.testing.assert_allclose(scores.log_probs, expected, atol=TOL, rtol=0)
    requests = requests_for(tokenizer)
    masked = lm_scoring.masked_log_probs(wide, tokenizer, "cpu", requests, 5)
    for request, values in zip(requests, masked):
        ids = list(request.ids)
        for p in request.positions:
            ids[p] = tokenizer.mask_token_id
        full = _full_head_log_probs(wide, ids)
        np.testing.assert_allclose(values, [full[p, request.ids[p]] for p in request.positions], atol=TOL, rtol=0)
    # the head really ran on the scored rows only: one row per token of the batch's sequences, no padding
    rows = []
    handle = wide.cls.register_forward_hook(lambda module, args, output: rows.append(tuple(args[0].shape[:-1])))
    try:
        with torch.no_grad():
            lm_scoring.token_log_probs(wide, tokenizer, "cpu", sequences, 64, causal=False, attention=False)
    finally:
        handle.remove()
    assert rows == [(sum(len(s) for s in sequences),)]


def test_head_on_scored_positions_only_matches_the_full_head_gpt2(gpt2: tuple[Any, Any]) -> None:
    model, tokenizer = gpt2
    wide = _wide_vocabulary(model)
    assert scoring_plan.split_head(wide) is not None
    sequences = [tokenizer(t)["input_ids"] for t in TEXTS]
    rows = []
    handle = wide.lm_head.register_forward_hook(lambda module, args, output: rows.append(tuple(args[0].shape[:-1])))
    try:
        got = lm_scoring.token_log_probs(wide, tokenizer, "cpu", sequences, 64, causal=True, attention=True)
    finally:
        handle.remove()
    # one row per scored token: each sequence's tokens, predicted from the BOS and the tokens before them
    assert rows == [(sum(len(s) for s in sequences),)]
    bos = tokenizer.bos_token_id
    for ids, scores in zip(sequences, got):
        full = [bos] + list(ids)
        expected = _full_head_log_probs(wide, full)[np.arange(len(full) - 1), full[1:]]
        np.testing.assert_allclose(scores.log_probs, expected, atol=TOL, rtol=0)
        assert scores.attention is not None and scores.attention.shape == (len(ids),)
