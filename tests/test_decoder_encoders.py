"""Decoder LLMs (GPT-2 style) as encoders: a word is its last sub-token, a sentence its last token
(mean as an option, a start token left out of it), a start token where the tokenizer adds one (or
always, on request); SEAT and CEAT run on them and record the convention.

Every expected vector comes from the tiny GPT-2 run by hand with transformers, positions picked here.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from bias.core.data.templates import sentence_sets
from bias.core.model import OK
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.plugins.metrics.ceat import Ceat
from bias.plugins.metrics.seat import Seat
from bias.registry.resolve import load_wordset
from fixtures.inputs import compute_with_inputs

ATOL = 1e-5
SPLIT = "unbelievableness"  # several byte-level pieces
EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def gpt2_dir(tiny_gpt2_dir: Path) -> Path:
    return tiny_gpt2_dir


@pytest.fixture(scope="module")
def bos_dir(gpt2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same model, its tokenizer adding a start token before every text as Llama's and OPT's do."""
    from tokenizers import Tokenizer, processors

    folder = tmp_path_factory.mktemp("tiny-gpt2-bos")
    for path in gpt2_dir.iterdir():
        shutil.copy(path, folder / path.name)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    eot = tok.token_to_id(EOT)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{EOT} $A", pair=f"{EOT} $A $B", special_tokens=[(EOT, eot)]),
    ])
    tok.save(str(folder / "tokenizer.json"))
    return folder


class Hand:
    """The causal LM run by hand: ids in, last hidden state out (float64)."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.eot = self.tokenizer.convert_tokens_to_ids(EOT)

    def states(self, ids: list[int]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        return out.hidden_states[-1][0].double().numpy()

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text)["input_ids"])

    def pieces(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def word_at(self, ids: list[int], word: str, first_in_text: bool) -> list[int]:
        """Positions of `word`'s pieces in `ids`: the sub-list its own tokenisation gives (with the
        space GPT-2 attaches unless it opens the text), found once and only once."""
        pieces = self.pieces(word if first_in_text else " " + word)
        hits = [i for i in range(len(ids) - len(pieces) + 1) if ids[i : i + len(pieces)] == pieces]
        assert len(hits) == 1, (word, ids, pieces)
        names = self.tokenizer.convert_ids_to_tokens(pieces)
        # A piece that is only the space marker ("Ġ" alone) holds none of the word's characters.
        return [hits[0] + i for i, name in enumerate(names) if name != "Ġ"]


def embedder(folder: Path, **options: object) -> HuggingFaceEmbedder:
    emb = HuggingFaceEmbedder(location=str(folder), device="cpu", batch_size=3, cache=False, **options)
    emb.load()
    return emb


def test_word_encodings_are_the_last_sub_token(gpt2_dir: Path) -> None:
    hand = Hand(gpt2_dir)
    emb = embedder(gpt2_dir)
    words = ["rose", SPLIT, "nurse"]
    assert len(hand.pieces(SPLIT)) >= 3
    found = emb.word_vectors(words)
    assert list(found.words) == words
    for word, row in zip(words, found.vectors):
        ids = hand.ids(word)
        assert EOT not in hand.tokenizer.convert_ids_to_tokens(ids)  # GPT-2 adds no start token
        np.testing.assert_allclose(row, hand.states(ids)[-1], atol=ATOL, err_msg=word)
    assert emb.describe()["word_pooling"] == "last" and emb.describe()["causal"] is True
    mean = embedder(gpt2_dir, word_pooling="mean").word_vectors([SPLIT]).vectors[0]
    np.testing.assert_allclose(mean, hand.states(hand.ids(SPLIT)).mean(axis=0), atol=ATOL)
    assert not np.allclose(mean, found.vectors[1], atol=1e-3)


def test_sentence_vectors_with_and_without_a_start_token(gpt2_dir: Path, bos_dir: Path) -> None:
    hand = Hand(gpt2_dir)
    texts = ["the nurse works here", f"she sees the {SPLIT} flower", "a rose"]
    own = embedder(gpt2_dir)
    always = embedder(gpt2_dir, bos="always")
    last, mean = own.encode(texts, pooling="last"), own.encode(texts, pooling="mean")
    last_b, mean_b = always.encode(texts, pooling="last"), always.encode(texts, pooling="mean")
    for i, text in enumerate(texts):
        states = hand.states(hand.ids(text))
        np.testing.assert_allclose(last[i], states[-1], atol=ATOL)
        np.testing.assert_allclose(mean[i], states.mean(axis=0), atol=ATOL)
        started = hand.states([hand.eot, *hand.ids(text)])  # <|endoftext|> first, as bias-bench does
        np.testing.assert_allclose(last_b[i], started[-1], atol=ATOL)
        np.testing.assert_allclose(mean_b[i], started[1:].mean(axis=0), atol=ATOL)  # the start token left out
        assert not np.allclose(last_b[i], last[i], atol=1e-3)
    assert "no start token" in own.describe()["start_token"]
    assert "prepended" in always.describe()["start_token"] and "<|endoftext|>" in always.describe()["start_token"]
    assert always.fingerprint() != own.fingerprint()

    # A tokenizer that adds its own start token keeps it, under auto and always alike, and the mean
    # leaves it out: it sees nothing of the sentence and is the same vector in every sentence.
    bos_hand = Hand(bos_dir)
    for emb in (embedder(bos_dir), embedder(bos_dir, bos="always")):
        assert "tokenizer's own start token" in emb.describe()["start_token"]
        got_last, got_mean = emb.encode(texts, pooling="last"), emb.encode(texts, pooling="mean")
        for i, text in enumerate(texts):
            ids = bos_hand.ids(text)
            assert ids[0] == bos_hand.eot and ids[1:] == hand.ids(text)
            states = bos_hand.states(ids)
            np.testing.assert_allclose(got_last[i], states[-1], atol=ATOL)
            np.testing.assert_allclose(got_mean[i], states[1:].mean(axis=0), atol=ATOL)
            np.testing.assert_allclose(got_last[i], last_b[i], atol=ATOL)  # the same input as bos=always


def test_a_word_in_its_sentence_is_its_last_sub_token(gpt2_dir: Path) -> None:
    hand = Hand(gpt2_dir)
    always = embedder(gpt2_dir, bos="always")
    text = f"the {SPLIT} nurse and the rose"
    start = text.index(SPLIT)
    span = (start, start + len(SPLIT))
    ids = [hand.eot, *hand.ids(text)]
    where = hand.word_at(ids, SPLIT, first_in_text=False)
    assert len(where) >= 3
    states = hand.states(ids)
    np.testing.assert_allclose(always.encode([text], [span], pooling="last")[0], states[where[-1]], atol=ATOL)
    np.testing.assert_allclose(always.encode([text], [span], pooling="mean")[0], states[where].mean(axis=0), atol=ATOL)


def direct_d(x: list[np.ndarray], y: list[np.ndarray], a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """WEAT's d written out with loops (ddof=1)."""

    def cos(u: np.ndarray, v: np.ndarray) -> float:
        return float(u @ v / math.sqrt((u @ u) * (v @ v)))

    def s(w: np.ndarray) -> float:
        return sum(cos(w, ai) for ai in a) / len(a) - sum(cos(w, bi) for bi in b) / len(b)

    sx, sy = [s(w) for w in x], [s(w) for w in y]
    both = sx + sy
    mean = sum(both) / len(both)
    sd = math.sqrt(sum((v - mean) ** 2 for v in both) / (len(both) - 1))
    return (sum(sx) / len(sx) - sum(sy) / len(sy)) / sd


@pytest.mark.slow  # a forward pass by hand for each of some 200 sentences
@pytest.mark.parametrize("level", ["sentence", "word"])
def test_seat_on_a_causal_lm_follows_its_conventions(gpt2_dir: Path, planted_test, level: str) -> None:
    hand = Hand(gpt2_dir)
    emb = embedder(gpt2_dir)
    built = sentence_sets(planted_test, load_wordset("en/seat-templates"))
    vectors: dict[str, list[np.ndarray]] = {}
    for key, sentences in built.sentences.items():
        vectors[key] = []
        for s in sentences:
            ids = hand.ids(s.text)
            states = hand.states(ids)
            if level == "sentence":
                vectors[key].append(states[-1])
            else:
                first = s.text.lower().startswith(s.word.lower())
                word = s.text[s.span[0] : s.span[1]]
                vectors[key].append(states[hand.word_at(ids, word, first)[-1]])
    result = compute_with_inputs(Seat(level=level, permutations=200, bootstrap=0), emb, planted_test, seed=1)
    assert result.status == OK, result.reason
    assert result.effect_size == pytest.approx(direct_d(*(vectors[k] for k in "XYAB")), rel=1e-6, abs=1e-9)
    c = result.convention
    assert c["pooling"] == ("last" if level == "sentence" else "target-last")
    assert c["model_kind"] == "causal LM (decoder)"
    assert "no start token" in c["start_token"]
    assert ("last token" if level == "sentence" else "last sub-token") in c["pooled_tokens"]
    json.dumps(c)  # the convention goes into results.jsonl as it is


def test_ceat_on_a_causal_lm_records_its_convention(gpt2_dir: Path, planted_test) -> None:
    emb = embedder(gpt2_dir, bos="always")
    result = compute_with_inputs(Ceat(samples=200, contexts_per_word=3), emb, planted_test, seed=2)
    assert result.status == OK, result.reason
    assert math.isfinite(result.effect_size)
    c = result.convention
    assert c["pooling"] == "target-last" and c["model_kind"] == "causal LM (decoder)"
    assert "prepended (bos=always)" in c["start_token"]
    # An encoder keeps the mean of the word's sub-tokens.
    assert Seat(level="word").pooling is None
