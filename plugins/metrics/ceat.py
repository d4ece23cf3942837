"""CEAT, the Contextualized Embedding Association Test (Guo & Caliskan 2021, AIES '21, "Detecting
Emergent Intersectional Biases: Contextualized Word Embeddings Contain a Distribution of Human-like
Biases").

A contextual model gives a word a different vector in every sentence, so one WEAT effect size is one
draw from a distribution. CEAT collects contexts of every stimulus (corpus lines containing it, or
template sentences), encodes each once, then draws N samples of one random context per word; each
sample gives a WEAT effect size ES_i and its variance v_i = (std_{X u Y} s)^2. A random-effects
meta-analysis (DerSimonian & Laird 1986) combines them:

    w_i = 1/v_i;  Q = sum w_i ES_i^2 - (sum w_i ES_i)^2 / sum w_i tau^2 = max(0, (Q - (N-1)) / (sum
    w_i - sum w_i^2 / sum w_i));  w*_i = 1/(v_i + tau^2) CES = sum w*_i ES_i / sum w*_i;  SE =
    sqrt(1/sum w*_i);  z = CES/SE;  p from the normal (two-sided default)

The N samples are independent draws over the same precomputed vectors, so they are computed as index
arrays of shape (N, words) into a matrix of cosines between target and attribute contexts, in chunks
of bounded memory, never one model call or Python iteration per sample. Samples share words, so p is
nearly always tiny: read CES with its SE and the spread of the ES_i.

Differences from the original code, recorded in every result: the generator is seeded (the run
seed), N is what the parameter says (default 10,000), `window` is exactly k words either side of the
target."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import ValueKind
from bias.api import (
    ALTERNATIVES,
    ASSOCIATION,
    OK,
    REFUSED,
    AssociationTest,
    BiasError,
    Capability,
    Cost,
    Embedder,
    InputRequest,
    Metric,
    Result,
    fresh_seed,
    int_at_least,
    normal_p,
    one_of,
    param,
    unit_rows,
)
from bias.api.association import (
    LEVELS,
    Context,
    Contexts,
    case_param,
    check_layer,
    check_pooling,
    corpus_contexts,
    encode_contexts,
    given_templates,
    lost_threshold_param,
    resolve_pooling,
    template_request,
    too_many_lost,
    vector_conventions,
    window as cut_window,
)
from bias.api.data import layer_value

SET_ORDER = ("X", "Y", "A", "B")
CASES = ("exact", "insensitive")  # a corpus is matched as written or case-folded on both sides
CORPUS_CASE = {
    "exact": "exact",
    "insensitive": "lower",
}  # the names bias.core.data.corpus gives them
QUANTILES = (2.5, 25.0, 50.0, 75.0, 97.5)
_GATHER_ELEMENTS = 4_000_000  # bounds the memory of one chunk of samples (~32 MB of float64)
_COSINE_LIMIT = 25_000_000  # largest target x attribute cosine table kept in memory (~200 MB)


@attrs.frozen
class RandomEffects:
    """The DerSimonian-Laird combination of per-sample effect sizes."""

    ces: float
    se: float
    z: float
    q: float
    tau2: float


def random_effects(es: np.ndarray, v: np.ndarray) -> RandomEffects:
    """Combined effect size of `es` with within-sample variances `v` (DerSimonian & Laird 1986)."""
    es = np.asarray(es, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    n = es.size
    w = 1.0 / v
    sw = w.sum()
    q = float((w * es**2).sum() - (w * es).sum() ** 2 / sw)
    denominator = float(sw - (w**2).sum() / sw)
    tau2 = max(0.0, (q - (n - 1)) / denominator) if denominator > 0 else 0.0
    w_star = 1.0 / (v + tau2)
    ces = float((w_star * es).sum() / w_star.sum())
    se = float(np.sqrt(1.0 / w_star.sum()))
    return RandomEffects(ces=ces, se=se, z=ces / se, q=q, tau2=float(tau2))


P_FLOOR = (
    1e-300  # the smallest p written as a number; below it the result gives the bound and log10_p
)


def log10_normal_p(z: float, alternative: str) -> float:
    """log10 of the normal p-value of z, finite where p itself underflows to 0."""
    from scipy.special import log_ndtr

    if alternative == "greater":
        ln = float(log_ndtr(-z))
    elif alternative == "less":
        ln = float(log_ndtr(z))
    else:
        ln = min(0.0, float(log_ndtr(-abs(z))) + math.log(2.0))
    return ln / math.log(10.0)


def sample_indices(counts: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """For each of `samples` draws, one context index (0 <= i < counts[j]) per word j: shape
    (samples, words)."""
    counts = np.asarray(counts, dtype=np.int64)
    return rng.integers(0, counts[None, :], size=(samples, counts.size))


def sample_effects(
    vectors: np.ndarray,
    starts: Mapping[str, np.ndarray],
    choice: Mapping[str, np.ndarray],
    *,
    ddof: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """ES_i and v_i for every sample at once.

    `vectors` holds every context vector (rows); `starts[key]` the first row of each word of set
    key; `choice[key]` (samples, words) the context chosen for each word in each sample (an offset
    from the word's first row). s(w,A,B) = mean cos(w,a) - mean cos(w,b) = w^ . (mean a^ - mean b^)
    with unit rows; when the table of cosines between every target and every attribute context fits
    in memory, it is computed once and samples only gather from it."""
    unit = unit_rows(vectors)
    rows = {
        key: starts[key][None, :] + choice[key] for key in SET_ORDER
    }  # absolute rows, (N, n_key)
    n_samples = rows["X"].shape[0]
    n_x = rows["X"].shape[1]
    targets = np.concatenate([rows["X"], rows["Y"]], axis=1)
    attrs_ab = np.concatenate([rows["A"], rows["B"]], axis=1)
    n_a = rows["A"].shape[1]
    t_used, t_local = np.unique(targets, return_inverse=True)
    a_used, a_local = np.unique(attrs_ab, return_inverse=True)
    t_local = t_local.reshape(targets.shape)
    a_local = a_local.reshape(attrs_ab.shape)
    es = np.empty(n_samples, dtype=np.float64)
    var = np.empty(n_samples, dtype=np.float64)
    width = targets.shape[1] * max(1, attrs_ab.shape[1])
    chunk = max(1, _GATHER_ELEMENTS // width)
    table = unit[t_used] @ unit[a_used].T if t_used.size * a_used.size <= _COSINE_LIMIT else None
    for lo in range(0, n_samples, chunk):
        hi = min(n_samples, lo + chunk)
        if table is not None:
            cos = table[
                t_local[lo:hi, :, None], a_local[lo:hi, None, :]
            ]  # (c, n_targets, n_attributes)
            s = cos[:, :, :n_a].mean(axis=2) - cos[:, :, n_a:].mean(axis=2)
        else:
            mean_a = unit[rows["A"][lo:hi]].mean(axis=1)
            mean_b = unit[rows["B"][lo:hi]].mean(axis=1)
            s = np.einsum("cnd,cd->cn", unit[targets[lo:hi]], mean_a - mean_b)
        sd = s.std(axis=1, ddof=ddof)
        es[lo:hi] = (s[:, :n_x].mean(axis=1) - s[:, n_x:].mean(axis=1)) / sd
        var[lo:hi] = sd**2
    return es, var


@attrs.define
class Ceat(Metric):
    """Combined effect size (CES) of N WEAT effect sizes, each on one random context per word.

    A positive CES means X ~ A and Y ~ B, as in WEAT. Contexts come from `corpus` (one sentence or
    comment per line, read once), or, without a corpus, from the template set. A word with no
    context is lost; beyond `lost_threshold` of a set the test is refused."""

    name: ClassVar[str] = "ceat"
    summary: ClassVar[str] = (
        "Contextualized Embedding Association Test: random-effects combined effect size "
        "(Guo & Caliskan 2021)."
    )
    value: ClassVar[ValueKind] = ValueKind("CES", "combined effect size (CES)", scale="d")
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    data_kind: ClassVar[str] = ASSOCIATION

    corpus: str | None = param(
        None,
        "UTF-8 text file, one sentence or comment per line (default: template contexts instead)",
        converter=attrs.converters.optional(str),
    )
    templates: str | None = param(
        None,
        "template set for contexts when no corpus is given (default: <test "
        "language>/seat-templates)",
    )
    contexts_per_word: int = param(
        50,
        "contexts kept per word (reservoir-sampled from the corpus with the run seed)",
        validator=int_at_least(
            1, "50 keeps encoding cheap while giving each word many distinct contexts."
        ),
    )
    samples: int = param(
        10_000,
        "samples N, each one random context per word",
        validator=int_at_least(2, "Guo & Caliskan document 10,000."),
    )
    window: int | None = param(
        None,
        "keep only this many words either side of the target (None: the whole line)",
        validator=attrs.validators.optional(int_at_least(0)),
    )
    case: str = case_param("exact", CASES, "To ignore case in the corpus use insensitive.")
    level: str = param(
        "word",
        "word (the target's vector in its context) or sentence (the context's vector)",
        validator=one_of(LEVELS),
    )
    pooling: str | None = param(
        None,
        "word level: target-mean (default; target-last for causal LMs), target-first, "
        "target-last; sentence level: cls (default; last "
        "for causal LMs), mean, first, last",
        validator=check_pooling,
    )
    layer: str | int | None = param(
        None,
        "hidden layer: None (the model's setting), N (-1 last), or mean-last-4",
        converter=layer_value,
        validator=check_layer,
    )
    ddof: int = param(
        1,
        "delta degrees of freedom of the std in ES_i and v_i (1: the original's convention)",
        validator=one_of((0, 1)),
    )
    alternative: str = param(
        "two-sided",
        "p of z = CES/SE: two-sided, greater (X~A) or less",
        validator=one_of(ALTERNATIVES),
    )
    lost_threshold: float = lost_threshold_param()

    def cost(self, data: AssociationTest) -> Cost:
        """The samples: a context index per word of X, Y, A and B in each (int64, held a few times
        over while rows are gathered), and the cosines gathered for every sample's targets and
        attributes."""
        sizes = {key: len(wl.words) for key, wl in data.sets().items()}
        words = sum(sizes.values())
        per_sample = (sizes["X"] + sizes["Y"]) * max(sizes["A"] + sizes["B"], 1) + words
        return Cost.of_elements(
            self.samples * per_sample,
            self.samples * words * 8 * 4,
            f"--samples {self.samples:,}",
            "--samples 10000 is what Guo & Caliskan use.",
        )

    def inputs(self, data: AssociationTest) -> dict[str, InputRequest]:
        """The template set the contexts come from when no corpus is given."""
        if self.corpus is not None or data.stimuli == "sentences":
            return {}
        return {"templates": template_request(self.templates, data.meta.language)}

    def compute(
        self,
        embedder: Embedder,
        data: AssociationTest,
        *,
        seed: int | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Result:
        if data.stimuli == "sentences":
            raise BiasError(
                f"CEAT needs words to find in contexts, but the stimuli of {data.name} "
                "already are sentences.",
                "Use SEAT (--metric seat) for sentence stimuli.",
            )
        used_seed = seed if seed is not None else fresh_seed()
        pooling = resolve_pooling(self.pooling, self.level, embedder)
        contexts, source = self._contexts(data, used_seed, inputs)
        sets = {key: list(data.sets()[key].words) for key in SET_ORDER}
        kept = {key: [w for w in words if contexts.kept.get(w)] for key, words in sets.items()}
        lost = {key: [w for w in words if not contexts.kept.get(w)] for key, words in sets.items()}
        base = self.result_fields(
            embedder.spec,
            data,
            used_seed,
            sizes={key: len(words) for key, words in kept.items()},
            lost={key: words for key, words in lost.items() if words},
        )
        found = {key: {w: int(contexts.found.get(w, 0)) for w in sets[key]} for key in SET_ORDER}
        reason = self._refusal(sets, lost, kept)
        if reason:
            return Result(status=REFUSED, reason=reason, figures={"contexts_found": found}, **base)

        # every context of every kept word, encoded in one call; words in set order, contexts in
        # corpus order
        texts: list[str] = []
        spans: list[tuple[int, int]] = []
        starts: dict[str, np.ndarray] = {}
        counts: dict[str, np.ndarray] = {}
        for key in SET_ORDER:
            first, n = [], []
            for w in kept[key]:
                first.append(len(texts))
                n.append(len(contexts.kept[w]))
                texts.extend(c.text for c in contexts.kept[w])
                spans.extend(c.span for c in contexts.kept[w])
            starts[key] = np.asarray(first, dtype=np.int64)
            counts[key] = np.asarray(n, dtype=np.int64)
        vectors = encode_contexts(
            embedder, texts, spans, level=self.level, pooling=pooling, layer=self.layer
        )
        bad = ~np.isfinite(vectors).all(axis=1) | (np.linalg.norm(vectors, axis=1) == 0.0)
        if bad.any():
            raise BiasError(
                "The model gives zero or non-finite vectors for the context "
                f"{texts[int(np.flatnonzero(bad)[0])]!r}."
            )

        rng = np.random.default_rng(used_seed)
        choice = {key: sample_indices(counts[key], self.samples, rng) for key in SET_ORDER}
        es, var = sample_effects(vectors, starts, choice, ddof=self.ddof)
        if not (np.isfinite(es).all() and (var > 0).all()):
            raise BiasError(
                "Some samples have zero spread of s(w) over X u Y, so their effect size is "
                "undefined.",
                "Check that the target words have distinct contexts (more contexts per "
                "word, or a larger corpus).",
            )
        combined = random_effects(es, var)
        p = normal_p(combined.ces, 0.0, combined.se, self.alternative)
        log10_p = log10_normal_p(combined.z, self.alternative)
        bound = None
        if p < P_FLOOR:  # beyond z of about 37 p underflows to 0.0, which CEAT reaches easily
            p, bound = P_FLOOR, f"p < {P_FLOOR:.0e} (log10 p = {log10_p:.1f})"
        warnings = []
        if any(lost.values()):
            warnings.append(
                f"{sum(map(len, lost.values()))} word(s) have no context and were left out"
            )
        few = sorted(
            w
            for key in SET_ORDER
            for w in kept[key]
            if len(contexts.kept[w]) < min(5, self.contexts_per_word)
        )
        if few:
            warnings.append(f"{len(few)} word(s) have fewer than 5 contexts: {', '.join(few[:8])}")
        return Result(
            status=OK,
            effect_size=combined.ces,
            p_value=p,
            figures={
                "ces": combined.ces,
                "se": combined.se,
                "z": combined.z,
                "p": p,
                "log10_p": log10_p,  # exact where p itself underflows
                **({"p_bound": bound} if bound else {}),
                "q": combined.q,
                "tau2": combined.tau2,
                "es_mean": float(es.mean()),
                "es_sd": float(es.std(ddof=1)),
                "es_quantiles": {
                    f"{q:g}": float(v) for q, v in zip(QUANTILES, np.percentile(es, QUANTILES))
                },
                "v_mean": float(var.mean()),
                "contexts_found": found,
                "contexts_used": {
                    key: {w: len(contexts.kept[w]) for w in kept[key]} for key in SET_ORDER
                },
                "corpus_lines": contexts.lines,
            },
            convention={
                "samples": self.samples,
                "contexts_per_word": self.contexts_per_word,
                "contexts": source,
                "context_sampling": "reservoir (algorithm R), seeded; one context per word per "
                "sample, uniform",
                "window": "whole line"
                if self.window is None
                else f"{self.window} words either side",
                "case": self.case,
                "level": self.level,
                "pooling": pooling,
                **vector_conventions(embedder, self.level, pooling, self.layer),
                "ddof": self.ddof,
                "variance": f"v_i = (std over X u Y of s, ddof={self.ddof})^2",
                "combination": "random effects, DerSimonian-Laird",
                "alternative": self.alternative,
                "p_estimator": "normal, z = CES/SE; below 1e-300 p is given as that bound "
                "(p_value = "
                "1e-300, "
                "figures.p_bound) with the exact figures.log10_p",
                "p_value": "normal test of the combined effect size (z = CES/SE), "
                + (
                    "two-sided"
                    if self.alternative == "two-sided"
                    else f"one-sided ({self.alternative})"
                ),
                "seed": used_seed,
            },
            warnings=warnings,
            **base,
        )

    def _contexts(
        self, data: AssociationTest, seed: int, inputs: Mapping[str, Any] | None
    ) -> tuple[Contexts, str]:
        words = data.all_words()
        if self.corpus is not None:
            found = corpus_contexts(
                self.corpus,
                words,
                per_word=self.contexts_per_word,
                seed=seed,
                case=CORPUS_CASE[self.case],
                window_words=self.window,
            )
            return found, f"corpus {self.corpus}"
        template_set = given_templates(inputs, "CEAT", data)
        rng = random.Random(seed)
        kept: dict[str, tuple[Context, ...]] = {}
        counted: dict[str, int] = {}
        for wl in data.sets().values():
            for word in wl.words:
                rendered = [
                    Context(r.text, r.spans["word"], 0)
                    for r in template_set.render(word, wl.features(word))
                ]
                counted[word] = len(rendered)
                if len(rendered) > self.contexts_per_word:
                    rendered = [
                        rendered[i]
                        for i in sorted(rng.sample(range(len(rendered)), self.contexts_per_word))
                    ]
                if self.window is not None:
                    rendered = [
                        Context(*cut_window(c.text, c.span, self.window), 0) for c in rendered
                    ]
                kept[word] = tuple(rendered)
        return Contexts(kept, counted, 0), f"templates {template_set.name}"

    def _refusal(
        self,
        sets: Mapping[str, Sequence[str]],
        lost: Mapping[str, list[str]],
        kept: Mapping[str, list[str]],
    ) -> str | None:
        for key in SET_ORDER:
            if not kept[key]:
                return f"no word of set {key} occurs in the contexts ({', '.join(lost[key][:8])})"
            why = too_many_lost(lost[key], len(sets[key]), self.lost_threshold)
            if why:
                return (
                    f"set {key}: {len(lost[key])} of {len(sets[key])} words have no context {why}"
                )
        if len(kept["X"]) + len(kept["Y"]) < 3:
            return "X and Y together need at least 3 words with contexts for the spread of s(w)"
        return None
