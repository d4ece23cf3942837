"""Reduced precision never changes a reported verdict: the items it could turn are rescored in float32
(bias.core.precision), checked on planted numbers and against real float32 runs of a tiny BERT
(CrowS-Pairs) and a tiny GPT-2 (BBQ) in bfloat16 on the CPU."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from bias import registry
from bias.core import precision
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.registry.resolve import load_wordset

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_float32_is_left_alone() -> None:
    values = np.array([[1.0, 2.0]])
    settled = precision.settle(
        values, np.ones_like(values), lambda i: pytest.fail("nothing to rescore"), "float32"
    )
    assert settled.convention == {} and np.array_equal(settled.values, values)


def test_the_calibration_sample_is_spread_and_sized_by_the_items() -> None:
    assert precision.calibration_items(5).tolist() == [0, 1, 2, 3, 4]
    assert len(precision.calibration_items(100)) == 10
    picked = precision.calibration_items(1000)
    assert len(picked) == 32 and picked[0] == 0 and picked[-1] == 999


def test_a_bound_too_tight_for_the_calibration_sample_is_widened_until_every_verdict_is_exact() -> (
    None
):
    """The calibration items deviate little; the close items rescored then show more, which widens the
    bound and brings in an item that the first bound left alone although its verdict had turned."""
    exact = np.zeros((40, 2))
    exact[:, 0] = np.linspace(1.0, 2.0, 40)  # choice 0 wins clearly everywhere...
    exact[2] = [0.50, 0.45]  # ...but for two items
    exact[3] = [0.50, 0.42]
    reduced = exact + 0.001  # the calibration sees deviations of 0.001: a first bound of 0.003
    reduced[2] = [
        0.500,
        0.497,
    ]  # close under the first bound; its deviation (0.047) widens the bound
    reduced[3] = [0.40, 0.52]  # turned, by a margin (0.12) only the widened bound reaches
    assert not {2, 3} & set(
        precision.calibration_items(40).tolist()
    )  # the sample alone sees neither
    asked: list[int] = []

    def rescore(indices: np.ndarray) -> np.ndarray:
        asked.extend(indices.tolist())
        return exact[indices]

    settled = precision.settle(reduced, np.ones_like(reduced), rescore, "bfloat16")
    assert np.array_equal(settled.values.argmax(axis=1), exact.argmax(axis=1))
    assert {2, 3} <= set(settled.rescored.tolist())
    assert len(asked) == len(set(asked))  # no item scored twice
    assert settled.convention["rescored_in_float32"] == len(asked)
    assert settled.convention["precision"] == "bfloat16"


def test_bfloat16_crows_verdicts_equal_float32s(tiny_bert_dir) -> None:
    """The same pairs through the same tiny BERT in float32 and in bfloat16: every pair judged alike,
    the rescored pairs counted in the result, and every pair that bfloat16 alone turned among them."""
    sample = load_wordset("en/crows-sample")
    data = attrs.evolve(
        sample, pairs=sample.pairs[:30]
    )  # two of them turned by bfloat16 alone here
    crows = registry.get("metrics", "crows")()
    full = crows.compute(
        HuggingFaceEmbedder(location=str(tiny_bert_dir), cache=False), data, seed=0
    )
    reduced = crows.compute(
        HuggingFaceEmbedder(location=str(tiny_bert_dir), dtype="bfloat16", cache=False),
        data,
        seed=0,
    )
    alone_embedder = HuggingFaceEmbedder(location=str(tiny_bert_dir), dtype="bfloat16", cache=False)
    alone_embedder.reduced_precision = lambda: None  # bfloat16 without the float32 settling
    alone = crows.compute(alone_embedder, data, seed=0)

    def verdicts(result):
        return [row["biased"] for row in result.figures["pairs"]]

    assert verdicts(reduced) == verdicts(full)
    assert reduced.effect_size == full.effect_size
    assert "precision" not in full.convention
    assert reduced.convention["precision"] == "bfloat16"
    rescored = reduced.convention["rescored_in_float32"]
    assert 0 < rescored <= len(verdicts(full))
    turned = [i for i, (a, b) in enumerate(zip(verdicts(alone), verdicts(full))) if a != b]
    scores_full = [(row["score_more"], row["score_less"]) for row in full.figures["pairs"]]
    scores_reduced = [(row["score_more"], row["score_less"]) for row in reduced.figures["pairs"]]

    def same(i: int) -> bool:  # float32's numbers, up to the rounding of another batching
        return bool(np.allclose(scores_reduced[i], scores_full[i], rtol=0, atol=1e-5))

    assert (
        sum(same(i) for i in range(len(scores_full))) >= rescored
    )  # rescored pairs carry float32's numbers
    assert all(same(i) for i in turned)  # each pair bfloat16 alone turned was rescored


def test_bfloat16_bbq_choices_equal_float32s(tiny_gpt2_dir, tmp_path) -> None:
    from test_bbq import planted_items, write_questions  # the planted questions of the BBQ tests

    data = load_wordset(str(write_questions(tmp_path / "questions.toml", planted_items())))
    bbq = registry.get("metrics", "bbq")(bootstrap=0)
    full = bbq.compute(HuggingFaceEmbedder(location=str(tiny_gpt2_dir), cache=False), data, seed=0)
    reduced = bbq.compute(
        HuggingFaceEmbedder(location=str(tiny_gpt2_dir), dtype="bfloat16", cache=False),
        data,
        seed=0,
    )
    chosen = [row["predicted"] for row in full.figures["predictions"]]
    assert [row["predicted"] for row in reduced.figures["predictions"]] == chosen
    assert (
        reduced.convention["precision"] == "bfloat16"
        and reduced.convention["rescored_in_float32"] > 0
    )
    assert "precision" not in full.convention


def test_bfloat16_bbq_preset_loglik_answers_equal_float32s(tiny_gpt2_dir, tmp_path) -> None:
    """A preset scored by log-likelihood (EuroEval's letters) decides its answers as float32 does."""
    from test_bbq import planted_items, write_questions

    data = load_wordset(str(write_questions(tmp_path / "questions.toml", planted_items())))
    prompts = load_wordset("en/bbq-prompts")
    bbq = registry.get("metrics", "bbq")(
        bootstrap=0, mode="loglik", preset="euroeval", headline="adjusted-accuracy",
        variant=prompts.variants[0].name,
    )

    def run(dtype: str):
        embedder = HuggingFaceEmbedder(location=str(tiny_gpt2_dir), dtype=dtype, cache=False)
        return bbq.compute(embedder, data, seed=0, inputs={"prompts": prompts})

    full, reduced = run("float32"), run("bfloat16")
    assert full.status == reduced.status == "ok", (full.reason, reduced.reason)
    assert reduced.figures == full.figures and reduced.effect_size == full.effect_size
    assert reduced.convention["precision"] == "bfloat16"
    assert reduced.convention["rescored_in_float32"] > 0
    assert "precision" not in full.convention
