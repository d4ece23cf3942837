"""A whole `bias run` of one WEAT against sent-bias's whole script, both as fresh processes.

Run:  python benchmarks/bench_weat_process.py [--size 25] [--dim 300] [--permutations 100000]
                                              [--rounds 5]

sent-bias (May et al. 2019, W4ngatang/sent-bias `sentbias/weat.py`) is the peer a WEAT user compares
with. Its side here is a script written for this benchmark after that file's published algorithm
(not its code): the imports it makes (numpy, scipy.special, scipy.stats), the cosines of every target
and attribute in a Python double loop, s(w, A, B) per target, the permutation test as it draws it
(the observed partition counted once as exceeding, then n - 1 `np.random.shuffle` of the pooled
targets, ties counted; every partition when there are at most n), and the effect size with the
sample std. Both read the same vectors: sent-bias's from an .npz of the four sets, ours from a
word2vec text file and a word-set file, as a user runs it:

    bias run --model word2vec:vectors.txt --wordset bench.toml --metric weat --permutations N
             --threads 1 --json -q            (and once more with --bootstrap 0)

Printed: the CPU seconds of each child process (user + system; median of the rounds, the two run
alternately), ours over sent-bias's (target <= 0.7 at 100,000 permutations with the default
bootstrap), and both effect sizes, which must agree (the p-values are sampled by different
generators). BLAS is held at one thread on both sides. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SENT_BIAS_STEPS = r"""
import itertools
import math
import sys

import numpy as np
import scipy.special
import scipy.stats  # imported at the top of sent-bias's weat.py

found = np.load(sys.argv[1])
X, Y, A, B = (found[k] for k in "XYAB")
n_samples = int(sys.argv[2])
targets, attributes = np.concatenate([X, Y]), np.concatenate([A, B])
cos = np.zeros((len(targets), len(attributes)))
for i, t in enumerate(targets):
    for j, a in enumerate(attributes):
        cos[i, j] = np.dot(t, a) / math.sqrt(np.dot(t, t) * np.dot(a, a))
s = cos[:, : len(A)].mean(axis=1) - cos[:, len(A) :].mean(axis=1)
size = len(X)
observed = s[:size].sum()
pooled = np.arange(2 * size)
if int(scipy.special.binom(2 * size, size)) > n_samples:
    exceeding, total = 1, 1
    for _ in range(n_samples - 1):
        np.random.shuffle(pooled)
        exceeding += s[pooled[:size]].sum() >= observed
        total += 1
else:
    exceeding = total = 0
    for chosen in itertools.combinations(pooled, size):
        exceeding += s[np.array(chosen)].sum() >= observed
        total += 1
d = (s[:size].mean() - s[size:].mean()) / np.std(s, ddof=1)
print(float(d), exceeding / total)
"""


def write_inputs(folder: Path, size: int, dim: int) -> tuple[Path, Path, Path]:
    """Random vectors for four sets of `size` words: an .npz for sent-bias's side, a word2vec text
    file and a word-set file for ours."""
    rng = np.random.default_rng(0)
    names = {k: [f"{k.lower()}{i:03d}" for i in range(size)] for k in "XYAB"}
    vectors = {k: rng.normal(size=(size, dim)) for k in "XYAB"}
    vectors["X"][:, 0] += 0.5  # a planted association, so that d is far from 0
    vectors["A"][:, 0] += 0.5
    npz = folder / "sets.npz"
    np.savez(npz, **vectors)
    model = folder / "vectors.txt"
    with open(model, "w", encoding="utf-8") as fh:
        fh.write(f"{4 * size} {dim}\n")
        for k in "XYAB":
            for word, row in zip(names[k], vectors[k]):
                fh.write(word + " " + " ".join(repr(float(v)) for v in row) + "\n")
    wordset = folder / "bench.toml"
    wordset.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\n'
        'source = "benchmark"\nlicence = "CC0-1.0"\n'
        + "".join(f"[sets.{k}]\nwords = {json.dumps(names[k])}\n" for k in "XYAB"),
        encoding="utf-8",
    )
    return npz, model, wordset


def child_cpu(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds (user + system) of one child process, and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-2000:]}")
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=25, help="words in each of X, Y, A, B")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--permutations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    bias = [sys.executable, "-m", "bias.cli.app"]
    print(
        f"{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()} | "
        f"load {os.getloadavg()[0]:.1f} | {args.size} v {args.size} words, {args.dim} dims, "
        f"{args.permutations:,} permutations | CPU seconds of each process, median of "
        f"{args.rounds}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        npz, model, wordset = write_inputs(Path(tmp), args.size, args.dim)
        ours = [
            *bias,
            "run",
            "--model",
            f"word2vec:{model}",
            "--wordset",
            str(wordset),
            "--metric",
            "weat",
            "--permutations",
            str(args.permutations),
            "--threads",
            "1",
            "--json",
            "-q",
        ]
        commands = {
            "sent-bias's steps": [sys.executable, "-c", SENT_BIAS_STEPS, str(npz), str(args.permutations)],
            "bias run (default bootstrap)": ours,
            "bias run --bootstrap 0": [*ours, "--bootstrap", "0"],
        }
        for command in commands.values():  # untimed: bytecode written, files in the page cache
            child_cpu(command, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        answers: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, command in commands.items():
                used, answers[name] = child_cpu(command, env)
                times[name].append(used)
    reference = statistics.median(times["sent-bias's steps"])
    print(f"{'process':32s} {'CPU s':>8s} {'x sent-bias':>12s}")
    for name, found in times.items():
        median = statistics.median(found)
        print(f"{name:32s} {median:8.3f} {median / reference:11.2f}x")
    print("target: bias run (default bootstrap) <= 0.70x sent-bias's")
    d_ref, p_ref = (float(x) for x in answers["sent-bias's steps"].split())
    result = json.loads(answers["bias run (default bootstrap)"].splitlines()[0])
    print(
        f"effect size d: sent-bias's steps {d_ref:.6f}, bias run {result['effect_size']:.6f}; "
        f"p: {p_ref:.5f} and {result['p_value']:.5f} (sampled by different generators)"
    )


if __name__ == "__main__":
    main()
