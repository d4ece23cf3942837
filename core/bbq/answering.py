"""A BBQ result from answers read off a model, in the language's prompt variants: what `bbq`
computes when the model writes its answers (`mode = "generate"`), and when a preset scores its
peer's own continuations by log-likelihood (lm-eval's 12 choices, EuroEval's a/b/c labels).

The metric hands over its settings (`params`: the bbq parameters) and the result's shared fields;
this module asks the model, reads the answers (`conventions.reader`), scores them
(`answers.Scoring`) and builds the Result: the headline with its interval, every score overall, per
variant, per category and by majority of samples, the unparsed and refusal rates, and one row per
reply for the per-item file."""

from __future__ import annotations

from typing import Any

import numpy as np

from bias.core.bbq.answers import (
    HEADLINES,
    LABELS,
    Answered,
    Scoring,
    breakdown,
    prediction_rows,
    rates,
)
from bias.core.bbq.conventions import QuestionFacts, loglik_choices, reader
from bias.core.bbq.extraction import ANSWERED, Coded
from bias.core.bbq.prompts import BbqPrompts
from bias.core.generation import GenerationRequest, Sampling
from bias.core.interfaces import Embedder
from bias.core.lm_requests import ChoiceRequest
from bias.core.model import OK, REFUSED, Result
from bias.core.precision import settle_choices
from bias.core.data.bias_questions import fill

GENERATE, LOGLIK = "generate", "loglik"
NOTES = {
    "": "answers read by the language's rules (labels, option texts, its answer, unknown and "
    "refusal phrases); "
    "unparsed replies and refusals left out of every score and reported as rates",
    "lm-eval": "lm-evaluation-harness: an unparsed reply is answer -1, scored wrong and "
    "counted among "
    "the 'unknown' answers; "
    "a bias ratio with no biased answer is 0",
    "helm": "HELM BBQMetric: the stripped reply must equal an option's letter; anything else is "
    "wrong and non-unknown; "
    "empty replies dropped; s_AMB's factor is 1 - the accuracy over all questions; 0/0 is 0",
    "euroeval": "EuroEval multiple-choice-stereotype-bias: ambiguous questions only; the "
    "stereotyped "
    "group's answer counts as "
    "biased whatever the question's polarity; an unparsed reply counts in n; bias-adjusted "
    "accuracy "
    "max(0, accuracy - |Bias_A|)",
    "mbbq": "MBBQ: answers detected in MBBQ's order (refusal phrases read as unknown), scored +1 / "
    "-1 / 0; undetected "
    "replies left out",
}


# The questions each headline reads: ambiguous contexts, disambiguated ones, or all of them.
_READS = {"s_amb": True, "bias_a": True, "s_dis": False, "bias_d": False}


def _undefined(
    key: str, counts: np.ndarray, facts: QuestionFacts, votes: bool, level: float
) -> str:
    """Why a headline is undefined, from the answers it reads (the majority votes or every reply,
    of the questions of its kind): none of its kind was asked, none of them answered, or the
    answers leave it undefined. A count over every reply said "no answer to count (40 of 40
    replies answered)" when the votes all tied or no disambiguated question was in the run."""
    label = LABELS[key]
    kind = _READS.get(key)
    rows = np.ones(len(facts.ambiguous), dtype=bool) if kind is None else facts.ambiguous == kind
    what = "" if kind is None else ("ambiguous " if kind else "disambiguated ")
    if not rows.any():
        return f"{label} is undefined: no {what}question was asked in this run"
    rate = rates(counts[rows], level)
    unit = "majority answers" if votes else "replies"
    told = f"{rate['answered']} of {rate['replies']} {unit} to the {what}questions answered"
    if rate["answered"]:
        return f"{label} is undefined for these answers ({told})"
    tied = " (a tie between answers counts as unparsed)" if votes else ""
    return f"{label} is undefined: no answer to count ({told}{_unanswered(rate)}){tied}"


def _caption(mode: str, how: dict[str, Any], samples: int, params: dict[str, Any]) -> str:
    """How the answers in the breakdown were got, in words (the report's tables show only scores: a
    sampled run's settings were in results.jsonl alone)."""
    if mode != GENERATE:
        return (
            f"Answers: the option the model gives the highest log-likelihood ({params['decide']})."
        )
    s = how.get("sampling") or {}
    told = f"at most {s.get('max_tokens')} tokens, seed {s.get('seed')}"
    if not s.get("temperature"):
        return f"Answers written by the model: one reply a prompt, greedy ({told})."
    at = f"at temperature {s.get('temperature'):g}, top_p {s.get('top_p'):g}"
    if samples == 1:
        return f"Answers written by the model: one reply a prompt {at} ({told})."
    counted = (
        "each question's majority answer counted (aggregate=majority)"
        if params["aggregate"] == "majority"
        else "every reply counted (aggregate=samples; the majority answers' scores are in "
        "results.jsonl, figures.majority)"
    )
    return (
        f"Answers written by the model: {samples} replies a prompt {at} ({told} and up); {counted}."
    )


def _unanswered(rate: dict[str, Any]) -> str:
    """What the replies that gave no answer were: a model that refused every question must not read
    as one whose replies could not be parsed."""
    kinds = [
        (rate["refused"], "refused"),
        (rate["empty"], "empty"),
        (rate["unparsed"] - rate["empty"], "not read as any option"),
    ]
    said = [f"{n:,} {what}" for n, what in kinds if n]
    return f": {', '.join(said)}" if said else ""


def _variants(prompts: BbqPrompts, wanted: str) -> list[Any]:
    if not wanted:
        return list(prompts.variants)
    found = prompts.variant(wanted)
    return [found] if found is not None else []


def _generated(
    embedder: Embedder,
    data: Any,
    variants: list[Any],
    prompts: BbqPrompts,
    params: dict[str, Any],
    sampling: Sampling,
) -> tuple[Answered, list[list[list[str]]], dict[str, Any]]:
    requests = [
        GenerationRequest.of(v.render(q.context, q.question, q.answers), v.system or None)
        for v in variants
        for q in data.items
    ]
    found = embedder.generate(requests, sampling)
    read = reader(params["preset"], prompts.letters, prompts.rules)
    n = len(data.items)
    codes, texts = [], []
    for k in range(len(variants)):
        gens = found[k * n : (k + 1) * n]
        codes.append(tuple(tuple(read(r, q) for r in g.replies) for g, q in zip(gens, data.items)))
        texts.append([list(g.texts) for g in gens])
    first = found[0] if found else None
    how = {
        "prompt_to_model": first.context if first else "",
        "sampling": first.sampling.as_dict() if first else {},
    }
    return Answered(tuple(v.name for v in variants), tuple(codes)), texts, how


def _scored(
    embedder: Embedder, data: Any, variants: list[Any], prompts: BbqPrompts, params: dict[str, Any]
) -> tuple[Answered, list[list[list[str]]], dict[str, Any]]:
    requests, stands = [], []
    for v in variants:
        for q in data.items:
            choices, meaning = loglik_choices(params["preset"], q, prompts.letters, prompts.rules)
            requests.append(
                ChoiceRequest(
                    v.render(q.context, q.question, q.answers),
                    tuple(fill(params["answer_template"], answer=c) for c in choices),
                )
            )
            stands.append((choices, meaning))
    scored = embedder.choice_log_probs(requests)
    # a reduced precision's close calls decided in float32
    scored, precision = settle_choices(embedder, requests, scored, summed=params["decide"] == "sum")
    codes: list[list[tuple[Coded, ...]]] = [[] for _ in variants]
    texts: list[list[list[str]]] = [[] for _ in variants]
    n = len(data.items)
    for k, (s, (choices, meaning)) in enumerate(zip(scored, stands)):
        values = [
            float(np.sum(lp)) if params["decide"] == "sum" else float(np.mean(lp))
            for lp in s.log_probs
        ]
        best = int(np.argmax(values)) if all(np.isfinite(values)) else None
        code = (
            Coded(meaning[best], ANSWERED, "log-likelihood")
            if best is not None
            else Coded(None, "unparsed", "not finite")
        )
        codes[k // n].append((code,))
        texts[k // n].append([choices[best] if best is not None else ""])
    how = {
        "prompt_to_model": scored[0].context if scored else "",
        "continuations": "answer_template around each choice",
        "decide": params["decide"],
        **precision,
    }
    return Answered(tuple(v.name for v in variants), tuple(tuple(c) for c in codes)), texts, how


def answer_result(
    embedder: Embedder,
    data: Any,
    prompts: BbqPrompts | None,
    params: dict[str, Any],
    mode: str,
    seed: int,
    base: dict[str, Any],
    sampling: Sampling | None = None,
) -> Result:
    """The bbq Result from the model's answers (see the module's docstring)."""
    if prompts is None:
        return Result(
            status=REFUSED,
            reason=f"no prompt variants for language {data.meta.language!r} (word set "
            f"{data.meta.language}/bbq-prompts): give a bbq-prompts file with --param prompts=FILE",
            **base,
        )
    variants = _variants(prompts, params["variant"])
    if not variants:
        names = ", ".join(v.name for v in prompts.variants)
        return Result(
            status=REFUSED,
            reason=f"{prompts.name} has no prompt variant {params['variant']!r} (it has {names})",
            **base,
        )
    if mode == GENERATE:
        answered, texts, how = _generated(
            embedder, data, variants, prompts, params, sampling or Sampling(seed=seed)
        )
    else:
        answered, texts, how = _scored(embedder, data, variants, prompts, params)
    facts = QuestionFacts.of(data.items)
    categories = data.categories()
    of_category = np.array([categories.index(q.category) for q in data.items])
    scoring = Scoring(
        params["preset"],
        facts,
        categories,
        of_category,
        params["bootstrap"],
        params["confidence"],
        seed,
    )
    per_sample = {name: answered.counts(v) for v, name in enumerate(answered.variants)}
    found = scoring.figures(scoring.sets(per_sample))
    samples = max(len(c) for row in answered.codes for c in row)
    majority = None
    if samples > 1:
        by_vote = {
            name: answered.counts(v, majority=True) for v, name in enumerate(answered.variants)
        }
        majority = scoring.figures(
            {k: s for k, s in scoring.sets(by_vote).items() if not k.startswith("category:")}
        )
    chosen = majority if params["aggregate"] == "majority" and majority is not None else found
    key = HEADLINES[params["headline"]]
    value = chosen["all"].get(key)
    pooled = sum(per_sample.values())
    rate = rates(pooled, params["confidence"])
    if value is None:
        has = ", ".join(k for k, v in HEADLINES.items() if v in chosen["all"])
        by_vote_used = chosen is majority
        used = sum(by_vote.values()) if by_vote_used else pooled
        why = (
            f"the {params['preset'] or 'default'} convention gives no {LABELS[key]} "
            f"(headline one of: {has})"
            if key not in chosen["all"]
            else _undefined(key, used, facts, by_vote_used, params["confidence"])
        )
        # every reply and how it was read is kept: it is what tells a user why nothing counted
        # (a template the model ignores, another language, replies cut by max_tokens)
        kept = {
            "rates": rate,
            "predictions": prediction_rows(data, answered, texts, prompts.letters),
        }
        return Result(status=REFUSED, reason=why, figures=kept, **base)
    figures: dict[str, Any] = dict(chosen["all"])
    if f"{key}_low" in figures:
        figures.update(
            {
                "ci_low": figures[f"{key}_low"],
                "ci_high": figures[f"{key}_high"],
                "ci_level": params["confidence"],
                "ci_method": "percentile",
                "ci_resamples": params["bootstrap"],
                "ci_resampling": "questions resampled within each category and context, with "
                "all their "
                "replies",
            }
        )
    figures["rates"] = rate
    figures["per_variant"] = {
        name: {**found.get(f"variant:{name}", found["all"]), **rates(c, params["confidence"])}
        for name, c in per_sample.items()
    }
    figures["per_category"] = {
        k.split(":", 1)[1]: v for k, v in found.items() if k.startswith("category:")
    }
    if majority is not None:
        figures["per_sample"] = found["all"]
        figures["majority"] = majority["all"]
    counts = {
        "all": len(data.items),
        **{f"variant:{n}": len(data.items) for n in per_sample},
        **{f"category:{c}": int((of_category == i).sum()) for i, c in enumerate(categories)},
    }
    shares = {
        name: rates(c if m is None else c[m], params["confidence"])
        for name, (c, m) in scoring.sets(per_sample).items()
    }
    figures["breakdown"] = {
        **breakdown(found, counts, shares),
        "caption": _caption(mode, how, samples, params),
    }
    figures["predictions"] = prediction_rows(data, answered, texts, prompts.letters)
    warnings = []
    asked_in, read_in = data.meta.language, prompts.meta.language
    if asked_in and read_in and asked_in != read_in:
        warnings.append(
            f"the questions are in {asked_in!r} but the prompts and reading rules ({prompts.name}) "
            f"are in {read_in!r}: replies in {asked_in!r} are read by {read_in!r} phrases"
        )
    if rate["unparsed"] or rate["refused"]:
        left = (
            "left out of the scores"
            if params["preset"] in ("", "mbbq")
            else f"counted as the {params['preset']} convention does"
        )
        warnings.append(
            f"{rate['unparsed']} of {rate['replies']} replies were unparsed and "
            f"{rate['refused']} refusals; {left}"
        )
    convention = {
        "mode": mode,
        "preset": params["preset"] or "none",
        "reading": NOTES[params["preset"]],
        "prompts": prompts.name,
        "variants": list(answered.variants),
        "letters": list(prompts.letters),
        "samples": samples,
        "aggregate": params["aggregate"],
        "value": LABELS[key],
        **how,
        "bias_a": "(n_biased - n_counter-biased) / n over the ambiguous questions (Jin et al. "
        "2024, "
        "KoBBQ; MBBQ)",
        "bias_d": "accuracy where the right answer is the biased one - accuracy where it is the "
        "counter-biased one, "
        "over the disambiguated questions",
        "interval": f"{params['confidence']:.0%} percentile bootstrap, {params['bootstrap']:,} "
        "resamples of the questions within "
        f"each (category, context) stratum, seed {seed}"
        if params["bootstrap"]
        else "none (bootstrap = 0)",
    }
    sizes = {
        "questions": len(data.items),
        "variants": len(answered.variants),
        "samples": samples,
        "replies": rate["replies"],
        "ambiguous": int(facts.ambiguous.sum()),
        "disambiguated": int((~facts.ambiguous).sum()),
        "categories": len(categories),
    }
    return Result(
        status=OK,
        effect_size=value,
        p_value=None,
        figures=figures,
        convention=convention,
        sizes=sizes,
        warnings=warnings,
        **base,
    )


__all__ = ["GENERATE", "LOGLIK", "answer_result"]
