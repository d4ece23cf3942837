"""The association-test library in core: the case vocabulary, the lost-word threshold and refusal, and
the public `AssociationMetric` base a third-party metric derives from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
import pytest
from bias.core.association import (
    CASES,
    AssociationMetric,
    SetVectors,
    lookup,
    lost_word_refusal,
    per_word_table,
    set_vectors,
    too_many_lost,
)
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Embedder, Measured
from bias.core.model import ASSOCIATION, OK, REFUSED, AssociationTest, WordList, WordSetMeta, WordVectors
from bias.core.params import describe_params
from bias.registry import build_metric, load

DIM = 3


@attrs.define
class TableEmbedder(Embedder):
    """Word vectors from a dict; words listed in `approximate` are reported as built from sub-words."""

    name: ClassVar[str] = "table"
    summary: ClassVar[str] = "in-memory word vectors (tests only)"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})

    location: str = "memory"
    table: dict[str, tuple[float, ...]] = attrs.field(factory=dict)
    approximate: frozenset[str] = frozenset()
    asked: list[list[str]] = attrs.field(factory=list)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        self.asked.append(list(words))
        found = [w for w in words if w in self.table]
        vectors = np.array([self.table[w] for w in found], dtype=np.float64).reshape(len(found), DIM)
        approximated = tuple(w for w in found if w in self.approximate)
        return WordVectors(words=tuple(found), vectors=vectors, lost=tuple(w for w in words if w not in self.table), approximated=approximated)


def test_too_many_lost_keeps_exactly_the_threshold_and_lists_eight_words() -> None:
    assert too_many_lost(["a"], 5, 0.2) is None  # 20% is allowed at 0.2
    assert too_many_lost(["a", "b"], 5, 0.2) == "(40% > 20% allowed): a, b"
    assert too_many_lost([], 0, 0.0) is None
    many = [f"w{i}" for i in range(10)]
    assert too_many_lost(many, 10, 0.5) == "(100% > 50% allowed): " + ", ".join(many[:8])


def test_lost_word_refusal_names_the_first_problem() -> None:
    ok = {k: np.eye(DIM)[:2] for k in "XYAB"}
    originals = {k: 2 for k in "XYAB"}
    assert lost_word_refusal(ok, originals, {}, 0.2, None) is None
    empty = {**ok, "Y": np.zeros((0, DIM))}
    assert lost_word_refusal(empty, originals, {"Y": ["ant", "bee"]}, 0.2, None) == "every word of set Y is missing from the model (ant, bee...)"
    assert lost_word_refusal(empty, originals, {}, 0.2, None) == "set Y is empty"
    three = {**originals, "A": 3}
    assert lost_word_refusal(ok, three, {"A": ["joy"]}, 0.2, None) == "set A lost 1 of 3 words (33% > 20% allowed): joy"
    assert lost_word_refusal(ok, three, {"A": ["joy"]}, 0.5, None) is None
    broken = {**ok, "B": np.array([[1.0, 0, 0], [0, 0, 0]])}
    assert "zero or non-finite vectors for war (set B)" in lost_word_refusal(broken, originals, {}, 0.2, {"B": ["peace", "war"]})


def test_the_lookup_policies_do_what_the_vocabulary_says() -> None:
    emb = TableEmbedder(table={"Anna": (1, 0, 0), "anna": (0, 1, 0), "bob": (0, 0, 1)})
    words = ["Anna", "Bob", "carl"]
    exact, _, _ = lookup(emb, words, "exact")
    assert set(exact) == {"Anna"} and exact["Anna"].tolist() == [1, 0, 0]
    lower, _, _ = lookup(emb, words, "lower")
    assert set(lower) == {"Anna", "Bob"} and lower["Anna"].tolist() == [0, 1, 0]  # lowercased even though "Anna" exists
    fallback, _, dim = lookup(emb, words, "fallback")
    assert set(fallback) == {"Anna", "Bob"} and fallback["Anna"].tolist() == [1, 0, 0] and dim == DIM
    assert emb.asked[-1] == ["bob"]  # only the missing capitalised word is asked again, lowercased


def test_every_case_name_has_one_meaning_in_every_metric() -> None:
    for name in ("weat", "seat", "rnd", "rnsb", "mac", "ect", "ripa", "direct-bias", "ceat", "analogy"):
        cls = load("metrics", name)
        info = {p.name: p for p in describe_params(cls)}
        if name == "seat":
            assert "case" not in info  # SEAT looks no word up
            continue
        allowed = [c for c in CASES if f"{c}: {CASES[c]}" in info["case"].help]
        assert allowed, name
        for bad in sorted(set(CASES) - set(allowed)) + ["upper"]:
            with pytest.raises(BiasError, match="case must be one of"):
                build_metric(name, case=bad)
    assert load("metrics", "analogy")().case == "insensitive" and load("metrics", "ceat")().case == "exact"


def test_lost_threshold_is_one_parameter_everywhere() -> None:
    declared = set()
    for name in ("weat", "seat", "ceat", "rnd", "ripa", "direct-bias"):
        (p,) = [p for p in describe_params(load("metrics", name)) if p.name == "lost_threshold"]
        declared.add((p.default, p.help))
        with pytest.raises(BiasError, match="lost_threshold must lie between"):
            build_metric(name, lost_threshold=1.5)
    assert len(declared) == 1 and next(iter(declared))[0] == 0.2


# --- the public base: a new metric in a few lines ---------------------------------------------------


@attrs.define
class MeanGap(AssociationMetric):
    """Mean cos(X, A) minus mean cos(Y, A): what a third party would write."""

    name: ClassVar[str] = "mean-gap"
    summary: ClassVar[str] = "Difference of the mean cosines of X and Y to A."

    seen: list[SetVectors] = attrs.field(factory=list, eq=False, repr=False, metadata={"help": "test only"})

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        self.seen.append(sets)
        unit = {k: m / np.linalg.norm(m, axis=1, keepdims=True) for k, m in sets.matrices.items()}
        to_a = {k: (unit[k] @ unit["A"].T).mean(axis=1) for k in "XY"}
        gap = float(to_a["X"].mean() - to_a["Y"].mean())
        per_word = dict(zip(sets.words["X"] + sets.words["Y"], np.concatenate([to_a["X"], to_a["Y"]])))
        return Measured(gap, figures={"gap": gap, "cos_to_A": per_word}, convention={"sign": "X closer to A"}, warnings=["note"])


def association_test(**sets: Sequence[str]) -> AssociationTest:
    meta = WordSetMeta(name="toy", kind=ASSOCIATION, language="en", bias_type="gender")
    return AssociationTest(meta, *(WordList(k, tuple(sets[k])) for k in "XYAB"))


def test_an_association_metric_gets_the_vectors_found_and_a_full_result() -> None:
    table = {"x1": (1, 0, 0), "x2": (1, 1, 0), "y1": (0, 1, 0), "a1": (1, 0, 0), "b1": (0, 0, 1), "b2": (0, 1, 1)}
    emb = TableEmbedder(table=table, approximate=frozenset({"x2"}))
    metric = MeanGap(lost_threshold=0.5)
    data = association_test(X=["x1", "x2"], Y=["y1", "gone"], A=["a1"], B=["b1", "b2"])
    result = metric.compute(emb, data, seed=4)
    (sets,) = metric.seen
    assert sets.words == {"X": ["x1", "x2"], "Y": ["y1"], "A": ["a1"], "B": ["b1", "b2"]}
    assert sets.matrices["X"].dtype == np.float64 and sets.matrices["X"].tolist() == [[1, 0, 0], [1, 1, 0]]
    # cos(x1, a1) = 1, cos(x2, a1) = 1/sqrt(2), cos(y1, a1) = 0
    assert result.status == OK and result.effect_size == pytest.approx((1 + 2**-0.5) / 2)
    assert result.p_value is None and result.seed == 4 and result.metric == "mean-gap" and result.wordset == "toy"
    assert result.convention == {"sign": "X closer to A", "case": "exact"}
    assert result.lost == {"Y": ["gone"]} and result.approximated == {"X": ["x2"]}
    assert result.sizes == {"X": 2, "Y": 1, "A": 1, "B": 2}
    assert result.warnings == ["note", "1 word(s) had no vector of their own and were built from sub-words"]
    rows = {r["item"]: r for r in result.figures["scores"]}
    assert rows["y1"] == {"set": "Y", "item": "y1", "cos_to_A": 0.0} and rows["x2"]["cos_to_A"] == pytest.approx(2**-0.5)
    assert result.params["lost_threshold"] == 0.5 and result.params["case"] == "exact"


def test_an_association_metric_refuses_a_test_that_lost_too_many_words() -> None:
    emb = TableEmbedder(table={"x1": (1, 0, 0), "y1": (0, 1, 0), "a1": (1, 0, 0), "b1": (0, 0, 1)})
    metric = MeanGap()
    result = metric.compute(emb, association_test(X=["x1"], Y=["y1", "gone"], A=["a1"], B=["b1"]), seed=0)
    assert result.status == REFUSED and result.reason == "set Y lost 1 of 2 words (50% > 20% allowed): gone"
    assert not metric.seen  # measure is never called on a refused test
    assert MeanGap().requires == frozenset({Capability.WORD_VECTORS}) and MeanGap.data_kind == ASSOCIATION


# --- contextual vectors of stimuli: the pooling chosen, what is recorded, one call per distinct request ---


@attrs.define
class EncoderLike(Embedder):
    """Sentence encodings as a model of a given kind gives them: every distinct request answered with
    a row of its own (its index in the call, then the text's length), each call recorded."""

    name: ClassVar[str] = "encoder-like"
    summary: ClassVar[str] = "encodings of a chosen kind of model (tests only)"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})

    location: str = "memory"
    have: frozenset[Capability] = frozenset({Capability.CONTEXTUAL, Capability.MASKED_LM})
    static: bool | None = False
    facts: dict = attrs.field(factory=dict)
    calls: list = attrs.field(factory=list)
    rows: int | None = None  # answer with this many rows instead of one per text

    def available(self) -> frozenset[Capability]:
        return self.have

    def describe(self) -> dict:
        return dict(self.facts)

    def encode(self, texts, spans=None, *, pooling="mean", **kwargs):
        self.calls.append((list(texts), None if spans is None else list(spans), pooling, kwargs))
        n = len(texts) if self.rows is None else self.rows
        return np.array([[float(i), float(len(texts[i]) if i < len(texts) else -1)] for i in range(n)]).reshape(n, 2)


MASKED = frozenset({Capability.CONTEXTUAL, Capability.MASKED_LM})
CAUSAL = frozenset({Capability.CONTEXTUAL, Capability.CAUSAL_LM})


def test_the_pooling_used_follows_the_level_and_the_kind_of_model() -> None:
    from bias.core.association.contexts import resolve_pooling

    encoder, causal = EncoderLike(have=MASKED), EncoderLike(have=CAUSAL)
    both = EncoderLike(have=MASKED | CAUSAL)  # a masked LM that also scores sequences is an encoder
    static = EncoderLike(have=CAUSAL, static=True)  # static vectors have no tokens, whatever else they say
    assert [resolve_pooling(None, "sentence", e) for e in (encoder, causal, both, static)] == ["cls", "last", "cls", "mean"]
    assert [resolve_pooling(None, "word", e) for e in (encoder, causal, both, static)] == ["target-mean", "target-last", "target-mean", "target-mean"]
    assert resolve_pooling("first", "sentence", causal) == "first" and resolve_pooling("mean", "sentence", encoder) == "mean"
    assert resolve_pooling("first", "word", causal) == "target-first" and resolve_pooling("target-last", "word", encoder) == "target-last"
    # an embedder that does not answer `static` itself is static when it declares a fixed vocabulary
    assert resolve_pooling(None, "sentence", TableEmbedder()) == "cls"  # word vectors, no vocabulary

    @attrs.define
    class WithVocabulary(TableEmbedder):
        capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.VOCABULARY})

    assert WithVocabulary().static and resolve_pooling(None, "sentence", WithVocabulary()) == "mean"


def test_a_pooling_must_exist_and_fit_the_level() -> None:
    from bias.core.association.contexts import check_layer, check_pooling
    from bias.core.errors import BadValue

    @attrs.define
    class Holder:
        level: str = "sentence"

    field = attrs.fields(Holder).level  # any attribute: only its name is used
    for level, fits, misfits in (("sentence", ("cls", "mean", "first", "last"), ("target-mean",)), ("word", ("target-mean", "mean", "last"), ("cls",))):
        for pooling in (None, *fits):
            check_pooling(Holder(level), field, pooling)
        for pooling in misfits:
            with pytest.raises(BiasError, match=f"does not fit level {level}") as caught:
                check_pooling(Holder(level), field, pooling)
            assert not isinstance(caught.value, BadValue)  # a setting that fits another level
    with pytest.raises(BadValue, match="'max' is not a pooling"):
        check_pooling(Holder("word"), field, "max")
    with pytest.raises(BiasError, match="does not fit level sentence"):
        check_pooling(object(), field, "target-first")  # an owner without a level is at sentence level
    for layer in (None, -1, 0, 7, "mean-last-4"):
        check_layer(None, field, layer)
    for bad in ("last", 1.5, True):
        with pytest.raises(BadValue, match="must be a layer number"):
            check_layer(None, field, bad)


def test_the_recorded_convention_says_which_hidden_state_and_tokens_were_pooled() -> None:
    from bias.core.association.contexts import vector_conventions

    bert = {"tokenizer": "wordpiece", "causal": False, "layers": 4, "layer": -1}
    gpt = {"tokenizer": "bpe", "causal": True, "layers": 6, "start_token": "<|endoftext|>"}
    got = vector_conventions(EncoderLike(facts=bert), "sentence", "mean", None)
    assert got == {
        "layer": -1, "layer_index": 4, "hidden_states": "0..4 (0 = embedding output)", "model_kind": "encoder",
        "pooled_tokens": "every token the attention mask keeps, special tokens ([CLS]/[SEP], <s>/</s>) included",
    }
    assert vector_conventions(EncoderLike(facts=bert), "sentence", "cls", 2)["layer_index"] == 2  # the layer asked for wins
    assert vector_conventions(EncoderLike(facts=bert), "sentence", "cls", 0)["layer_index"] == 0
    assert vector_conventions(EncoderLike(facts=bert), "sentence", "cls", -5)["layer_index"] == 0
    causal = vector_conventions(EncoderLike(facts=gpt), "sentence", "mean", "mean-last-4")
    assert causal["layer"] == "mean-last-4" and causal["layer_index"] == "mean of hidden states 3..6"
    assert causal["hidden_states"] == "0..6 (0 = embedding output)" and causal["model_kind"] == "causal LM (decoder)"
    assert causal["start_token"] == "<|endoftext|>" and causal["pooled_tokens"].startswith("the sentence's own tokens")
    assert vector_conventions(EncoderLike(facts=gpt), "sentence", "cls", "mean-last-2")["layer_index"] == "mean of hidden states 5..6"
    assert vector_conventions(EncoderLike(facts=gpt), "sentence", "last", None)["pooled_tokens"].startswith("the sentence's own last token")
    assert vector_conventions(EncoderLike(facts=gpt), "sentence", "first", None)["pooled_tokens"] == "the sentence's own first token"
    static = vector_conventions(EncoderLike(facts={"dimension": 3}), "sentence", "mean", None)
    assert static == {"layer": "none (static word vectors)", "pooled_tokens": "the mean of the sentence's word vectors (words not in the vocabulary skipped)"}
    assert vector_conventions(EncoderLike(facts={}), "sentence", "first", None)["pooled_tokens"] == "the first word found in the vocabulary"
    assert vector_conventions(EncoderLike(facts={}), "sentence", "last", None)["pooled_tokens"] == "the last word found in the vocabulary"
    assert vector_conventions(EncoderLike(facts={"layer": 3}), "sentence", "cls", None) == {"layer": 3, "pooled_tokens": "the first token ([CLS] / <s>)"}
    named = vector_conventions(EncoderLike(facts={"tokenizer": "x", "layers": 4, "layer": "pooler"}), "sentence", "cls", None)
    assert named["layer"] == "pooler" and "layer_index" not in named  # a layer named otherwise has no index to give
    assert named["hidden_states"] == "0..4 (0 = embedding output)"
    unsaid = vector_conventions(EncoderLike(facts={"tokenizer": "x", "layers": "?"}), "word", "target-mean", 1)
    assert unsaid == {"layer": 1, "pooled_tokens": "the target word's own sub-tokens (special tokens excluded), located by character offsets"}
    for pooling, tokens in (("target-first", "the target word's first sub-token"), ("target-last", "the target word's last sub-token")):
        assert vector_conventions(EncoderLike(facts=bert), "word", pooling, None)["pooled_tokens"].startswith(tokens + " (special")


def test_each_distinct_context_is_encoded_once_in_one_call() -> None:
    from bias.core.association.contexts import encode_contexts

    model = EncoderLike()
    texts = ["a cat", "the dog", "a cat", "a cat"]
    spans = [(2, 5), (4, 7), (2, 5), (0, 1)]
    rows = encode_contexts(model, texts, spans, level="word", pooling="target-last", layer=-2)
    assert model.calls == [(["a cat", "the dog", "a cat"], [(2, 5), (4, 7), (0, 1)], "last", {"layer": -2})]
    assert rows.dtype == np.float64 and rows[:, 0].tolist() == [0, 1, 0, 2]  # each text given its request's row
    rows = encode_contexts(model, texts, spans, level="sentence", pooling="cls", layer=None)
    assert model.calls[-1] == (["a cat", "the dog"], None, "cls", {})  # spans ignored, no layer sent
    assert rows[:, 0].tolist() == [0, 1, 0, 0]
    empty = encode_contexts(EncoderLike(), [], [], level="sentence", pooling="cls", layer=None)
    assert empty.shape == (0, 2) and EncoderLike().encode([]).shape == (0, 2)
    with pytest.raises(BiasError, match=r"returned \(1, 2\) vectors for 2 texts"):
        encode_contexts(EncoderLike(rows=1), texts, spans, level="sentence", pooling="cls", layer=None)


def test_templates_are_asked_for_by_name_or_the_languages_own() -> None:
    from bias.core.association.contexts import given_templates, template_request
    from bias.core.data.templates import TemplateSet
    from bias.core.interfaces import WORDSET_INPUT
    from bias.core.model import TEMPLATES

    assert template_request(None, "de").name == "de/seat-templates"
    asked = template_request("my/templates.toml", "de")
    assert (asked.kind, asked.name, asked.data_kind) == (WORDSET_INPUT, "my/templates.toml", TEMPLATES)
    data = association_test(X=["x"], Y=["y"], A=["a"], B=["b"])
    templates = TemplateSet(WordSetMeta("t", TEMPLATES, "en", "gender"), ())
    assert given_templates({"templates": templates}, "seat", data) is templates
    for inputs in (None, {}, {"templates": "en/seat-templates"}):
        with pytest.raises(BiasError, match="seat on toy needs its template set"):
            given_templates(inputs, "seat", data)


def test_case_policies_must_come_from_the_shared_vocabulary() -> None:
    from bias.core.association import case_param

    case_param("lower", ("exact", "lower"))  # a subset, the default among them
    with pytest.raises(ValueError, match=r"\['upper'\] are not in the shared vocabulary"):
        case_param("exact", ("exact", "upper"))  # the default is allowed, another name is not known
    with pytest.raises(ValueError, match=r"\['fallback'\] are not in the shared vocabulary"):
        case_param("fallback", ("exact", "lower"))  # a known default the metric does not accept


def test_an_embedder_that_finds_nothing_gives_empty_sets() -> None:
    """A model may answer a request it finds nothing of with a flat empty array: every set is then
    an empty matrix and every word lost."""

    @attrs.define
    class Nothing(TableEmbedder):
        def word_vectors(self, words: Sequence[str]) -> WordVectors:
            return WordVectors(words=(), vectors=np.zeros(0), lost=tuple(words))

    data = association_test(X=["x1"], Y=["y1", "y2"], A=["a1"], B=["b1"])
    matrices, sets, lost, approximated = set_vectors(Nothing(), data, "exact")
    assert {k: m.shape for k, m in matrices.items()} == {k: (0, 0) for k in "XYAB"}
    assert sets == {k: [] for k in "XYAB"} and lost == {"X": ["x1"], "Y": ["y1", "y2"], "A": ["a1"], "B": ["b1"]}
    assert lost_word_refusal(matrices, {k: len(v) for k, v in lost.items()}, lost, 0.2, sets) == "every word of set X is missing from the model (x1...)"


def test_only_figures_that_map_words_to_numbers_become_the_score_table() -> None:
    figures = {
        "gap": 0.5,
        "cos": {"x1": 0.25, "b1": 1},
        "notes": {"x1": 0.5, "x2": "n/a"},  # not all numbers: a figure, not a column
        "empty": {},
        "labels": ["x1"],
    }
    table = per_word_table(figures, {"X": ["x1"], "B": ["b1"]})
    assert table == {"scores": [{"set": "X", "item": "x1", "cos": 0.25}, {"set": "B", "item": "b1", "cos": 1.0}]}
    assert per_word_table({"gap": 0.5, "notes": {"x": "a"}}, {"X": ["x"]}) == {}
