"""How fast BBQ by generation reads replies, scores them with intervals, and how much a local model's
batched generation saves over one prompt at a time.

Run:  python benchmarks/bench_chat.py [--replies N] [--questions Q] [--resamples B] [--prompts P]
                                      [--new-tokens T] [--layers L] [--clock cpu|wall]

Prints figures only (no assertions): timings depend on the machine, so they are read, not enforced.
`--clock cpu` (the default) reports the process's CPU seconds, which a busy shared machine disturbs
least; `uptime`'s load is printed beside the figures.

- reading: N replies drawn (seeded) from the forms a chat model writes (a label, an answer phrase, an
  option's text, an unknown or refusal phrase, two options, gibberish) read by the English and Dutch
  packages' rules (`bias.api.bbq.read_reply`);
- scoring: Q questions x 5 variants x 3 samples of answers (seeded), every score overall, per variant
  and per category, with B bootstrap resamples of the questions (`answers.Scoring.figures`);
- generation: P prompts of about 60 tokens, T new tokens each, greedy, from a GPT-2-shaped causal LM
  with L layers and seeded random weights (bench_bbq.py's), through the `hf` embedder: in batches of
  16 against one prompt per call (batch size 1).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path


def clock(kind: str) -> float:
    return time.process_time() if kind == "cpu" else time.perf_counter()


def reading(n: int, kind: str) -> None:
    from bias import registry
    from bias.api.bbq import read_reply

    for code in ("en", "nl"):
        prompts = registry.load_wordset(f"{code}/bbq-prompts")
        q = registry.load_wordset(f"{code}/bbq-sample").items[0]
        rules = prompts.rules
        rng = random.Random(0)
        pool = [
            "(B)",
            f"{rules.answer_before[0].capitalize()} (C).",
            f"{q.answers[0]}.",
            f"{rules.unknown[0]}.",
            f"{rules.refusal[0]}.",
            f"{q.answers[0]} of {q.answers[1]}",
            "Qwx vbn zzz",
            f"(A) {rules.answer_after[0]}.",
        ]
        replies = [rng.choice(pool) + " " * rng.randrange(3) for _ in range(n)]
        start = clock(kind)
        for reply in replies:
            read_reply(reply, q.answers, q.unknown, prompts.letters, rules)
        spent = clock(kind) - start
        print(
            f"reading ({code}): {n:,} replies in {spent:.2f} s {kind} = {n / spent:,.0f} replies/s"
        )


def scoring(questions: int, resamples: int, kind: str) -> None:
    import numpy as np

    from bias.core.bbq.answers import Answered, Scoring
    from bias.core.bbq.conventions import QuestionFacts
    from bias.core.bbq.extraction import Coded

    rng = random.Random(1)

    class Q:  # a question's facts, as QuestionFacts reads them
        def __init__(self, i: int) -> None:
            self.ambiguous, self.negative = i % 2 == 0, i % 4 < 2
            self.unknown, self.stereotyped = 2, i % 2
            self.other = 1 - self.stereotyped
            self.biased = self.stereotyped if self.negative else self.other
            self.label = 2 if self.ambiguous else rng.choice((0, 1))
            self.category = f"c{i % 6}"

    items = [Q(i) for i in range(questions)]

    def code() -> Coded:
        x = rng.random()
        return (
            Coded(None, "unparsed", "none")
            if x < 0.05
            else Coded(rng.choice((0, 1, 2)), "answered", "label")
        )

    answered = Answered(
        tuple(f"v{k}" for k in range(5)),
        tuple(tuple(tuple(code() for _ in range(3)) for _ in items) for _ in range(5)),
    )
    categories = sorted({q.category for q in items})
    of_category = np.array([categories.index(q.category) for q in items])
    start = clock(kind)
    scorer = Scoring("", QuestionFacts.of(items), categories, of_category, resamples, 0.95, 0)
    counts = {name: answered.counts(v) for v, name in enumerate(answered.variants)}
    scorer.figures(scorer.sets(counts))
    spent = clock(kind) - start
    print(
        f"scoring: {questions:,} questions x 5 variants x 3 samples, {resamples:,} resamples: {spent:.2f} s {kind}"
    )


def generation(prompts: int, new_tokens: int, layers: int, kind: str) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_bbq import build_model, generated_questions

    from bias.api import GenerationRequest, Sampling
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder

    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "model", layers)
        texts = [
            f"{c} {q} (A) {a[0]} (B) {a[1]} (C) {a[2]} Answer:"
            for c, q, a in generated_questions(prompts)
        ]
        asked = [GenerationRequest.of(t) for t in texts]
        settings = Sampling(max_tokens=new_tokens)
        figures = {}
        for batch in (16, 1):
            model = HuggingFaceEmbedder(
                location=str(folder), cache=False, device="cpu", batch_size=batch
            )
            model.generate(asked[:2], settings)  # load, warm up
            start = clock(kind)
            replies = model.generate(asked, settings)
            figures[batch] = (clock(kind) - start, [g.texts for g in replies])
        same = figures[16][1] == figures[1][1]
        print(
            f"generation: {prompts} prompts x {new_tokens} tokens, {layers} layers: batches of 16 {figures[16][0]:.2f} s, "
            f"one at a time {figures[1][0]:.2f} s {kind} ({figures[1][0] / figures[16][0]:.1f}x); same replies: {same}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=20_000)
    parser.add_argument("--questions", type=int, default=2_000)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    print(
        f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)"
    )
    reading(args.replies, args.clock)
    scoring(args.questions, args.resamples, args.clock)
    generation(args.prompts, args.new_tokens, args.layers, args.clock)


if __name__ == "__main__":
    main()
