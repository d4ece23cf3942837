"""One table: each piece of work, our time, the bound measured in the same run, and their ratio.

Run:  python benchmarks/run_all.py [--repeats R] [--sentences N] [--threads T] [--clock cpu|wall] [--skip-lm]

`--threads` sets torch's and numpy's BLAS threads for every row and for the GEMM that gives the LM
bound.

Prints figures only (no assertions). Every row pairs our code with its bound timed in the same
process, interleaved (ours, bound, ours, bound, ...), best of R repeats each; the ratio is what to
read. `--clock cpu` (the default) times both in CPU seconds of this process (of the child, for the
start-up rows), so the ratio does not move when other programs take part of the machine: a process
that waits for a core is not charged for the wait. At one thread that is the work's own time; with
more threads it adds up every thread's seconds, spin-waits included, so compare thread counts with
`--clock wall` on a quiet machine. The bounds:

- LM scoring (pll: CrowS pseudo-log-likelihood; aul: every token of the unmasked sentence; lpbs: a
  target read at its mask, and its prior with the attribute masked too; causal: every token of a
  sentence after the start token): the floating-point operations the work needs
  (`bench_lm_flops.flops`: layers by real tokens, attention by length squared, the output head by
  scored positions) divided by the rate of a large float32 GEMM measured in the same run at the same
  thread count. bert-base sized model (GPT-2 sized for causal), random weights; ratio = 1 / (fraction
  of the GEMM rate achieved). BBQ's answers are scored from a cached prompt, measured against one
  forward call per answer by bench_bbq.py.
- permutation tests (WEAT, SEAT and LPBS share `permutation_test`; FISE has its own null): a loop
  that only draws the same partitions the same way (the same generator calls, the subset found by a
  partition) and does one matrix-vector product per batch (FISE: one product per axis and batch with
  the traits' cosines), 100,000 permutations.
- start-up: `bias --help` and `bias list` in a fresh process against a bare `python -c pass`, the
  interpreter's own start-up with the same site-packages (best of R runs, output piped).
"""

from __future__ import annotations

import argparse
import os
import resource
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_lm_flops as lm  # noqa: E402

PERMUTATIONS = 100_000
ROWS: list[tuple[str, float, float]] = []
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
clock: Callable[[], float] = time.process_time  # set from --clock in main()


def interleaved(
    ours: Callable[[], object], bound: Callable[[], object], repeats: int
) -> tuple[float, float]:
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for k, fn in enumerate((ours, bound)):
            start = clock()
            fn()
            best[k] = min(best[k], clock() - start)
    return best[0], best[1]


def draw_bound(s: np.ndarray, n_x: int, permutations: int, seed: int) -> None:
    """Only the draws `permutation_test` makes (the same generator calls in the same chunks, the |X|
    smallest keys of each row found by a partition) and one matrix-vector product per chunk."""
    from bias.core.statistics.association import _CHUNK_ELEMENTS

    rng = np.random.default_rng(seed)
    n = len(s)
    chunk = max(1, min(permutations, _CHUNK_ELEMENTS // n))
    keys, part = np.empty((chunk, n)), np.empty((chunk, n))
    for start in range(0, permutations, chunk):
        rows = min(chunk, permutations - start)
        k, p = keys[:rows], part[:rows]
        rng.random(out=k)
        np.copyto(p, k)
        p.partition(n_x - 1, axis=1)
        (k <= p[:, n_x - 1 : n_x]).astype(np.float64) @ s


def fise_bound(
    cx: np.ndarray, cy: np.ndarray, nx1: int, ny1: int, permutations: int, seed: int
) -> None:
    """FISE's draws (two key rows per permutation, in batches of 2,000) and one product per axis and batch."""
    rng = np.random.default_rng(seed)
    for start in range(0, permutations, 2000):
        m = min(2000, permutations - start)
        for cos, k in ((cx, nx1), (cy, ny1)):
            keys = rng.random((m, cos.shape[1]))
            (keys <= np.partition(keys, k - 1, axis=1)[:, k - 1 : k]).astype(np.float64) @ cos.T


def permutation_rows(repeats: int) -> None:
    from bias.core.statistics.association import permutation_test
    from bias.plugins.metrics.fise import Fise

    for n in (25, 100):
        rng = np.random.default_rng(n)
        sx, sy = rng.normal(size=n) + 0.1, rng.normal(size=n)
        s = np.concatenate([sx, sy])
        ours, bound = interleaved(
            lambda sx=sx, sy=sy: permutation_test(sx, sy, permutations=PERMUTATIONS, seed=1),
            lambda s=s, n=n: draw_bound(s, n, PERMUTATIONS, 1),
            repeats,
        )
        ROWS.append((f"WEAT/SEAT/LPBS permutations {n}v{n}, 100k", ours, bound))
    settings = SimpleNamespace(exact_limit=0, permutations=PERMUTATIONS, mean_centre=False)
    for n in (25, 100):
        rng = np.random.default_rng(n)
        cx, cy = rng.normal(size=(100, 2 * n)), rng.normal(size=(100, 2 * n))
        ours, bound = interleaved(
            lambda cx=cx, cy=cy, n=n: Fise._null(settings, cx, cy, n, n, 1),
            lambda cx=cx, cy=cy, n=n: fise_bound(cx, cy, n, n, PERMUTATIONS, 1),
            repeats,
        )
        ROWS.append((f"FISE null {n}v{n} groups, 100 traits, 100k", ours, bound))


def lm_rows(repeats: int, sentences: int, threads: int) -> float:
    import torch

    from bias.core.interfaces import MaskedRequest
    from bias.core.models.hf import lm_scoring

    torch.set_num_threads(threads)
    model, tokenizer = lm.build_model()
    seqs = lm.sentences(sentences)
    requests = lm.pll_requests(seqs)
    aul_seqs = lm.sentences(len(requests), seed=1)  # as many rows as pll, so the batches are alike
    gemm = lm.gemm_rate(clock=clock)
    work = {
        f"pll, {sentences} sentences ({len(requests)} masked rows)": (
            lambda: lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, 64),
            lm.flops([len(r.ids) for r in requests], len(requests)),
        ),
        f"aul, {len(aul_seqs)} sentences": (
            lambda: lm_scoring.token_log_probs(
                model, tokenizer, "cpu", aul_seqs, 64, causal=False, attention=False
            ),
            lm.flops([len(s) for s in aul_seqs], sum(len(s) for s in aul_seqs)),
        ),
    }
    # LPBS: per sentence the target read at its one mask, and the prior (target and attribute masked)
    lpbs_seqs = lm.sentences(len(requests) // 2, seed=2)
    lpbs = [MaskedRequest(q, (1,)) for q in lpbs_seqs] + [MaskedRequest(q, (1, len(q) - 2)) for q in lpbs_seqs]
    work[f"lpbs, {len(lpbs_seqs)} sentences ({len(lpbs)} masked rows)"] = (
        lambda: lm_scoring.masked_log_probs(model, tokenizer, "cpu", lpbs, 64),
        lm.flops([len(r.ids) for r in lpbs], len(lpbs)),
    )
    # causal (CrowS on GPT-2): every token scored after the start token, which is put before the
    # sentence (one more token through the layers; the head at every real token)
    causal_model, causal_tokenizer = lm.build_causal_model()
    causal_seqs = [q[1:-1] for q in lm.sentences(len(requests), seed=3)]
    work[f"causal, {len(causal_seqs)} sentences (GPT-2 sized)"] = (
        lambda: lm_scoring.token_log_probs(
            causal_model, causal_tokenizer, "cpu", causal_seqs, 64, causal=True, attention=False
        ),
        lm.flops([len(q) + 1 for q in causal_seqs], sum(len(q) for q in causal_seqs), vocab=50257, transform=False),
    )
    for fn, _needed in work.values():
        fn()  # warm-up: first calls allocate and pick kernels
    best_gemm = 0.0
    best = {name: float("inf") for name in work}
    for _ in range(repeats):
        for name, (fn, _needed) in work.items():
            best_gemm = max(best_gemm, gemm(), gemm())
            start = clock()
            fn()
            best[name] = min(best[name], clock() - start)
    for name, (_fn, needed) in work.items():
        ROWS.append((f"LM {name}", best[name], needed / best_gemm))
    return best_gemm


def startup_rows(repeats: int) -> None:
    # Warm: the bytecode cache is written by the untimed first run (not if PYTHONDONTWRITEBYTECODE is set).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COLUMNS"] = "80"

    def child_seconds() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    def run(argv: list[str]) -> float:
        timer = child_seconds if clock is time.process_time else time.perf_counter
        start = timer()
        subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
        return timer() - start

    bare = [sys.executable, "-c", "pass"]
    for label, argv in (("bias --help", ["--help"]), ("bias list", ["list"])):
        command = [sys.executable, "-m", "bias.cli.app", *argv]
        run(command)  # warm: bytecode cache and file cache
        ours = bound = float("inf")
        for _ in range(repeats):  # interleaved; each run timed by `run` itself (the child's seconds)
            ours, bound = min(ours, run(command)), min(bound, run(bare))
        ROWS.append((f"start-up: {label} (bound: python -c pass)", ours, bound))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sentences", type=int, default=4, help="LM sentences (each gives 11-16 masked rows)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads for every row (the GEMM bound too)")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="cpu: CPU seconds of the process; wall: elapsed seconds")
    parser.add_argument("--skip-lm", action="store_true")
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    print(
        f"machine: {platform.platform()}, {lm.cpu_model()}, {os.cpu_count()} CPUs, load average {lm.load_average()}"
    )
    print(
        f"python {platform.python_version()}, numpy {np.__version__}; best of {args.repeats} interleaved repeats, {args.clock} seconds"
    )
    from threadpoolctl import threadpool_limits

    gemm = None
    with threadpool_limits(args.threads):  # numpy's BLAS: unbounded threads make the permutation rows noise
        if not args.skip_lm:
            gemm = lm_rows(args.repeats, args.sentences, args.threads)
        permutation_rows(args.repeats)
    startup_rows(max(args.repeats, 5))
    if gemm is not None:
        print(
            f"float32 GEMM 2048^3 at {args.threads} threads: {gemm / 1e9:.1f} GFLOP/s (LM bound = FLOPs needed / this rate)"
        )
    print(f"load average after: {lm.load_average()}")
    width = max(len(r[0]) for r in ROWS)
    print(f"{'work':<{width}}  {'ours':>9}  {'bound':>9}  {'ratio':>6}")
    for name, ours, bound in ROWS:
        print(
            f"{name:<{width}}  {ours * 1e3:>7.0f}ms  {bound * 1e3:>7.0f}ms  {ours / bound:>5.2f}x"
        )
    print("GPU: unmeasured (no GPU available).")


if __name__ == "__main__":
    main()
