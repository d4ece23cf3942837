"""FISE, Flexible Intersectional Stereotype Extraction (Charlesworth, Ghate, Caliskan & Banaji
2024).

Each trait gets one association per social axis: its mean cosine to the axis's first group minus
its mean cosine to the second (a word of several variants, e.g. Italian `calmo`/`calma`, is the mean
of their vectors, for traits and group words alike; a phrase is the mean of its words' vectors, or,
on a contextual model, the phrase encoded alone). Two axes place the traits in four quadrants
(`male rich`, `female poor`, ...; a value of exactly 0 counts as the negative side). Per quadrant
the metric reports the count and share of traits, the top traits by intersectional strength (the
projection onto the quadrant's diagonal, (sx*x + sy*y)/sqrt(2)), and, with affect stimuli, the mean
valence of its traits (mean cosine to positive minus negative words) and the share that is positive.

The test asks whether the traits sit in their quadrants more strongly than traits unassociated with
the groups would. Under that null the group labels of each axis are exchangeable, so the null
distribution comes from re-partitioning each axis's words into groups of the observed sizes (all
partitions when there are at most `exact_limit`, else `permutations` random ones). The statistic is
the mean intersectional strength S = mean_i (|x_i| + |y_i|) / sqrt(2), the traits' mean distance
along their own quadrant's diagonal; the p-value counts partitions with S at least the observed one
(exact: k/N with the observed partition included; sampled: (k+1)/(m+1)). A statistic of the counts
alone could not be tested this way: traits that resemble one another stay together in every
partition, so their counts are as lopsided under the null as in the data. The effect size is the
standardised strength (S - mean of the null) / its std. The null's mean count per quadrant is
reported beside the observed counts. The quadrant arithmetic and the null are in
`bias.api.association.quadrants`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import ValueKind
from bias.api import (
    OK,
    REFUSED,
    BiasError,
    Capability,
    Embedder,
    Metric,
    Result,
    between,
    int_at_least,
    one_of,
    param,
)
from bias.api.association import quadrants
from bias.api.data import FISE, FiseTest, Stimulus, fise_data

ENCODINGS = ("auto", "word-vectors", "contextual")


def _resolve(value: str, beside: str, suffix: str) -> Path:
    """A companion file as given, else beside the test file, with its suffix added to a bare
    name."""
    path = Path(value)
    candidates = [path, Path(beside).parent / path]
    if not path.suffix:
        candidates += [c.with_name(c.name + suffix) for c in candidates]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise BiasError(
        f"FISE file '{value}' not found (looked beside the test, in {Path(beside).parent}).",
        "Give the file's path.",
    )


@attrs.define
class Fise(Metric):
    """Traits on two social axes: quadrant counts, top intersectional traits, valence per quadrant,
    and a permutation test of whether traits sit in their quadrants more strongly than traits
    unassociated with the groups would (effect: standardised mean strength; see the module
    docstring)."""

    name: ClassVar[str] = "fise"
    summary: ClassVar[str] = (
        "Flexible Intersectional Stereotype Extraction: traits in the quadrants of two social axes "
        "(Charlesworth et al. 2024)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "z",
        "standardised quadrant strength (z against re-partitioned groups)",
        figures=("quadrants",),
    )
    requires: ClassVar[frozenset[Capability]] = frozenset()
    requires_any: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
    )
    data_kind: ClassVar[str] = FISE

    axes: str | None = param(
        None, "the two axes, x first, e.g. 'gender,race' (default: the test's first two)"
    )
    traits: str | None = param(
        None,
        "trait list (.txt, one trait or variant list per line); a bare name is looked up beside "
        "the test (default: the test's own traits, else traitlist.txt beside it)",
    )
    affect: str | None = param(
        None,
        "affect stimuli (.csv: header, positive column, negative column); a bare name is looked "
        "up beside the test",
    )
    mean_centre: bool = param(
        False, "subtract each axis's mean over the traits before placing them in quadrants"
    )
    top: int = param(5, "top traits reported per quadrant", validator=int_at_least(1))
    encoding: str = param(
        "auto",
        "auto (word vectors where the model has them, else contextual), word-vectors, or "
        "contextual (each word encoded alone, mean of its sub-tokens)",
        validator=one_of(ENCODINGS),
    )
    permutations: int = param(
        10_000,
        "random re-partitions of the group words when the exact test is too large",
        validator=int_at_least(1),
    )
    exact_limit: int = param(
        100_000,
        "enumerate all re-partitions when there are at most this many (0: always sample)",
        validator=int_at_least(0),
    )
    lost_threshold: float = param(
        0.2,
        "refuse the test if the traits or a group lose more than this share of their items",
        validator=between(0.0, 1.0),
    )

    def compute(self, embedder: Embedder, data: FiseTest, *, seed: int | None = None) -> Result:
        if not isinstance(data, FiseTest):
            raise BiasError(
                f"Metric 'fise' needs a FISE test (kind fise), not {type(data).__name__}."
            )
        x_axis, y_axis = self._axes(data)
        traits = self._traits(data)
        positive, negative = self._affect(data)
        groups = {
            f"{x_axis.name}.{x_axis.first}": x_axis.first_words,
            f"{x_axis.name}.{x_axis.second}": x_axis.second_words,
            f"{y_axis.name}.{y_axis.first}": y_axis.first_words,
            f"{y_axis.name}.{y_axis.second}": y_axis.second_words,
            "traits": traits,
        }
        if positive:
            groups.update({"affect.positive": positive, "affect.negative": negative})
        words = list(
            dict.fromkeys(
                w for items in groups.values() for s in items for w in fise_data.words_of(s)
            )
        )
        vectors = self._vectors(embedder, words)
        dim = len(next(iter(vectors.values()))) if vectors else 0
        found: dict[str, list[Stimulus]] = {}
        matrices: dict[str, np.ndarray] = {}
        lost: dict[str, list[str]] = {}
        for key, items in groups.items():
            rows, kept, missing = [], [], []
            for s in items:
                have = [vectors[w] for w in fise_data.words_of(s) if w in vectors]
                if have:
                    rows.append(np.mean(have, axis=0))
                    kept.append(s)
                missing.extend(w for w in fise_data.words_of(s) if w not in vectors)
            found[key], matrices[key] = (
                kept,
                np.array(rows, dtype=np.float64).reshape(len(rows), dim),
            )
            if missing:
                lost[key] = missing
        base = self.result_fields(
            embedder.spec, data, seed, lost=lost, sizes={k: len(v) for k, v in found.items()}
        )
        reason = self._refusal(groups, found)
        if reason:
            return Result(status=REFUSED, reason=reason, **base)

        unit = {k: _unit(m) for k, m in matrices.items()}
        T = unit["traits"]
        x_words = np.vstack(
            [unit[f"{x_axis.name}.{x_axis.first}"], unit[f"{x_axis.name}.{x_axis.second}"]]
        )
        y_words = np.vstack(
            [unit[f"{y_axis.name}.{y_axis.first}"], unit[f"{y_axis.name}.{y_axis.second}"]]
        )
        cx, cy = T @ x_words.T, T @ y_words.T  # cosines of every trait with every group word
        nx1, ny1 = (
            len(found[f"{x_axis.name}.{x_axis.first}"]),
            len(found[f"{y_axis.name}.{y_axis.first}"]),
        )
        x = quadrants.associations(cx, np.arange(nx1)[None, :])[0]
        y = quadrants.associations(cy, np.arange(ny1)[None, :])[0]
        if self.mean_centre:
            x, y = x - x.mean(), y - y.mean()
        counts = quadrants.quadrant_counts(x[None, :], y[None, :])[0]
        null = quadrants.quadrant_null(
            cx,
            cy,
            nx1,
            ny1,
            mean_centre=self.mean_centre,
            permutations=self.permutations,
            exact_limit=self.exact_limit,
            seed=seed,
        )
        null_counts, t_null, method, drawn = null.counts, null.strengths, null.method, null.drawn
        t_obs = float(quadrants.strength(x[None, :], y[None, :])[0])
        extreme = int(np.sum(t_null >= t_obs - 1e-12 * max(1.0, abs(t_obs))))
        p_value = extreme / len(t_null) if method == "exact" else (extreme + 1) / (drawn + 1)
        spread = float(t_null.std())
        effect = (t_obs - float(t_null.mean())) / spread if spread > 0 else float("nan")
        labels = [fise_data.label(t) for t in found["traits"]]
        valence = None
        if positive:
            valence = T @ unit["affect.positive"].mean(axis=0) - T @ unit["affect.negative"].mean(
                axis=0
            )
        placed = self._quadrants(x_axis, y_axis, x, y, labels, valence, counts)
        warnings = []
        if lost:
            left_out = sum(len(v) for v in lost.values())
            warnings.append(f"{left_out} word(s) had no vector and were left out (see lost)")
        return Result(
            status=OK,
            effect_size=effect,
            p_value=float(p_value),
            figures={
                "axes": [x_axis.name, y_axis.name],
                "axis_unit": "mean cosine difference",
                "groups": {
                    x_axis.name: [x_axis.first, x_axis.second],
                    y_axis.name: [y_axis.first, y_axis.second],
                },
                "quadrants": placed,
                "points": [[label, float(a), float(b)] for label, a, b in zip(labels, x, y)],
                **(
                    {"valence": {label: float(v) for label, v in zip(labels, valence)}}
                    if valence is not None
                    else {}
                ),
                "statistic": t_obs,
                "null_mean": float(t_null.mean()),
                "null_std": spread,
                "null_expected_counts": {
                    name: float(c) for name, c in zip(placed, null_counts.mean(axis=0))
                },
            },
            convention={
                "association": "mean cos(first group) - mean cos(second group); variants averaged",
                "mean_centre": self.mean_centre,
                "zero": "counts as the negative side",
                "method": method,
                "permutations": drawn if method == "sampled" else len(t_null),
                "p_estimator": "k/N" if method == "exact" else "(k+1)/(m+1)",
                "alternative": "greater",
                "null": "group words of each axis re-partitioned at the observed sizes",
                "statistic": "mean intersectional strength (|x| + |y|) / sqrt(2)",
                "effect": "(S - null mean) / null std",
                "seed": seed,
                "p_value": (
                    f"exact test over {len(t_null):,} partitions"
                    if method == "exact"
                    else f"sampled permutation test ({drawn:,} permutations, seed {seed})"
                )
                + ", one-sided (greater)",
                **({"p_floor": 1.0 / (drawn + 1)} if method == "sampled" else {}),
                "encoding": self._encoding_used(embedder),
                "traits_file": self.traits or "",
                "affect_file": self.affect or "",
            },
            warnings=warnings,
            **base,
        )

    # -- inputs

    def _axes(self, data: FiseTest) -> tuple[Any, Any]:
        if self.axes:
            names = [n.strip() for n in str(self.axes).split(",") if n.strip()]
            if len(names) != 2 or names[0] == names[1]:
                raise BiasError(
                    f"axes must name two different axes, e.g. 'gender,race', not {self.axes!r}."
                )
            return data.axis(names[0]), data.axis(names[1])
        return data.axes[0], data.axes[1]

    def _traits(self, data: FiseTest) -> tuple[Stimulus, ...]:
        if self.traits:
            return tuple(
                dict.fromkeys(fise_data.read_traits(_resolve(self.traits, data.meta.path, ".txt")))
            )
        if data.traits:
            return data.traits
        beside = Path(data.meta.path).parent / "traitlist.txt"
        if data.meta.path and beside.is_file():
            return tuple(dict.fromkeys(fise_data.read_traits(beside)))
        raise BiasError(
            f"{data.name} has no traits.",
            "Name a trait list with --param traits=FILE (one trait per line).",
        )

    def _affect(self, data: FiseTest) -> tuple[tuple[Stimulus, ...], tuple[Stimulus, ...]]:
        if self.affect:
            positive, negative = fise_data.read_affect(
                _resolve(self.affect, data.meta.path, ".csv")
            )
            return tuple(dict.fromkeys(positive)), tuple(dict.fromkeys(negative))
        return data.positive, data.negative

    def _encoding_used(self, embedder: Embedder) -> str:
        """What the result records: `word-vectors` only for a model with a vocabulary of its own (a
        static embedding); a contextual model's word encodings are each word encoded alone, i.e.
        `contextual`, whichever path `auto` took to them."""
        if self.encoding != "auto":
            return self.encoding
        return "word-vectors" if Capability.VOCABULARY in embedder.available() else "contextual"

    def _lookup(self, embedder: Embedder) -> str:
        """How the vectors are taken: `auto` asks the model's word vectors where it offers them (a
        contextual model encodes each word alone there), else encodes every word or phrase alone."""
        if self.encoding != "auto":
            return self.encoding
        return "word-vectors" if Capability.WORD_VECTORS in embedder.available() else "contextual"

    def _vectors(self, embedder: Embedder, words: list[str]) -> dict[str, np.ndarray]:
        """A vector per word or phrase: from word vectors, a phrase is the mean of its words'
        vectors (all of them needed); from a contextual model, the mean of its sub-tokens, encoded
        alone."""
        if self._lookup(embedder) == "word-vectors":
            parts = {w: w.split() for w in words}
            found = embedder.word_vectors(
                list(dict.fromkeys(p for ps in parts.values() for p in ps))
            ).as_dict()
            return {
                w: np.mean([np.asarray(found[p], dtype=np.float64) for p in ps], axis=0)
                for w, ps in parts.items()
                if ps and all(p in found for p in ps)
            }
        candidates = [w for w in words if w.strip()]
        rows = np.asarray(
            embedder.encode(candidates, [(0, len(w)) for w in candidates], pooling="mean"),
            dtype=np.float64,
        )
        return {
            w: rows[i]
            for i, w in enumerate(candidates)
            if np.isfinite(rows[i]).all() and np.any(rows[i])
        }

    def _refusal(self, groups: dict[str, Any], found: dict[str, list[Stimulus]]) -> str | None:
        for key, items in groups.items():
            if not found[key]:
                return f"every item of {key} is missing from the model"
            share = 1 - len(found[key]) / len(items)
            if share > self.lost_threshold:
                return (
                    f"{key} lost {len(items) - len(found[key])} of {len(items)} items "
                    f"({share:.0%} > {self.lost_threshold:.0%} allowed)"
                )
        return None

    def _quadrants(
        self,
        x_axis: Any,
        y_axis: Any,
        x: np.ndarray,
        y: np.ndarray,
        labels: list[str],
        valence: np.ndarray | None,
        counts: np.ndarray,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        signs = [(1, 1), (-1, 1), (-1, -1), (1, -1)]
        for q, (sx, sy) in enumerate(signs):
            x_group = x_axis.first if sx > 0 else x_axis.second
            y_group = y_axis.first if sy > 0 else y_axis.second
            name = f"{x_group} {y_group}"
            members = np.flatnonzero(quadrants.quadrant_of(x, y) == q)
            strength = (sx * x[members] + sy * y[members]) / math.sqrt(2)
            order = members[np.argsort(-strength, kind="stable")]
            entry: dict[str, Any] = {
                "count": int(counts[q]),
                "share": float(counts[q] / len(labels)),
                "top": [
                    [labels[i], float((sx * x[i] + sy * y[i]) / math.sqrt(2))]
                    for i in order[: self.top]
                ],
            }
            if valence is not None:
                vals = valence[members]
                entry["valence"] = float(vals.mean()) if len(vals) else None
                entry["positive_share"] = float((vals > 0).mean()) if len(vals) else None
            out[name] = entry
        return out


def _unit(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)
