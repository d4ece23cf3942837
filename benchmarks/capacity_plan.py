"""A capacity plan for a large audit, computed from the measured costs of a real run.

Run:  python benchmarks/capacity_plan.py RUN_FOLDER [--models 40] [--languages 7] [--choices 4]
                                                    [--workers 8] [--speedup 1.0]

RUN_FOLDER is a folder written by `bias run --out` on the hardware to plan for (or on another, with
--speedup saying how much faster the target is). From its results.jsonl it takes each metric's median
compute time per experiment and from its manifest the model's load time. The audit is: MODELS models
x LANGUAGES languages x every installed test of each language that a metric of the measured run can
take (counted from the installed language packages, by kind: association tests for SEAT/WEAT, pair
sets for CrowS/AUL/..., LPBS template sets for LPBS) x CHOICES design choices (pooling, layer, ...,
applied to every experiment). With the Ray executor each model is one actor that loads the model once
and runs all its experiments; models are spread over WORKERS actors at a time (longest first). It
prints the experiment count and cost per metric, the total compute, the wall time on the workers and
where the time goes. A plan, not a promise: costs scale with the test sizes of the measured run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

KIND_OF_METRIC = {
    "weat": "association", "seat": "association", "ceat": "association",
    "crows": "pairs", "sss": "pairs", "aul": "pairs", "aula": "pairs", "kls": "pairs", "jss": "pairs", "jss-mixture": "pairs",
    "lpbs": "lpbs",
}


def measured(folder: Path) -> tuple[dict[str, float], float]:
    per_metric: dict[str, list[float]] = defaultdict(list)
    for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("status") == "ok":
                per_metric[r["metric"]].append(float(r["timings"]["compute_s"]))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    loads = [m["load_s"] for m in manifest.get("models", {}).values() if m.get("load_s") is not None]
    return {m: statistics.median(v) for m, v in per_metric.items()}, (max(loads) if loads else 0.0)


def tests_per_language(languages: int) -> dict[str, float]:
    """Average number of installed tests of each kind per language (over the first LANGUAGES)."""
    from bias import registry

    counts: dict[str, Counter] = defaultdict(Counter)
    for row in registry.wordsets():
        if row.status == "ok":
            counts[row.language][row.kind] += 1
    chosen = sorted(counts)[:languages] or ["en"]
    return {kind: sum(counts[lang][kind] for lang in chosen) / len(chosen) for kind in ("association", "pairs", "lpbs")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--languages", type=int, default=7)
    parser.add_argument("--choices", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--speedup", type=float, default=1.0, help="how much faster the target hardware is than the measured run")
    args = parser.parse_args()

    costs, load_s = measured(args.run)
    per_language = tests_per_language(args.languages)
    print(f"measured in {args.run}: model load {load_s:.1f} s; median compute per experiment: "
          + ", ".join(f"{m} {c:.2f} s" for m, c in sorted(costs.items())))
    print(f"installed tests per language (mean of {args.languages}): "
          + ", ".join(f"{k} {v:.1f}" for k, v in per_language.items()))
    print(f"audit: {args.models} models x {args.languages} languages x tests x {args.choices} choices, "
          f"{args.workers} workers, speed-up {args.speedup:g}x over the measured hardware\n")
    print(f"{'metric':<10}{'experiments':>13}{'s each':>9}{'worker-hours':>14}{'share':>8}")
    rows = []
    for metric, cost in sorted(costs.items()):
        kind = KIND_OF_METRIC.get(metric)
        if kind is None:
            continue
        n = args.models * args.languages * per_language[kind] * args.choices
        rows.append((metric, n, cost / args.speedup))
    loading = args.models * load_s / args.speedup
    total = sum(n * c for _, n, c in rows) + loading
    for metric, n, c in rows:
        print(f"{metric:<10}{n:>13,.0f}{c:>9.2f}{n * c / 3600:>14.1f}{n * c / total:>8.1%}")
    print(f"{'loading':<10}{args.models:>13,}{load_s / args.speedup:>9.2f}{loading / 3600:>14.2f}{loading / total:>8.1%}")
    per_model = total / args.models
    # Longest-first spreading of identical models: ceil(models / workers) rounds of one model each.
    rounds = -(-args.models // args.workers)
    wall = rounds * per_model
    print(f"\ntotal {total / 3600:.1f} worker-hours; per model {per_model / 3600:.2f} h; "
          f"wall time on {args.workers} workers: {wall / 3600:.1f} h ({rounds} round(s) of {min(args.workers, args.models)} models)")


if __name__ == "__main__":
    main()
