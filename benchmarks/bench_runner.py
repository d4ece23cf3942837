"""Runner overhead per experiment: what the batch machinery costs beyond the metrics themselves.

Run:  python benchmarks/bench_runner.py [--experiments N] [--bootstrap B]

A grid of N (default 500) cheap WEAT experiments (one 8 x 8 test, seeds 0..N-1, exact permutation
test) on a small static model (random 50-d vectors in a word2vec text file) is planned and run into a
temporary folder, with results appended, flushed and fsynced one by one as in a real batch. Printed:
planning time, model load, the metrics' own compute time (sum of `compute_s`), and the rest, per
experiment: the runner's overhead (routing, keys, result records, JSON lines, fsync). Figures only,
no assertions: they depend on the machine and its disk.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from bias.engine import planning, runner
from bias.engine.experiments import Experiment, ModelConfig

WORDS = {
    "X": ["rose", "tulip", "daisy", "lily", "orchid", "violet", "poppy", "iris"],
    "Y": ["ant", "wasp", "beetle", "moth", "flea", "hornet", "gnat", "spider"],
    "A": ["joy", "love", "peace", "happy", "gentle", "lucky", "honest", "warm"],
    "B": ["pain", "hatred", "war", "ugly", "filthy", "rotten", "poison", "grief"],
}


def write_inputs(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    words = [w for ws in WORDS.values() for w in ws]
    model = folder / "vectors.txt"
    model.write_text(f"{len(words)} 50\n" + "".join(w + " " + " ".join(f"{v:.5f}" for v in rng.normal(size=50)) + "\n" for w in words))
    wordset = folder / "bench.toml"
    wordset.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "benchmark"\nlicence = "CC-BY-4.0"\n'
        + "".join(f"[sets.{k}]\nwords = {ws!r}\n".replace("'", '"') for k, ws in WORDS.items())
    )
    return model, wordset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=500)
    parser.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples per experiment (default 0: overhead only)")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model, wordset = write_inputs(folder)
        experiments = [
            Experiment(ModelConfig(f"word2vec:{model}"), str(wordset), "weat", {"bootstrap": args.bootstrap}, seed)
            for seed in range(args.experiments)
        ]
        started = time.perf_counter()
        plan = planning.plan(experiments)
        planned = time.perf_counter() - started
        started = time.perf_counter()
        results = list(runner.run(plan.runnable, out=folder / "out"))
        wall = time.perf_counter() - started
    n = len(results)
    compute = sum(r.timings["compute_s"] for r in results)
    load = results[0].timings["model_load_s"]
    overhead = wall - compute - load
    print(f"experiments: {n} WEAT 8x8 (exact test), bootstrap={args.bootstrap}")
    print(f"{'planning (metrics built, word sets loaded, keys)':52s} {planned:8.3f} s  {1e3 * planned / n:7.3f} ms/experiment")
    print(f"{'model load (once)':52s} {load:8.3f} s")
    print(f"{'metric compute (sum of compute_s)':52s} {compute:8.3f} s  {1e3 * compute / n:7.3f} ms/experiment")
    print(f"{'runner overhead (wall - compute - load)':52s} {overhead:8.3f} s  {1e3 * overhead / n:7.3f} ms/experiment")
    print(f"{'total run wall time':52s} {wall:8.3f} s")


if __name__ == "__main__":
    main()
