"""LPBS's arithmetic on its sentences (Kurita et al. 2019; the BIAS Detection Framework's variant):
the stimuli scored (the framework's singular targets, each listed copy with `duplicates = keep`),
the sentences' slots and the masked inputs read there, and the scores from the log-probabilities:
Kurita's logsumexp over the target sets, the framework's i-th target pairs, each attribute's mean
per template and the WEAT-like score of each target. Kept apart from the `lpbs` metric, which asks
the model, so that the arithmetic can be checked on planted log-probabilities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from scipy.special import logsumexp

from bias.core.data.lpbs_tests import ATTRIBUTES, TARGETS, LpbsTest
from bias.core.interfaces import MaskedRequest, Tokens
from bias.core.model import WordList


@attrs.frozen
class LpbsItem:
    """One rendered sentence: which template, target and attribute, and where their slots are."""

    template: int
    t_key: str
    target: str
    a_key: str
    attribute: str
    text: str
    t_pos: tuple[int, ...]
    a_pos: tuple[int, ...]
    tokens: Tokens


@attrs.frozen(eq=False)  # holds arrays: compared by identity
class LpbsScores:
    """What the scoring of a test's sentences found, for the result."""

    sentences: int
    log_tgt: np.ndarray
    log_prior: np.ndarray
    attribute_scores: dict[str, dict[str, float]]
    target_scores: dict[str, dict[str, float]]
    # template -> group scores of its A and B attributes
    template_rows: dict[int, dict[str, list[float]]]


def slot_positions(tokens: Tokens, span: tuple[int, int]) -> tuple[int, ...]:
    """The non-special tokens whose characters overlap the slot's span [start, end)."""
    start, end = span
    return tuple(
        i
        for i, ((a, b), s) in enumerate(zip(tokens.offsets, tokens.special))
        if not s and b > a and a < end and b > start
    )


def multi_token_words(items: Sequence[LpbsItem]) -> dict[str, list[str]]:
    """The words of each set (X, Y, A, B) that are several sub-tokens in at least one sentence."""
    pieces: dict[str, dict[str, int]] = {key: {} for key in ("X", "Y", "A", "B")}
    for it in items:
        pieces[it.t_key][it.target] = max(pieces[it.t_key].get(it.target, 0), len(it.t_pos))
        pieces[it.a_key][it.attribute] = max(pieces[it.a_key].get(it.attribute, 0), len(it.a_pos))
    return {key: [w for w, n in found.items() if n > 1] for key, found in pieces.items()}


def number(features: dict[str, str]) -> str:
    """A word's grammatical number; a word without one counts as singular."""
    return features.get("number", "singular")


def stimuli(data: LpbsTest, target_number: str, duplicates: str) -> LpbsTest:
    """The test as scored: each listed copy of a stimulus with `duplicates = keep`, and only the
    singular targets with `target_number = singular`."""
    sets = data.sets()
    if target_number == "singular":
        # by entry, not by word: a word listed as singular and as plural keeps its singular entry
        # only
        for key in TARGETS:
            sets[key] = sets[key].with_entries(
                [(w, f) for w, f in sets[key].entries() if number(f) == "singular"]
            )
    if duplicates == "keep":
        sets = {key: wl.with_duplicates() for key, wl in sets.items()}
    return attrs.evolve(data, **sets)


def entries(wl: WordList, duplicates: str) -> list[tuple[str, dict[str, str]]]:
    """The (word, features) a set's sentences are rendered for: each listed entry with `duplicates =
    keep`, else each distinct one (a word that is singular and plural has two)."""
    if duplicates == "keep":
        return wl.entries()
    return list({(w, tuple(sorted(f.items()))): (w, f) for w, f in wl.entries()}.values())


def listed(scores: dict[str, dict[str, float]], data: LpbsTest, key: str) -> np.ndarray:
    """The scores of a set's words in its order, a word listed twice counted twice (`duplicates =
    keep`)."""
    found = scores[key]
    return np.array([found[w] for w in getattr(data, key).words if w in found], dtype=np.float64)


def refusal(
    data: LpbsTest, lost: dict[str, list[str]], compared: Sequence[str], threshold: float
) -> str | None:
    """Why the test is refused after dropping multi-token words, if it is: the sets `compared` need
    2 words left, the other two 1, and no set may lose more than `threshold` of its words."""
    for key, wl in data.sets().items():
        n = len(wl.words)
        gone = sum(w in lost.get(key, []) for w in wl.words)  # each listed copy
        needed = 2 if key in compared else 1
        if gone and (gone / n > threshold or n - gone < needed):  # a word lost: n > 0
            return (
                f"set {key} lost {gone} of {n} words as multi-token ({gone / n:.0%}; at most "
                f"{threshold:.0%} allowed, and {needed} word{'s' if needed > 1 else ''} needed): "
                f"{', '.join(lost[key][:8])}"
            )
        if n < needed:
            return f"set {key} has {n} word{'s' if n != 1 else ''}; {needed} needed"
    return None


def _collapse(ids: Sequence[int], positions: Sequence[int]) -> tuple[list[int], int]:
    """The ids with a slot's sub-tokens replaced by its first piece alone, and that piece's
    position."""
    first, last = positions[0], positions[-1]
    return list(ids[:first]) + [ids[first]] + list(ids[last + 1 :]), first


def one_slot_each(it: LpbsItem) -> tuple[list[int], int, list[int], int, int]:
    """The sentence with each slot cut to its first piece: the ids with only the target slot cut and
    its position, the ids with both cut and the target's and attribute's positions there."""
    one, t0 = _collapse(it.tokens.ids, it.t_pos)
    both = list(it.tokens.ids)
    # collapse the later slot first so the earlier slot's position stays valid
    for pos in sorted((it.t_pos, it.a_pos), key=lambda p: -p[0]):
        both, _ = _collapse(both, pos)
    t_first = it.t_pos[0] if it.t_pos[0] < it.a_pos[0] else it.t_pos[0] - (len(it.a_pos) - 1)
    a_first = it.a_pos[0] if it.a_pos[0] < it.t_pos[0] else it.a_pos[0] - (len(it.t_pos) - 1)
    return one, t0, both, t_first, a_first


def requests(it: LpbsItem, multi_token: str) -> list[tuple[MaskedRequest, MaskedRequest, int]]:
    """The masked inputs of an item's p_tgt and p_prior, and how many of their first positions are
    the target's. `one-mask` asks once per sub-token of the target, the piece under the one mask
    being what is read there; the model sees one input for them all."""
    if multi_token in ("joint", "reduce"):
        return [
            (
                MaskedRequest(it.tokens.ids, it.t_pos),
                MaskedRequest(it.tokens.ids, it.t_pos + it.a_pos),
                len(it.t_pos),
            )
        ]
    one, t0, both, t_first, a_first = one_slot_each(it)
    pieces = (
        [it.tokens.ids[it.t_pos[0]]]
        if multi_token == "first"
        else [it.tokens.ids[p] for p in it.t_pos]
    )
    out = []
    for piece in pieces:
        one[t0], both[t_first] = piece, piece
        out.append(
            (MaskedRequest(tuple(one), (t0,)), MaskedRequest(tuple(both), (t_first, a_first)), 1)
        )
    return out


def set_scores(
    items: Sequence[LpbsItem], log_tgt: np.ndarray, log_prior: np.ndarray
) -> tuple[dict[str, list[float]], dict[tuple[int, str], float]]:
    """Kurita et al.: per (template, attribute), logsumexp over X minus over Y of log p_tgt, minus
    the same for the prior; the values of each attribute, and its value in each template."""
    groups: dict[tuple[int, str], dict[str, list[int]]] = defaultdict(lambda: {"X": [], "Y": []})
    for i, it in enumerate(items):
        groups[(it.template, it.attribute)][it.t_key].append(i)
    values: dict[str, list[float]] = defaultdict(list)
    per_template: dict[tuple[int, str], float] = {}
    for (template, attribute), members in groups.items():
        if not members["X"] or not members["Y"]:
            continue
        x, y = members["X"], members["Y"]
        value = (logsumexp(log_tgt[x]) - logsumexp(log_tgt[y])) - (
            logsumexp(log_prior[x]) - logsumexp(log_prior[y])
        )
        values[attribute].append(float(value))
        per_template[(template, attribute)] = float(value)
    return values, per_template


def paired_scores(
    data: LpbsTest,
    items: Sequence[LpbsItem],
    log_tgt: np.ndarray,
    log_prior: np.ndarray,
    duplicates: str,
) -> tuple[dict[str, list[float]], dict[tuple[int, str], float]]:
    """The BIAS Detection Framework: asc(x_i, a) - asc(y_i, a) for the i-th targets of X and Y in
    every template that fits both; the values of each attribute (their mean is its score), and its
    value in each template (the mean over the pairs). The i-th target is the file's, among the
    targets of its number (singular unless told): pairs are formed on the lists as listed, and with
    `duplicates = drop` a pair listed twice counts once."""
    asc = log_tgt - log_prior
    index = {(it.template, it.t_key, it.target, it.attribute): i for i, it in enumerate(items)}
    numbered: dict[str, dict[str, list[str]]] = {"X": defaultdict(list), "Y": defaultdict(list)}
    for key in TARGETS:
        for w, f in getattr(data, key).entries():
            numbered[key][number(f)].append(w)
    pairs = [
        pair for kind, xs in numbered["X"].items() for pair in zip(xs, numbered["Y"].get(kind, []))
    ]
    if duplicates == "drop":
        pairs = list(dict.fromkeys(pairs))
    values: dict[str, list[float]] = defaultdict(list)
    per_template: dict[tuple[int, str], float] = {}
    for a in dict.fromkeys(data.A.words + data.B.words):
        for t in range(len(data.templates)):
            found = [
                float(asc[index[(t, "X", x, a)]] - asc[index[(t, "Y", y, a)]])
                for x, y in pairs
                if (t, "X", x, a) in index and (t, "Y", y, a) in index
            ]
            if found:
                values[a].extend(found)
                per_template[(t, a)] = float(np.mean(found))
    return values, per_template


def group_scores(
    data: LpbsTest,
    items: Sequence[LpbsItem],
    log_tgt: np.ndarray,
    log_prior: np.ndarray,
    pairing: str,
    duplicates: str,
) -> LpbsScores:
    """The score of every attribute (`pairing` sets or i-th), its mean per template, and the
    WEAT-like score of every target from its associations."""
    asc = log_tgt - log_prior
    if pairing == "i-th":
        values, per_template = paired_scores(data, items, log_tgt, log_prior, duplicates)
    else:
        values, per_template = set_scores(items, log_tgt, log_prior)
    template_rows: dict[int, dict[str, list[float]]] = defaultdict(lambda: {"A": [], "B": []})
    for a_key in ATTRIBUTES:
        for a in getattr(data, a_key).words:  # each copy a set lists (`duplicates = keep`) counts
            for t in range(len(data.templates)):
                if (t, a) in per_template:
                    template_rows[t][a_key].append(per_template[(t, a)])
    attribute_scores = {
        key: {a: float(np.mean(values[a])) for a in getattr(data, key).words if values.get(a)}
        for key in ATTRIBUTES
    }
    pair_asc: dict[tuple[str, str], list[float]] = defaultdict(list)
    for i, it in enumerate(items):
        pair_asc[(it.target, it.attribute)].append(float(asc[i]))
    target_scores: dict[str, dict[str, float]] = {}
    for key in TARGETS:
        target_scores[key] = {}
        for t in getattr(data, key).words:
            mean_a = [
                np.mean(pair_asc[(t, a)])
                for a in data.A.words
                if a in attribute_scores["A"] and pair_asc.get((t, a))
            ]
            mean_b = [
                np.mean(pair_asc[(t, b)])
                for b in data.B.words
                if b in attribute_scores["B"] and pair_asc.get((t, b))
            ]
            if mean_a and mean_b:
                target_scores[key][t] = float(np.mean(mean_a) - np.mean(mean_b))
    return LpbsScores(
        len(items), log_tgt, log_prior, attribute_scores, target_scores, dict(template_rows)
    )


def template_summary(data: LpbsTest, scores: LpbsScores) -> list[dict[str, Any]]:
    """Per template that scored an attribute: how many group scores, the mean of A's and of B's,
    and their difference."""
    return [
        {
            "template": data.templates[t].text,
            "group_scores": len(rows["A"]) + len(rows["B"]),
            "mean_score_A": float(np.mean(rows["A"])) if rows["A"] else None,
            "mean_score_B": float(np.mean(rows["B"])) if rows["B"] else None,
            "difference": float(np.mean(rows["A"]) - np.mean(rows["B"]))
            if rows["A"] and rows["B"]
            else None,
        }
        for t, rows in sorted(scores.template_rows.items())
    ]


__all__ = [
    "LpbsItem",
    "LpbsScores",
    "entries",
    "group_scores",
    "listed",
    "multi_token_words",
    "number",
    "one_slot_each",
    "paired_scores",
    "refusal",
    "requests",
    "set_scores",
    "slot_positions",
    "stimuli",
    "template_summary",
]
