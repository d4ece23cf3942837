"""The building blocks of debiasing, for first-party and third-party debiasers alike.

- `DebiasedEmbedder`: what `Debiaser.transform` returns, an ordinary Embedder over a debiased matrix
  (static models) or a transformation applied on the fly (contextual models); `write_vectors` saves
  a debiased matrix as a word2vec file;
- `VectorTransform` and its kinds (`SubspaceRemoval`, `LinearProjection`, `PerEncoding`);
- `FitOnLoad`: fit when the debiased model is first loaded (`bias run --debias`);
- `pair_subspace`: the principal directions of pair-centred vectors (the bias subspace);
- `vocabulary_matrix`, `labelled_words`, `check_dtype`, `timed`: reading the vocabulary to debias,
  training words, and the record of a fit.
"""

from bias.core.models.debiasing.embedder import FORMATS, DebiasedEmbedder, write_vectors
from bias.core.models.debiasing.fitting import (
    FitOnLoad,
    check_dtype,
    labelled_words,
    timed,
    vocabulary_matrix,
)
from bias.core.models.debiasing.subspace import pair_subspace
from bias.core.models.debiasing.transforms import (
    CHUNK_ROWS,
    LinearProjection,
    PerEncoding,
    SubspaceRemoval,
    VectorTransform,
    remove_subspace_,
    unit_rows_,
)

__all__ = [
    "CHUNK_ROWS",
    "FORMATS",
    "DebiasedEmbedder",
    "FitOnLoad",
    "LinearProjection",
    "PerEncoding",
    "SubspaceRemoval",
    "VectorTransform",
    "check_dtype",
    "labelled_words",
    "pair_subspace",
    "remove_subspace_",
    "timed",
    "unit_rows_",
    "vocabulary_matrix",
    "write_vectors",
]
