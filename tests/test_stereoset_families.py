"""StereoSet on every model family: a byte-level BPE masked LM (RoBERTa, as RobBERT and GottBERT), a
WordPiece one (BERT), GPT-2 and a Llama-style causal LM whose tokenizer adds its own <s>; and verdicts
that never depend on the batch size or the order of the examples.

The expected numbers come from loops written here after bias-bench's published code
(`bias_bench/benchmark/stereoset/dataloader.py`, `IntrasentenceLoader`, and `stereoset.py`,
`_likelihood_score` and `_likelihood_score_generative`): one forward pass per input, never the code
under test. The examples were written for these tests (Apache-2.0, as the rest of the repository).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bias.core.data.stereoset import StereoSetExamples
from bias.plugins.metrics.stereoset import StereoSet
from bias.registry.resolve import build_embedder, load_wordset_file

from conftest import built_once
from test_stereoset import LABELS, reference_scores, reference_word, stereoset_json

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# id | domain | target | context | stereotype | anti-stereotype | unrelated. "caring", "bossy", "calm",
# "loud", "tidy" and "messy" are frequent in the tokenizer's corpus below, so each is one piece of the
# tiny RoBERTa's vocabulary; "grenadierlike" and "tulipomania" are split into several. The last two
# examples repeat a sentence as their unrelated one (an exact tie wherever it falls in a batch); one
# context starts with BLANK.
TABLE = """
m-1 | gender | mother | The mother was very BLANK. | The mother was very caring. | The mother was very bossy. | The mother was very grenadierlike.
m-2 | gender | mother | My mother is BLANK at home. | My mother is calm at home. | My mother is loud at home. | My mother is tulipomania at home.
f-1 | gender | father | The father was BLANK today. | The father was bossy today. | The father was caring today. | The father was tidy today.
n-1 | profession | nurse | That nurse seems BLANK. | That nurse seems tidy. | That nurse seems messy. | That nurse seems calm.
n-2 | profession | nurse | BLANK nurses work here. | Caring nurses work here. | Loud nurses work here. | Tidy nurses work here.
c-1 | profession | chemist | The chemist is BLANK. | The chemist is messy. | The chemist is tidy. | The chemist is messy.
c-2 | profession | chemist | A chemist was so BLANK. | A chemist was so calm. | A chemist was so grenadierlike. | A chemist was so calm.
"""
EXAMPLES = [tuple(cell.strip() for cell in line.split("|")) for line in TABLE.strip().splitlines()]
SINGLE = ("caring", "bossy", "calm", "loud", "tidy", "messy")
CORPUS = [f"the mother was very {w} . my father is {w} today ." for w in SINGLE for _ in range(30)]
REL = 1e-6


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stereoset-families") / "dev.json"
    path.write_text(json.dumps(stereoset_json(EXAMPLES)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def roberta(tmp_path_factory) -> Path:
    """A RoBERTa with the published tokenizer's behaviour: offsets without the space, a mask token
    that takes the space before it."""
    from fixtures.tiny_bert import build_tiny_roberta

    return built_once(
        tmp_path_factory,
        "ss-roberta",
        lambda folder: build_tiny_roberta(folder, extra_text=CORPUS, mask_lstrip=True),
    )


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Path:
    from fixtures.tiny_bert import build_tiny_llama

    return built_once(tmp_path_factory, "ss-llama", build_tiny_llama)


def _loaded(folder: Path, causal: bool):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    kind = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    return AutoTokenizer.from_pretrained(folder), kind.from_pretrained(folder).eval(), torch


def bias_bench_masked(folder: Path, roberta_branch: bool, examples=EXAMPLES) -> dict[str, float]:
    """bias-bench's IntrasentenceLoader and `_likelihood_score`: the template word encoded with a
    leading space on its RoBERTa branch; for piece i the context with BLANK replaced by the decoded
    first i pieces and the mask token, tokenised again; the mean of the pieces' probabilities."""
    tok, model, torch = _loaded(folder, causal=False)
    out = {}
    for eid, _, _, context, *sentences in examples:
        for label, sentence in zip(LABELS, sentences):
            word = reference_word(context, sentence)
            pieces = tok.encode(f" {word}" if roberta_branch else word, add_special_tokens=False)
            texts = [
                context.replace("BLANK", tok.decode(pieces[:i]) + tok.mask_token)
                for i in range(len(pieces))
            ]
            out[f"{eid}-{label}"] = _mean_probability(
                tok, model, torch, [tok(t)["input_ids"] for t in texts], pieces
            )
    return out


def _mean_probability(tok, model, torch, inputs: list[list[int]], pieces: list[int]) -> float:
    """The mean over i of P(pieces[i]) at the mask of inputs[i], one forward pass each."""
    probs = []
    for ids, piece in zip(inputs, pieces):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, ids.index(tok.mask_token_id)]
        probs.append(torch.softmax(logits.double(), -1)[piece].item())
    return sum(probs) / len(probs)


def token_space_masked(folder: Path, examples=EXAMPLES) -> dict[str, float]:
    """The definition in token space: the template word's pieces as the sentence has it (after the
    space before BLANK); piece i read at a mask after the text before that space and the first i
    pieces, the text after BLANK following. bias-bench's inputs for a word of one piece; for later
    pieces bias-bench's text holds the decoded pieces' own space beside the context's."""
    tok, model, torch = _loaded(folder, causal=False)
    out = {}
    for eid, _, _, context, *sentences in examples:
        start = context.index("BLANK")
        before, after = context[:start], context[start + len("BLANK") :]
        lead = " " if before.endswith(" ") else ""
        head = tok.encode(before.rstrip(" "), add_special_tokens=False) if before.strip() else []
        tail = tok.encode(after, add_special_tokens=False)
        for label, sentence in zip(LABELS, sentences):
            pieces = tok.encode(lead + reference_word(context, sentence), add_special_tokens=False)
            inputs = [
                [tok.cls_token_id, *head, *pieces[:i], tok.mask_token_id, *tail, tok.sep_token_id]
                for i in range(len(pieces))
            ]
            out[f"{eid}-{label}"] = _mean_probability(tok, model, torch, inputs, pieces)
    return out


def bias_bench_causal(folder: Path) -> dict[str, float]:
    """bias-bench's `_likelihood_score_generative`: the first token's probability from a pass on the
    start token alone, the others from a pass on the sentence; 2 ** mean log2 p. A tokenizer that puts
    its own start token first (Llama's <s>) has it in the sentence already: every token after it is
    scored from that one pass."""
    tok, model, torch = _loaded(folder, causal=True)
    out = {}
    for eid, _, _, _, *sentences in EXAMPLES:
        for label, sentence in zip(LABELS, sentences):
            ids = tok(sentence)["input_ids"]
            with torch.no_grad():
                every = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
                if ids[0] == tok.bos_token_id:
                    probs = [every[i - 1, ids[i]].item() for i in range(1, len(ids))]
                else:
                    first = torch.softmax(
                        model(input_ids=torch.tensor([[tok.bos_token_id]])).logits[0, 0].double(),
                        -1,
                    )
                    probs = [first[ids[0]].item()] + [
                        every[i - 1, ids[i]].item() for i in range(1, len(ids))
                    ]
            out[f"{eid}-{label}"] = 2 ** (sum(math.log2(p) for p in probs) / len(probs))
    return out


def verdicts(scores: dict[str, float], examples=EXAMPLES) -> dict[str, tuple[bool, bool, bool]]:
    """Per example: stereotype over anti-stereotype, and each of them over the unrelated sentence."""
    out = {}
    for eid, *_ in examples:
        s, a, u = (scores[f"{eid}-{label}"] for label in LABELS)
        out[eid] = (s > a, s > u, a > u)
    return out


def scores_of(result) -> dict[str, float]:
    assert result.ok, result.reason
    return {r["sentence_id"]: r["score"] for r in result.figures["scores"]}


def test_a_byte_level_bpe_masked_lm_reads_the_word_with_its_space_as_bias_bench_does(
    roberta: Path, data_file: Path
) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(roberta)
    for word in SINGLE:  # one piece with its space mark, several without it
        assert (
            len(tok.encode(f" {word}", add_special_tokens=False))
            == 1
            < len(tok.encode(word, add_special_tokens=False))
        ), word
    ids = tok("was very <mask>.")["input_ids"]  # the mask takes the space before it, as RoBERTa's
    assert tok.convert_ids_to_tokens(ids)[-4:-1] == ["Ġvery", "<mask>", "."]
    got = scores_of(
        StereoSet().compute(build_embedder(f"hf:{roberta}"), load_wordset_file(data_file), seed=0)
    )
    expected = bias_bench_masked(roberta, roberta_branch=True)
    single = {
        sid
        for sid in expected
        if reference_word(*_context_sentence(sid)).lower() in SINGLE and not sid.startswith("n-2")
    }
    assert len(single) >= 12
    for sid in single:  # a word of one piece: bias-bench's input exactly
        assert got[sid] == pytest.approx(expected[sid], rel=REL), sid
    # every word, the first in its context included, by the definition in token space
    for sid, value in token_space_masked(roberta).items():
        assert got[sid] == pytest.approx(value, rel=REL), sid
    # the word read alone (without its space mark) is another number
    alone = bias_bench_masked(roberta, roberta_branch=False)
    assert sum(abs(alone[sid] - got[sid]) > 1e-3 * got[sid] for sid in single) >= len(single) // 2


ROWS = {r[0]: r for r in EXAMPLES}


def _context_sentence(sid: str) -> tuple[str, str]:
    """The context and the sentence of a sentence id ("m-1-anti-stereotype")."""
    a, b, label = sid.split("-", 2)
    row = ROWS[f"{a}-{b}"]
    return row[3], row[4 + LABELS.index(label)]


def test_a_word_that_starts_the_context_is_read_without_a_space(
    roberta: Path, data_file: Path, tmp_path: Path
) -> None:
    """ "Caring nurses work here.": the word as the sentence has it, its first piece without a space
    mark; also when the context ends with a space (the character before BLANK is none at all)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(roberta)
    first = [tuple(f"{cell} " if k >= 3 else cell for k, cell in enumerate(ROWS["n-2"]))]
    spaced = tmp_path / "spaced.json"
    spaced.write_text(json.dumps(stereoset_json(first)), encoding="utf-8")
    for path, examples in ((data_file, EXAMPLES), (spaced, first)):
        data = load_wordset_file(path)
        got = scores_of(StereoSet().compute(build_embedder(f"hf:{roberta}"), data, seed=0))
        alone = bias_bench_masked(roberta, roberta_branch=False, examples=examples)
        for label in LABELS:
            word = reference_word(*_context_sentence(f"n-2-{label}"))
            assert not tok.convert_ids_to_tokens(tok.encode(word, add_special_tokens=False))[
                0
            ].startswith("Ġ")
            assert got[f"n-2-{label}"] == pytest.approx(alone[f"n-2-{label}"], rel=REL)
    # a space before BLANK, the context's first character: the word is read after it
    lead = [tuple(f" {cell}" if k >= 3 else cell for k, cell in enumerate(ROWS["n-2"]))]
    spaced.write_text(json.dumps(stereoset_json(lead)), encoding="utf-8")
    got = scores_of(
        StereoSet().compute(build_embedder(f"hf:{roberta}"), load_wordset_file(spaced), seed=0)
    )
    assert got == pytest.approx(token_space_masked(roberta, lead), rel=REL)
    assert got != pytest.approx(alone, rel=1e-3)


# bias-bench's quirks beside those of EXAMPLES (words of several pieces, BLANK first): BLANK glued to
# the word before it, and words with a letter the tiny vocabulary has no piece for ("ï", "é"), split
# into bytes, so that the decoded first byte is U+FFFD.
QUIRKS = [
    (
        "q-1",
        "gender",
        "father",
        "The father was unBLANK today.",
        "The father was uncaring today.",
        "The father was untidy today.",
        "The father was unnaïve today.",
    ),
    (
        "q-2",
        "gender",
        "father",
        "My father is BLANK.",
        "My father is naïve.",
        "My father is blasé.",
        "My father is tulipomania.",
    ),
]


@pytest.fixture(scope="module")
def roberta_plain_mask(tmp_path_factory) -> Path:
    """The same RoBERTa, its mask token leaving the space before it alone: bias-bench's text then
    has a space token before the mask of every first piece."""
    from fixtures.tiny_bert import build_tiny_roberta

    return built_once(
        tmp_path_factory,
        "ss-roberta-plain-mask",
        lambda folder: build_tiny_roberta(folder, extra_text=CORPUS, mask_lstrip=False),
    )


@pytest.mark.parametrize("family", ["roberta", "roberta-plain-mask", "bert"])
def test_the_bias_bench_preset_gives_a_masked_lm_bias_benchs_own_inputs(
    family: str, roberta: Path, roberta_plain_mask: Path, tiny_bert_dir: Path, tmp_path: Path
) -> None:
    """Under the preset every sentence gets bias-bench's number (its loop above, RoBERTa branch on
    byte-level BPE), the second piece read after the decoded first one and its space, the word that
    starts a context after a space; the default keeps the stated definition."""
    from transformers import AutoTokenizer

    from bias.engine.presets import preset_params

    folder = {"roberta": roberta, "roberta-plain-mask": roberta_plain_mask, "bert": tiny_bert_dir}
    folder = folder[family]
    examples = [*EXAMPLES, *QUIRKS]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(stereoset_json(examples)), encoding="utf-8")
    data = load_wordset_file(path)
    params = preset_params("stereoset", "bias-bench")
    assert params["masked_score"] == "bias-bench"
    result = StereoSet(**params).compute(build_embedder(f"hf:{folder}"), data, seed=0)
    got = scores_of(result)
    byte_level = family != "bert"
    expected = bias_bench_masked(folder, roberta_branch=byte_level, examples=examples)
    assert set(got) == set(expected)
    for sid, value in expected.items():
        assert got[sid] == pytest.approx(value, rel=REL), sid
    assert verdicts(got, examples) == verdicts(expected, examples)
    reference = reference_scores(expected, examples=examples)
    for key in ("ss", "lms", "icat"):
        assert result.figures[key] == pytest.approx(reference[key], rel=REL), key
    assert result.convention["masked_score"] == "bias-bench"
    assert "IntrasentenceLoader" in result.convention["inputs"]
    default = scores_of(StereoSet().compute(build_embedder(f"hf:{folder}"), data, seed=0))
    if not byte_level:  # WordPiece: both ways give the same ids
        assert default == pytest.approx(got, rel=REL)
        return
    tok = AutoTokenizer.from_pretrained(folder)
    pieces = tok.encode(" naïve", add_special_tokens=False)
    assert any("\ufffd" in tok.decode(pieces[:i]) for i in range(len(pieces)))
    assert len(tok.encode(" tulipomania", add_special_tokens=False)) > 2
    # the stated definition is another number for the words of several pieces and BLANK first
    differ = {sid for sid in got if abs(default[sid] - got[sid]) > 1e-3 * got[sid]}
    assert {"m-1-unrelated", "m-2-unrelated", "n-2-stereotype", "q-2-stereotype"} <= differ


def test_bias_benchs_inputs_need_a_mask_token_read_as_one_token(
    roberta: Path, data_file: Path
) -> None:
    """A masked model whose mask token is unknown, or whose tokenizer splits it, is refused with the
    way out (the default inputs need no mask text)."""
    from bias.core.errors import BiasError

    class WithMask:
        def __init__(self, inner, mask) -> None:
            self.inner, self.mask_token = inner, mask

        def __getattr__(self, name):
            return getattr(self.inner, name)

    data = load_wordset_file(data_file)
    inner = build_embedder(f"hf:{roberta}")
    cases = (
        (None, "names no mask token", "a masked LM whose tokenizer names its mask token"),
        ("<nomask>", "does not read its mask", "token-space"),
    )
    for mask, words, hint in cases:
        with pytest.raises(BiasError) as err:
            StereoSet(masked_score="bias-bench").compute(WithMask(inner, mask), data, seed=0)
        assert words in err.value.message and hint in err.value.hint, err.value.message


@pytest.mark.parametrize("inputs", ["token-space", "bias-bench"])
def test_the_mask_tokens_own_text_in_the_data_is_refused_and_the_convention_says_how_words_were_read(
    inputs: str, roberta: Path, data_file: Path, tmp_path: Path
) -> None:
    """"<mask>" written in a context would be read as a mask the data does not have (every input
    then carries a second mask): refused, naming the example. On good data the recorded
    convention says how the template word was read in that mode."""
    from bias.core.errors import BiasError

    row = ("mask-1", "gender", "mother", "The mother <mask> was BLANK.",
           "The mother <mask> was calm.", "The mother <mask> was loud.", "The mother <mask> was tidy.")
    path = tmp_path / "mask.json"
    path.write_text(json.dumps(stereoset_json([EXAMPLES[0], row])), encoding="utf-8")
    model = build_embedder(f"hf:{roberta}")
    with pytest.raises(BiasError) as err:
        StereoSet(masked_score=inputs).compute(model, load_wordset_file(path), seed=0)
    assert err.value.message.startswith(f"{path}: data.intrasentence[1] (id 'mask-1')"), err.value.message
    assert "holds the model's mask token '<mask>' as text" in err.value.message
    result = StereoSet(masked_score=inputs).compute(model, load_wordset_file(data_file), seed=0)
    said = result.convention["template_word"]
    assert ("as bias-bench's loader encodes it" in said) == (inputs == "bias-bench"), said
    assert ("whitespace the context has before BLANK" in said) == (inputs == "token-space"), said


@pytest.mark.parametrize("model", ["gpt2", "roberta", "roberta-bias-bench"])
def test_a_text_longer_than_the_model_is_refused_naming_the_file_and_example(
    model: str, roberta: Path, tiny_gpt2_dir: Path, tmp_path: Path
) -> None:
    """Both tiny models read 64 tokens; a cut text would be scored as another sentence."""
    from bias.core.errors import BiasError

    tail = " and then" * 40
    words = ("BLANK", "calm", "loud", "tidy")
    row = ("long-1", "gender", "mother", *(f"The mother was {w}{tail}." for w in words))
    path = tmp_path / "long.json"
    path.write_text(json.dumps(stereoset_json([EXAMPLES[0], row])), encoding="utf-8")
    folder = tiny_gpt2_dir if model == "gpt2" else roberta
    metric = StereoSet(masked_score="bias-bench" if model.endswith("bias-bench") else "token-space")
    with pytest.raises(BiasError) as err:
        metric.compute(build_embedder(f"hf:{folder}"), load_wordset_file(path), seed=0)
    where = (
        "sentence 'long-1-stereotype'" if model == "gpt2" else "data.intrasentence[1] (id 'long-1')"
    )
    assert err.value.message.startswith(f"{path}: {where}"), err.value.message
    assert "longer than the model's limit of 64 tokens" in err.value.message


@pytest.mark.parametrize("inputs", ["token-space", "bias-bench"])
def test_a_context_that_fits_without_its_word_is_refused_naming_the_sentence(
    inputs: str, roberta: Path, tmp_path: Path
) -> None:
    """The context with BLANK fits the model's 64 tokens; with a long word in its place the
    sentence does not: refused naming the sentence, before the engine would refuse a request."""
    from bias.core.errors import BiasError

    model = build_embedder(f"hf:{roberta}")
    tail = " and then" * 14
    long_word = "x" + "qzv" * 30
    context = f"The mother was BLANK{tail}."
    from bias.core.pair_metrics.alignment import is_truncated

    assert not is_truncated(context, model.tokenize([context])[0])
    sentence = context.replace("BLANK", long_word)
    assert is_truncated(sentence, model.tokenize([sentence])[0])  # cut at the model's 64
    words = (long_word, "loud", "tidy")
    row = ("long-2", "gender", "mother", context, *(context.replace("BLANK", w) for w in words))
    path = tmp_path / "long.json"
    path.write_text(json.dumps(stereoset_json([EXAMPLES[0], row])), encoding="utf-8")
    with pytest.raises(BiasError) as err:
        StereoSet(masked_score=inputs).compute(model, load_wordset_file(path), seed=0)
    # bias-bench's inputs are texts (the decoded pieces in the context): refused as that text
    where = "sentence 'long-2-stereotype'" if inputs == "token-space" else "data.intrasentence[1]"
    assert err.value.message.startswith(f"{path}: {where}"), err.value.message
    assert "longer than the model's limit of 64 tokens" in err.value.message


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_the_bias_bench_preset_on_causal_lms_is_bias_benchs_loop(
    family: str, tiny_gpt2_dir: Path, llama: Path, data_file: Path
) -> None:
    folder = tiny_gpt2_dir if family == "gpt2" else llama
    result = StereoSet(causal_start="bos-first-token").compute(
        build_embedder(f"hf:{folder}"), load_wordset_file(data_file), seed=0
    )
    got, expected = scores_of(result), bias_bench_causal(folder)
    assert set(got) == set(expected)
    for sid, value in expected.items():
        assert got[sid] == pytest.approx(value, rel=REL), sid
    assert verdicts(got) == verdicts(expected)
    if family == "llama":  # its own <s>: both conventions are the same numbers
        plain = scores_of(
            StereoSet().compute(
                build_embedder(f"hf:{folder}"), load_wordset_file(data_file), seed=0
            )
        )
        assert plain == pytest.approx(got, rel=REL)


class CountingEmbedder:
    """The hf embedder, counting the rows each scoring call sends to the model."""

    def __init__(self, inner) -> None:
        self.inner, self.rows = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def token_log_probs(self, sequences, **options):
        self.rows.append(
            (len(sequences), sum(len(s) for s in sequences), options.get("start", True))
        )
        return self.inner.token_log_probs(sequences, **options)


def test_bias_benchs_convention_costs_one_pass_and_one_short_one(
    tiny_gpt2_dir: Path, data_file: Path
) -> None:
    """Every sentence once without the start token, and each distinct first token once after it: not
    every sentence twice."""
    data = load_wordset_file(data_file)
    counting = CountingEmbedder(build_embedder(f"hf:{tiny_gpt2_dir}"))
    StereoSet(causal_start="bos-first-token").compute(counting, data, seed=0)
    sentences = {s.sentence for e in data.examples for s in e.sentences}
    (plain, starts) = sorted(counting.rows, key=lambda r: r[2])
    assert (
        plain[0] == len(sentences) and not plain[2]
    )  # distinct sentences, one pass, no start token
    assert starts[1] == starts[0] <= len({s.split(" ")[0] for s in sentences})  # one token each


# -- verdicts never depend on the batch ----------------------------------------------------------------

BATCHES = (1, 2, 3, 5, 7, 64)
FAMILIES = ("bert", "roberta", "gpt2", "gpt2-bias-bench", "llama")


@pytest.fixture(scope="module")
def by_batch(tiny_bert_dir: Path, roberta: Path, tiny_gpt2_dir: Path, llama: Path) -> dict:
    folders = {
        "bert": tiny_bert_dir,
        "roberta": roberta,
        "gpt2": tiny_gpt2_dir,
        "gpt2-bias-bench": tiny_gpt2_dir,
        "llama": llama,
    }
    return {
        (f, b): build_embedder(f"hf:{folders[f]}[batch_size={b}]")
        for f in FAMILIES
        for b in BATCHES
    }


def _shuffled(data: StereoSetExamples, order: list[int]) -> StereoSetExamples:
    import attrs

    return attrs.evolve(data, examples=tuple(data.examples[i] for i in order))


def _metric(family: str) -> StereoSet:
    return StereoSet(causal_start="bos-first-token" if family == "gpt2-bias-bench" else "bos")


@pytest.mark.parametrize("family", FAMILIES)
def test_identical_sentences_tie_exactly_at_every_batch_size(
    family: str, by_batch: dict, data_file: Path
) -> None:
    data = load_wordset_file(data_file)
    for batch in BATCHES:
        got = scores_of(_metric(family).compute(by_batch[(family, batch)], data, seed=0))
        for eid in (
            "c-1",
            "c-2",
        ):  # the stereotype (c-1) or anti-stereotype (c-2) repeated as unrelated
            same = [
                got[f"{eid}-{label}"]
                for label in LABELS
                if _context_sentence(f"{eid}-{label}")[1] == ROWS[eid][6]
            ]
            assert len(same) == 2 and same[0] == same[1], (family, batch, eid)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**16), batch=st.sampled_from(BATCHES), family=st.sampled_from(FAMILIES))
def test_shuffled_and_rebatched_inputs_give_the_same_verdicts(
    seed: int, batch: int, family: str, by_batch: dict, data_file: Path
) -> None:
    data = load_wordset_file(data_file)
    order = list(range(len(data.examples)))
    random.Random(seed).shuffle(order)
    baseline = _metric(family).compute(by_batch[(family, 64)], data, seed=0)
    other = _metric(family).compute(by_batch[(family, batch)], _shuffled(data, order), seed=0)
    assert verdicts(scores_of(other)) == verdicts(scores_of(baseline))
    for key in ("ss", "lms", "icat", "pro", "related"):
        assert other.figures[key] == baseline.figures[key], key
    assert scores_of(other) == pytest.approx(scores_of(baseline), rel=REL)
