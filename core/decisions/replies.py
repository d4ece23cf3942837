"""What a model answered to each decisions prompt, read from its log-probabilities or from replies
it wrote: the log-odds of yes that the mixed model takes, the selection that rates are made of, and
the yes/no decision that McNemar's test pairs. Replies are parsed in the word set's language
(`bias.core.data.decisions.parse_answer`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.data.decisions import Decisions, Prompt, parse_answer
from bias.core.generation import CUT, FILTERED, GenerationRequest, Sampling
from bias.core.statistics.decisions import sign_test
from bias.core.statistics.mcnemar import mcnemar_counts


@attrs.frozen
class Decided:
    """What a model answered to each prompt: the log-odds of yes that are modelled, the selection
    (0..1) that rates are made of, and the yes/no decision that McNemar's test pairs."""

    value: np.ndarray
    selected: np.ndarray
    decided: np.ndarray
    context: str = ""  # what the model conditioned the prompt on (its start token)
    kept: np.ndarray | None = None  # prompts with an answer (sampled replies: not all unparsed)


def sampled_decisions(
    replies: Sequence[Sequence[str]], data: Decisions
) -> tuple[Decided, list[dict[str, Any]], list[str]]:
    """Decisions from k sampled replies per prompt, each parsed in the file's language
    (`parse_answer`): the empirical log-odds log((yes + 1/2) / (no + 1/2)) of the parsed replies
    (Cox's, finite when all of them agree) is modelled, the share of yes among them is the
    selection, the majority the decision. A prompt none of whose replies parsed has no answer and is
    left out; the unparsed rate is reported."""
    counts = np.array(
        [[sum(parse_answer(r, data) == w for r in rs) for w in ("yes", "no")] for rs in replies],
        dtype=np.float64,
    ).reshape(-1, 2)
    sizes = np.array([len(rs) for rs in replies], dtype=np.float64)
    yes, no = counts[:, 0], counts[:, 1]
    parsed = yes + no
    kept = parsed > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(kept, yes / parsed, np.nan)
    value = np.log((yes + 0.5) / (no + 0.5))
    rows = [
        {
            "replies": int(sizes[i]),
            "yes": int(yes[i]),
            "no": int(no[i]),
            "unparsed": int(sizes[i] - parsed[i]),
            "share_yes": float(share[i]) if kept[i] else None,
            # a prompt with no parsed reply has no answer (it is left out of every score)
            "logit_yes": float(value[i]) if kept[i] else None,
            "decision": ("yes" if yes[i] > no[i] else "no") if kept[i] else "",
            "first_reply": replies[i][0] if replies[i] else "",
            "all_replies": json.dumps(list(replies[i]), ensure_ascii=False),
        }
        for i in range(len(replies))
    ]
    unparsed = float((sizes - parsed).sum() / max(sizes.sum(), 1.0))
    notes = (
        [
            f"{unparsed:.1%} of the sampled replies named neither answer (unparsed), "
            f"{int((~kept).sum())} prompt(s) had no parsed reply and were left out"
        ]
        if unparsed
        else []
    )
    return Decided(value, np.nan_to_num(share), yes > no, "", kept), rows, notes


def asked_replies(
    embedder: Any, prompts: Sequence[Prompt], sampling: Sampling
) -> tuple[list[list[str]], dict[str, Any]]:
    """Every prompt put to a model that writes (`Embedder.generate`) as one user turn, with
    `sampling` (sample j of a prompt drawn with seed + j): the replies' texts per prompt, and how
    they were asked: the settings resolved, how the model took the messages, and how many replies a
    service held back (content filter, refusal) or cut at max_tokens."""
    found = embedder.generate([GenerationRequest.of(p.text) for p in prompts], sampling)
    replies = [r for g in found for r in g.replies]
    how = {
        "prompt_to_model": found[0].context if found else "",
        "sampling": found[0].sampling.as_dict() if found else sampling.as_dict(),
        "held_back_replies": sum(r.finish == FILTERED or bool(r.refusal) for r in replies),
        "cut_replies": sum(r.finish == CUT for r in replies),
    }
    return [list(g.texts) for g in found], how


def paired_tests(
    data: Decisions, prompts: Sequence[Prompt], decided: Decided, variant: str
) -> dict[str, Any]:
    """Paired tests: each group against the reference (same scenario and gender, the k-th name of
    that gender in one list with the k-th in the other), and women against men within each group
    (same scenario, k-th with k-th). A pair whose other prompt is not among `prompts` (left out for
    want of a parsed reply) is dropped, not shifted onto the next name."""
    rank: dict[tuple[str, str], int] = {}
    for group in data.groups_of(variant):
        seen: dict[str, int] = {}
        for a in group.applicants(variant):
            rank[group.key, a.text] = seen.setdefault(a.gender, 0)
            seen[a.gender] += 1
    index = {
        (
            p.scenario.id,
            p.applicant.group,
            p.applicant.gender,
            rank[p.applicant.group, p.applicant.text],
        ): i
        for i, p in enumerate(prompts)
    }
    genders = list(dict.fromkeys(p.applicant.gender for p in prompts))
    ranks = sorted(set(rank.values()))

    def pairs(first: tuple[str, str], second: tuple[str, str]) -> list[tuple[int, int]]:
        """(group, gender) against (group, gender) in every scenario, k-th with k-th."""
        found = (
            (index.get((s.id, *first, k)), index.get((s.id, *second, k)))
            for s in data.scenarios
            for k in ranks
        )
        return [(a, b) for a, b in found if a is not None and b is not None]

    comparisons: dict[str, list[tuple[int, int]]] = {}
    for group in (g.key for g in data.groups_of(variant) if g.key != data.reference):
        comparisons[f"{group} vs {data.reference}"] = [
            pair for g in genders for pair in pairs((data.reference, g), (group, g))
        ]
    if {"m", "f"} <= set(genders):
        for group in (g.key for g in data.groups_of(variant)):
            comparisons[f"f vs m in {group}"] = pairs((group, "m"), (group, "f"))
    out = {}
    for label, pairs in comparisons.items():
        if not pairs:
            continue
        first, second = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
        # the first yes, the second no
        b = int(np.sum(decided.decided[first] & ~decided.decided[second]))
        c = int(np.sum(~decided.decided[first] & decided.decided[second]))
        statistic, p, method = mcnemar_counts(b, c)
        sign = sign_test(decided.value[second] - decided.value[first])
        out[label] = {
            "pairs": len(pairs),
            "first_only_yes": b,
            "second_only_yes": c,
            "mcnemar_statistic": statistic,
            "mcnemar_p": p,
            "mcnemar_method": method,
            "sign_positive": sign.positive,
            "sign_negative": sign.negative,
            "sign_zero": sign.zero,
            "sign_p": sign.p_value,
            "median_difference": sign.median,
        }
    return out


__all__ = ["Decided", "asked_replies", "paired_tests", "sampled_decisions"]
