"""Analogy accuracy with 3CosAdd (Mikolov et al. 2013): the check that goes with mitigation.

A debiasing method should remove a bias and keep what the model knows; accuracy on ordinary
analogies (capitals, plurals, family terms) before and after says whether it did. The search is
vectorised: the vocabulary is one unit-normalised matrix, each batch of questions is one matrix
product."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api import (
    ANALOGIES,
    OK,
    REFUSED,
    Analogies,
    Capability,
    Embedder,
    Metric,
    Result,
    int_at_least,
    param,
)
from bias.api.association import case_param

CASES = ("exact", "lower", "insensitive")  # of the shared vocabulary (bias.core.association.CASES)
_SHOWN_ERRORS = 20


def unit_matrix(vectors: np.ndarray, dtype: Any = np.float32) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero, so they never win a cosine search)."""
    m = np.asarray(vectors, dtype=dtype)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return m / norms


def solve_3cosadd(
    unit: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    excluded: list[np.ndarray] | None = None,
    *,
    batch_size: int = 512,
) -> np.ndarray:
    """Row index of argmax_w cos(w, b - a + c) for each question, never a, b or c.

    `unit` holds unit rows; a, b, c are row indices (one per question). `excluded`, when given,
    lists for each question every row that may not be the answer (case variants of a, b and c);
    otherwise the rows a, b and c themselves are excluded. Ties go to the lower row (the more
    frequent word)."""
    n = len(a)
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, batch_size):
        stop = min(n, start + batch_size)
        target = unit[b[start:stop]] - unit[a[start:stop]] + unit[c[start:stop]]
        # cosine up to the positive factor 1/|target|, which keeps the order
        scores = target @ unit.T
        rows = np.arange(stop - start)
        if excluded is None:
            for idx in (a, b, c):
                scores[rows, idx[start:stop]] = -np.inf
        else:
            for i, banned in enumerate(excluded[start:stop]):
                scores[i, banned] = -np.inf
        out[start:stop] = np.argmax(scores, axis=1)
    return out


def _folder(case: str) -> Any:
    """How a vocabulary word and a question word are compared under a case policy."""
    if case == "insensitive":
        return str.casefold, str.casefold
    if case == "lower":
        return (lambda w: w), str.lower
    return (lambda w: w), (lambda w: w)


@attrs.define
class Analogy(Metric):
    """Accuracy of 3CosAdd on analogy questions "a b c d": the answer is the vocabulary word w,
    other than a, b and c, maximising cos(w, b - a + c) of unit vectors (Mikolov et al. 2013; as
    word2vec's compute-accuracy and gensim's evaluate_word_analogies).

    Data: an analogy set (kind "analogies", sections of questions). The search runs over the
    `vocabulary_limit` most frequent words (word2vec's restrict_vocab; 0: all). A question with a
    word outside that vocabulary is skipped: counted and reported per section, but not in the
    denominator of the accuracy. effect_size = overall accuracy (correct / answered, 0..1, higher is
    better; no p-value); figures give accuracy per section.

    Case: `insensitive` (default, as word2vec and gensim) compares case-folded forms, uses the most
    frequent casing of each word, and never answers a case variant of a, b or c; `exact` takes words
    as written; `lower` lowercases the question words only (for uncased vocabularies)."""

    name: ClassVar[str] = "analogy"
    summary: ClassVar[str] = (
        "Analogy accuracy (3CosAdd) overall and per section: does a model still know what it knew?"
    )
    value: ClassVar[ValueKind] = ValueKind(
        "accuracy", "analogy accuracy", reference=None, signed=False
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ANALOGIES

    vocabulary_limit: int = param(
        30_000,
        "search the answer among this many most frequent words (0: the whole vocabulary)",
        validator=int_at_least(0),
    )
    case: str = case_param("insensitive", CASES)
    batch_size: int = param(
        512,
        "questions per matrix product (memory: batch x vocabulary floats)",
        validator=int_at_least(1),
    )

    def compute(self, embedder: Embedder, data: Analogies, *, seed: int | None = None) -> Result:
        vocab = embedder.all_vectors(self.vocabulary_limit or None)
        words = list(vocab.words)
        vocab_key, question_key = _folder(self.case)
        keys = [vocab_key(w) for w in words]
        first: dict[str, int] = {}
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
            groups.setdefault(k, []).append(i)

        base = self.result_fields(embedder.spec, data, seed)
        asked: list[tuple[str, Any, tuple[int, int, int, int]]] = []
        lost: dict[str, list[str]] = {}
        skipped: dict[str, int] = {}
        for section, q in data.questions():
            found = [first.get(question_key(w)) for w in q.words()]
            if any(i is None for i in found):
                skipped[section] = skipped.get(section, 0) + 1
                missing = lost.setdefault(section, [])
                missing.extend(
                    w for w, i in zip(q.words(), found) if i is None and w not in missing
                )
                continue
            asked.append((section, q, tuple(found)))  # type: ignore[arg-type]
        if not asked:
            some = sorted({w for ws in lost.values() for w in ws})[:8]
            return Result(
                status=REFUSED,
                reason=f"no question has all four words in the {len(words)}-word vocabulary "
                f"(missing: {', '.join(some)})",
                lost=lost,
                **base,
            )

        unit = unit_matrix(vocab.vectors)
        idx = np.array([found for _, _, found in asked], dtype=np.int64)
        excluded = None
        if self.case == "insensitive":
            excluded = [
                np.array(
                    sorted({r for j in range(3) for r in groups[keys[row[j]]]}), dtype=np.int64
                )
                for row in idx
            ]
        predicted = solve_3cosadd(
            unit, idx[:, 0], idx[:, 1], idx[:, 2], excluded, batch_size=self.batch_size
        )
        correct = np.array([keys[p] == keys[row[3]] for p, row in zip(predicted, idx)], dtype=bool)

        sections: dict[str, dict[str, Any]] = {}
        for s in data.sections:
            sections[s.name] = {"correct": 0, "answered": 0, "skipped": skipped.get(s.name, 0)}
        errors = []
        for (section, q, _), p, ok in zip(asked, predicted, correct):
            sections[section]["answered"] += 1
            sections[section]["correct"] += int(ok)
            if not ok and len(errors) < _SHOWN_ERRORS:
                errors.append(f"{q.a}:{q.b} :: {q.c}:{words[p]} (expected {q.d})")
        for entry in sections.values():
            entry["accuracy"] = entry["correct"] / entry["answered"] if entry["answered"] else None
        answered, right = len(asked), int(correct.sum())
        total_skipped = sum(skipped.values())
        warnings = []
        if total_skipped:
            warnings.append(
                f"{total_skipped} of {answered + total_skipped} question(s) skipped: a "
                "word is outside the "
                f"{len(words)}-word vocabulary (not counted in the accuracy)"
            )
        return Result(
            status=OK,
            effect_size=right / answered,
            p_value=None,
            figures={
                "accuracy": right / answered,
                "correct": right,
                "answered": answered,
                "skipped": total_skipped,
                "questions": answered + total_skipped,
                "vocabulary": len(words),
                "sections": sections,
                "errors": errors,
            },
            convention={
                "method": "3CosAdd",
                "vocabulary_limit": self.vocabulary_limit,
                "case": self.case,
                "skipped": "questions with a word outside the vocabulary are not in the "
                "denominator",
                "excluded": "a, b and c (and their case variants when case-insensitive) are "
                "never the "
                "answer",
            },
            sizes={name: entry["answered"] for name, entry in sections.items()},
            lost=lost,
            warnings=warnings,
            **base,
        )


__all__ = ["Analogy", "solve_3cosadd", "unit_matrix"]
