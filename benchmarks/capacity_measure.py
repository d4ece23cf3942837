"""The measured run a capacity plan is computed from: every registered metric once, on models of real size.

Run:  python benchmarks/capacity_measure.py FOLDER [--limit 4]
      python benchmarks/capacity_plan.py FOLDER/run

Builds, in FOLDER, a bert-base-sized masked LM (`BertForMaskedLM(BertConfig())`, random weights, the
WordPiece tokenizer of benchmarks/bench_crows.py), a GPT-2-sized causal LM (benchmarks/bench_bbq.py), a
static model of 100,000 words x 300 dimensions (random vectors; every word of the English tests among
them; more than the 30,000 and 50,000 words `analogy` and `clustering` search by default), and the
test files of the kinds no language package installs (a StereoSet file, word-similarity pairs,
labelled texts), written here from our own generated sentences. Then `bias run --limit LIMIT` runs every
metric on its English test, on the static model for the metrics that need word vectors only, on the
causal LM for BBQ and the hiring decisions and on the masked LM for the others (the first LIMIT items of each list): the plan scales each cost per item to
the published test's size. Costs are CPU costs on this machine (`--device cpu`, no encoding cache).
A metric with no test here (fise: its trait and affect files) is left for the plan to name as not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import attrs

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from bench_bbq import build_model as build_causal  # noqa: E402
from bench_crows import GROUPS, OBJECTS, PLACES, VERBS, build_model as build_masked  # noqa: E402

EN = {
    "association": "en/weat1",
    "pairs": "en/crows-sample",
    "lpbs": "en/lpbs-gender",
    "bbq": "en/bbq-sample",
    "analogies": "en/analogies",
    "debias-lists": "en/debias-gender",
    "decisions": "en/hiring",
}
ADJECTIVES = [
    ("careful", "careless", "purple"),
    ("calm", "loud", "window"),
    ("kind", "rude", "carrot"),
    ("strong", "weak", "spoon"),
]


def static_file(path: Path, words: int = 100_000, dimensions: int = 300, seed: int = 0) -> Path:
    """A word2vec binary file: the words of the installed English tests first, then filler words."""
    import numpy as np
    from gensim.models import KeyedVectors

    from bias import registry

    found: dict[str, None] = {}

    def collect(value: object) -> None:
        if isinstance(value, str):
            for word in value.split():
                if word.isalpha():
                    found.update({word: None, word.lower(): None})
        elif isinstance(value, (tuple, list)):
            for item in value:
                collect(item)
        elif attrs.has(type(value)):
            for field in attrs.fields(type(value)):
                if field.name != "meta":
                    collect(getattr(value, field.name))

    for name in EN.values():
        collect(registry.load_wordset(name))
    vocabulary = list(found)[:words]
    vocabulary += [f"filler{i}" for i in range(words - len(vocabulary))]
    vectors = KeyedVectors(dimensions)
    vectors.add_vectors(
        vocabulary, np.random.default_rng(seed).normal(size=(words, dimensions)).astype(np.float32)
    )
    vectors.save_word2vec_format(str(path), binary=True)
    return path


def stereoset_file(path: Path, n: int = 40, seed: int = 0) -> Path:
    """StereoSet's JSON layout (intrasentence), our own sentences: a context with BLANK, three fillers."""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        group = rng.choice(GROUPS)[0]
        context = f"The {group} who {rng.choice(VERBS)} {rng.choice(OBJECTS)} was BLANK."
        words = rng.choice(ADJECTIVES)
        sentences = [
            {
                "id": f"s{i}-{label}",
                "sentence": context.replace("BLANK", word),
                "gold_label": label,
                "labels": [{"human_id": "h", "label": label}],
            }
            for label, word in zip(("stereotype", "anti-stereotype", "unrelated"), words)
        ]
        examples.append(
            {
                "id": f"s{i}",
                "bias_type": "gender",
                "target": group,
                "context": context,
                "sentences": sentences,
            }
        )
    path.write_text(
        json.dumps(
            {"version": "generated", "data": {"intrasentence": examples, "intersentence": []}}
        )
    )
    return path


def similarity_file(path: Path, seed: int = 0) -> Path:
    """Word pairs with scores (SimLex layout), from the words of en/weat1, scores drawn at random."""
    from bias import registry

    rng = random.Random(seed)
    test = registry.load_wordset(EN["association"])
    words = [w for key in "XYAB" for w in getattr(test, key).words]
    lines = [
        f"{rng.choice(words)}\t{rng.choice(words)}\t{rng.uniform(0, 10):.2f}" for _ in range(60)
    ]
    path.write_text("# language: en\nword1\tword2\tscore\n" + "\n".join(lines) + "\n")
    return path


def labelled_file(path: Path, n: int = 80, seed: int = 0) -> Path:
    """Sentences naming one of two groups, labelled by the group (what `probe` classifies)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.randrange(2)
        group = rng.choice(GROUPS)[label]
        rows.append(
            f"The {group} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)}.,{label}"
        )
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--limit", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bias import registry
    from bias.registry import entry_points as eps

    folder = args.folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    masked = folder / "bert-base-random"
    causal = folder / "gpt2-random"
    if not (masked / "config.json").exists():
        build_masked(masked)
    if not (causal / "config.json").exists():
        build_causal(causal, layers=12)
    static = folder / "static-100k.bin"
    if not static.exists():
        static_file(static)
    files = {
        "stereoset": stereoset_file(folder / "stereoset.json"),
        "similarity-pairs": similarity_file(folder / "simlex.tsv"),
        "labelled-texts": labelled_file(folder / "labelled.csv"),
    }
    tests = {**EN, **{kind: str(path) for kind, path in files.items()}}
    entries = []
    for name in registry.names("metrics"):
        cls = eps.load("metrics", name)
        kind = getattr(cls, "data_kind", "")
        if kind not in tests:
            continue
        if kind == "bbq" or "CAUSAL_LM" in {c.name for c in cls.requires}:
            model = f'{{ spec = "hf:{causal}", device = "cpu", cache = false }}'
        elif {c.name for c in cls.requires} == {"WORD_VECTORS"}:
            model = f'"word2vec:{static}"'
        else:
            model = f'{{ spec = "hf:{masked}", device = "cpu", cache = false }}'
        entries.append(
            f'[[experiments]]\nmetric = "{name}"\nwordset = "{tests[kind]}"\nmodel = {model}\n'
        )
    config = folder / "measure.toml"
    config.write_text('title = "Capacity plan: measured costs"\n\n' + "\n".join(entries))
    run = folder / "run"
    command = [
        sys.executable,
        "-m",
        "bias.cli.app",
        "run",
        str(config),
        "--out",
        str(run),
        "--limit",
        str(args.limit),
    ]
    if (run / "results.jsonl").exists():
        command.append("--resume")
    print(" ".join(command), flush=True)
    subprocess.run(command, check=False)


if __name__ == "__main__":
    main()
