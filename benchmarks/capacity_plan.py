"""A capacity plan for a large audit: every registered metric, priced at the published test's real size.

Run:  python benchmarks/capacity_plan.py RUN_FOLDER [RUN_FOLDER ...] [--models 40] [--languages 7]
                                                    [--choices 4] [--workers 8]

RUN_FOLDER is a folder written by `bias run --out` (benchmarks/capacity_measure.py writes one that
runs every installed metric); several are read together (a metric measured later, in a run of its
own). From its results.jsonl the plan takes, for each metric, the median CPU
cost of one unit of work (one word of an association test, one sentence pair, one question, ...: the
items `--limit` cuts, counted here from the test the result names) and, from its manifest, the model
load time. Every metric the registry knows is listed, measured or not (a metric the run did not
measure says so, with its test size, instead of being left out).

The audit: MODELS models x LANGUAGES languages x the tests of each kind per language (the installed
ones; one per language for a kind no language package installs) x CHOICES design choices for the
metrics that take a layer, pooling or level (the others are not crossed with them). Each test is
priced at its real size: the published test's (`REAL_SIZES`, with sources), else the installed
tests' mean. With the Ray executor a model is one actor that runs all its experiments: models are
spread over WORKERS actors at a time.

The GPU columns use the only GPU figures measured for this project (an H200, fp32, bert-base- and
GPT-2-sized models; ../shared/reviews/gpu-2026-11-28.md): CrowS-Pairs scoring, 1.37 s for the 71
pairs of en/crows-sample, and BBQ's cached-prefix scoring, 633 questions a second. A metric with no GPU
figure is priced at its CPU cost there, marked `cpu`: an upper bound, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs

# The published tests' sizes (items as `--limit` counts them), where the kind has one; sources in docs/scaling.md.
REAL_SIZES: dict[str, dict[str, Any]] = {
    "pairs": {"items": 1508, "source": "CrowS-Pairs, Nangia et al. 2020 (1,508 sentence pairs)"},
    "stereoset": {
        "items": 2106,
        "source": "StereoSet intrasentence dev set, Nadeem et al. 2021 (2,106 examples; test 6,392, not public)",
    },
    "bbq": {
        "items": 58492,
        "other_languages": 10088,
        "source": "BBQ, Parrish et al. 2022 (58,492 questions); other languages MBBQ, Neplenbroek et al. 2024 (10,088 per language)",
    },
    "analogies": {
        "items": 19544,
        "source": "Google analogy test set, Mikolov et al. 2013 (19,544 questions)",
    },
    "similarity-pairs": {"items": 999, "source": "SimLex-999, Hill et al. 2015 (999 pairs)"},
}
# Measured GPU seconds per item (H200, fp32; ../shared/reviews/gpu-2026-11-28.md).
# kls, jss and jss-mixture score each sentence with CrowS's pseudo-log-likelihood (their default):
# the computation measured for crows.
PLL_PAIR = 1.37 / 71
GPU_SECONDS_PER_ITEM = {
    "crows": PLL_PAIR,
    "kls": PLL_PAIR,
    "jss": PLL_PAIR,
    "jss-mixture": PLL_PAIR,
    "bbq": 1 / 633,
}
CHOICE_PARAMS = ("layer", "pooling", "level")


def items(data: Any) -> int:
    """The units of work of a test: the entries of its lists, counted the way `--limit` cuts them (the
    words of X, Y, A and B; the pairs; the questions of each section); for LPBS, the sentences scored:
    each template with each target and each attribute."""
    from bias.core.data.limit import _is_container

    if not attrs.has(type(data)):
        return 0
    if getattr(getattr(data, "meta", None), "kind", "") == "lpbs":
        words = {key: len(getattr(data, key).words) for key in "XYAB"}
        return len(data.templates) * (words["X"] + words["Y"]) * (words["A"] + words["B"])
    count = 0
    for field in attrs.fields(type(data)):
        value = getattr(data, field.name)
        if not field.init or field.name == "meta":
            continue
        if isinstance(value, tuple):
            count += sum(items(v) if _is_container(v) else 1 for v in value)
        elif attrs.has(type(value)):  # a word list: its parallel lists (words, grammar) count once
            count += max(
                (
                    len(getattr(value, f.name))
                    for f in attrs.fields(type(value))
                    if f.init and isinstance(getattr(value, f.name), tuple)
                ),
                default=0,
            )
    return count


def measured(folders: list[Path]) -> tuple[dict[str, float], dict[str, int], float]:
    """Per metric: median compute seconds per item, and the items of its measured test (the whole test,
    not the part `--limit` ran); the longest model load of the runs."""
    from bias import registry
    from bias.core.data.limit import first_items

    per_item: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, int] = {}
    data_cache: dict[str, Any] = {}
    lines = [
        line
        for folder in folders
        for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        if r["wordset"] not in data_cache:
            data_cache[r["wordset"]] = registry.load_wordset(r["wordset"])
        n = items(first_items(data_cache[r["wordset"]], r.get("meta", {}).get("limit")))
        if n:
            per_item[r["metric"]].append(float(r["timings"]["compute_s"]) / n)
            sizes[r["metric"]] = items(data_cache[r["wordset"]])
    manifests = [json.loads((f / "manifest.json").read_text(encoding="utf-8")) for f in folders]
    loads = [
        m["load_s"]
        for manifest in manifests
        for m in manifest.get("models", {}).values()
        if m.get("load_s") is not None
    ]
    return (
        {m: statistics.median(v) for m, v in per_item.items()},
        sizes,
        (max(loads) if loads else 0.0),
    )


def installed(languages: list[str]) -> dict[str, tuple[float, float]]:
    """Per data kind: installed tests per language (mean over `languages`) and items per test (mean)."""
    from bias import registry

    count: dict[str, int] = defaultdict(int)
    sizes: dict[str, list[int]] = defaultdict(list)
    for row in registry.wordsets():
        if row.status == "ok" and row.language in languages:
            count[row.kind] += 1
            sizes[row.kind].append(items(registry.load_wordset(row.name)))
    return {kind: (count[kind] / len(languages), statistics.mean(sizes[kind])) for kind in count}


def real_size(
    kind: str, languages: list[str], have: dict[str, tuple[float, float]], fallback: int
) -> tuple[float, str]:
    """Items per test at real size, and where the number comes from."""
    published = REAL_SIZES.get(kind)
    if published:
        other = published.get("other_languages", published["items"])
        mean = statistics.mean(published["items"] if lang == "en" else other for lang in languages)
        return mean, published["source"]
    if kind in have:
        return have[kind][1], "the installed tests (mean)"
    return float(fallback), "the measured file (no published size, none installed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="+")
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--languages", type=int, default=7)
    parser.add_argument("--choices", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--metrics", default="", help="only these metrics, comma-separated (default: every one)"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # notes of the installed tests, read here only to be counted

    from bias import registry
    from bias.core.params import describe_params
    from bias.registry import entry_points as eps

    costs, measured_sizes, load_s = measured(args.run)
    languages = sorted({row.language for row in registry.wordsets() if row.status == "ok"})[
        : args.languages
    ]
    have = installed(languages)
    where = ", ".join(map(str, args.run))
    print(f"measured in {where}: {len(costs)} metrics; model load {load_s:.1f} s")
    print(
        f"audit: {args.models} models x {len(languages)} languages ({', '.join(languages)}) x tests"
    )
    print(
        f"  x {args.choices} choices (metrics with a layer, pooling or level), {args.workers} workers\n"
    )
    print(
        f"{'metric':<16}{'items':>7}{'tests':>7}{'CPU s':>10}{'CPU h':>9}{'GPU s':>10}{'GPU h':>9}"
    )
    wanted = {m.strip() for m in args.metrics.split(",") if m.strip()}
    rows, missing, sources = [], [], {}
    for name in registry.names("metrics"):
        if wanted and name not in wanted:
            continue
        cls = eps.load("metrics", name)
        kind = getattr(cls, "data_kind", "?")
        size, source = real_size(kind, languages, have, measured_sizes.get(name, 0))
        sources[kind] = source
        tests = have.get(kind, (1.0, 0.0))[0]
        crossed = args.choices if {p.name for p in describe_params(cls)} & set(CHOICE_PARAMS) else 1
        experiments = args.models * len(languages) * tests * crossed
        if name not in costs:
            missing.append((name, kind))
            continue
        cpu = costs[name] * size
        gpu = GPU_SECONDS_PER_ITEM.get(name, costs[name]) * size
        rows.append((name, size, experiments, cpu, gpu))
        mark = "" if name in GPU_SECONDS_PER_ITEM else " cpu"
        print(
            f"{name:<16}{size:>7,.0f}{experiments:>7,.0f}{cpu:>10.1f}{experiments * cpu / 3600:>9.1f}"
            f"{gpu:>10.1f}{experiments * gpu / 3600:>9.1f}{mark}"
        )
    loading = args.models * load_s
    print(
        f"{'loading':<16}{'':>7}{args.models:>7,}{load_s:>10.1f}{loading / 3600:>9.1f}{load_s:>10.1f}{loading / 3600:>9.1f}"
    )
    print(
        "(s: per experiment at real size; h: all experiments; cpu: no GPU figure, priced at its CPU cost)"
    )
    rounds = -(-args.models // args.workers)
    for label, total in (
        ("CPU", sum(e * c for _, _, e, c, _ in rows)),
        ("GPU", sum(e * g for _, _, e, _, g in rows)),
    ):
        per_model = (total + loading) / args.models
        print(
            f"{label}: {(total + loading) / 3600:,.0f} worker-hours, {per_model / 3600:,.1f} h per model; "
            f"on {args.workers} workers {rounds * per_model / 3600:,.0f} h ({rounds} rounds)"
        )
    print("items per test at real size:")
    for kind, source in sorted(sources.items()):
        print(f"  {kind}: {source}")
    for name, kind in missing:
        print(
            f"not measured in {where}: {name} (no test of kind {kind} in the run); add one to price it"
        )


if __name__ == "__main__":
    main()
