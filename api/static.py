"""Building blocks of embedders over static vector files: the shared base class, file-format
sniffing and checks, and the on-disk cache of encodings.

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.models import encoding_cache
from bias.core.models.static.base import (
    StaticEmbedder,
    check_static_request,
    read_only,
    static_encode,
    text_words,
    unique,
    words_to_vectors,
)
from bias.core.models.static.from_encoder import (
    SourceNormaliser,
    check_encoder_folder,
    token_vectors_file,
)
from bias.core.models.static.formats import (
    FASTTEXT_BIN,
    FileFormat,
    HEADERLESS_TEXT,
    PICKLE,
    WORD2VEC_BINARY,
    WORD2VEC_TEXT,
    check_binary_rest,
    check_header_fits,
    check_text_rows,
    existing_file,
    sniff_format,
    wrong_format,
)
from bias.core.models.static.word2vec_files import (
    WordTable,
    open_vectors_file,
    read_glove,
    read_word2vec,
)
from bias.core.data.text_formats import read_lines, with_layout_language

__all__ = [
    "check_binary_rest",
    "check_encoder_folder",
    "check_header_fits",
    "check_static_request",
    "check_text_rows",
    "encoding_cache",
    "existing_file",
    "FASTTEXT_BIN",
    "FileFormat",
    "HEADERLESS_TEXT",
    "open_vectors_file",
    "PICKLE",
    "read_lines",
    "read_glove",
    "read_only",
    "read_word2vec",
    "sniff_format",
    "static_encode",
    "StaticEmbedder",
    "text_words",
    "SourceNormaliser",
    "token_vectors_file",
    "unique",
    "with_layout_language",
    "WORD2VEC_BINARY",
    "WORD2VEC_TEXT",
    "words_to_vectors",
    "WordTable",
    "wrong_format",
]
