"""Finding a test's words in a model: the case vocabulary, the lost-word threshold and its refusal.

Published word lists capitalise names while many vocabularies are lowercased, so how a word is
looked up changes what is found. Every metric that looks words up names its policy with the same
parameter, `case`, and each name in `CASES` means one thing wherever it is accepted; a metric
accepts the names it can honour (a corpus has no "most frequent form", so CEAT takes no `fallback`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bias.core.interfaces import Embedder
from bias.core.model import LOST_THRESHOLD, AssociationTest
from bias.core.params import between, one_of, param

CASES: dict[str, str] = {
    "exact": "words as written",
    "lower": "the test's words lowercased, the model's as they are (for uncased vocabularies such "
    "as GloVe)",
    "fallback": "words as written, lowercased where that form is missing",
    "insensitive": "case ignored on both sides (case-folded comparison)",
}
LOOKUP_CASES = ("exact", "lower", "fallback")  # what a lookup of single words can honour
UNCASED_HINT = "Use lower or fallback for uncased vocabularies such as GloVe."
DUPLICATES = ("drop", "keep")


def case_param(default: str, allowed: Sequence[str], hint: str | None = None) -> Any:
    """The `case` parameter of a metric accepting `allowed` names of `CASES`, with their one meaning
    each."""
    unknown = [c for c in allowed if c not in CASES]
    if unknown or default not in allowed:
        raise ValueError(f"case policies {unknown or [default]} are not in the shared vocabulary")
    described = "; ".join(f"{c}: {CASES[c]}" for c in allowed)
    return param(default, f"case policy ({described})", validator=one_of(tuple(allowed), hint))


def duplicates_param() -> Any:
    """The `duplicates` parameter: what a stimulus listed twice in a set counts for, the same
    wherever a metric declares it (a preset's `duplicates = "keep"` reaches them all)."""
    return param(
        "drop",
        "a stimulus a set lists twice: drop (counted once, reported) or keep (each copy "
        "counts, as the BIAS Detection Framework does)",
        validator=one_of(DUPLICATES),
    )


def lost_threshold_param() -> Any:
    """The `lost_threshold` parameter, the same default, bounds and meaning for every metric."""
    return param(
        LOST_THRESHOLD,
        "refuse a test if a set loses more than this share of its words (not in the model, "
        "or no sentence or context fits them)",
        validator=between(0.0, 1.0),
    )


def too_many_lost(lost: Sequence[str], total: int, threshold: float) -> str | None:
    """Why a set that lost `lost` of its `total` words is refused, as "(25% > 20% allowed): w1, w2",
    or None when the share lost is within `threshold` (a set that loses exactly the threshold is
    kept)."""
    share = len(lost) / total if total else 0.0
    if share > threshold:
        return f"({share:.0%} > {threshold:.0%} allowed): {', '.join(list(lost)[:8])}"
    return None


def lost_word_refusal(
    matrices: Mapping[str, np.ndarray],
    originals: Mapping[str, int],
    lost: Mapping[str, list[str]],
    threshold: float,
    words: Mapping[str, list[str]] | None,
) -> str | None:
    """Why a test cannot be measured on the vectors found: an empty set, a set beyond the lost-word
    threshold, or zero and non-finite vectors (a broken model file); None when it can."""
    for key, m in matrices.items():
        if m.shape[0] == 0:
            return (
                f"every word of set {key} is missing from the model "
                f"({', '.join(lost.get(key, [])[:5])}...)"
                if lost.get(key)
                else f"set {key} is empty"
            )
    for key, n in originals.items():
        why = too_many_lost(lost.get(key, []), n, threshold)
        if why:
            return f"set {key} lost {len(lost[key])} of {n} words {why}"
    for key, m in matrices.items():
        norms = np.linalg.norm(m, axis=1)
        bad = ~np.isfinite(m).all(axis=1) | (norms == 0.0)
        if bad.any():
            names = (
                [words[key][i] for i in np.flatnonzero(bad)]
                if words
                else [str(i) for i in np.flatnonzero(bad)]
            )
            return (
                f"the model gives zero or non-finite vectors for {', '.join(names[:8])} (set "
                f"{key}); check the model file"
            )
    return None


def same_under_case(data: AssociationTest, case: str) -> AssociationTest:
    """The test whose repeats follow the case policy: as written (case-sensitive) for `exact` and
    `fallback`, lowercased for `lower` (two forms the lookup makes one word are one stimulus)."""
    return data.merged(str.lower) if case == "lower" else data


def lookup(
    embedder: Embedder, words: list[str], case: str
) -> tuple[dict[str, np.ndarray], set[str], int]:
    """Vectors by word as written in the test, under a policy of `LOOKUP_CASES`. Returns the
    vectors, the words built from sub-words, and the dimension."""
    query = {w: (w.lower() if case == "lower" else w) for w in words}
    found = embedder.word_vectors(list(dict.fromkeys(query.values())))
    by_form = found.as_dict()
    approx_forms = set(found.approximated)
    dim = found.vectors.shape[1] if found.vectors.ndim == 2 else 0
    if case == "fallback":
        retry = [w for w in words if w not in by_form and w.lower() != w]
        if retry:
            second = embedder.word_vectors(list(dict.fromkeys(w.lower() for w in retry)))
            by_form.update(second.as_dict())
            approx_forms |= set(second.approximated)
            query.update({w: w.lower() for w in retry})
    vectors = {w: by_form[q] for w, q in query.items() if q in by_form}
    return vectors, {w for w, q in query.items() if q in approx_forms}, dim


def set_vectors(
    embedder: Embedder, data: AssociationTest, case: str
) -> tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """One float64 matrix per set (rows in the order of the words found), the words found, the words
    lost and the words built from sub-words, per set."""
    vectors, approx, dim = lookup(embedder, data.all_words(), case)
    sets = {key: [w for w in wl.words if w in vectors] for key, wl in data.sets().items()}
    lost = {key: [w for w in wl.words if w not in vectors] for key, wl in data.sets().items()}
    approximated = {key: [w for w in wl.words if w in approx] for key, wl in data.sets().items()}
    matrices = {
        key: np.array([vectors[w] for w in words], dtype=np.float64).reshape(len(words), dim)
        for key, words in sets.items()
    }
    return matrices, sets, lost, approximated
