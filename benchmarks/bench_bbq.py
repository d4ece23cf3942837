"""How fast the bbq metric scores answers with each prompt read once, against one forward call per
answer, and the peak memory it takes.

Run:  python benchmarks/bench_bbq.py [--questions N] [--loop-questions K] [--batch-size B] [--threads T]
                                     [--layers L] [--device D] [--dtype T] [--wordset NAME]

Prints figures only (no assertions): timings depend on the machine, so they are read, not enforced.
The model is GPT-2 sized (GPT2LMHeadModel(GPT2Config()): 12 layers, hidden 768, vocabulary 50,257)
with seeded random weights, saved with a byte-level BPE tokenizer trained here on generated text (a
smaller vocabulary than GPT-2's, so a text takes somewhat more tokens), and loaded through the `hf`
embedder. The questions are generated from a seeded grammar in BBQ's shape: a two-sentence context
naming two people, a question, three short answers.

- packed: `Embedder.choice_log_probs` of the `hf` embedder, what the bbq metric calls: each question
  one row (the prompt, then its answers, each seeing the prompt and itself only), batches of B
  questions, the output head at the answers' positions only;
- loop: one forward call per answer on start token + prompt + answer (batch of one), log_softmax in
  float64, the answer's log-probabilities summed. Timed on the first K questions and extrapolated
  linearly to N (marked "extrapolated").

The answers' summed log-likelihoods of the K questions are compared (largest absolute difference) and
the verdicts (the answer with the highest sum) counted. With `--wordset` (e.g. en/bbq-sample) the
questions are a word set's, with the bbq metric's template. The peak memory printed is the process's
peak resident size (ru_maxrss) after scoring, less its resident size once the model is loaded (the
scoring's own peak; the weights, read in by a first small call, count as loaded), and the peak itself; on CUDA, torch's peak allocated device memory.
The model is built and saved in a child process, so that the peak is the scoring process's alone.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import tempfile
import time
from pathlib import Path

PAIRS = [
    ("grandmother", "grandson"), ("man", "woman"), ("nurse", "surgeon"), ("Muslim neighbour", "Christian neighbour"),
    ("wheelchair user", "runner"), ("gay man", "straight man"), ("recent immigrant", "local farmer"),
    ("teenager", "retiree"), ("blind student", "sighted student"), ("father", "mother"),
]
PLACES = ["at the station", "in the library", "at the market", "near the school", "in the waiting room", "at the bank"]
DOINGS = ["waiting for a train", "filling in a form", "asking for directions", "reading the news", "looking at phones"]
QUESTIONS = [("Who was confused?", "Who was calm?"), ("Who was rude?", "Who was polite?"), ("Who forgot the time?", "Who was on time?")]
UNKNOWN = ["Cannot be determined", "Not enough information", "Unknown"]


def generated_questions(n: int, seed: int = 0) -> list[tuple[str, str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.choice(PAIRS)
        context = f"A {a} and a {b} were {rng.choice(DOINGS)} {rng.choice(PLACES)}. They had met there before, a few weeks ago."
        if rng.random() < 0.5:
            context += f" The {a} was the one who {rng.choice(['spoke first', 'left early', 'asked for help'])}."
        question = rng.choice(rng.choice(QUESTIONS))
        out.append((context, question, [f"The {a}", f"The {b}", rng.choice(UNKNOWN)]))
    return out


def resident_mib() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_model(folder: Path, layers: int, seed: int = 0) -> Path:
    """A byte-level BPE tokenizer trained on generated text and a random GPT-2-sized causal LM."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    texts = [" ".join([c, q, *answers]) for c, q, answers in generated_questions(2000, seed + 1)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>", model_max_length=1024)
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(n_layer=layers, bos_token_id=0, eos_token_id=0)).eval()
    hf_logging.disable_progress_bar()
    model.save_pretrained(folder)
    return folder


def loop_scores(folder: Path, questions, template: str, device: str) -> list[list[float]]:
    """One forward call per answer: start token + prompt + answer, the answer's log-probabilities summed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
    out = []
    with torch.inference_mode():
        for context, question, answers in questions:
            prompt = template.format(context=context, question=question)
            head = tok(prompt)["input_ids"]
            sums = []
            for answer in answers:
                ids = torch.tensor([[tok.bos_token_id] + tok(prompt + " " + answer)["input_ids"]], device=device)
                lp = torch.log_softmax(model(ids).logits[0].to(torch.float64), dim=-1)
                positions = torch.arange(len(head) + 1, ids.shape[1], device=device)
                sums.append(float(lp[positions - 1, ids[0, positions]].sum()))
            out.append(sums)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=96)
    parser.add_argument("--loop-questions", type=int, default=24)
    parser.add_argument("--batch-size", type=lambda v: v if v == "auto" else int(v), default="auto", help="rows a batch, or auto (the default: 32 rows and 512 tokens on a CPU)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", help="the embedder's weights (the loop stays float32)")
    parser.add_argument("--wordset", help="score a word set's questions (e.g. en/bbq-sample) instead of generated ones")
    args = parser.parse_args()

    import numpy as np
    import torch

    from bias.api import ChoiceRequest
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
    from bias.plugins.metrics.bbq import DEFAULT_TEMPLATE

    torch.set_num_threads(args.threads)
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, torch {torch.__version__}, {args.threads} thread(s), device {args.device}")
    if args.wordset:
        from bias.registry.resolve import load_wordset

        data = load_wordset(args.wordset)
        questions = [(q.context, q.question, list(q.answers)) for q in data.items[: args.questions]]
        template = data.prompt or DEFAULT_TEMPLATE
    else:
        questions, template = generated_questions(args.questions), DEFAULT_TEMPLATE
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2"
        # built in a child process: building and saving a model peaks at twice its size, which a
        # user's process never does, and would hide the scoring's own peak
        child = multiprocessing.get_context("spawn").Process(target=build_model, args=(folder, args.layers))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"building the model failed (exit code {child.exitcode})")
        embedder = HuggingFaceEmbedder(location=str(folder), batch_size=args.batch_size, device=args.device, dtype=args.dtype, cache=False)
        embedder.load()
        requests = [
            ChoiceRequest(template.format(context=c, question=q), tuple(" " + a for a in answers))
            for c, q, answers in questions
        ]
        tokens = [len(t.ids) for t in embedder.tokenize([r.prompt for r in requests])]
        print(f"model: GPT-2 sized, {args.layers} layers, hidden 768, vocabulary 50,257; {len(questions)} questions, "
              f"prompts of {min(tokens)}-{max(tokens)} tokens (mean {np.mean(tokens):.0f}), 3 answers each")
        embedder.choice_log_probs(requests[:2])  # warm-up: the weights read in, kernels chosen
        loaded_rss = resident_mib()
        start = time.perf_counter()
        cached = embedder.choice_log_probs(requests)
        ours = time.perf_counter() - start
        peak = peak_mib()
        device_peak = torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None
        k = min(args.loop_questions, len(questions))
        start = time.perf_counter()
        looped = loop_scores(folder, questions[:k], template, args.device)
        loop = (time.perf_counter() - start) * len(questions) / k
    ours_sums = np.array([[float(np.sum(x)) for x in s.log_probs] for s in cached[:k]])
    loop_sums = np.array(looped)
    same = int(np.sum(ours_sums.argmax(axis=1) == loop_sums.argmax(axis=1)))
    mark = " (extrapolated from %d)" % k if k < len(questions) else ""
    print(f"packed rows, batches of {embedder.describe()['batch_size']}: {ours:8.2f} s  ({len(questions) / ours:6.1f} questions/s)")
    print(f"peak memory: process {peak:.0f} MiB, of which {peak - loaded_rss:.0f} MiB beyond the model once loaded and warm"
          + (f"; device {device_peak:.0f} MiB allocated at most" if device_peak is not None else ""))
    print(f"loop, one forward per answer:     {loop:8.2f} s  ({len(questions) / loop:6.1f} questions/s){mark}")
    print(f"speed-up: {loop / ours:.1f}x (target >= 3x)")
    print(f"largest |difference| of summed log-likelihoods over {k} questions: {np.max(np.abs(ours_sums - loop_sums)):.2e} "
          f"(target <= 1e-5); verdicts equal: {same} of {k}")


if __name__ == "__main__":
    main()
