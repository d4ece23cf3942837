"""Hard-Debias (Bolukbasi et al. 2016, "Man is to computer programmer as woman is to homemaker?").

1. Unit-normalise every vector.
2. Bias subspace B: PCA of the pair-centred definitional vectors (a - c and b - c, c = (a + b) / 2),
   by exact SVD; the first k components, each signed so that the male word of the pairs projects
   higher on average (male minus female is positive), which makes runs and machines agree.
3. Neutralise every word not in the gender-specific list: v <- v - proj_B(v), renormalise.
4. Equalise each equalize pair in file order, from the pair's unit vectors as they were before step
   3 (as the paper defines it; a pair missing from the specific list would otherwise have lost the
   projection that says which side each word belongs to): mu = (a + b) / 2, nu = mu - proj_B(mu), a
   <- nu + sqrt(1 - |nu|^2) u, b <- nu - sqrt(1 - |nu|^2) u with u the unit vector of proj_B(a) -
   proj_B(b) (for k = 1: the direction g signed by (a - b).g, Bolukbasi's formula; when that
   difference vanishes, u = b_1 as in the reference code).

Case variants: the reference code equalises each pair also in lower, Title and UPPER case but
neutralises every case form not literally in the specific list, so "Mother" lost its gender while
"mother" kept it. `case_variants = "all"` (the default) protects the case forms of specific words
too; "equalize" reproduces the reference exactly; "none" uses the lists as written.

Everything works on one float32 (or float64) copy of the vocabulary, in place and in blocks, so a
200,000 x 300 matrix needs about 240 MB and a few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import (
    STATIC_VECTORS,
    BiasError,
    Capability,
    DebiasLists,
    Debiaser,
    Embedder,
    int_at_least,
    one_of,
    param,
)
from bias.api.debiasing import (
    DebiasedEmbedder,
    FitOnLoad,
    SubspaceRemoval,
    check_dtype,
    lists_of,
    pair_subspace,
    remove_subspace_,
    timed,
    unit_rows_,
    vocabulary_matrix,
)

CASE_VARIANTS = ("all", "equalize", "none")


def case_forms(word: str) -> list[str]:
    """The word and its lower, Title and UPPER forms, in that order, once each."""
    return list(dict.fromkeys([word, word.lower(), word.title(), word.upper()]))


def equalise_pair_(
    matrix: np.ndarray, i: int, j: int, basis: np.ndarray, a: np.ndarray, b: np.ndarray
) -> None:
    """Set rows i and j of `matrix` (in place, as the trailing underscore says) to unit vectors
    symmetric about the orthogonal complement of the subspace, from the pair's vectors `a` and `b`
    as they were before neutralising (float64).

    Bolukbasi et al. equalise the original vectors: each word ends on its own side of the bias
    direction. Read back after neutralising, a pair missing from the gender-specific list has lost
    its projection, and float32 rounding of what is left picked the side at random."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    mu = (a + b) / 2
    nu = mu - basis.T @ (basis @ mu)
    spread = basis.T @ (basis @ (a - b)) / 2
    length = np.linalg.norm(spread)
    u = spread / length if length > 1e-12 else basis[0]
    z = np.sqrt(max(0.0, 1.0 - float(nu @ nu)))
    new_a, new_b = nu + z * u, nu - z * u
    matrix[i] = new_a / np.linalg.norm(new_a)
    matrix[j] = new_b / np.linalg.norm(new_b)


def missing_pairs(
    pairs: Iterable[tuple[str, str]], known: Any
) -> tuple[list[tuple[str, str]], list[str]]:
    """Pairs whose two words are both known, and the words that are not (in list order)."""
    kept, missing = [], []
    for a, b in pairs:
        absent = [w for w in (a, b) if w not in known]
        if absent:
            missing.extend(absent)
        else:
            kept.append((a, b))
    return kept, list(dict.fromkeys(missing))


def refuse_few_pairs(kept: int, missing: list[str], needed: int, model: str) -> None:
    if kept < needed:
        shown = ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")
        raise BiasError(
            f"Only {kept} definitional pair(s) have both words in {model}; at least "
            f"{needed} are needed. Missing: {shown}.",
            "Use lists in the model's language and casing (--lists), or a model with a "
            "larger vocabulary.",
        )


@attrs.define
class HardDebias(FitOnLoad, Debiaser):
    """Neutralise and equalise (Bolukbasi et al. 2016) over the whole vocabulary of a static
    model."""

    name: ClassVar[str] = "hard"
    summary: ClassVar[str] = (
        "Hard-Debias: remove the bias subspace from neutral words, equalise pairs "
        "(Bolukbasi et al. 2016)."
    )
    produces: ClassVar[frozenset[str]] = frozenset({STATIC_VECTORS})
    requires: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.VOCABULARY}
    )

    components: int = param(
        1,
        "dimensions of the bias subspace (principal components of the definitional pairs)",
        validator=int_at_least(1),
    )
    limit: int | None = param(
        None,
        "debias only the first N words of the vocabulary (None: all); list words are "
        "always included",
        validator=attrs.validators.optional(int_at_least(1)),
    )
    case_variants: str = param(
        "all",
        "case forms matched: all (lower/Title/UPPER of equalize pairs and specific words), "
        "equalize (reference code), none",
        validator=one_of(CASE_VARIANTS),
    )
    precision: str = param(
        "float32",
        "dtype of the debiased matrix: float32 (half the memory) or float64",
        validator=check_dtype,
    )

    _state: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    @classmethod
    def supports(cls, embedder: Embedder) -> str | None:
        """Why this method cannot debias `embedder`, or None."""
        if Capability.VOCABULARY not in embedder.capabilities:
            return f"Hard-Debias needs a static model with a vocabulary; {embedder.spec} has none"
        return None

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init}

    def fit(self, embedder: Embedder, lists: Any) -> HardDebias:
        lists = lists_of(lists, "Hard-Debias")
        reason = self.supports(embedder)
        if reason:
            raise BiasError(reason + ".", "Methods for contextual models: sent, inlp.")
        started = time.perf_counter()
        info: dict[str, Any] = {"method": self.name, "parameters": self.params()}
        words, matrix = vocabulary_matrix(embedder, self.limit, lists.all_words(), self.precision)
        timed(info, "read_s", started)
        started = time.perf_counter()
        info["zero_vectors"] = unit_rows_(matrix)
        index = {w: i for i, w in enumerate(words)}
        kept, missing = missing_pairs(lists.definitional, index)
        refuse_few_pairs(len(kept), missing, 2, embedder.spec)
        if self.components > len(kept):
            raise BiasError(
                f"components = {self.components} but only {len(kept)} definitional pairs "
                "are in the model; "
                "the pair-centred vectors span at most one dimension per pair.",
                f"Use components <= {len(kept)}.",
            )
        first = matrix[[index[a] for a, _ in kept]]
        second = matrix[[index[b] for _, b in kept]]
        basis, ratio = pair_subspace(first, second, self.components)
        timed(info, "subspace_s", started)
        info["definitional_used"] = [list(p) for p in kept]
        info["missing"] = {"definitional": missing}
        info["explained_variance"] = [
            float(r) for r in ratio[: max(self.components, min(10, len(ratio)))]
        ]
        info["components"] = basis.tolist()
        self._state = {
            "lists": lists,
            "source": embedder,
            "words": words,
            "matrix": matrix,
            "basis": basis,
            "info": info,
        }
        return self

    def _specific(self, lists: DebiasLists) -> frozenset[str]:
        if self.case_variants == "all":
            return frozenset(f for w in lists.specific for f in case_forms(w))
        return frozenset(lists.specific)

    def _equalize_pairs(self, lists: DebiasLists) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        for a, b in lists.equalize:
            pairs.append((a, b))
            if self.case_variants != "none":
                pairs.extend((x, y) for x, y in zip(case_forms(a)[1:], case_forms(b)[1:]))
        return list(dict.fromkeys(pairs))

    def transform(self, embedder: Embedder) -> DebiasedEmbedder:
        """Debias `embedder`'s vocabulary with the fitted subspace (the fitted model's matrix is
        reused, and handed over: transforming it twice reads the model again)."""
        if self._state is None:
            raise BiasError(
                "Hard-Debias must be fitted before transform().", "Call fit(embedder, lists) first."
            )
        state = self._state
        lists: DebiasLists = state["lists"]
        info = dict(state["info"])
        info["timings"] = dict(info.get("timings", {}))
        started = time.perf_counter()
        if embedder is state["source"] and state["matrix"] is not None:
            words, matrix = state["words"], state["matrix"]
            state["matrix"] = None
        else:
            words, matrix = vocabulary_matrix(
                embedder, self.limit, lists.all_words(), self.precision
            )
            unit_rows_(matrix)
        basis = state["basis"]
        index = {w: i for i, w in enumerate(words)}
        specific = self._specific(lists)
        keep = np.zeros(len(words), dtype=bool)
        protected = [index[w] for w in specific if w in index]
        keep[protected] = True
        pairs = [(a, b) for a, b in self._equalize_pairs(lists) if a in index and b in index]
        before = {index[w]: matrix[index[w]].astype(np.float64) for pair in pairs for w in pair}
        remove_subspace_(matrix, basis, keep)
        unit_rows_(matrix)
        timed(info, "neutralise_s", started)
        started = time.perf_counter()
        equalised = []
        for a, b in pairs:
            i, j = index[a], index[b]
            equalise_pair_(matrix, i, j, basis, before[i], before[j])
            equalised.append([a, b])
        info["order"] = (
            "unit-normalise; bias subspace from the definitional pairs; neutralise (and "
            "renormalise) every word "
            "not in the specific list; equalise each equalize pair in list order from its "
            "unit vectors as they were "
            "before neutralising, so each member ends on its own side of the bias direction"
        )
        timed(info, "equalise_s", started)
        absent_pairs = [list(p) for p in lists.equalize if p[0] not in index or p[1] not in index]
        info["neutralised"] = int(len(words) - keep.sum())
        info["specific_kept"] = int(keep.sum())
        info["equalised"] = equalised
        info["vocabulary"] = len(words)
        info["missing"] = {
            **info.get("missing", {}),
            "equalize": absent_pairs,
            "specific": [w for w in lists.specific if w not in index],
        }
        info["lists"] = {"name": lists.name, "file": lists.meta.path}
        return DebiasedEmbedder(
            source=embedder,
            method=self.name,
            transform=SubspaceRemoval(basis, specific),
            vocab=tuple(words),
            matrix=matrix,
            info=info,
        )
