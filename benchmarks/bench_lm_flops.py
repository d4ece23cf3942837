"""How close LM scoring comes to what the CPU can do: achieved FLOP rate against a float32 GEMM's rate.

Run:  python benchmarks/bench_lm_flops.py [--sentences N] [--threads T] [--repeats R] [--profile]

Prints figures only (no assertions). Timings on a shared machine are noisy, so every figure that
matters is a ratio taken inside one process: each repeat times a large float32 matrix product (the
machine's matrix-multiply rate at the same thread count) and then the scoring work, interleaved, and
the best of the repeats of each is kept.

The model is bert-base sized (BertForMaskedLM(BertConfig()): 12 layers, hidden 768, vocabulary
30,522) with seeded random weights; timing does not depend on the weights. The inputs are seeded
random token ids, sentences of 11-16 words plus [CLS] and [SEP] (CrowS-Pairs length). Work measured,
straight through `bias.core.models.hf.lm_scoring`:

- pll: every inner token masked in turn (CrowS pseudo-log-likelihood), all variants batched;
- pll, head everywhere: the same with the output head applied at every position (what the code did
  before the head was gathered), for the saving;
- aul: every token of the unmasked sentence scored (AUL), on as many sentences as pll has masked rows.

FLOPs needed (multiply-add = 2): per encoder layer and real token 24 h^2 (Q, K, V and output
projections 8 h^2, feed-forward 16 h^2), attention 4 n^2 h per layer and sequence of n tokens, the
head 2 h^2 + 2 h V per scored position. Padding, softmax, layer norms and the embeddings are not
counted as needed work; padding is reported separately. With --profile, torch.profiler splits one
run's time between matrix products, attention, the log-softmax, other operators and the time outside
operators (Python, batching, tensor set-up).
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
from bench_weat_permutations import cpu_model  # noqa: F401 (run_all reads it from here too)

HIDDEN, LAYERS, VOCAB, FFN = 768, 12, 30522, 3072




def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def build_model(seed: int = 0) -> tuple[Any, Any]:
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    model = BertForMaskedLM(BertConfig()).eval()
    tokenizer = SimpleNamespace(mask_token_id=103, pad_token_id=0, model_max_length=512)
    return model, tokenizer


def sentences(n: int, seed: int = 0) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = int(rng.integers(11, 17))
        out.append((101, *(int(x) for x in rng.integers(1000, VOCAB, size=words)), 102))
    return out


def pll_requests(seqs: list[tuple[int, ...]]) -> list[Any]:
    from bias.core.lm_requests import MaskedRequest

    return [MaskedRequest(s, (p,)) for s in seqs for p in range(1, len(s) - 1)]


def flops(lengths: list[int], scored: int, vocab: int = VOCAB, transform: bool = True) -> float:
    """FLOPs a forward over sequences of these lengths needs, with the head at `scored` positions
    (BERT's head has a dense transform before the vocabulary projection, GPT-2's has not)."""
    tokens = sum(lengths)
    layer = 24 * HIDDEN * HIDDEN * tokens + sum(4 * n * n * HIDDEN for n in lengths)
    return LAYERS * layer + scored * ((2 * HIDDEN * HIDDEN if transform else 0) + 2 * HIDDEN * vocab)


def build_causal_model(seed: int = 0) -> tuple[Any, Any]:
    """GPT-2 sized (GPT2LMHeadModel(GPT2Config()): 12 layers, hidden 768, vocabulary 50,257), random
    weights; its start token is <|endoftext|> (50,256), as GPT-2's."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    tokenizer = SimpleNamespace(bos_token_id=50256, eos_token_id=50256, pad_token_id=50256, model_max_length=1024)
    return model, tokenizer


def padded_tokens(lengths: list[int], batch_size: int) -> int:
    order = sorted(lengths)
    return sum(
        max(order[i : i + batch_size]) * len(order[i : i + batch_size])
        for i in range(0, len(order), batch_size)
    )


def gemm_rate(
    size: int = 2048,
    clock: Callable[[], float] = time.perf_counter,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    repeat: int = 1,
) -> Callable[[], float]:
    """A large GEMM in `dtype` ("tf32": float32 operands on a GPU's TF32 units); returns a function
    giving its FLOP/s for `repeat` products, timed by `clock` (a GPU is synchronised around them)."""
    import torch

    from bias.core.models.hf.compute import WEIGHTS, matmul_precision

    kind = getattr(torch, WEIGHTS[dtype])
    a = torch.randn(size, size, device=device).to(kind)
    b = torch.randn(size, size, device=device).to(kind)
    cuda = torch.device(device).type == "cuda"

    def once() -> float:
        with matmul_precision(dtype, device):
            torch.mm(a, b)
            if cuda:
                torch.cuda.synchronize()
            start = clock()
            for _ in range(repeat):
                torch.mm(a, b)
            if cuda:
                torch.cuda.synchronize()
            return 2 * size**3 * repeat / (clock() - start)

    once()  # first call: kernels chosen, memory touched
    return once


def measure(
    threads: int, n_sentences: int, batch_size: int, repeats: int, profile: bool
) -> dict[str, Any]:
    import torch

    from bias.core.models.hf import lm_scoring, scoring_plan

    torch.set_num_threads(threads)
    model, tokenizer = build_model()
    seqs = sentences(n_sentences)
    requests = pll_requests(seqs)
    pll_lengths = [len(r.ids) for r in requests]
    split = dict(scoring_plan.SPLIT_HEADS)

    def pll() -> None:
        lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, batch_size)

    def pll_full_head() -> None:
        scoring_plan.SPLIT_HEADS.clear()
        try:
            lm_scoring.masked_log_probs(model, tokenizer, "cpu", requests, batch_size)
        finally:
            scoring_plan.SPLIT_HEADS.update(split)

    # AUL scores each sentence once: as many sentences as PLL has masked rows keeps the batches alike
    aul_seqs = sentences(len(requests), seed=1)
    aul_lengths = [len(s) for s in aul_seqs]

    def aul() -> None:
        lm_scoring.token_log_probs(
            model, tokenizer, "cpu", aul_seqs, batch_size, causal=False, attention=False
        )

    work = {
        "pll": (
            pll,
            flops(pll_lengths, len(requests)),
            padded_tokens(pll_lengths, batch_size),
            sum(pll_lengths),
        ),
        "pll, head everywhere": (
            pll_full_head,
            flops(pll_lengths, len(requests)),
            padded_tokens(pll_lengths, batch_size),
            sum(pll_lengths),
        ),
        "aul": (
            aul,
            flops(aul_lengths, sum(aul_lengths)),
            padded_tokens(aul_lengths, batch_size),
            sum(aul_lengths),
        ),
    }
    gemm = gemm_rate()
    pll()  # warm-up: first calls allocate and pick kernels
    best_gemm = 0.0
    best = {name: float("inf") for name in work}
    for _ in range(repeats):
        for name, (fn, *_rest) in work.items():
            best_gemm = max(best_gemm, gemm(), gemm())
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    result = {"gemm": best_gemm, "rows": [], "requests": len(requests), "sentences": len(seqs)}
    for name, (_fn, needed, padded, real) in work.items():
        result["rows"].append(
            (name, best[name], needed, needed / best[name] / best_gemm, padded / real - 1)
        )
    if profile:
        result["profile"] = profile_split(pll)
    return result


def profile_split(fn: Callable[[], None]) -> dict[str, float]:
    """One run under torch.profiler: self CPU time of the operators, grouped, and what is outside them."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    wall = time.perf_counter() - start
    groups = {
        "matrix products": 0.0,
        "attention": 0.0,
        "log-softmax in float64": 0.0,
        "copies (bias broadcast into GEMM outputs, casts, gathers)": 0.0,
        "other operators (layer norm, GELU, additions)": 0.0,
    }
    for event in prof.key_averages():
        name = event.key
        seconds = event.self_cpu_time_total / 1e6
        if name in ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul", "aten::linear"):
            groups["matrix products"] += seconds
        elif "attention" in name or ("softmax" in name and "log" not in name):
            groups["attention"] += seconds
        elif "log_softmax" in name:
            groups["log-softmax in float64"] += seconds
        elif name in (
            "aten::copy_",
            "aten::_to_copy",
            "aten::clone",
            "aten::index",
            "aten::gather",
            "aten::index_select",
        ):
            groups["copies (bias broadcast into GEMM outputs, casts, gathers)"] += seconds
        else:
            groups["other operators (layer norm, GELU, additions)"] += seconds
    groups["outside operators (Python, batching)"] = max(wall - sum(groups.values()), 0.0)
    groups["wall"] = wall
    del torch
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import torch

    print(
        f"machine: {platform.platform()}, {cpu_model()}, {os.cpu_count()} CPUs, load average {load_average()}"
    )
    print(
        f"torch {torch.__version__}, {args.threads} threads, float32, bert-base sized (hidden {HIDDEN}, "
        f"{LAYERS} layers, vocabulary {VOCAB}), random weights"
    )
    r = measure(args.threads, args.sentences, args.batch_size, args.repeats, args.profile)
    print(
        f"{r['sentences']} sentences of 13-18 tokens, {r['requests']} masked variants; best of {args.repeats} repeats, "
        f"interleaved with the GEMM"
    )
    print(f"float32 GEMM 2048^3: {r['gemm'] / 1e9:.1f} GFLOP/s (the same threads, the same run)")
    print(
        f"{'work':<22} {'time':>8} {'GFLOP needed':>13} {'GFLOP/s':>8} {'of GEMM':>8} {'padding':>8}"
    )
    for name, seconds, needed, fraction, padding in r["rows"]:
        print(
            f"{name:<22} {seconds:>7.2f}s {needed / 1e9:>13.1f} {needed / seconds / 1e9:>8.1f} {fraction:>7.0%} {padding:>7.1%}"
        )
    if "profile" in r:
        wall = r["profile"].pop("wall")
        print(f"profile of one pll run ({wall:.2f} s under the profiler):")
        for name, seconds in r["profile"].items():
            print(f"  {name:<58} {seconds:>6.2f} s  {seconds / wall:>5.0%}")


if __name__ == "__main__":
    main()
