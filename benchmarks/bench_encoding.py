"""How fast the hf embedder encodes sentences, and what batching and the encoding cache buy.

Run:  python benchmarks/bench_encoding.py [--sentences N] [--single M] [--batch-size B] [--layers L] [--device D]

Prints figures only (no assertions): timings depend on the machine, so they are read, not enforced.
The model is a bert-base-sized BertModel (BertConfig(): 12 layers, hidden 768, 12 heads) with seeded
random weights and a WordPiece tokenizer trained on the spot, saved to a temporary folder and loaded
through the embedder exactly as a user's model is. Sentences are generated, 8 to 30 words long.

- batching: N sentences encoded with batches of B (length-sorted, the default path, filling the cache)
  and the first M of them with one sentence per forward call; the ratio of sentences per second is
  reported (target >= 3x);
- cache: that first encode against a second encode of the same texts by a freshly loaded embedder
  (rows read back, no forward pass); target ratio >= 20x.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

WORDS = ["the", "a", "man", "woman", "child", "doctor", "nurse", "teacher", "engineer", "artist", "farmer", "city", "village", "river", "garden", "house", "is", "was", "sees", "likes", "works", "lives", "reads", "writes", "builds", "walks", "quickly", "slowly", "today", "yesterday", "near", "under", "good", "bad", "happy", "calm", "loud", "quiet", "old", "young", "small", "large", "bright", "dark", "warm", "cold", "and", "but", "with", "without", "of", "in"]


def sentences(n: int, seed: int, shortest: int = 8, longest: int = 30) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(shortest, longest))) + "." for _ in range(n)]


def build_model(folder: Path, layers: int, seed: int, masked: bool = False) -> Path:
    """A bert-base-sized model (a bare encoder, or with its masked-LM head) and a WordPiece tokenizer
    trained here, saved to `folder` with save_pretrained."""
    import torch
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast
    from transformers.utils import logging as hf_logging

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(sentences(2000, seed + 1), trainers.WordPieceTrainer(vocab_size=2000, special_tokens=specials, show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))]
    )
    BertTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]",
        mask_token="[MASK]", model_max_length=512,
    ).save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(num_hidden_layers=layers)  # bert-base sizes; the vocabulary of the tokenizer above is smaller
    hf_logging.disable_progress_bar()
    model = BertForMaskedLM(config) if masked else BertModel(config, add_pooling_layer=False)
    model.eval().save_pretrained(folder)
    return folder


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=256, help="number of sentences (default 256)")
    parser.add_argument("--single", type=int, default=64, help="sentences timed one per forward call (default 64; rates are compared)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size of the batched run (default 32)")
    parser.add_argument("--layers", type=int, default=12, help="transformer layers (default 12, as bert-base)")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "model", args.layers, args.seed)
        print(f"model: BertConfig(num_hidden_layers={args.layers}), hidden 768, random weights; device {args.device}")
        # SEAT's bleached template sentences are short ("This is a rose."); corpus sentences are longer.
        for label, (shortest, longest) in (("template-length sentences", (3, 7)), ("corpus-length sentences", (8, 30))):
            texts = sentences(args.sentences, args.seed, shortest, longest)
            measure(label, texts, folder, Path(tmp) / f"cache-{shortest}", args)


def measure(label: str, texts: list[str], folder: Path, cache_dir: Path, args: argparse.Namespace) -> None:
    import numpy as np
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder

    def embedder(**options: object) -> HuggingFaceEmbedder:
        emb = HuggingFaceEmbedder(location=str(folder), device=args.device, **options)
        emb.load()
        return emb

    probe = embedder(cache=False)
    lengths = [len(t.ids) for t in probe.tokenize(texts)]
    print()
    print(f"{label}: {len(texts)} sentences, {min(lengths)}-{max(lengths)} tokens (mean {np.mean(lengths):.1f})")
    probe.encode(texts[:4])  # warm-up: first calls allocate
    subset = texts[: min(len(texts), args.single)]

    first = embedder(cache=True, cache_dir=str(cache_dir), batch_size=args.batch_size)
    t_first, rows_first = timed(lambda: first.encode(texts))
    second = embedder(cache=True, cache_dir=str(cache_dir), batch_size=args.batch_size)  # as a new run would
    t_second, rows_second = timed(lambda: second.encode(texts))
    same = bool(np.array_equal(rows_first, rows_second))
    single = embedder(cache=False, batch_size=1)
    t_single, rows_single = timed(lambda: single.encode(subset))
    agree = float(np.abs(np.asarray(rows_first)[: len(subset)] - np.asarray(rows_single)).max())

    rate_batched, rate_single = len(texts) / t_first, len(subset) / t_single
    print(f"{'measurement':<52}{'sentences':>10}{'seconds':>10}{'sentences/s':>14}")
    for name, n, seconds in (
        (f"batched (batch size {args.batch_size}, length-sorted), cache filled", len(texts), t_first),
        ("one sentence per forward call", len(subset), t_single),
        ("the same texts again, new embedder, from the cache", len(texts), t_second),
    ):
        print(f"{name:<52}{n:>10}{seconds:>10.3f}{n / seconds:>14.1f}")
    print(f"batching speed-up: {rate_batched / rate_single:.1f}x in sentences/s (target >= 3x); max |batched - single| = {agree:.1e}")
    print(f"cache speed-up:    {t_first / t_second:.1f}x (target >= 20x); cached rows identical: {same}")


if __name__ == "__main__":
    main()
