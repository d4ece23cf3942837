"""LPBS with the BIAS Detection Framework's parameters (`pairing = i-th`, `target_number = singular`,
`multi_token = one-mask`) on files in the framework's format: repeated words, one target per list,
plural-only lists, and the figures and refusals that go with them.

Expected values come from a loop written here after the framework's published definition: p_tgt(t | a)
is P(first mask = t) with ATTRIBUTE filled and TARGET one mask, p_prior(t) the same with ATTRIBUTE one
mask too, a word of several pieces the product of its pieces' probabilities at its one mask, asc =
log(p_tgt / p_prior), and an attribute's score the mean over the i-th (targ1, targ2) pairs and the
singular templates of asc(t1_i, a) - asc(t2_i, a).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.runs.budget import permutation_cost
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.plugins.metrics.lpbs import Lpbs
from bias.registry.resolve import load_wordset_file

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (tests/conftest.py)

FRAMEWORK = {"pairing": "i-th", "target_number": "singular", "multi_token": "one-mask", "ddof": 0, "permutations": 200}
TEMPLATES = {"singular": ["the TARGET is ATTRIBUTE .", "ATTRIBUTE likes a TARGET"], "plural": ["TARGET are ATTRIBUTE ."]}


class Framework:
    """The framework's asc(t, a), one plain forward call per masked sentence, on the model's tokenizer."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        self.tok = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForMaskedLM.from_pretrained(folder).eval()
        self.cache: dict[tuple[str, str, str], float] = {}

    def prob(self, text: str, target: str, at_mask: int) -> float:
        import torch

        ids = self.tok.encode(text)
        at = [i for i, t in enumerate(ids) if t == self.tok.mask_token_id][at_mask]
        with torch.no_grad():
            probs = torch.softmax(self.model(input_ids=torch.tensor([ids])).logits[0, at].double(), dim=-1)
        return math.prod(float(probs[piece]) for piece in self.tok(target)["input_ids"][1:-1])

    def asc(self, template: str, target: str, attribute: str) -> float:
        key = (template, target, attribute)
        if key not in self.cache:
            mask = self.tok.mask_token
            tgt = self.prob(template.replace("ATTRIBUTE", attribute).replace("TARGET", mask), target, 0)
            # the prior read at the target's mask (the framework reads the first mask: the same d, see docs)
            prior_text = template.replace("ATTRIBUTE", mask).replace("TARGET", mask)
            prior = self.prob(prior_text, target, 1 if template.index("ATTRIBUTE") < template.index("TARGET") else 0)
            self.cache[key] = math.log(tgt / prior)
        return self.cache[key]

    def score(self, data: dict[str, Any], attribute: str, pairs: list[tuple[str, str]]) -> float:
        templates = data["templates"]["singular"]
        return float(np.mean([[self.asc(tpl, x, attribute) - self.asc(tpl, y, attribute) for tpl in templates] for x, y in pairs]))


@pytest.fixture(scope="module")
def fw(tiny_bert_dir: Path) -> Framework:
    return Framework(tiny_bert_dir)


@pytest.fixture(scope="module")
def bert(tiny_bert_dir: Path) -> HuggingFaceEmbedder:
    e = HuggingFaceEmbedder(location=str(tiny_bert_dir), device="cpu", batch_size=16)
    e.load()
    return e


def framework_file(tmp_path: Path, data: dict[str, Any]) -> Any:
    folder = tmp_path / "en" / "LPBS"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "LPBS_T.jsonl"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_wordset_file(path)


def file_of(targ1: list[str], targ2: list[str], attr1: list[str], attr2: list[str]) -> dict[str, Any]:
    return {"targ1": {"singular": targ1, "plural": ["roses"]}, "targ2": {"singular": targ2, "plural": ["ants"]},
            "attr1": attr1, "attr2": attr2, "templates": TEMPLATES}


def scores_of(result: Any) -> dict[str, float]:
    return {**result.figures["attribute_scores"]["A"], **result.figures["attribute_scores"]["B"]}


def test_one_singular_target_per_list_is_scored(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path) -> None:
    """The framework's own files pair one singular target of targ1 with one of targ2 (he / she): its
    LPBS is defined on them, so they are scored, not refused for having one target."""
    data = file_of(["he"], ["she"], ["good", "doctor", "flower"], ["bad", "insect", "nurse"])
    result = Lpbs(duplicates="keep", **FRAMEWORK).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.ok, result.reason
    s1 = [fw.score(data, a, [("he", "she")]) for a in data["attr1"]]
    s2 = [fw.score(data, a, [("he", "she")]) for a in data["attr2"]]
    got = scores_of(result)
    for word, value in zip(data["attr1"] + data["attr2"], s1 + s2):
        assert got[word] == pytest.approx(value, abs=1e-6), word
    assert result.effect_size == pytest.approx((np.mean(s1) - np.mean(s2)) / np.std(s1 + s2), rel=1e-5)
    # comparing targets needs two of each: that refusal names the set and the count
    refused = Lpbs(unit="target", **FRAMEWORK).compute(bert, framework_file(tmp_path, data), seed=0)
    assert refused.status == "refused" and refused.reason == "set X has 1 word; 2 needed"


@pytest.mark.parametrize("duplicates", ["keep", "drop"])
def test_ith_pairs_are_the_files_ith_targets(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path, duplicates: str) -> None:
    """The i-th target of targ1 goes with the i-th of targ2 as listed; with `duplicates = drop` a
    repeated pair counts once and a repeated attribute once, with `keep` each as often as listed."""
    data = file_of(["he", "he", "man", "he"], ["she", "woman", "nurse", "she"], ["good", "doctor", "good"], ["bad", "insect", "flower"])
    listed = list(zip(data["targ1"]["singular"], data["targ2"]["singular"]))
    pairs = listed if duplicates == "keep" else list(dict.fromkeys(listed))
    attr1 = data["attr1"] if duplicates == "keep" else list(dict.fromkeys(data["attr1"]))
    s1 = [fw.score(data, a, pairs) for a in attr1]
    s2 = [fw.score(data, a, pairs) for a in data["attr2"]]
    result = Lpbs(duplicates=duplicates, **FRAMEWORK).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.ok, result.reason
    got = scores_of(result)
    for word, value in zip(attr1 + data["attr2"], s1 + s2):
        assert got[word] == pytest.approx(value, abs=1e-6), word
    assert result.effect_size == pytest.approx((np.mean(s1) - np.mean(s2)) / np.std(s1 + s2), rel=1e-5)
    assert result.sizes["A"] == len(attr1) and result.sizes["X"] == (4 if duplicates == "keep" else 2)


def test_figures_count_each_listed_copy_with_keep(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path) -> None:
    """With `duplicates = keep` an attribute listed twice weighs twice in the effect size, and so in
    each template's mean score, in the target unit's s(t), in `sizes` and in the cost's partitions."""
    data = file_of(["he", "man"], ["she", "woman"], ["good", "doctor", "good"], ["bad", "insect", "flower"])
    test = framework_file(tmp_path, data)
    pairs = list(zip(data["targ1"]["singular"], data["targ2"]["singular"]))
    result = Lpbs(duplicates="keep", **FRAMEWORK).compute(bert, test, seed=0)
    assert result.ok, result.reason
    assert result.sizes == {"X": 2, "Y": 2, "A": 3, "B": 3}
    for t, text in enumerate(data["templates"]["singular"]):
        one = {**data, "templates": {"singular": [text]}}
        row = next(r for r in result.figures["templates"] if r["template"] == text.replace("TARGET", "{target}").replace("ATTRIBUTE", "{attribute}"))
        assert row["mean_score_A"] == pytest.approx(np.mean([fw.score(one, a, pairs) for a in data["attr1"]]), abs=1e-6), t
        assert row["mean_score_B"] == pytest.approx(np.mean([fw.score(one, b, pairs) for b in data["attr2"]]), abs=1e-6), t
    # the target unit: s(t) = mean over attr1 as listed of asc(t, a) - the same over attr2
    by_target = Lpbs(duplicates="keep", **{**FRAMEWORK, "unit": "target"}).compute(bert, test, seed=0)
    templates = data["templates"]["singular"]
    for t in ("he", "man"):
        asc = {a: np.mean([fw.asc(tpl, t, a) for tpl in templates]) for a in data["attr1"] + data["attr2"]}
        expected = np.mean([asc[a] for a in data["attr1"]]) - np.mean([asc[b] for b in data["attr2"]])
        assert by_target.figures["target_scores"]["X"][t] == pytest.approx(expected, abs=1e-6), t
    assert Lpbs(duplicates="keep", **FRAMEWORK).cost(test) == permutation_cost(3, 3, 200, 100_000)


def test_reduce_counts_each_listed_copy_of_a_lost_word(bert: HuggingFaceEmbedder, tmp_path: Path) -> None:
    """`lost_threshold` with `duplicates = keep`: a multi-token word listed twice is two of the set's
    words lost, not one."""
    assert len(bert.tokenize(["tulipomania"])[0].ids) > 3, "the word must be several pieces"
    data = file_of(["he", "man"], ["she", "woman"], ["good", "doctor", "flower", "nurse", "bad"], ["tulipomania", "tulipomania", "insect", "bad", "doctor"])
    params = {**FRAMEWORK, "multi_token": "reduce", "lost_threshold": 0.3}
    result = Lpbs(duplicates="keep", **params).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.status == "refused" and result.reason.startswith("set B lost 2 of 5 words as multi-token (40%"), result.reason
    assert Lpbs(duplicates="drop", **params).compute(bert, framework_file(tmp_path, data), seed=0).ok


def test_singular_targets_only_leaving_a_list_empty_names_the_parameter(bert: HuggingFaceEmbedder, tmp_path: Path) -> None:
    data = {**file_of([], ["she", "woman"], ["good", "doctor"], ["bad", "insect"]), "targ1": {"singular": [], "plural": ["roses", "men"]}}
    with pytest.raises(BiasError) as err:
        Lpbs(**FRAMEWORK).compute(bert, framework_file(tmp_path, data), seed=0)
    assert "target_number = singular" in err.value.message and "set X (targ1)" in err.value.message
    assert "target_number = any" in err.value.message


def test_ith_pairs_are_formed_within_each_number(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path) -> None:
    """`pairing = i-th` with `target_number = any`: the i-th plural target of targ1 goes with the i-th
    plural of targ2, however many singular targets each lists (not the i-th of singular + plural)."""
    data = {
        "targ1": {"singular": ["he", "man"], "plural": ["men"]}, "targ2": {"singular": ["she"], "plural": ["women", "nurses"]},
        "attr1": ["good", "doctor", "flower"], "attr2": ["bad", "insect", "nurse"],
        "templates": {"singular": ["the TARGET is ATTRIBUTE ."], "plural": ["the TARGET are ATTRIBUTE ."]},
    }
    result = Lpbs(**{**FRAMEWORK, "target_number": "any"}).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.ok, result.reason
    singular, plural = data["templates"]["singular"][0], data["templates"]["plural"][0]

    def score(a: str) -> float:
        return float(np.mean([fw.asc(singular, "he", a) - fw.asc(singular, "she", a), fw.asc(plural, "men", a) - fw.asc(plural, "women", a)]))

    got = scores_of(result)
    for word in data["attr1"] + data["attr2"]:
        assert got[word] == pytest.approx(score(word), abs=1e-6), word


@pytest.mark.parametrize("duplicates", ["keep", "drop"])
def test_a_word_in_both_number_lists_is_one_singular_target(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path, duplicates: str) -> None:
    """"woman" listed as singular and as plural (as German "Lehrer" would be): the framework zips the
    singular lists only, so the pairs are he-she and man-woman; the plural copy is no third singular
    target (caress-woman), however targ1 is longer."""
    data = {
        "targ1": {"singular": ["he", "man", "doctor"], "plural": ["nurses"]}, "targ2": {"singular": ["she", "woman"], "plural": ["woman"]},
        "attr1": ["good", "flower", "rose"], "attr2": ["bad", "insect", "tulip"], "templates": TEMPLATES,
    }
    pairs = list(zip(data["targ1"]["singular"], data["targ2"]["singular"]))
    s1 = [fw.score(data, a, pairs) for a in data["attr1"]]
    s2 = [fw.score(data, a, pairs) for a in data["attr2"]]
    result = Lpbs(duplicates=duplicates, **FRAMEWORK).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.ok, result.reason
    got = scores_of(result)
    for word, value in zip(data["attr1"] + data["attr2"], s1 + s2):
        assert got[word] == pytest.approx(value, abs=1e-6), word
    assert result.effect_size == pytest.approx((np.mean(s1) - np.mean(s2)) / np.std(s1 + s2), rel=1e-5)
    assert result.sizes["Y"] == 2 and result.sizes["X"] == 3


def test_with_either_number_a_word_in_both_lists_fills_each_numbers_templates(bert: HuggingFaceEmbedder, fw: Framework, tmp_path: Path) -> None:
    """`target_number = any`: the plural copy of "woman" is the first plural target of targ2, scored in
    the plural template against the first plural of targ1, as the singular one is in the singular
    template."""
    data = {
        "targ1": {"singular": ["he", "man"], "plural": ["men"]}, "targ2": {"singular": ["she", "woman"], "plural": ["woman"]},
        "attr1": ["good", "doctor", "flower"], "attr2": ["bad", "insect", "nurse"],
        "templates": {"singular": ["the TARGET is ATTRIBUTE ."], "plural": ["the TARGET are ATTRIBUTE ."]},
    }
    singular, plural = data["templates"]["singular"][0], data["templates"]["plural"][0]

    def score(a: str) -> float:
        found = [fw.asc(singular, x, a) - fw.asc(singular, y, a) for x, y in (("he", "she"), ("man", "woman"))]
        return float(np.mean(found + [fw.asc(plural, "men", a) - fw.asc(plural, "woman", a)]))

    result = Lpbs(**{**FRAMEWORK, "target_number": "any"}).compute(bert, framework_file(tmp_path, data), seed=0)
    assert result.ok, result.reason
    got = scores_of(result)
    for word in data["attr1"] + data["attr2"]:
        assert got[word] == pytest.approx(score(word), abs=1e-6), word
