"""BBQ by generation: the bbq metric on the same replies as each peer's loop (tests/fixtures/bbq_peers.py),
the scores against their textbook definitions, samples and majority votes, refusals and unparsed
replies counted and reported, never scored silently.

The replies come from a scripted replier (the texts a model might write, chosen per question), so that
each preset is checked against its peer on exactly the replies both read; the real models (a local
instruct model, a chat server) are in test_chat_models.py.
"""

from __future__ import annotations

import hashlib
import math

import attrs
import numpy as np
import pytest

from bias import registry
from bias.api import Capability, Embedder, Generations, Reply, Sampling
from bias.plugins.metrics.bbq import Bbq
from fixtures.bbq_peers import (
    euroeval_scores_reference,
    helm_scores_reference,
    lm_eval_reference,
    lm_eval_scores_reference,
    mbbq_reference,
    mbbq_scores_reference,
    textbook_scores,
)

LETTERS = ("A", "B", "C")


class Replier(Embedder):
    """A model that answers each prompt with the reply `script(variant, question, sample)` gives."""

    name, summary, location = "replier", "scripted replies", "-"
    capabilities = frozenset({Capability.GENERATION})

    def __init__(self, data, prompts, script):
        self.script = script
        self.asked: list[int] = []
        self.by_prompt = {}
        for v in prompts.variants:
            for i, q in enumerate(data.items):
                self.by_prompt[v.render(q.context, q.question, q.answers)] = (v.name, i)

    def generate(self, requests, sampling=None):
        sampling = (sampling or Sampling()).over(Sampling())
        out = []
        for r in requests:
            variant, i = self.by_prompt[r.messages[-1].content]
            self.asked.append(i)
            out.append(
                Generations(
                    tuple(Reply(self.script(variant, i, s)) for s in range(sampling.samples)),
                    sampling,
                    "script",
                )
            )
        return out


def pick(*parts, n):
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest(), 16) % n


@pytest.fixture(scope="module")
def english():
    return registry.load_wordset("en/bbq-sample"), registry.load_wordset("en/bbq-prompts")


def run(data, prompts, script, **params):
    metric = Bbq(bootstrap=200, **params)
    return metric.compute(Replier(data, prompts, script), data, seed=3, inputs={"prompts": prompts})


def intended(variant, i, sample=0):
    """The answer the script means for a reply: 0-2, or None (gibberish), or "refusal"."""
    return [0, 1, 2, 1, 0, None, "refusal"][pick(variant, i, sample, n=7)]


def letter_reply(variant, i, sample=0):
    meant = intended(variant, i, sample)
    if meant is None:
        return "Qwx zzv"
    if meant == "refusal":
        return "I'm sorry, but I can't help with that."
    return [f"({LETTERS[meant]})", f"The answer is {LETTERS[meant]}.", f"{LETTERS[meant]}) ..."][
        pick(variant, i, "form", n=3)
    ]


def pooled(data, prompts, per):
    """Items and values pooled over the variants, as the metric pools them."""
    items, values = [], []
    for v in prompts.variants:
        for i, q in enumerate(data.items):
            items.append(q)
            values.append(per(v.name, i, q))
    return items, values


def close(found, expected, keys):
    for key in keys:
        e = expected[key]
        assert (found[key] is None and (e is None or math.isnan(e))) or found[key] == pytest.approx(
            e, abs=1e-12
        ), key


def test_default_scores_are_the_textbook_ones_over_answered_replies(english):
    data, prompts = english
    result = run(data, prompts, lambda v, i, s: letter_reply(v, i))
    items, meant = pooled(data, prompts, lambda v, i, q: intended(v, i))
    predictions = [m if isinstance(m, int) else None for m in meant]
    expected = textbook_scores(items, predictions)
    assert result.status == "ok"
    close(
        result.figures,
        expected,
        ["s_amb", "s_dis", "bias_a", "bias_d", "accuracy_ambiguous", "accuracy_disambiguated"],
    )
    rates = result.figures["rates"]
    assert rates["replies"] == len(items)
    assert rates["refused"] == meant.count("refusal") and rates["unparsed"] == meant.count(None)
    assert rates["unparsed_rate"] == pytest.approx(meant.count(None) / len(items))
    assert rates["unparsed_rate_low"] < rates["unparsed_rate"] < rates["unparsed_rate_high"]
    assert result.effect_size == result.figures["s_amb"]
    assert result.figures["ci_low"] <= result.effect_size <= result.figures["ci_high"]
    assert any("unparsed" in w for w in result.warnings)
    rows = result.figures["predictions"]
    assert len(rows) == len(items) and {r["status"] for r in rows} == {
        "answered",
        "unparsed",
        "refused",
    }
    assert rows[0]["reply"] == letter_reply(prompts.variants[0].name, 0)
    for v in prompts.variants:  # each variant's own scores, over its own replies
        own_items, own = zip(
            *[
                (q, m)
                for q, m, name in zip(
                    items, predictions, [x for x in prompts.variants for _ in data.items]
                )
                if name.name == v.name
            ]
        )
        close(
            result.figures["per_variant"][v.name],
            textbook_scores(own_items, own),
            ["s_amb", "bias_a"],
        )


def test_a_single_variant_is_asked_alone(english):
    data, prompts = english
    name = prompts.variants[1].name
    result = run(data, prompts, lambda v, i, s: letter_reply(v, i), variant=name, headline="bias-d")
    own = [intended(name, i) for i in range(len(data.items))]
    expected = textbook_scores(data.items, [m if isinstance(m, int) else None for m in own])
    assert result.effect_size == pytest.approx(expected["bias_d"]) and result.convention[
        "variants"
    ] == [name]
    refused = run(data, prompts, lambda v, i, s: "(A)", variant="no-such-variant")
    assert refused.status == "refused" and "no prompt variant 'no-such-variant'" in refused.reason


def test_samples_count_each_reply_and_the_majority_one_answer(english):
    data, prompts = english
    replies = {0: "(A)", 1: "(A)", 2: "(B)"}  # two of three samples say A

    def script(v, i, s):
        return (
            replies[s] if i % 2 == 0 else ["(C)", "(B)", "Qwx"][s]
        )  # odd questions: a tie between B and C

    result = run(
        data, prompts, script, samples=3, temperature=0.7, variant=prompts.variants[0].name
    )
    items = list(data.items)
    per_sample_items = [q for q in items for _ in range(3)]
    per_sample = [
        {"(A)": 0, "(B)": 1, "(C)": 2}.get(script("", i, s))
        for i in range(len(items))
        for s in range(3)
    ]
    close(
        result.figures["per_sample"],
        textbook_scores(per_sample_items, per_sample),
        ["s_amb", "bias_a", "accuracy_ambiguous"],
    )
    majority = [0 if i % 2 == 0 else None for i in range(len(items))]
    close(
        result.figures["majority"], textbook_scores(items, majority), ["s_amb", "s_dis", "bias_a"]
    )
    assert result.sizes["samples"] == 3 and result.figures["rates"]["replies"] == 3 * len(items)
    voted = run(
        data,
        prompts,
        script,
        samples=3,
        temperature=0.7,
        variant=prompts.variants[0].name,
        aggregate="majority",
    )
    assert voted.effect_size == pytest.approx(result.figures["majority"]["s_amb"])


def test_lm_eval_preset_equals_its_loop_on_the_same_replies(english):
    data, prompts = english
    pool = [
        "(A)",
        "Not enough information",
        "he was the one",
        "grandfather",
        "I don't know",
        "",
        "Unknown!",
        "the man",
        "The woman.",
        "Cannot be determined",
        "Qwx",
    ]

    def script(v, i, s):
        q = data.items[i]
        own = [a for k, a in enumerate(q.answers) if k != q.unknown]
        return (pool + own)[pick(v, i, n=len(pool) + 2)]

    result = run(data, prompts, script, preset="lm-eval")
    rules = prompts.rules
    unknown_all = list(rules.unknown_answers) + [
        p for p in rules.unknown if p not in rules.unknown_answers
    ]

    def lm_answer(v, i, q):
        choices = [a for k, a in enumerate(q.answers) if k != q.unknown] + list(
            rules.unknown_answers
        )
        return lm_eval_reference(choices, unknown_all, script(v, i, 0))

    items, answers = pooled(data, prompts, lm_answer)
    expected = lm_eval_scores_reference(items, answers)
    close(
        result.figures, expected, ["s_amb", "s_dis", "accuracy_ambiguous", "accuracy_disambiguated"]
    )
    assert result.convention["preset"] == "lm-eval"


def test_helm_preset_equals_its_loop_on_the_same_replies(english):
    data, prompts = english
    pool = ["A", "B", "C", " B ", "(A)", "", "The answer is C", "c"]
    script = lambda v, i, s: pool[pick(v, i, n=len(pool))]  # noqa: E731
    result = run(data, prompts, script, preset="helm")
    items, texts = pooled(data, prompts, lambda v, i, q: script(v, i, 0))
    expected = helm_scores_reference(items, texts)
    close(result.figures, expected, ["s_amb", "s_dis", "accuracy"])


def test_euroeval_preset_equals_its_loop_on_the_same_answers(english):
    data, prompts = english
    result = run(
        data,
        prompts,
        lambda v, i, s: letter_reply(v, i),
        preset="euroeval",
        headline="adjusted-accuracy",
    )
    items, meant = pooled(data, prompts, lambda v, i, q: intended(v, i))
    expected = euroeval_scores_reference(items, [m if isinstance(m, int) else None for m in meant])
    close(result.figures, expected, ["bias_a", "accuracy_ambiguous", "bias_adjusted_accuracy"])
    assert result.effect_size == pytest.approx(expected["bias_adjusted_accuracy"])
    assert "s_dis" not in result.figures  # ambiguous questions only, as EuroEval
    no_s_amb = run(data, prompts, lambda v, i, s: letter_reply(v, i), preset="euroeval")
    assert no_s_amb.status == "refused" and "gives no s_AMB" in no_s_amb.reason


def test_mbbq_preset_equals_its_loop_on_the_same_replies(english):
    from bias.core.bbq.conventions import letter_forms

    data, prompts = english
    pool = [
        "(A)",
        "B.",
        "The answer is C",
        "I cannot answer this question.",
        "Qwx",
        "",
        "(A) or (B) or (C)",
        "It cannot be determined.",
        "c",
    ]

    def script(v, i, s):
        q = data.items[i]
        return (pool + list(q.answers))[pick(v, i, n=len(pool) + 3)]

    result = run(data, prompts, script, preset="mbbq", headline="bias-a")
    rules = prompts.rules
    forms = [letter_forms(x) for x in LETTERS]

    def cased(phrases):
        return list(dict.fromkeys(f for p in phrases for f in (p, p[:1].upper() + p[1:])))

    def detected(v, i, q):
        found = mbbq_reference(
            script(v, i, 0),
            list(q.answers),
            q.unknown,
            *forms,
            cased(rules.answer_before),
            cased(rules.answer_after),
            cased([*rules.unknown, *rules.refusal]),
        )
        return None if found in (None, "all") else int(found)

    items, answers = pooled(data, prompts, detected)
    expected = mbbq_scores_reference(items, answers)
    close(result.figures, expected, ["bias_a", "bias_d"])
    assert result.effect_size == pytest.approx(expected["bias_a"])


def test_every_reply_unparsed_refuses_the_result_with_the_rates(english):
    data, prompts = english
    result = run(data, prompts, lambda v, i, s: "Qwx")
    ambiguous = len(prompts.variants) * sum(q.ambiguous for q in data.items)
    assert result.status == "refused" and (
        f"s_AMB is undefined: no answer to count (0 of {ambiguous} replies to the ambiguous "
        f"questions answered: {ambiguous} not read as any option)" in result.reason
    ), result.reason
    assert result.figures["rates"]["unparsed_rate"] == 1.0


def test_every_reply_a_refusal_or_empty_says_so_in_the_reason(english):
    """A model that declined every question must not read as one whose replies were unparsed."""
    data, prompts = english
    replies = ["I must decline to answer that.", "", "Qwx"]
    result = run(data, prompts, lambda v, i, s: replies[i % 3], headline="bias-d")
    # each disambiguated question's reply (Bias_D reads those), asked in every variant
    kinds = [i % 3 for i, q in enumerate(data.items) if not q.ambiguous]
    each = len(prompts.variants)
    refused, empty, other = (each * kinds.count(k) for k in (0, 1, 2))
    assert min(refused, empty, other) > 0
    assert result.status == "refused" and (
        f"Bias_D is undefined: no answer to count (0 of {refused + empty + other} replies to the "
        f"disambiguated questions answered: {refused} refused, {empty} empty, "
        f"{other} not read as any option)" in result.reason
    ), result.reason


def test_an_undefined_headline_says_why_when_replies_were_answered(english):
    """The reason reads the answers the headline reads: tied majority votes, or no question of the
    headline's kind in the run, are not "no answer" among replies that were all answered."""
    data, prompts = english
    # two samples a question, A then B: every majority vote ties
    result = Bbq(bootstrap=0, samples=2, temperature=1.0, aggregate="majority").compute(
        Replier(data, prompts, lambda v, i, s: "(A)" if s == 0 else "(B)"),
        data,
        seed=3,
        inputs={"prompts": prompts},
    )
    votes = len(prompts.variants) * sum(q.ambiguous for q in data.items)
    assert result.status == "refused" and (
        f"s_AMB is undefined: no answer to count (0 of {votes} majority answers to the ambiguous "
        f"questions answered: {votes} not read as any option) (a tie between answers counts as "
        "unparsed)" in result.reason
    ), result.reason
    # only ambiguous questions asked, and the headline reads the disambiguated ones
    only = attrs.evolve(data, items=tuple(q for q in data.items if q.ambiguous))
    result = run(only, prompts, lambda v, i, s: "(A)", headline="disambiguated")
    assert result.status == "refused"
    assert "s_DIS is undefined: no disambiguated question was asked in this run" in result.reason


def test_intervals_resample_questions_and_hold_the_estimate(english):
    data, prompts = english
    result = run(data, prompts, lambda v, i, s: letter_reply(v, i), headline="bias-a")
    f = result.figures
    for key in ("s_amb", "s_dis", "bias_a", "bias_d"):
        assert f[f"{key}_low"] <= f[key] <= f[f"{key}_high"], key
    again = run(data, prompts, lambda v, i, s: letter_reply(v, i), headline="bias-a")
    assert again.figures["bias_a_low"] == f["bias_a_low"]  # seeded
    assert np.isfinite(f["ci_low"]) and f["ci_low"] == f["bias_a_low"]


def test_the_prompt_variant_is_a_dimension_of_the_robustness_curves(english):
    from bias.core.reports import build
    from bias.core.reports.robustness import curves

    data, prompts = english
    results = []
    for v in prompts.variants[:3]:
        r = run(data, prompts, lambda name, i, s: letter_reply(name, i), variant=v.name)
        results.append(attrs.evolve(r, key=v.name))
    found = curves(build(results, family="run"))
    assert len(found) == 1 and found[0].n == 3 and found[0].dimensions == ["variant"]
    assert sorted(s.choices["variant"] for s in found[0].specifications) == sorted(
        v.name for v in prompts.variants[:3]
    )


def test_the_breakdown_says_how_the_answers_were_got_in_every_report(english, tmp_path):
    """A sampled run's settings were in results.jsonl alone: the breakdown's caption says them."""
    from bias.core.reports import build
    from bias.core.reports.html import to_html
    from bias.core.reports.tables import to_markdown

    data, prompts = english
    metric = Bbq(bootstrap=0, samples=3, temperature=0.7, max_tokens=8)
    result = metric.compute(Replier(data, prompts, lambda v, i, s: letter_reply(v, i, s)), data, seed=5, inputs={"prompts": prompts})
    result = attrs.evolve(result, key="k", model="chat:m", wordset="en/bbq-sample", metric="bbq")
    caption = (
        "Answers written by the model: 3 replies a prompt at temperature 0.7, top_p 1 (at most 8 tokens, "
        "seed 5 and up); every reply counted (aggregate=samples; the majority answers' scores are in "
        "results.jsonl, figures.majority)."
    )
    assert result.figures["breakdown"]["caption"] == caption
    report = build([result])
    assert caption in to_markdown(report)
    assert caption.replace("'", "&#x27;") in to_html(report, tmp_path)
    one = Bbq(bootstrap=0, samples=1, temperature=0.7, max_tokens=8).compute(
        Replier(data, prompts, lambda v, i, s: letter_reply(v, i)), data, seed=5, inputs={"prompts": prompts}
    )  # one sampled reply is not greedy
    assert one.figures["breakdown"]["caption"] == (
        "Answers written by the model: one reply a prompt at temperature 0.7, top_p 1 (at most 8 tokens, seed 5)."
    )
    greedy = run(data, prompts, lambda v, i, s: letter_reply(v, i))
    assert greedy.figures["breakdown"]["caption"].startswith("Answers written by the model: one reply a prompt, greedy")
