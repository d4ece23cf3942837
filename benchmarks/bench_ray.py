"""Local runner against the Ray executor on one machine: throughput and per-experiment overhead.

Run:  python benchmarks/bench_ray.py [--seeds S] [--models M] [--workers W] [--permutations P]

A grid of M (default 4) small static models (seeded random 50-d vectors in word2vec text files) x S
(default 52) seeds of one 8 v 8 WEAT test (sampled permutation test with P permutations, default
20,000; no bootstrap): 208 cheap experiments by default. It is run twice into fresh folders: with the
local runner (one process) and with the Ray executor on a local Ray instance of W CPUs (default 2),
each model's actor declaring one CPU, so W actors work at once. Printed: wall time, experiments per
second, the metrics' own compute time (sum of compute_s) and the overhead per experiment (wall time
less compute, divided by the count: model loading, scheduling, transfer and the driver's writes),
plus Ray's start and stop time, and whether both runs gave identical results key by key.
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from bias.engine import planning, ray_executor, runner
from bias.engine.experiments import Experiment, ModelConfig

WORDS = {
    "X": ["rose", "tulip", "daisy", "lily", "orchid", "violet", "poppy", "iris"],
    "Y": ["ant", "wasp", "beetle", "moth", "flea", "hornet", "gnat", "spider"],
    "A": ["joy", "love", "peace", "happy", "gentle", "lucky", "honest", "warm"],
    "B": ["pain", "hatred", "war", "ugly", "filthy", "rotten", "poison", "grief"],
}


def write_inputs(folder: Path, n_models: int) -> tuple[list[Path], Path]:
    words = [w for ws in WORDS.values() for w in ws]
    models = []
    for i in range(n_models):
        rng = np.random.default_rng(i)
        path = folder / f"model{i}.txt"
        path.write_text(f"{len(words)} 50\n" + "".join(w + " " + " ".join(f"{v:.5f}" for v in rng.normal(size=50)) + "\n" for w in words))
        models.append(path)
    wordset = folder / "flowers.toml"
    wordset.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "benchmark"\nlicence = "CC0-1.0"\n'
        + "".join(f"[sets.{k}]\nwords = {ws!r}\n".replace("'", '"') for k, ws in WORDS.items())
    )
    return models, wordset


def comparable(result: object) -> dict:
    d = result.to_dict()  # type: ignore[attr-defined]
    d.pop("timings", None)
    d.pop("versions", None)
    return d


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=52)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--permutations", type=int, default=20_000)
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models, wordset = write_inputs(folder, args.models)
        params = {"permutations": args.permutations, "exact_limit": 0, "bootstrap": 0}
        experiments = [
            Experiment(ModelConfig(f"word2vec:{m}", resources={"cpus": 1}), str(wordset), "weat", dict(params), seed)
            for m in models
            for seed in range(args.seeds)
        ]
        prepared = planning.plan(experiments).runnable
        n = len(prepared)
        print(f"grid: {args.models} models x {args.seeds} seeds = {n} WEAT experiments (8 v 8, {args.permutations:,} sampled permutations)")

        started = time.perf_counter()
        local = list(runner.run(prepared, out=folder / "local"))
        local_wall = time.perf_counter() - started

        import ray

        started = time.perf_counter()
        ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - started
        started = time.perf_counter()
        on_ray = list(ray_executor.run(prepared, out=folder / "ray"))
        ray_wall = time.perf_counter() - started
        started = time.perf_counter()
        ray.shutdown()
        ray_stop = time.perf_counter() - started

    same = {r.key: comparable(r) for r in local} == {r.key: comparable(r) for r in on_ray}
    print(f"{'executor':<26}{'wall s':>9}{'exp/s':>9}{'compute s':>11}{'overhead ms/exp':>17}")
    for label, results, wall in (("local (1 process)", local, local_wall), (f"ray ({args.workers} workers)", on_ray, ray_wall)):
        compute = sum(r.timings["compute_s"] for r in results)
        print(f"{label:<26}{wall:>9.2f}{len(results) / wall:>9.1f}{compute:>11.2f}{(wall - compute) * 1e3 / len(results):>17.2f}")
    print(f"ray start {ray_start:.2f} s, stop {ray_stop:.2f} s (not in the wall times above)")
    print(f"results identical key by key (timings and versions aside): {same}")


if __name__ == "__main__":
    main()
