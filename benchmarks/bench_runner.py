"""Runner overhead per experiment: what the batch machinery costs beyond the metrics themselves.

Run:  python benchmarks/bench_runner.py [--experiments N] [--bootstrap B] [--repeats R] [--folder DIR]

A grid of N (default 500) cheap WEAT experiments (one 8 x 8 test, seeds 0..N-1, exact permutation
test) on a small static model (random 50-d vectors in a word2vec text file) is planned and run into a
temporary folder, with results written and fsynced as in a real batch. Printed, in CPU seconds of
this process (so a busy machine inflates them less; on a virtual machine a host's contention still
shows), best of R: planning per experiment, the whole run, and the metrics' own work (the same N
`compute` calls on the loaded model, without the runner). The runner's overhead (routing, keys,
result records, tables, JSON lines, fsync), target <= 0.5 ms, is each run less the CPU seconds
spent inside its own `compute` calls (timed around each call), the median of the R runs: two
separate runs differ by more than the overhead on a busy machine. A first experiment is run untimed, so that imports a metric
makes on first use count in neither. Figures only, no assertions: they depend on the machine and
its disk.

Each WEAT result writes its per-word table as a file of its own, and what the kernel spends creating
a file is the disk's, not the runner's: on a shared machine it went from 0.01 to 1 ms a file within
minutes. The same number of files of the same size, created bare (`os.open`, `os.write`,
`os.close`) in the same folder, is therefore printed beside the overhead (median of R), which is also given
without it. `--folder` runs in another folder (a tmpfs such as /dev/shm shows the runner alone).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None, help="where to run (default: a temporary folder)")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, numpy {np.__version__}")
    clock = time.process_time
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        folder = Path(tmp)
        model, wordset = write_inputs(folder)

        def grid(n: int) -> list[Experiment]:
            return [
                Experiment(ModelConfig(f"word2vec:{model}"), str(wordset), "weat", {"bootstrap": args.bootstrap}, seed)
                for seed in range(n)
            ]

        list(runner.run(planning.plan(grid(1)).runnable, out=folder / "warm-up"))  # imports on first use
        best = {"planning": float("inf"), "run": float("inf"), "metrics": float("inf"), "files": float("inf")}
        overheads, files = [], []
        for repeat in range(args.repeats):
            started = clock()
            plan = planning.plan(grid(args.experiments))
            best["planning"] = min(best["planning"], clock() - started)
            inside = timed_computes(type(plan.runnable[0].metric), clock)
            started = clock()
            results = list(runner.run(plan.runnable, out=folder / f"out-{repeat}"))
            run_s = clock() - started
            inside.undo()
            best["run"] = min(best["run"], run_s)
            overheads.append(run_s - inside.seconds)
            from bias import registry

            embedder = registry.build_embedder(plan.runnable[0].experiment.model.parsed, None)
            embedder.load()
            started = clock()
            for p in plan.runnable:
                p.metric.compute(embedder, p.data, seed=p.experiment.seed)
            best["metrics"] = min(best["metrics"], clock() - started)
            files.append(bare_files(folder / f"out-{repeat}", clock))
    n = len(results)
    overhead, floor = statistics.median(overheads), statistics.median(files)
    print(f"experiments: {n} WEAT 8x8 (exact test), bootstrap={args.bootstrap}; CPU seconds, best of {args.repeats}")
    print(f"{'planning (metrics built, word sets loaded, keys)':52s} {best['planning']:8.3f} s  {1e3 * best['planning'] / n:7.3f} ms/experiment")
    print(f"{'whole run (model load, metrics, results written)':52s} {best['run']:8.3f} s  {1e3 * best['run'] / n:7.3f} ms/experiment")
    print(f"{'the metrics alone (compute on the loaded model)':52s} {best['metrics']:8.3f} s  {1e3 * best['metrics'] / n:7.3f} ms/experiment")
    print(f"runner overhead (each run less its metrics' compute calls, median of {args.repeats}; target <= 0.5 ms):")
    print(f"{'  overhead':52s} {overhead:8.3f} s  {1e3 * overhead / n:7.3f} ms/experiment")
    print(f"{'  the kernel creating the same files, bare':52s} {floor:8.3f} s  {1e3 * floor / n:7.3f} ms/experiment")
    print(f"{'  the overhead beyond creating them':52s} {overhead - floor:8.3f} s  {1e3 * (overhead - floor) / n:7.3f} ms/experiment")


class timed_computes:
    """The CPU seconds spent inside `cls.compute` from now until `undo()`, summed."""

    def __init__(self, cls: type, clock) -> None:
        self.cls, self.original, self.seconds = cls, cls.compute, 0.0

        def compute(metric, *args, **kwargs):
            started = clock()
            try:
                return self.original(metric, *args, **kwargs)
            finally:
                self.seconds += clock() - started

        cls.compute = compute

    def undo(self) -> None:
        self.cls.compute = self.original


def bare_files(run_folder: Path, clock) -> float:
    """CPU seconds to create, in a fresh folder beside `run_folder`, files of the sizes the run wrote
    there (its results file excluded), with nothing but the system calls."""
    sizes = [f.stat().st_size for f in run_folder.iterdir() if f.suffix == ".csv"]
    target = run_folder.with_name(run_folder.name + "-bare")
    target.mkdir()
    started = clock()
    for i, size in enumerate(sizes):
        fd = os.open(target / f"{i}.csv", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"x" * size)
        os.close(fd)
    return clock() - started


if __name__ == "__main__":
    main()
