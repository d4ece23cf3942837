"""The word-vector bias measures WEFE gathered (Badilla et al. 2020), computed from their papers:
RND (Garg et al. 2018), RNSB (Sweeney & Najafian 2019), MAC (Manzini et al. 2019), ECT (Dev &
Phillips 2019) and RIPA (Ethayarajh et al. 2019).

All five read an association test (targets X, Y; attributes A, B); each class docstring says how it
maps the four sets onto its own definition and which sign means what. Two known problems of WEFE's
versions are avoided: RND has one sign convention whatever the distance (WEFE's cosine variant flips
it), and RIPA's relation vector never pairs X and Y words by their position in the lists unless
asked."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np
from bias.api import ValueKind
from bias.api import (
    AssociationMetric,
    BiasError,
    Measured,
    SetVectors,
    between,
    one_of,
    param,
    unit_rows,
)


def _unit(m: np.ndarray) -> np.ndarray:
    return unit_rows(m)


def _per_word(words: list[str], values: np.ndarray) -> dict[str, float]:
    return {w: float(x) for w, x in zip(words, values)}


# --- RND
# -------------------------------------------------------------------------------------------

DISTANCES = ("euclidean", "cosine")


def relative_norm_distance(
    neutral: np.ndarray, group_x: np.ndarray, group_y: np.ndarray, distance: str = "euclidean"
) -> np.ndarray:
    """Per neutral word: dist(v, mean X) - dist(v, mean Y) (Garg et al. 2018); sum it for RND.

    Both distances keep one convention: positive means the word lies closer to Y than to X. The
    cosine variant uses the cosine distance 1 - cos, not the similarity, so its sign agrees with
    Euclid's."""
    mx, my = group_x.mean(axis=0), group_y.mean(axis=0)
    if distance == "euclidean":
        return np.linalg.norm(neutral - mx, axis=1) - np.linalg.norm(neutral - my, axis=1)
    n = _unit(neutral)
    return (1.0 - n @ (mx / np.linalg.norm(mx))) - (1.0 - n @ (my / np.linalg.norm(my)))


@attrs.define
class Rnd(AssociationMetric):
    """Relative Norm Distance (Garg et al. 2018): RND = sum over neutral words v of
    ||v - mean(X)|| - ||v - mean(Y)||, the two groups' vectors being the means of their words.

    Data: X and Y are the two groups (e.g. male and female words); A u B are the neutral words
    (e.g. occupations). Sign, as in Garg et al.: positive means the neutral words lie on the whole
    closer to Y than to X; 0 means equally close. Unlike WEFE's cosine variant, `distance = cosine`
    uses the cosine distance 1 - cos and keeps this sign. Vectors are unit-normalised first
    (`normalise`), as Garg et al. did. Figures split the sum into the A and B words. No p-value.
    """

    name: ClassVar[str] = "rnd"
    summary: ClassVar[str] = (
        "Relative Norm Distance of neutral words to two groups (Garg et al. 2018)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "RND", "relative norm distance (+: closer to Y)", digits=3
    )

    distance: str = param(
        "euclidean",
        "euclidean (Garg et al.) or cosine (1 - cos; same sign convention)",
        validator=one_of(DISTANCES),
    )
    normalise: bool = param(
        True, "unit-normalise every vector before averaging groups (Garg et al.)"
    )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        m = {k: (_unit(x) if self.normalise else x) for k, x in sets.matrices.items()}
        per_a = relative_norm_distance(m["A"], m["X"], m["Y"], self.distance)
        per_b = relative_norm_distance(m["B"], m["X"], m["Y"], self.distance)
        total = float(per_a.sum() + per_b.sum())
        figures = {
            "rnd": total,
            "rnd_A": float(per_a.sum()),
            "rnd_B": float(per_b.sum()),
            "mean_per_word": total / (len(per_a) + len(per_b)),
            "per_word": {**_per_word(sets.words["A"], per_a), **_per_word(sets.words["B"], per_b)},
        }
        convention = {
            "distance": self.distance,
            "normalise": self.normalise,
            "sign": "positive: neutral words (A u B) closer to Y than to X",
            "neutral": "A u B",
        }
        return Measured(total, figures=figures, convention=convention)


# --- RNSB
# ------------------------------------------------------------------------------------------


def rnsb_divergence(probabilities: np.ndarray) -> tuple[float, np.ndarray]:
    """KL(P || U) of the normalised probabilities P = p / sum p against the uniform U (nats)."""
    p = np.asarray(probabilities, dtype=np.float64)
    P = p / p.sum()
    n = len(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * np.log(P * n), 0.0)
    return float(terms.sum()), P


@attrs.define
class Rnsb(AssociationMetric):
    """Relative Negative Sentiment Bias (Sweeney & Najafian 2019): a logistic regression is trained
    to tell attribute set B (the "negative" words, label 1) from A (label 0); each target word t of
    X u Y gets p(t) = P(B | t); P = p / sum p over all target words; RNSB = KL(P || uniform), in
    nats.

    Data: A = positive and B = negative sentiment words; X u Y = the identity terms, each word its
    own identity (as in the paper). Direction: none; RNSB >= 0, 0 when every identity word is
    equally likely to be called negative, larger = less even. figures.mean_p_B_X and mean_p_B_Y say
    which group is called negative more. The classifier (scikit-learn, lbfgs, L2 with `C`) is
    deterministic and trained on all of A u B, on the vectors as the model gives them (not
    unit-normalised, as in WEFE; recorded); its training accuracy is reported. No p-value."""

    name: ClassVar[str] = "rnsb"
    summary: ClassVar[str] = (
        "Relative Negative Sentiment Bias: KL of negative-class probabilities from uniform "
        "(Sweeney & Najafian 2019)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "RNSB", "RNSB, KL from uniform (nats)", signed=False, digits=3
    )

    C: float = param(
        1.0,
        "inverse L2 regularisation strength of the logistic regression",
        validator=between(1e-9, 1e9),
    )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        from sklearn.linear_model import LogisticRegression

        m = sets.matrices
        train = np.vstack([m["A"], m["B"]])
        labels = np.concatenate([np.zeros(len(m["A"])), np.ones(len(m["B"]))])
        model = LogisticRegression(C=self.C, max_iter=5000)
        model.fit(train, labels)
        targets = np.vstack([m["X"], m["Y"]])
        p = model.predict_proba(targets)[:, list(model.classes_).index(1.0)]
        divergence, P = rnsb_divergence(p)
        nx = len(m["X"])
        figures = {
            "rnsb": divergence,
            "mean_p_B_X": float(p[:nx].mean()),
            "mean_p_B_Y": float(p[nx:].mean()),
            "training_accuracy": float(model.score(train, labels)),
            "p_B": _per_word(sets.words["X"] + sets.words["Y"], p),
        }
        convention = {
            "classifier": f"logistic regression, lbfgs, C={self.C}, trained on all of A (0) "
            "and B (1)",
            "identities": "each word of X u Y",
            "divergence": "KL(P || uniform), natural log",
            "vectors": "as the model gives them, not unit-normalised (as in WEFE); the classifier "
            "sees their lengths",
        }
        return Measured(divergence, figures=figures, convention=convention)


# --- MAC
# -------------------------------------------------------------------------------------------


def mean_cosine_distances(targets: np.ndarray, attributes: np.ndarray) -> np.ndarray:
    """S(t, A) = mean over a in A of 1 - cos(t, a), for every row t at once."""
    return 1.0 - _unit(targets) @ _unit(attributes).mean(axis=0)


@attrs.define
class Mac(AssociationMetric):
    """Mean Average Cosine distance (Manzini et al. 2019): MAC = mean over target words t and
    attribute sets A_j of S(t, A_j), where S(t, A_j) = mean over a in A_j of 1 - cos(t, a).

    Data: the targets are X u Y, the attribute sets A and B. Direction: none; MAC lies in [0, 2], 1
    means targets and attributes are orthogonal on average, lower means they are closer (the paper
    reads values near 1 as little bias). MAC averages both groups and both attribute sets, so it
    cannot tell which way a group leans: figures give the four means S(X, A), S(X, B), S(Y, A), S(Y,
    B). No p-value."""

    name: ClassVar[str] = "mac"
    summary: ClassVar[str] = (
        "Mean Average Cosine distance of targets to attribute sets (Manzini et al. 2019)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "MAC", "mean average cosine distance", reference=None, signed=False, digits=3
    )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        m = sets.matrices
        targets = np.vstack([m["X"], m["Y"]])
        s_a = mean_cosine_distances(targets, m["A"])
        s_b = mean_cosine_distances(targets, m["B"])
        mac = float(np.concatenate([s_a, s_b]).mean())
        nx = len(m["X"])
        figures = {
            "mac": mac,
            "S_X_A": float(s_a[:nx].mean()),
            "S_X_B": float(s_b[:nx].mean()),
            "S_Y_A": float(s_a[nx:].mean()),
            "S_Y_B": float(s_b[nx:].mean()),
        }
        convention = {"targets": "X u Y", "attribute_sets": "A, B", "distance": "1 - cos"}
        return Measured(mac, figures=figures, convention=convention)


# --- ECT
# -------------------------------------------------------------------------------------------


@attrs.define
class Ect(AssociationMetric):
    """Embedding Coherence Test (Dev & Phillips 2019): the Spearman rank correlation between the
    cosine similarities of each attribute word with the mean vector of X and with the mean vector
    of Y (words unit-normalised first).

    Data: X and Y are the two groups (e.g. male and female words), A u B the attribute words (e.g.
    occupations). Direction: ECT lies in [-1, 1]; 1 means both groups rank the attributes the same
    way (no bias), lower means the groups order the attributes differently. Spearman's p (for rho =
    0) is in the figures; it is not a test of bias, so p_value is empty."""

    name: ClassVar[str] = "ect"
    summary: ClassVar[str] = (
        "Embedding Coherence Test: rank correlation of attribute similarities to two "
        "groups (Dev & Phillips 2019)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "ECT rho",
        "ECT rank correlation (1 = no bias)",
        reference=1.0,
        digits=3,
        more_biased="lower",
    )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        from scipy.stats import spearmanr

        m = {k: _unit(x) for k, x in sets.matrices.items()}
        attributes = np.vstack([m["A"], m["B"]])
        mx, my = m["X"].mean(axis=0), m["Y"].mean(axis=0)
        sim_x = attributes @ (mx / np.linalg.norm(mx))
        sim_y = attributes @ (my / np.linalg.norm(my))
        if len(attributes) < 2 or np.ptp(sim_x) == 0 or np.ptp(sim_y) == 0:
            raise BiasError(
                "ECT needs at least two attribute words whose similarities differ.",
                "Check sets A and B.",
            )
        rho, p = spearmanr(sim_x, sim_y)
        words = sets.words["A"] + sets.words["B"]
        figures = {
            "ect": float(rho),
            "spearman_p": float(p),
            "similarity_to_X": _per_word(words, sim_x),
            "similarity_to_Y": _per_word(words, sim_y),
        }
        convention = {
            "groups": "mean of unit vectors of X and of Y",
            "attributes": "A u B",
            "correlation": "Spearman, ties averaged",
        }
        return Measured(float(rho), figures=figures, convention=convention)


# --- RIPA
# ------------------------------------------------------------------------------------------

RELATIONS = ("all-pairs", "means", "paired", "per-pair")


def relation_vector(
    x: np.ndarray, y: np.ndarray, relation: str = "all-pairs"
) -> tuple[np.ndarray, float | None]:
    """The unit relation vector b pointing from Y to X, and the share of the difference vectors'
    second moment it explains (1.0 when it is a single difference).

    - all-pairs: first principal component (uncentred) of every difference x_i - y_j, computed from
      sum_ij (x_i - y_j)(x_i - y_j)^T = |Y| sum x x^T + |X| sum y y^T - sx sy^T - sy sx^T without
      building the |X||Y| differences;
    - means: b = (mean X - mean Y) / norm;
    - paired: first principal component of x_i - y_i, the i-th words of equally long lists (only for
      lists written as pairs, e.g. he/she, man/woman);
    - per-pair: WEFE's RIPA, one unit direction per pair of i-th words, RIPA(w) their mean
      w . (x_i - y_i) / |x_i - y_i|; that is w . b with b the mean of the unit pair directions, not
      itself a unit vector (explained: None, no single direction is fitted).
    The sign is fixed so that b . (mean X - mean Y) > 0 (per-pair: each pair points from y_i to
    x_i)."""
    gap = x.mean(axis=0) - y.mean(axis=0)
    if not np.linalg.norm(gap) > 0:
        raise BiasError(
            "RIPA: the mean vectors of X and Y coincide, so there is no relation vector.",
            "Check sets X and Y.",
        )
    if relation == "means":
        return gap / np.linalg.norm(gap), 1.0
    if relation in ("paired", "per-pair"):
        if len(x) != len(y):
            raise BiasError(
                f"RIPA relation=paired needs X and Y of equal size (found {len(x)} and "
                f"{len(y)} words in the model).",
                "Use relation=all-pairs or means for sets that are not written as pairs.",
            )
        diffs = x - y
        if relation == "per-pair":
            norms = np.linalg.norm(diffs, axis=1, keepdims=True)
            if not np.all(norms > 0):
                raise BiasError(
                    "RIPA relation=per-pair: a pair of X and Y words has the same vector.",
                    "Check the pairs of sets X and Y.",
                )
            return (diffs / norms).mean(axis=0), None
        second = diffs.T @ diffs
    else:
        sx, sy = x.sum(axis=0), y.sum(axis=0)
        second = len(y) * (x.T @ x) + len(x) * (y.T @ y) - np.outer(sx, sy) - np.outer(sy, sx)
    values, vectors = np.linalg.eigh(second)
    b = vectors[:, -1]
    if b @ gap < 0:
        b = -b
    explained = float(values[-1] / values.sum()) if values.sum() > 0 else 1.0
    return b / np.linalg.norm(b), explained


@attrs.define
class Ripa(AssociationMetric):
    """Relational Inner Product Association (Ethayarajh et al. 2019): RIPA(w) = w . b, the inner
    product of a word vector with the unit relation vector b that points from Y to X.

    Data: X and Y define the relation (e.g. male and female words); A and B are the words measured.
    b is the first principal component of the differences x_i - y_j over every pair of an X and a Y
    word (`relation = all-pairs`, default), or the difference of the set means (`means`), or of the
    i-th words only (`paired`, for lists written as pairs), or, as WEFE computes it, the mean of w .
    (x_i - y_i)/|x_i - y_i| over the i-th pairs (`per-pair`; WEFE's score for an attribute set is
    then figures["mean_ripa_A"]). Pairing by position makes the result depend on list order. Word
    vectors are used as they are (not normalised), as in the paper. effect_size = mean RIPA(A) -
    mean RIPA(B): positive means A lies further towards X than B does (the WEAT sign: X ~ A, Y ~ B).
    Figures give both means and every word's RIPA. No p-value."""

    name: ClassVar[str] = "ripa"
    summary: ClassVar[str] = (
        "Relational Inner Product Association along an X-Y relation vector (Ethayarajh et "
        "al. 2019)."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "RIPA", "RIPA, mean inner product with the X-Y relation", digits=3
    )

    relation: str = param(
        "all-pairs",
        "relation vector from all-pairs (first PC of every x - y), means, paired (first PC "
        "of the i-th pairs) "
        "or per-pair (WEFE: the mean over the i-th pairs' unit directions)",
        validator=one_of(RELATIONS),
    )
    normalise: bool = param(
        False, "unit-normalise word vectors first (the paper uses them as they are)"
    )

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        m = {k: (_unit(x) if self.normalise else x) for k, x in sets.matrices.items()}
        b, explained = relation_vector(m["X"], m["Y"], self.relation)
        ra, rb = m["A"] @ b, m["B"] @ b
        effect = float(ra.mean() - rb.mean())
        figures = {
            "mean_ripa_A": float(ra.mean()),
            "mean_ripa_B": float(rb.mean()),
            "explained": explained,
            "ripa": {**_per_word(sets.words["A"], ra), **_per_word(sets.words["B"], rb)},
        }
        convention = {
            "relation": self.relation,
            "normalise": self.normalise,
            "sign": "b points from Y to X; positive effect: A further towards X than B",
        }
        return Measured(effect, figures=figures, convention=convention)
