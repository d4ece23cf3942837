"""Which model files a number came from: the digest that keys encoding caches and manifests, and the
exact revision and file hashes of a model taken from the Hugging Face Hub cache."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "special_tokens_map.json",
    "sentencepiece.bpe.model",
    "spiece.model",
    "added_tokens.json",
)
PARTIAL_HASH_BYTES = 1 << 20  # a weight file's first and last MiB go into the fingerprint


def file_digest(path: Path) -> str:
    """Size, modification time and a hash of the first and last MiB: cheap on multi-GB weights, yet
    it changes when a file is replaced by another of the same size."""
    stat = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(PARTIAL_HASH_BYTES))
        if stat.st_size > 2 * PARTIAL_HASH_BYTES:
            handle.seek(-PARTIAL_HASH_BYTES, os.SEEK_END)
            digest.update(handle.read())
    return f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}:{digest.hexdigest()[:16]}"


def folder_digest(folder: Path) -> str:
    """A digest of a model folder: its resolved path, config and tokenizer files by content, weights
    by `file_digest`; other files (READMEs, training logs) do not change the numbers and are left
    out."""
    digest = hashlib.sha256()
    digest.update(str(folder.resolve()).encode())
    digest.update(hashlib.sha256((folder / "config.json").read_bytes()).digest())
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if path.name in TOKENIZER_FILES:
            digest.update(path.name.encode() + hashlib.sha256(path.read_bytes()).digest())
        elif path.suffix in WEIGHT_SUFFIXES or path.name.endswith(".index.json"):
            digest.update(file_digest(path).encode())
    return digest.hexdigest()


def cache_fingerprint(files: str, dtype: str, token_limit: int | None) -> str:
    """What the numbers of an encoding depend on besides the request itself (text, span, pooling and
    layer are part of each row's key). The device and batch size are left out on purpose: they
    change rows only by rounding, so a cache filled on a GPU serves a CPU run."""
    import transformers

    return f"hf|{files}|dtype={dtype}|limit={token_limit}|transformers={transformers.__version__}"


def hub_provenance(folder: Path | None) -> dict[str, Any]:
    """For a model from the Hub cache: its revision (the snapshot folder is named by its commit)
    and the SHA-256 of each file, so a run says exactly which files it used."""
    if folder is None or folder.parent.name != "snapshots":
        return {}
    hashes = {}
    for path in sorted(folder.iterdir()):
        if path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(block)
            hashes[path.name] = digest.hexdigest()
    return {"source": "huggingface-hub", "revision": folder.name, "file_sha256": hashes}
