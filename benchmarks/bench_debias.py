"""Hard-Debias (and INLP) over a whole vocabulary: wall time and memory.

A seeded random embedding of 200,000 x 300 float32 (the size of a typical pruned word2vec/fastText
model) is held in memory by a gensim KeyedVectors behind a small embedder, and debiased with the
English lists (their words are put at the top of the vocabulary). Printed: the machine, the inputs,
then one row per method with the wall time of fit and transform and two memory figures: the peak of
memory allocated during the run as numpy reports it to tracemalloc, relative to the input matrix, and
the process's peak resident size. No figure is asserted: they are read, not enforced.

    python benchmarks/bench_debias.py [--words 200000] [--dim 300] [--seed 0] [--skip-inlp]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from bias.core.interfaces import Capability, Embedder
from bias.core.model import WordVectors
from bias.registry import get, load_wordset


class InMemoryVectors(Embedder):
    """A KeyedVectors already in memory, offered as a static embedder (no file to read)."""

    name: ClassVar[str] = "in-memory"
    summary: ClassVar[str] = "vectors held in memory"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS, Capability.VOCABULARY})

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self.location = "memory"

    def vocabulary(self, limit: int | None = None) -> list[str]:
        return list(self.kv.index_to_key[:limit])

    def all_vectors(self, limit: int | None = None) -> WordVectors:
        words = tuple(self.kv.index_to_key[:limit])
        return WordVectors(words, self.kv.vectors[: len(words)])

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        found = [w for w in dict.fromkeys(words) if w in self.kv.key_to_index]
        lost = tuple(w for w in dict.fromkeys(words) if w not in self.kv.key_to_index)
        rows = np.array([self.kv[w] for w in found], dtype=np.float64).reshape(len(found), self.kv.vector_size)
        return WordVectors(tuple(found), rows, lost=lost)


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{platform.platform()} | {cpu} x {os.cpu_count()} | Python {platform.python_version()} | numpy {np.__version__}"


def build(words: int, dim: int, seed: int) -> tuple[InMemoryVectors, Any]:
    from gensim.models import KeyedVectors

    lists = load_wordset("en/debias-gender")
    vocab = list(dict.fromkeys(lists.all_words()))
    vocab += [f"w{i}" for i in range(words - len(vocab))]
    vectors = np.random.default_rng(seed).standard_normal((len(vocab), dim), dtype=np.float32)
    kv = KeyedVectors(vector_size=dim, count=len(vocab), dtype=np.float32)
    kv.index_to_key = vocab
    kv.key_to_index = {w: i for i, w in enumerate(vocab)}
    kv.vectors = vectors
    return InMemoryVectors(kv), lists


def measure(method: str, embedder: InMemoryVectors, lists: Any, **params: Any) -> dict[str, float]:
    debiaser = get("debiaser", method)(**params)
    tracemalloc.start()
    started = time.perf_counter()
    debiaser.fit(embedder, lists)
    fitted = time.perf_counter()
    result = debiaser.transform(embedder)
    done = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.matrix is not None and result.matrix.shape == embedder.kv.vectors.shape
    return {"fit": fitted - started, "transform": done - fitted, "total": done - started, "peak": peak}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-inlp", action="store_true", help="time Hard-Debias only")
    args = parser.parse_args(argv)

    print(f"machine: {machine()}")
    embedder, lists = build(args.words, args.dim, args.seed)
    size = embedder.kv.vectors.nbytes
    print(f"input:   {args.words:,} x {args.dim} float32 random vectors (seed {args.seed}), {size / 2**20:.0f} MiB; lists en/debias-gender")
    rows = [("hard (k=1)", "hard", {})]
    if not args.skip_inlp:
        rows.append(("inlp (10 iterations, 1000 words/class)", "inlp", {}))
    print(f"{'method':<42}{'fit s':>8}{'transform s':>13}{'total s':>9}{'peak alloc MiB':>16}{'x input':>9}")
    for label, method, params in rows:
        found = measure(method, embedder, lists, **params)
        print(
            f"{label:<42}{found['fit']:>8.2f}{found['transform']:>13.2f}{found['total']:>9.2f}"
            f"{found['peak'] / 2**20:>16.0f}{found['peak'] / size:>9.2f}"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    print(f"process peak resident size: {rss / 2**20:.0f} MiB (input matrix included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
