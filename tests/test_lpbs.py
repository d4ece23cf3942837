"""LPBS: the `lpbs` data kind, the metric against a brute-force reference on a tiny real BERT, and
validity on the planted masked LM (flowers ~ pleasant, insects ~ unpleasant).

The reference finds each slot's tokens through the tokenizer's word_ids() (the templates here are
whitespace-separated), not through the character offsets the metric uses, and runs one plain forward
call per masked sentence, so a slot read at the wrong position or a prior read at the attribute
shows up as a mismatch.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import logsumexp

from bias.core.errors import BiasError
from bias.core.data.lpbs_tests import LpbsTest, build, check
from bias.core.model import WordList, WordSetMeta
from bias.core.pair_metrics.lpbs_scores import refusal
from bias.core.data.templates import Template
from bias.core.data.wordsets import errors_of, validate_toml_file
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.plugins.metrics.lpbs import Lpbs

TOL = 1e-6
DATA = Path(__file__).resolve().parents[1] / "languages" / "en" / "bias_lang_en" / "data" / "lpbs-gender.toml"


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (tests/conftest.py)


def lpbs_test(x: tuple[str, ...], y: tuple[str, ...], a: tuple[str, ...], b: tuple[str, ...], templates: tuple[str, ...]) -> LpbsTest:
    meta = WordSetMeta(name="hand-built-lpbs", kind="lpbs", language="en", bias_type="non-social")
    return LpbsTest(meta, WordList("X", x), WordList("Y", y), WordList("A", a), WordList("B", b), tuple(Template(t) for t in templates))


def embedder(folder: Path, **options: Any) -> HuggingFaceEmbedder:
    e = HuggingFaceEmbedder(location=str(folder), device="cpu", batch_size=16, **options)
    e.load()
    return e


# -- data kind ------------------------------------------------------------------------------------

META = {"kind": "lpbs", "language": "en", "bias_type": "gender", "source": "authored for tests", "licence": "CC-BY-4.0"}
SETS = {
    key: {"words": [f"{key.lower()}word{i}" for i in range(8)]} for key in ("X", "Y", "A", "B")
}


def test_english_lpbs_file_is_valid() -> None:
    assert errors_of(validate_toml_file(DATA, "en")) == []
    from bias.registry.resolve import load_wordset

    data = load_wordset("en/lpbs-gender")
    assert isinstance(data, LpbsTest)
    assert all(len(wl.words) >= 8 for wl in data.sets().values())
    assert data.meta.licence == "CC-BY-4.0"
    sentences = {
        r.text
        for tpl in data.templates
        for t in data.X.words + data.Y.words
        for a in data.A.words + data.B.words
        if (r := data.render(tpl, (t, {**data.X.features(t), **data.Y.features(t)}), (a, {**data.A.features(a), **data.B.features(a)})))
    }
    assert "He is an engineer." in sentences and "The woman works as a nurse." in sentences
    assert "He is a engineer." not in sentences and "The he is an engineer." not in sentences


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{Target} is here.", "no {attribute} placeholder"),
        ("It is {attribute}.", "no {target} placeholder"),
        ("{target} and {target} like {attribute}.", "appears 2 times"),
        ("{target} is {thing}.", "unknown slot 'thing'"),
    ],
)
def test_templates_without_both_slots_are_errors(text: str, message: str) -> None:
    problems = errors_of(check({**META, "sets": SETS, "templates": [{"text": text}]}, "f.toml"))
    assert any(p.field == "templates[0].text" and message in p.message for p in problems), problems


def test_a_word_no_template_fits_is_an_error() -> None:
    sets = {**SETS, "X": {"words": [{"word": "he", "class": "pronoun"}] + SETS["X"]["words"]}}
    data = {**META, "sets": sets, "templates": [{"text": "The {target} is {attribute}.", "when": {"target.class": "noun"}}]}
    problems = errors_of(check(data, "f.toml"))
    assert problems and problems[0].field == "sets.X" and "'he' gets no sentence" in problems[0].message
    with pytest.raises(BiasError):
        build(data, "x", "f.toml")


def test_when_conditions_name_a_slot() -> None:
    data = {**META, "sets": SETS, "templates": [{"text": "{target} is {attribute}.", "when": {"word.class": "x"}}]}
    assert any(p.field == "templates[0].when.word.class" for p in errors_of(check(data, "f.toml")))


# -- brute-force reference on a tiny BERT ----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_dir(tiny_bert_dir: Path) -> Path:
    return tiny_bert_dir


class Reference:
    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForMaskedLM.from_pretrained(folder).eval()

    def word_tokens(self, text: str, word: int) -> list[int]:
        enc = self.tokenizer(text)
        return [i for i, w in enumerate(enc.word_ids()) if w == word]

    def log_probs(self, ids: list[int], masked: list[int]) -> np.ndarray:
        import torch

        x = torch.tensor([ids])
        x[0, masked] = self.tokenizer.mask_token_id
        with torch.no_grad():
            return torch.log_softmax(self.model(input_ids=x).logits[0].double(), -1).numpy()

    def pair(self, template: str, t: str, a: str, policy: str) -> tuple[float, float]:
        """log p_tgt(t | a) and log p_prior(t) of one sentence, one forward call per masking."""
        words = template.split()
        t_word, a_word = words.index("{target}"), words.index("{attribute}")
        text = template.replace("{target}", t).replace("{attribute}", a)
        ids = self.tokenizer(text)["input_ids"]
        tp, ap = self.word_tokens(text, t_word), self.word_tokens(text, a_word)
        if policy == "first":
            one = ids[: tp[0] + 1] + ids[tp[-1] + 1 :]
            tgt = self.log_probs(one, [tp[0]])[tp[0], ids[tp[0]]]
            a0 = ap[0] - (len(tp) - 1) if ap[0] > tp[0] else ap[0]
            t0 = tp[0] - (len(ap) - 1) if tp[0] > ap[0] else tp[0]
            both = one[: a0 + 1] + one[a0 + len(ap) :]
            return float(tgt), float(self.log_probs(both, [t0, a0])[t0, ids[tp[0]]])
        lp = self.log_probs(ids, tp)
        tgt = sum(lp[p, ids[p]] for p in tp)
        lp = self.log_probs(ids, tp + ap)
        return float(tgt), float(sum(lp[p, ids[p]] for p in tp))

    def scores(self, test: LpbsTest, policy: str) -> dict[str, float]:
        """score(a) = mean over templates of the logsumexp group difference, target minus prior."""
        out = {}
        for a in test.A.words + test.B.words:
            per_template = []
            for template in test.templates:
                tgt: dict[str, list[float]] = {"X": [], "Y": []}
                prior: dict[str, list[float]] = {"X": [], "Y": []}
                for key in ("X", "Y"):
                    for t in getattr(test, key).words:
                        one, both = self.pair(template.text, t, a, policy)
                        tgt[key].append(one)
                        prior[key].append(both)
                per_template.append(
                    logsumexp(tgt["X"]) - logsumexp(tgt["Y"]) - (logsumexp(prior["X"]) - logsumexp(prior["Y"]))
                )
            out[a] = float(np.mean(per_template))
        return out

    def target_scores(self, test: LpbsTest, policy: str) -> dict[str, float]:
        """The target-unit variant: s(t) = mean over A of asc(t, a) - mean over B of asc(t, b), with
        asc(t, a) = mean over templates of log p_tgt(t | a) - log p_prior(t)."""
        out = {}
        for t in test.X.words + test.Y.words:
            asc = {}
            for a in test.A.words + test.B.words:
                values = [self.pair(tpl.text, t, a, policy) for tpl in test.templates]
                asc[a] = float(np.mean([one - both for one, both in values]))
            out[t] = float(np.mean([asc[a] for a in test.A.words]) - np.mean([asc[b] for b in test.B.words]))
        return out


HAND = lpbs_test(
    ("he", "man", "unbelievableness"),
    ("she", "woman", "nurse"),
    ("doctor", "good", "flower"),
    ("bad", "insect", "tulipomania"),
    ("the {target} is {attribute} .", "{target} likes the {attribute} here", "the {attribute} sees the {target}"),
)


@pytest.mark.parametrize("policy", ["joint", "first"])
def test_attribute_scores_match_the_reference(tiny_dir: Path, policy: str) -> None:
    ref = Reference(tiny_dir)
    assert len(ref.word_tokens("the unbelievableness is good .", 1)) > 1, "a target must split into several pieces"
    result = Lpbs(multi_token=policy).compute(embedder(tiny_dir), HAND, seed=0)
    assert result.ok, result.reason
    expected = ref.scores(HAND, policy)
    got = {**result.figures["attribute_scores"]["A"], **result.figures["attribute_scores"]["B"]}
    assert set(got) == set(expected)
    for word, value in expected.items():
        assert got[word] == pytest.approx(value, abs=TOL), word
    # effect size and p from the metric's own scores (already checked to 1e-6): a small std would
    # magnify float32 noise of the two model runs
    sa = np.array([got[w] for w in HAND.A.words])
    sb = np.array([got[w] for w in HAND.B.words])
    both = np.concatenate([sa, sb])
    assert result.effect_size == pytest.approx((sa.mean() - sb.mean()) / both.std(ddof=1), abs=1e-9)
    observed = sa.sum() - sb.sum()
    stats = [both[list(c)].sum() - both[[i for i in range(6) if i not in c]].sum() for c in itertools.combinations(range(6), 3)]
    p = np.mean([abs(s) >= abs(observed) - 1e-12 for s in stats])
    assert result.p_value == pytest.approx(p)
    assert result.convention["multi_token"] == policy and result.convention["alternative"] == "two-sided"
    assert ("collapse to a single mask" in result.convention["prior_attribute_slot"]) is (policy == "first")
    assert "unbelievableness" in result.figures["multi_token_words"]["X"]


def test_reduce_drops_multi_token_words_and_reports_them(tiny_dir: Path) -> None:
    result = Lpbs(multi_token="reduce", lost_threshold=0.5).compute(embedder(tiny_dir), HAND, seed=0)
    assert result.ok
    assert result.lost == {"X": ["unbelievableness"], "B": ["tulipomania"]}
    assert "tulipomania" not in result.figures["attribute_scores"]["B"]
    refused = Lpbs(multi_token="reduce").compute(embedder(tiny_dir), HAND, seed=0)
    assert refused.status == "refused" and "lost 1 of 3" in refused.reason


def test_lost_threshold_refuses_a_share_above_it_as_for_the_association_metrics() -> None:
    """More than the threshold refuses, exactly the threshold does not (as WEAT's `lost_threshold`);
    fewer than 2 words left in a set compared (1 in the other two) refuses whatever the threshold."""
    five = ("w1", "w2", "w3", "w4", "w5")
    test = lpbs_test(five, five, five, five, ("{target} is {attribute} .",))
    attributes, targets = ("A", "B"), ("X", "Y")
    assert refusal(test, {"Y": ["w1"]}, attributes, 0.2) is None  # 1 of 5 = 20%
    reason = refusal(test, {"Y": ["w1", "w2"]}, attributes, 0.2)
    assert reason == (
        "set Y lost 2 of 5 words as multi-token (40%; at most 20% allowed, and 1 word needed): "
        "w1, w2"
    )
    four = {"Y": ["w1", "w2", "w3", "w4"]}
    assert refusal(test, four, attributes, 1.0) is None  # targets: 1 word left suffices
    assert refusal(test, four, targets, 1.0) is not None  # unit = target compares X and Y
    assert refusal(test, {"A": ["w1", "w2", "w3", "w4"]}, attributes, 1.0) is not None
    assert refusal(test, {"A": ["w1", "w2", "w3"]}, attributes, 1.0) is None


def test_target_unit_matches_the_reference(tiny_dir: Path) -> None:
    """Each target's score from the naive reference (one forward per masking, prior subtracted), and
    d over X u Y from those reference scores: a target unit that drops the prior fails here."""
    result = Lpbs(unit="target").compute(embedder(tiny_dir), HAND, seed=0)
    expected = Reference(tiny_dir).target_scores(HAND, "joint")
    s = result.figures["target_scores"]
    got = {**s["X"], **s["Y"]}
    assert set(got) == set(expected)
    for word, value in expected.items():
        assert got[word] == pytest.approx(value, abs=TOL), word
    sx = np.array([expected[t] for t in HAND.X.words])
    sy = np.array([expected[t] for t in HAND.Y.words])
    sd = np.concatenate([sx, sy]).std(ddof=1)
    d = (sx.mean() - sy.mean()) / sd
    # The metric's scores differ from the reference's by float32 rounding (batched forward calls pad
    # and so reduce in another order than one call per sentence): `dev`, at most TOL, about 1e-8. d
    # divides a difference of means by the spread of six scores, and on the tiny model both are small
    # (sd about 2e-4, the mean difference down to 4e-5); they also vary from session to session,
    # because the tokenizer trainer breaks ties between equally frequent pieces in hash order, so
    # each session's tiny model has another vocabulary. A fixed relative tolerance therefore failed
    # now and then. Propagated to first order: |dm| <= 2 dev and |dsd| <= sqrt(6/5) dev <= 2 dev, so
    # |dd| <= (|dm| + |d| |dsd|) / sd <= (2 + 2 |d|) dev / sd; the factor 2 covers the second order.
    dev = max(abs(got[w] - expected[w]) for w in expected)
    assert abs(result.effect_size - d) <= 2 * (2 + 2 * abs(d)) * dev / sd + 1e-12
    assert result.convention["unit"] == "target"


def test_slot_is_found_by_offsets_not_by_string_search(tiny_dir: Path) -> None:
    """'he' occurs inside 'the' before the slot; a string search would mask the wrong token."""
    test = lpbs_test(("he", "man"), ("she", "woman"), ("good", "doctor"), ("bad", "nurse"), ("the {attribute} and {target} .",))
    result = Lpbs().compute(embedder(tiny_dir), test, seed=0)
    expected = Reference(tiny_dir).scores(test, "joint")
    got = {**result.figures["attribute_scores"]["A"], **result.figures["attribute_scores"]["B"]}
    for word, value in expected.items():
        assert got[word] == pytest.approx(value, abs=TOL)


# -- validity on the planted masked LM -------------------------------------------------------------


@pytest.fixture(scope="module")
def planted(request: pytest.FixtureRequest) -> Path:
    # the control model first: tests/test_crows.py asks for the planted one first, so that two
    # workers reaching both modules at once each build one model instead of one waiting on the other
    request.getfixturevalue("control_mlm")
    return request.getfixturevalue("planted_mlm")  # built under this module's single torch thread


@pytest.fixture(scope="module")
def control(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("control_mlm")


def planted_lpbs(reverse: bool = False) -> LpbsTest:
    from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

    a, b = (B_WORDS, A_WORDS) if reverse else (A_WORDS, B_WORDS)
    return lpbs_test(X_WORDS, Y_WORDS, a, b, ("the {target} is {attribute} .", "a {target} feels {attribute} .", "i think the {target} is {attribute} ."))


def test_lpbs_finds_the_planted_association(planted: Path, control: Path) -> None:
    found = Lpbs(permutations=2000).compute(embedder(planted), planted_lpbs(), seed=1)
    assert found.effect_size > 1.2 and found.p_value < 0.01
    mirrored = Lpbs(permutations=2000).compute(embedder(planted), planted_lpbs(reverse=True), seed=1)
    assert mirrored.effect_size == pytest.approx(-found.effect_size)
    null = Lpbs(permutations=2000).compute(embedder(control), planted_lpbs(), seed=1)
    assert abs(null.effect_size) < 1.0 and null.p_value > 0.05


def test_near_zero_probability_targets_stay_finite(planted: Path) -> None:
    """Words the planted model has never seen, split into many pieces: probabilities far below float
    range when multiplied, finite in log space."""
    from fixtures.planted import A_WORDS, B_WORDS

    test = lpbs_test(
        ("rosewaspgriefmoth", "poppymothgrief", "lilyfleahornetwar"),
        ("violetgnatrotten", "spiderlovelucky", "orchidhatredpoison"),
        A_WORDS[:4], B_WORDS[:4], ("the {target} is {attribute} .",),
    )
    e = embedder(planted)
    pieces = [len(t.ids) - 2 for t in e.tokenize(list(test.X.words + test.Y.words))]
    assert min(pieces) >= 6, "each made-up word must split into many pieces"
    result = Lpbs(permutations=500).compute(e, test, seed=1)
    assert result.ok
    assert len(result.figures["multi_token_words"]["X"]) == 3
    scores = [*result.figures["attribute_scores"]["A"].values(), *result.figures["attribute_scores"]["B"].values()]
    assert np.isfinite(scores).all() and np.isfinite(result.effect_size)
    # probabilities below 1e-20: a product of probabilities in float32 would underflow long before
    assert result.figures["mean_log_p_target"] < math.log(1e-20)


# -- bad input -------------------------------------------------------------------------------------


def test_model_without_mlm_head_is_refused(tiny_dir: Path) -> None:
    with pytest.raises(BiasError) as err:
        Lpbs().compute(embedder(tiny_dir, head="none"), HAND, seed=0)
    assert "lpbs" in err.value.message and "weat" in (err.value.hint or "")


def test_causal_model_is_refused_for_lpbs(tmp_path: Path) -> None:
    from fixtures.tiny_bert import build_tiny_gpt2

    with pytest.raises(BiasError) as err:
        Lpbs().compute(embedder(build_tiny_gpt2(tmp_path / "gpt2")), HAND, seed=0)
    assert "masked language model" in err.value.message and "crows" in (err.value.hint or "")


def test_slots_sharing_a_token_are_refused(tiny_dir: Path) -> None:
    # "he" + "re" renders "here", one token of the vocabulary: the two slots cannot be masked apart
    assert Reference(tiny_dir).tokenizer.tokenize("here") == ["here"]
    test = lpbs_test(("he", "she"), ("man", "woman"), ("re", "good"), ("bad", "nurse"), ("the {target}{attribute} is here .",))
    with pytest.raises(BiasError) as err:
        Lpbs().compute(embedder(tiny_dir), test, seed=0)
    assert "share a token" in err.value.message


@pytest.mark.parametrize("slot", ["target", "attribute"])
def test_a_slot_whose_word_the_tokenizer_drops_is_refused(tiny_dir: Path, slot: str) -> None:
    """A zero-width space is cleaned away by the tokenizer: its slot covers no token, which cannot
    be masked, while the other slot does."""
    words = [("he", "\u200b") if slot == "target" else ("he", "him"), ("man", "woman")]
    attributes = [("good", "\u200b") if slot == "attribute" else ("good", "kind"), ("bad", "nurse")]
    test = lpbs_test(*words, *attributes, ("the {target} is {attribute} .",))
    with pytest.raises(BiasError) as err:
        Lpbs().compute(embedder(tiny_dir), test, seed=0)
    assert err.value.message == (
        "hand-built-lpbs: template 'the {target} is {attribute} .': the "
        f"{slot} slot covers no token in "
        + repr("the he is \u200b ." if slot == "attribute" else "the \u200b is good .")
        + "."
    )


def test_scores_without_spread_are_refused(tiny_dir: Path) -> None:
    """A model that gives every word the same probability whatever the context: every score is 0, d is
    0/0 and p = 1. The test is refused rather than reported as "no bias"."""
    real = embedder(tiny_dir)

    class Flat:
        def __getattr__(self, name):
            return getattr(real, name)

        def masked_log_probs(self, requests):
            return [np.full(len(r.positions), -3.0) for r in requests]

    for unit in ("attribute", "target"):
        result = Lpbs(unit=unit).compute(Flat(), HAND, seed=0)
        assert result.status == "refused" and "0/0" in result.reason, unit
