"""Re-export of `bias.core.debiased`, where the debiased embedder lives (every debiaser returns one,
and plugins import core only); kept so that code importing it from here keeps working."""

from bias.core.debiased import *  # noqa: F401,F403
from bias.core.debiased import (  # noqa: F401
    CHUNK_ROWS,
    DebiasedEmbedder,
    FitOnLoad,
    LinearProjection,
    PerEncoding,
    SubspaceRemoval,
    VectorTransform,
    check_dtype,
    has_vocabulary,
    remove_subspace_,
    timed,
    unit_rows_,
    vocabulary_matrix,
    write_vectors,
)
