"""One table: each piece of work, our time, the bound measured in the same run, and their ratio.

Run:  python benchmarks/run_all.py [--repeats R] [--sentences N] [--threads T] [--clock cpu|wall]
                                   [--device D] [--dtype float32|tf32|bfloat16|float16] [--skip-lm]

`--threads` sets torch's and numpy's BLAS threads for every row and for the GEMM that gives the LM
bound. `--device` and `--dtype` apply to every LM row (the host-overhead row included); on a GPU the
clock is the wall's, with the device synchronised around each timing.

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
  scored positions) divided by the rate of a large GEMM in the row's precision measured in the same
  run (on a GPU the float32, TF32 and bfloat16 ceilings are all measured and printed). bert-base
  sized model (GPT-2 sized for causal), random weights; ratio = 1 / (fraction of the GEMM rate
  achieved), printed beside it. "pll, plain forward" bounds the same pll work by the model alone on
  the engine's batches (encoder forward, head at the masked rows, log-softmax; every tensor built
  beforehand). BBQ's answers are measured against one forward call per answer by bench_bbq.py.
- LM host overhead: `bench_lm_host.py`'s tiny masked LM (1 layer, hidden 8), the engine against the
  model's own work on the same batches; the difference per masked row is printed (target <= 2 us).
- permutation tests (WEAT, SEAT and LPBS share `permutation_test`; FISE has its own null): for
  WEAT/SEAT/LPBS the cheapest exact-size sampler we can write in numpy (`samplers.py`: float64 or
  float32 keys with a partition, a vectorised Fisher-Yates, an argpartition; the fastest in this run
  is the bound, named in the row), 100,000 permutations; the random bits a subset needs are printed
  as a floor no sampler reaches. For FISE, the same draws as its null (two key rows per
  permutation, in batches of 2,000) and one product per axis and batch with the traits' cosines.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_lm_flops as lm  # noqa: E402
import bench_lm_host as host  # noqa: E402
import samplers  # noqa: E402

PERMUTATIONS = 100_000
ROWS: list[tuple[str, float, float, str]] = []  # work, ours, bound, note
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
    from bias.core.statistics.quadrants import quadrant_null

    for n in (25, 100):
        rng = np.random.default_rng(n)
        sx, sy = rng.normal(size=n) + 0.1, rng.normal(size=n)
        s = np.concatenate([sx, sy])
        best_ours, cheapest, name = float("inf"), float("inf"), ""
        for label, sampler in samplers.SAMPLERS.items():  # ours interleaved with each sampler in turn
            ours, bound = interleaved(
                lambda sx=sx, sy=sy: permutation_test(sx, sy, permutations=PERMUTATIONS, seed=1),
                lambda s=s, n=n, sampler=sampler: sampler(s, n, PERMUTATIONS, 1),
                repeats,
            )
            best_ours = min(best_ours, ours)
            if bound < cheapest:
                cheapest, name = bound, label
        floor = min(timed(lambda n=n: samplers.random_bits(2 * n, n, PERMUTATIONS, 1)) for _ in range(repeats))
        ROWS.append((f"WEAT/SEAT/LPBS permutations {n}v{n}, 100k", best_ours, cheapest,
                     f"bound: {name}; random bits alone {floor * 1e3:.1f} ms"))
    for n in (25, 100):
        rng = np.random.default_rng(n)
        cx, cy = rng.normal(size=(100, 2 * n)), rng.normal(size=(100, 2 * n))
        ours, bound = interleaved(
            lambda cx=cx, cy=cy, n=n: quadrant_null(
                cx, cy, n, n, mean_centre=False, permutations=PERMUTATIONS, exact_limit=0, seed=1
            ),
            lambda cx=cx, cy=cy, n=n: fise_bound(cx, cy, n, n, PERMUTATIONS, 1),
            repeats,
        )
        ROWS.append((f"FISE null {n}v{n} groups, 100 traits, 100k", ours, bound, ""))


def timed(fn: Callable[[], object]) -> float:
    start = clock()
    fn()
    return clock() - start


def lm_rows(repeats: int, sentences: int, threads: int, device: str, dtype: str) -> dict[str, float]:
    """The LM rows; returns the GEMM ceilings measured (FLOP/s by precision)."""
    import torch

    from bias.core.lm_requests import MaskedRequest
    from bias.core.models.hf import lm_scoring
    from bias.core.models.hf.compute import WEIGHTS, matmul_precision

    torch.set_num_threads(threads)
    cuda = torch.device(device).type == "cuda"
    kind = getattr(torch, WEIGHTS[dtype])
    model, tokenizer = lm.build_model()
    model = model.to(device=device, dtype=kind)
    seqs = lm.sentences(sentences)
    requests = lm.pll_requests(seqs)
    aul_seqs = lm.sentences(len(requests), seed=1)  # as many rows as pll, so the batches are alike
    # the ceilings: on a GPU every precision's (each row is read against its own), on a CPU the row's
    size, repeat = (8192, 10) if cuda else (2048, 1)
    ceilings = ("float32", "tf32", "bfloat16") if cuda else (dtype,)
    gemms = {p: lm.gemm_rate(size, clock, dtype=p, device=device, repeat=repeat) for p in ceilings}

    def on(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with matmul_precision(dtype, device):
                out = fn()
            if cuda:
                torch.cuda.synchronize()
            return out

        return run

    pll_flops = lm.flops([len(r.ids) for r in requests], len(requests))
    work = {
        f"pll, {sentences} sentences ({len(requests)} masked rows)": (
            on(lambda: lm_scoring.masked_log_probs(model, tokenizer, device, requests, 64)), pll_flops,
        ),
        f"aul, {len(aul_seqs)} sentences": (
            on(lambda: lm_scoring.token_log_probs(model, tokenizer, device, aul_seqs, 64, causal=False, attention=False)),
            lm.flops([len(s) for s in aul_seqs], sum(len(s) for s in aul_seqs)),
        ),
    }
    # LPBS: per sentence the target read at its one mask, and the prior (target and attribute masked)
    lpbs_seqs = lm.sentences(len(requests) // 2, seed=2)
    lpbs = [MaskedRequest(q, (1,)) for q in lpbs_seqs] + [MaskedRequest(q, (1, len(q) - 2)) for q in lpbs_seqs]
    work[f"lpbs, {len(lpbs_seqs)} sentences ({len(lpbs)} masked rows)"] = (
        on(lambda: lm_scoring.masked_log_probs(model, tokenizer, device, lpbs, 64)),
        lm.flops([len(r.ids) for r in lpbs], len(lpbs)),
    )
    # causal (CrowS on GPT-2): every token scored after the start token, which is put before the
    # sentence (one more token through the layers; the head at every real token)
    causal_model, causal_tokenizer = lm.build_causal_model()
    causal_model = causal_model.to(device=device, dtype=kind)
    causal_seqs = [q[1:-1] for q in lm.sentences(len(requests), seed=3)]
    work[f"causal, {len(causal_seqs)} sentences (GPT-2 sized)"] = (
        on(lambda: lm_scoring.token_log_probs(causal_model, causal_tokenizer, device, causal_seqs, 64, causal=True, attention=False)),
        lm.flops([len(q) + 1 for q in causal_seqs], sum(len(q) for q in causal_seqs), vocab=50257, transform=False),
    )
    plain = on(host.bare_loop(model, requests, 64, device))
    for fn, _needed in work.values():
        fn()  # warm-up: first calls allocate and pick kernels
    plain()
    best_gemm = dict.fromkeys(gemms, 0.0)
    best = {name: float("inf") for name in work}
    best_plain = float("inf")
    for _ in range(repeats):
        for name, (fn, _needed) in work.items():
            for p, gemm in gemms.items():
                best_gemm[p] = max(best_gemm[p], gemm(), gemm())
            best[name] = min(best[name], timed(fn))
        best_plain = min(best_plain, timed(plain))
    peak = best_gemm[dtype] if dtype in best_gemm else best_gemm["float32"]
    for name, (_fn, needed) in work.items():
        ROWS.append((f"LM {name}", best[name], needed / peak, f"{needed / peak / best[name]:.0%} of the {dtype} GEMM"))
    pll_name = next(iter(work))
    ROWS.append(("LM pll against a plain forward of its batches", best[pll_name], best_plain,
                 f"{best_plain / best[pll_name]:.0%} of the plain forward's rate"))
    got = host.measure(400, 64, max(repeats, 11), device, clock, dtype=dtype)
    ROWS.append((f"LM host overhead, tiny masked LM, {got.rows} masked rows", got.engine, got.bare,
                 f"{got.overhead * 1e6:.2f} us per masked row, median of {got.repeats} pairs "
                 f"({got.low * 1e6:.2f} to {got.high * 1e6:.2f}; target <= 2)"))
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
        ROWS.append((f"start-up: {label} (bound: python -c pass)", ours, bound, ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sentences", type=int, default=4, help="LM sentences (each gives 11-16 masked rows)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads for every row (the GEMM bound too)")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="cpu: CPU seconds of the process; wall: elapsed seconds")
    parser.add_argument("--device", default="cpu", help="torch device of the LM rows: cpu, cuda, cuda:N")
    parser.add_argument("--dtype", default="float32", choices=("float32", "tf32", "bfloat16", "float16"), help="precision of the LM rows")
    parser.add_argument("--skip-lm", action="store_true")
    args = parser.parse_args()
    global clock
    clock = CLOCKS["wall" if args.device.startswith("cuda") else args.clock]
    print(
        f"machine: {platform.platform()}, {lm.cpu_model()}, {os.cpu_count()} CPUs, load average {lm.load_average()}"
    )
    print(
        f"python {platform.python_version()}, numpy {np.__version__}; best of {args.repeats} interleaved repeats, "
        f"{'wall' if clock is time.perf_counter else 'cpu'} seconds; LM rows on {args.device} in {args.dtype}"
    )
    from threadpoolctl import threadpool_limits

    gemms: dict[str, float] = {}
    with threadpool_limits(args.threads):  # numpy's BLAS: unbounded threads make the permutation rows noise
        if not args.skip_lm:
            gemms = lm_rows(args.repeats, args.sentences, args.threads, args.device, args.dtype)
        permutation_rows(args.repeats)
    startup_rows(max(args.repeats, 5))
    for precision, rate in gemms.items():
        print(f"{precision} GEMM on {args.device} at {args.threads} threads: {rate / 1e9:,.1f} GFLOP/s (measured in this run)")
    print(f"load average after: {lm.load_average()}")
    width = max(len(r[0]) for r in ROWS)
    print(f"{'work':<{width}}  {'ours':>9}  {'bound':>9}  {'ratio':>6}  note")
    for name, ours, bound, note in ROWS:
        print(f"{name:<{width}}  {ms(ours):>9}  {ms(bound):>9}  {ours / bound:>5.2f}x  {note}")
    if not args.device.startswith("cuda"):
        print("GPU: not measured in this run (run it with --device cuda --dtype float32|tf32|bfloat16 on a GPU).")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}ms" if seconds < 0.1 else f"{seconds * 1e3:.0f}ms"


if __name__ == "__main__":
    main()
