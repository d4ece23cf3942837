"""Time to draw a report's figures for a grid of the size of a real study.

Run:  python benchmarks/bench_figures.py [--results N] [--words W] [--formats png,svg] [--repeats R]

A synthetic run folder (N WEAT results over three models, each with its per-item table of 2 x W
target words, as `bias run` writes them) is drawn by each figure of `write_figures`: the time per
figure (best of R, CPU seconds of the process) and, for the words figure, per page of 12 panels.
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path


def grid(folder: Path, results: int, words: int, seed: int = 0) -> None:
    from bias.core.model import Result
    from bias.core.runs.results import ResultStore
    from bias.registry import get

    meta = {"value": get("metrics", "weat").value.declared()}  # what a run records with a result
    rng = random.Random(seed)
    names = [f"word{i}" for i in range(words)]
    with ResultStore(folder) as store:
        for n in range(results):
            d = rng.uniform(-0.5, 1.5)
            scores = [
                {"set": s, "item": w, "s": rng.gauss(0.05 if s == "X" else -0.05, 0.04)}
                for s in "XY"
                for w in names
            ]
            store.append(
                Result(
                    key=f"k{n:04d}",
                    model=f"word2vec:/models/model-{n % 3}.bin",
                    wordset=f"en/test{n // 3}",
                    metric="weat",
                    effect_size=d,
                    p_value=min(1.0, max(1e-4, rng.random())),
                    figures={"ci_low": d - 0.3, "ci_high": d + 0.3, "ci_level": 0.95, "scores": scores},
                    sizes={"X": words, "Y": words, "A": 8, "B": 8},
                    params={"ddof": 1},
                    seed=0,
                    meta={"language": "en", "title": f"test {n // 3}", **meta},
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=96)
    parser.add_argument("--words", type=int, default=8)
    parser.add_argument("--formats", default="png")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    formats = tuple(args.formats.split(","))

    from bias.core.reports import load_report
    from bias.core.reports.figures import forest, heatmap, languages, p_vs_effect, words

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        grid(folder, args.results, args.words)
        report = load_report(folder)
        print(
            f"{args.results} WEAT results, 2 x {args.words} words each, formats {args.formats}, "
            f"best of {args.repeats}, CPU seconds"
        )
        for name, draw in (
            ("forest", forest),
            ("heatmap", heatmap),
            ("words", words),
            ("languages", languages),
            ("p-vs-effect", p_vs_effect),
        ):
            best, files = float("inf"), []
            for _ in range(args.repeats):
                start = time.process_time()
                files = draw(report, folder, formats)
                best = min(best, time.process_time() - start)
            pages = max(1, len(files) // len(formats))
            each = f"  ({best / pages:.2f} s a page, {pages} pages)" if pages > 1 else ""
            print(f"{name:12s} {best:7.2f} s{each}")


if __name__ == "__main__":
    main()
