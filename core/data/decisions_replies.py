"""What a model answered to each decisions prompt, read from its log-probabilities or from replies
it wrote: the log-odds of yes that the mixed model takes, the selection that rates are made of, and
the yes/no decision that McNemar's test pairs. Replies are parsed in the word set's language
(`bias.core.data.decisions.parse_answer`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.data.decisions import Decisions, parse_answer


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
            "share_yes": float(share[i]),
            "logit_yes": float(value[i]),
            "decision": "yes" if yes[i] > no[i] else "no",
            "first_reply": replies[i][0] if replies[i] else "",
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


__all__ = ["Decided", "sampled_decisions"]
