"""Host overhead of LM scoring: what the engine spends per masked row beyond the model's own work.

Run:  python benchmarks/bench_lm_host.py [--sentences N] [--batch-size B] [--repeats R] [--device D]

A masked LM so small (1 layer, hidden 8, vocabulary 1,000) that the engine's own bookkeeping shows:
pseudo-log-likelihood requests (every inner token masked in turn, CrowS length sentences) are scored
by `bias.core.models.hf.lm_scoring.masked_log_probs`, and the same batches are put through the model
by a bare loop with everything prepared beforehand: the padded inputs and indices of each batch
already on the device, the encoder forward, the head at the masked positions and the float64
log-softmax read at the original tokens. The difference, divided by the masked rows, is the host
overhead (target: at most 2 us per masked row). Figures only, no assertions; both are timed in the
same process, back to back R times, the median of the paired differences with its 95% interval, in
CPU seconds of the process (`--clock wall` on a GPU, where
the device's time is not the process's).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

VOCAB = 1000


def tiny_masked_lm(device: str = "cpu", seed: int = 0, dtype: str = "float32") -> tuple[Any, Any]:
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=16,
        max_position_embeddings=64,
    )
    from bias.core.models.hf.compute import WEIGHTS

    model = BertForMaskedLM(config).eval().to(device=device, dtype=getattr(torch, WEIGHTS[dtype]))
    return model, SimpleNamespace(mask_token_id=4, pad_token_id=0, model_max_length=64)


def pll_requests(n: int, seed: int = 0) -> list[Any]:
    from bias.core.lm_requests import MaskedRequest

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = (2, *(int(x) for x in rng.integers(5, VOCAB, size=int(rng.integers(11, 17)))), 3)
        out.extend(MaskedRequest(ids, (p,)) for p in range(1, len(ids) - 1))
    return out


def bare_loop(model: Any, requests: list[Any], batch_size: int, device: str) -> Callable[[], None]:
    """The model's own work on the engine's batches (length-sorted, `batch_size` rows), with every
    tensor built before the clock starts."""
    import torch

    masked = sorted(
        (
            (
                tuple(4 if j == r.positions[0] else t for j, t in enumerate(r.ids)),
                r.positions[0],
                r.ids[r.positions[0]],
            )
            for r in requests
        ),
        key=lambda row: -len(row[0]),
    )
    batches = []
    for start in range(0, len(masked), batch_size):
        rows = masked[start : start + batch_size]
        width = len(rows[0][0])
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for b, (seq, _, _) in enumerate(rows):
            ids[b, : len(seq)] = torch.tensor(seq)
            mask[b, : len(seq)] = 1
        where = torch.arange(len(rows)), torch.tensor([p for _, p, _ in rows])
        targets = torch.tensor([t for _, _, t in rows])
        batches.append(tuple(x.to(device) for x in (ids, mask, *where, targets)))

    def run() -> None:
        with torch.inference_mode():
            for ids, mask, b, p, targets in batches:
                rows = model.bert(input_ids=ids, attention_mask=mask)[0][b, p]
                logits = model.cls(rows).to(torch.float64)
                torch.log_softmax(logits, dim=-1)[
                    torch.arange(len(targets), device=logits.device), targets
                ].cpu()

    return run


def measure(
    sentences: int,
    batch_size: int,
    repeats: int,
    device: str,
    clock: Callable[[], float],
    dtype: str = "float32",
) -> SimpleNamespace:
    """The engine and the bare loop timed back to back `repeats` times (the order alternating), so
    that each pair shares the machine's state of the moment: `rows` masked rows, the best `engine`
    and `bare` seconds, and the host overhead per masked row as the median of the pairs'
    differences with a distribution-free 95% interval (`low`, `high`). On a shared machine the
    best-of times drift apart by more than the overhead; the paired median does not."""
    import torch

    from bias.core.models.hf import lm_scoring

    model, tokenizer = tiny_masked_lm(device, dtype=dtype)
    requests = pll_requests(sentences)
    bare = bare_loop(model, requests, batch_size, device)

    def engine() -> None:
        lm_scoring.masked_log_probs(model, tokenizer, device, requests, batch_size)

    def timed(fn: Callable[[], None]) -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = clock()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return clock() - start

    engine(), bare()  # warm-up
    pairs = []
    for k in range(repeats):
        if k % 2:
            b, e = timed(bare), timed(engine)
        else:
            e, b = timed(engine), timed(bare)
        pairs.append((e, b))
    per_row = sorted((e - b) / len(requests) for e, b in pairs)
    low, high = median_interval(len(per_row))
    return SimpleNamespace(
        rows=len(requests),
        engine=min(e for e, _ in pairs),
        bare=min(b for _, b in pairs),
        overhead=float(np.median(per_row)),
        low=per_row[low],
        high=per_row[high],
        repeats=repeats,
    )


def median_interval(n: int, level: float = 0.95) -> tuple[int, int]:
    """Indices (0-based, into the sorted sample) of the order statistics that bound the median with
    at least `level` coverage: the widest k with P(Binomial(n, 1/2) < k) <= (1 - level) / 2."""
    from math import comb

    tail, k = 0.0, 0
    while k < n // 2:
        nxt = tail + comb(n, k) / 2**n
        if nxt > (1 - level) / 2:
            break
        tail, k = nxt, k + 1
    return max(k - 1, 0), min(n - k, n - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; torch {torch.__version__}, 1 thread"
    )
    got = measure(args.sentences, args.batch_size, args.repeats, args.device, clock)
    print(
        f"{got.rows} masked rows of {args.sentences} sentences, batches of {args.batch_size}, {args.device}, {args.repeats} pairs, {args.clock} seconds"
    )
    print(f"engine (masked_log_probs), best {got.engine * 1e3:8.1f} ms")
    print(f"model's own work, best          {got.bare * 1e3:8.1f} ms")
    print(
        f"host overhead: {got.overhead * 1e6:.2f} us per masked row, median of {got.repeats} pairs "
        f"(95% interval {got.low * 1e6:.2f} to {got.high * 1e6:.2f}; target <= 2)"
    )


if __name__ == "__main__":
    main()
