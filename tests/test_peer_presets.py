"""Run presets reproduce their peers' numbers on inputs written in the peer's format.

Each expected value is computed here by a loop that follows the peer's published definition (its
paper or documentation), never by the code under test.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias.engine.experiment_file import load_config
from bias.engine.planning import plan, route_params
from bias.engine.runner import run_one
from bias.registry.resolve import build_embedder

WORDS = {
    "targ1": ["rose", "tulip", "daisy", "lily", "orchid", "violet", "poppy", "iris", "aster", "lilac"],
    "targ2": ["ant", "wasp", "beetle", "moth", "flea", "hornet", "gnat", "spider", "roach", "tick"],
    "attr1": ["joy", "love", "peace", "happy", "gentle", "lucky", "honest", "warm"],
    "attr2": ["pain", "hatred", "war", "ugly", "filthy", "rotten", "poison", "grief"],
}


def run_file(path: Path, embedder: Any) -> list[Any]:
    experiments, _ = load_config(path)
    return [run_one(p, embedder) for p in plan(route_params(experiments)).runnable]


def cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (math.sqrt(np.dot(u, u)) * math.sqrt(np.dot(v, v))))


def s_scores(vec: dict[str, np.ndarray], targets: list[str], a: list[str], b: list[str]) -> list[float]:
    """s(w, A, B) of Caliskan et al. (2017): mean cosine with A minus mean cosine with B, per target."""
    return [math.fsum(cos(vec[w], vec[x]) for x in a) / len(a) - math.fsum(cos(vec[w], vec[y]) for y in b) / len(b) for w in targets]


def d_of(sx: list[float], sy: list[float], ddof: int) -> float:
    both = sx + sy
    mean = math.fsum(both) / len(both)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in both) / (len(both) - ddof))
    return (math.fsum(sx) / len(sx) - math.fsum(sy) / len(sy)) / std


# -- bias-framework: its SEAT sentence encoder on fastText, repeats kept, population std -------------


def test_bias_framework_preset_reproduces_its_seat_on_fasttext(planted_files, tmp_path: Path) -> None:
    """The framework encodes a sentence as mean(get_word_vector(w) for w in sentence.split()) (punctuation
    stays on its word), keeps every sentence of the file (a repeat counts twice), and divides by numpy's
    population std (ddof 0)."""
    import fasttext

    folder = tmp_path / "en" / "SEAT"
    folder.mkdir(parents=True)
    frames = ("This is {}.", "{} is here.", "That is a {}!")
    sets = {key: [f.format(w) for w in words[:8] for f in frames] for key, words in WORDS.items()}
    sets["targ1"].append(sets["targ1"][0])  # the framework's files repeat sentences now and then
    path = folder / "SEAT_T.jsonl"
    path.write_text(json.dumps({k: {"category": k, "examples": v} for k, v in sets.items()}), encoding="utf-8")
    common = f'[[experiments]]\nwordset = "{path}"\nmetric = "seat"\nmodel = "fasttext:{planted_files.fasttext_bin}"\nparams = {{ bootstrap = 0 }}\n'
    (tmp_path / "fw.toml").write_text('preset = "bias-framework"\n' + common, encoding="utf-8")
    (tmp_path / "plain.toml").write_text(common, encoding="utf-8")

    embedder = build_embedder(f"fasttext:{planted_files.fasttext_bin}")
    (framework,) = run_file(tmp_path / "fw.toml", embedder)
    (plain,) = run_file(tmp_path / "plain.toml", embedder)

    model = fasttext.load_model(str(planted_files.fasttext_bin))
    vec = {s: np.mean([model.get_word_vector(w).astype(np.float64) for w in s.split()], axis=0) for ss in sets.values() for s in ss}
    sx = s_scores(vec, sets["targ1"], sets["attr1"], sets["attr2"])
    sy = s_scores(vec, sets["targ2"], sets["attr1"], sets["attr2"])
    expected = d_of(sx, sy, ddof=0)

    assert framework.ok, framework.reason
    assert framework.sizes["X"] == len(sets["targ1"])  # the repeated sentence counts twice
    assert framework.effect_size == pytest.approx(expected, abs=1e-6)
    assert abs(plain.effect_size - expected) > 1e-4  # fastText's own sentence vector is another number
    assert framework.convention["run_preset"] == "bias-framework"
    assert framework.convention["run_preset_params"] == {"ddof": 0, "duplicates": "keep", "static_sentence": "word-mean"}
    assert framework.convention["static_sentence"] == "word-mean" and framework.convention["ddof"] == 0
    assert "run_preset" not in plain.convention


def test_bias_framework_repeats_are_case_sensitive(tmp_path: Path) -> None:
    """In the framework's WEAT text format, `Rose` and `rose` are two stimuli; a true repeat counts twice."""
    folder = tmp_path / "en" / "WEAT"
    folder.mkdir(parents=True)
    x = ["Rose", "rose", *WORDS["targ1"][1:8], "tulip"]
    lines = [x, WORDS["targ2"][:10], WORDS["attr1"], WORDS["attr2"]]
    path = folder / "T1.txt"
    path.write_text("\n".join(", ".join(ws) for ws in lines) + "\n", encoding="utf-8")
    rng = np.random.default_rng(3)
    vocab = sorted({w for ws in lines for w in ws})
    vec = {w: rng.normal(size=12) for w in vocab}
    model = tmp_path / "v.txt"
    model.write_text(f"{len(vocab)} 12\n" + "".join(w + " " + " ".join(repr(float(v)) for v in vec[w]) + "\n" for w in vocab), encoding="utf-8")
    (tmp_path / "fw.toml").write_text(
        f'preset = "bias-framework"\n[[experiments]]\nwordset = "{path}"\nmetric = "weat"\nmodel = "word2vec:{model}"\nparams = {{ bootstrap = 0 }}\n',
        encoding="utf-8",
    )
    (result,) = run_file(tmp_path / "fw.toml", build_embedder(f"word2vec:{model}"))
    expected = d_of(s_scores(vec, x, lines[2], lines[3]), s_scores(vec, lines[1], lines[2], lines[3]), ddof=0)
    assert result.sizes["X"] == 10
    assert result.effect_size == pytest.approx(expected, abs=1e-6)


# -- sent-bias: sample std, one-sided p counting ties, exact up to n_samples partitions -------------


def _vectors_file(tmp_path: Path, seed: int, lean: float) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=16)
    sign = {"targ1": 1.0, "attr1": 1.0, "targ2": -1.0, "attr2": -1.0}
    vec = {w: rng.normal(size=16) + sign[k] * lean * axis for k, ws in WORDS.items() for w in ws}
    path = tmp_path / "vectors.txt"
    path.write_text(f"{len(vec)} 16\n" + "".join(w + " " + " ".join(repr(float(x)) for x in v) + "\n" for w, v in vec.items()), encoding="utf-8")
    return path, vec


def _sent_bias_file(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "sent-bias"
    folder.mkdir(exist_ok=True)
    path = folder / f"weat_{n}.jsonl"
    sets = {k: (ws[:n] if k.startswith("targ") else ws) for k, ws in WORDS.items()}
    path.write_text(json.dumps({k: {"category": k, "examples": v} for k, v in sets.items()}), encoding="utf-8")
    return path


def sent_bias_p(sx: list[float], sy: list[float], n_samples: int = 100_000) -> tuple[float, str]:
    """sent-bias's p as its paper and README describe it: over the equal-size partitions of X u Y, the
    share whose statistic is at least the observed one (ties count), all of them when there are at most
    n_samples; the statistic S = sum s(X) - sum s(Y)."""
    pool = sx + sy
    total, observed = math.fsum(pool), math.fsum(sx) - math.fsum(sy)
    n = len(sx)
    if math.comb(len(pool), n) > n_samples:
        return float("nan"), "sampled"
    hits = count = 0
    for idx in itertools.combinations(range(len(pool)), n):
        si = 2 * math.fsum(pool[i] for i in idx) - total
        hits += si >= observed - 1e-12
        count += 1
    return hits / count, "exact"


def test_sent_bias_preset_exact(tmp_path: Path) -> None:
    vectors, vec = _vectors_file(tmp_path, 5, 0.15)
    data = _sent_bias_file(tmp_path, 8)
    (tmp_path / "sb.toml").write_text(
        f'preset = "sent-bias"\nseed = 1111\n[[experiments]]\nwordset = "{data}"\nmetric = "weat"\nmodel = "word2vec:{vectors}"\nparams = {{ bootstrap = 0 }}\n',
        encoding="utf-8",
    )
    (result,) = run_file(tmp_path / "sb.toml", build_embedder(f"word2vec:{vectors}"))
    w = {k: ws[:8] if k.startswith("targ") else ws for k, ws in WORDS.items()}
    sx, sy = s_scores(vec, w["targ1"], w["attr1"], w["attr2"]), s_scores(vec, w["targ2"], w["attr1"], w["attr2"])
    p, method = sent_bias_p(sx, sy)
    assert method == "exact" and result.convention["method"] == "exact"
    assert result.effect_size == pytest.approx(d_of(sx, sy, ddof=1), abs=1e-6)
    assert result.p_value == pytest.approx(p, abs=1e-12)
    assert 0.0 < p < 1.0
    assert result.convention["run_preset"] == "sent-bias" and result.convention["ties"] == "counted"


def test_sent_bias_preset_sampled_within_monte_carlo_error(tmp_path: Path) -> None:
    """C(20, 10) = 184,756 partitions > n_samples: sent-bias samples, so its p and ours agree within
    the Monte Carlo error of 100,000 draws around the exact share (enumerated here)."""
    vectors, vec = _vectors_file(tmp_path, 8, 0.08)
    data = _sent_bias_file(tmp_path, 10)
    (tmp_path / "sb.toml").write_text(
        f'preset = "sent-bias"\nseed = 1111\n[[experiments]]\nwordset = "{data}"\nmetric = "weat"\nmodel = "word2vec:{vectors}"\nparams = {{ bootstrap = 0 }}\n',
        encoding="utf-8",
    )
    (result,) = run_file(tmp_path / "sb.toml", build_embedder(f"word2vec:{vectors}"))
    sx, sy = s_scores(vec, WORDS["targ1"], WORDS["attr1"], WORDS["attr2"]), s_scores(vec, WORDS["targ2"], WORDS["attr1"], WORDS["attr2"])
    pool = np.array(sx + sy)
    observed = sum(sx) - sum(sy)
    combos = np.array(list(itertools.combinations(range(20), 10)), dtype=np.int8)
    exact = float(np.mean(2 * pool[combos].sum(axis=1) - pool.sum() >= observed - 1e-12))
    assert result.convention["method"] == "sampled" and result.convention["permutations"] == 99_999
    assert abs(result.p_value - exact) <= 4 * math.sqrt(exact * (1 - exact) / 100_000) + 1e-5
    assert 0.01 < exact < 0.99  # a p where sampling error matters
    assert result.effect_size == pytest.approx(d_of(sx, sy, ddof=1), abs=1e-6)


# -- wefe: population std, vectors as the model gives them ----------------------------------------


def test_wefe_preset(tmp_path: Path) -> None:
    """WEFE's WEAT effect size divides by numpy's default (population) std; its RND sums, over the
    attribute words, ||w - mean(target 1)|| - ||w - mean(target 2)|| on the vectors as loaded."""
    vectors, vec = _vectors_file(tmp_path, 9, 0.2)
    data = _sent_bias_file(tmp_path, 8)
    (tmp_path / "wefe.toml").write_text(
        f'preset = "wefe"\nmodels = ["word2vec:{vectors}"]\nwordsets = ["{data}"]\nmetrics = ["weat", "rnd", "ripa"]\n[params]\nbootstrap = 0\n',
        encoding="utf-8",
    )
    results = {r.metric: r for r in run_file(tmp_path / "wefe.toml", build_embedder(f"word2vec:{vectors}"))}
    w = {k: ws[:8] if k.startswith("targ") else ws for k, ws in WORDS.items()}
    sx, sy = s_scores(vec, w["targ1"], w["attr1"], w["attr2"]), s_scores(vec, w["targ2"], w["attr1"], w["attr2"])
    assert results["weat"].effect_size == pytest.approx(d_of(sx, sy, ddof=0), abs=1e-6)
    m1 = np.mean([vec[t] for t in w["targ1"]], axis=0)
    m2 = np.mean([vec[t] for t in w["targ2"]], axis=0)
    rnd = math.fsum(float(np.linalg.norm(vec[a] - m1) - np.linalg.norm(vec[a] - m2)) for a in w["attr1"] + w["attr2"])
    assert results["rnd"].effect_size == pytest.approx(rnd, abs=1e-6)
    assert results["rnd"].convention["run_preset_params"] == {"normalise": False}
    assert results["weat"].convention["run_preset_params"] == {"ddof": 0}
    # WEFE's RIPA of an attribute set: the mean over its words of the mean over the i-th target pairs
    # of w . (t1_i - t2_i) / |t1_i - t2_i| (target template 2, one attribute set)
    units = [(vec[a] - vec[b]) / np.linalg.norm(vec[a] - vec[b]) for a, b in zip(w["targ1"], w["targ2"])]
    ripa = np.mean([np.mean([float(vec[word] @ u) for u in units]) for word in w["attr1"]])
    assert results["ripa"].figures["mean_ripa_A"] == pytest.approx(ripa, abs=1e-6)
    assert results["ripa"].convention["run_preset_params"] == {"normalise": False, "relation": "per-pair"}


# -- bias-framework: its LPBS (i-th target pairs, singular templates, sub-tokens at one mask) --------


LPBS_FILE = {
    # On the planted model (flowers ~ pleasant). The i-th singular target of targ1 goes with the i-th of
    # targ2, so "daisy" (third, no partner) is never scored; "rosebush" is several word pieces read at
    # one mask; the plural lists and templates are left unused (the house i-th pairing would set
    # "lilies" against "wasps"); "peace" is listed twice and counts twice; "grumpiness" is several
    # pieces, whose prior slot is still one mask.
    "targ1": {"singular": ["rosebush", "tulip", "daisy"], "plural": ["lilies"]},
    "targ2": {"singular": ["ant", "wasp"], "plural": ["ants", "wasps"]},
    "attr1": ["joy", "love", "peace", "peace"],
    "attr2": ["pain", "hatred", "war", "grumpiness"],
    "templates": {"singular": ["the TARGET is ATTRIBUTE .", "a TARGET feels ATTRIBUTE ."], "plural": ["TARGET are ATTRIBUTE ."]},
}


def framework_lpbs(folder: Path, data: dict[str, Any]) -> tuple[dict[str, float], float]:
    """The LPBS of the framework's technical report and README, on a file in its format: p_tgt(t | a) is
    P(first mask = t) with ATTRIBUTE filled in and TARGET replaced by one mask; p_prior(t) the same
    with ATTRIBUTE one mask and the target's text masked; a word of several pieces is the product of
    its pieces' probabilities at that one mask; asc = log(p_tgt / p_prior); an attribute's score is
    the mean over the i-th singular target pairs and the singular templates of asc(t1_i, a) -
    asc(t2_i, a); d = (mean score(attr1) - mean score(attr2)) / numpy's population std of all scores."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    mask = tok.mask_token

    def prob(text: str, target: str) -> float:
        ids = tok.encode(text)
        at = ids.index(tok.mask_token_id)
        with torch.no_grad():
            probs = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0, at].double(), dim=-1)
        p = 1.0
        for piece in tok(target)["input_ids"][1:-1]:
            p *= float(probs[piece])
        return p

    def asc(template: str, target: str, attribute: str) -> float:
        tgt = prob(template.replace("ATTRIBUTE", attribute).replace("TARGET", mask), target)
        prior = prob(template.replace("TARGET", target).replace("ATTRIBUTE", mask).replace(target, mask), target)
        return math.log(tgt / prior)

    pairs = list(zip(data["targ1"]["singular"], data["targ2"]["singular"]))
    templates = data["templates"]["singular"]
    score = {
        a: float(np.mean([[asc(tpl, t1, a) - asc(tpl, t2, a) for tpl in templates] for t1, t2 in pairs]))
        for a in dict.fromkeys(data["attr1"] + data["attr2"])
    }
    s1, s2 = [score[a] for a in data["attr1"]], [score[a] for a in data["attr2"]]
    return score, float((np.mean(s1) - np.mean(s2)) / np.std(s1 + s2))


def test_bias_framework_preset_reproduces_its_lpbs(planted_mlm: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(planted_mlm)
    assert len(tok("rosebush")["input_ids"]) > 3 and len(tok("grumpiness")["input_ids"]) > 3
    folder = tmp_path / "en" / "LPBS"
    folder.mkdir(parents=True)
    path = folder / "LPBS_T.jsonl"
    path.write_text(json.dumps(LPBS_FILE), encoding="utf-8")
    spec = f"hf:{planted_mlm}"
    common = f'[[experiments]]\nwordset = "{path}"\nmetric = "lpbs"\nmodel = "{spec}"\nparams = {{ permutations = 200 }}\n'
    (tmp_path / "fw.toml").write_text('preset = "bias-framework"\n' + common, encoding="utf-8")
    (tmp_path / "plain.toml").write_text(common, encoding="utf-8")
    embedder = build_embedder(spec)
    (framework,) = run_file(tmp_path / "fw.toml", embedder)
    (plain,) = run_file(tmp_path / "plain.toml", embedder)

    expected_scores, expected_d = framework_lpbs(planted_mlm, LPBS_FILE)
    got = {**framework.figures["attribute_scores"]["A"], **framework.figures["attribute_scores"]["B"]}
    assert set(got) == set(expected_scores)
    # to 1e-6 of the value: the model's logits are float32, and our batched forward passes (padded,
    # the output head on the masked positions only) round differently from one plain call per sentence
    for word, value in expected_scores.items():
        assert got[word] == pytest.approx(value, rel=1e-6), word
    assert framework.effect_size == pytest.approx(expected_d, rel=1e-6)
    assert framework.convention["run_preset_params"] == {
        "ddof": 0, "duplicates": "keep", "multi_token": "one-mask", "pairing": "i-th", "target_number": "singular",
    }
    assert framework.convention["pairing"] == "i-th" and framework.convention["multi_token"] == "one-mask"
    # the house default scores every target in every template of its number: another number
    assert abs(plain.effect_size - expected_d) > 1e-3


def test_bias_framework_preset_on_the_frameworks_file_shape(planted_mlm: Path, tmp_path: Path) -> None:
    """The framework's own LPBS files pair one singular target of targ1 with one of targ2: the preset
    scores them. Where its prior reads another number (a template with ATTRIBUTE first, read at the
    first mask; a target's text elsewhere in the template, masked too), every attribute's score moves
    by the same amount, so d is still the framework's."""
    data = {
        "targ1": {"singular": ["rose"], "plural": ["roses", "lilies"]},
        "targ2": {"singular": ["ant"], "plural": ["ants", "wasps"]},
        "attr1": ["joy", "love", "peace", "happy"],
        "attr2": ["pain", "hatred", "war", "ugly"],
        "templates": {"singular": ["the TARGET is ATTRIBUTE .", "ATTRIBUTE , like the TARGET .", "a TARGET feels ATTRIBUTE , rose"], "plural": []},
    }
    folder = tmp_path / "en" / "LPBS"
    folder.mkdir(parents=True)
    path = folder / "LPBS_7.jsonl"
    path.write_text(json.dumps(data), encoding="utf-8")
    common = f'[[experiments]]\nwordset = "{path}"\nmetric = "lpbs"\nmodel = "hf:{planted_mlm}"\nparams = {{ permutations = 200 }}\n'
    (tmp_path / "fw.toml").write_text('preset = "bias-framework"\n' + common, encoding="utf-8")
    (result,) = run_file(tmp_path / "fw.toml", build_embedder(f"hf:{planted_mlm}"))
    assert result.ok, result.reason
    expected_scores, expected_d = framework_lpbs(planted_mlm, data)
    assert result.effect_size == pytest.approx(expected_d, rel=1e-6)
    got = {**result.figures["attribute_scores"]["A"], **result.figures["attribute_scores"]["B"]}
    shifts = [got[w] - expected_scores[w] for w in expected_scores]
    assert max(shifts) - min(shifts) < 1e-5 and abs(shifts[0]) > 1e-3  # one shift for all, not none


def test_a_preset_on_the_command_line_is_the_experiment_files_preset(planted_mlm: Path, tmp_path: Path) -> None:
    """`bias run --preset bias-framework` gives what `preset = "bias-framework"` in a file gives: the
    framework's LPBS, the preset recorded in the result and its note in the manifest; --param wins."""
    from test_bbq import cli

    folder = tmp_path / "en" / "LPBS"
    folder.mkdir(parents=True)
    path = folder / "LPBS_T.jsonl"
    path.write_text(json.dumps(LPBS_FILE), encoding="utf-8")
    args = ["run", "-m", f"hf:{planted_mlm}", "-w", str(path), "--metric", "lpbs", "--param", "permutations=200", "--json"]
    code, out, err = cli(*args, "--preset", "bias-framework", "--out", str(tmp_path / "run"))
    assert code == 0, out + err
    (line,) = [json.loads(t) for t in out.splitlines() if t.startswith("{")]
    _, expected_d = framework_lpbs(planted_mlm, LPBS_FILE)
    assert line["effect_size"] == pytest.approx(expected_d, rel=1e-6)
    assert line["convention"]["run_preset"] == "bias-framework" and line["params"]["pairing"] == "i-th"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert any(note.startswith("Preset bias-framework:") for note in json.dumps(manifest).split('"'))
    code, out, err = cli(*args, "--preset", "bias-framework", "--param", "ddof=1")
    assert code == 0, out + err
    (mine,) = [json.loads(t) for t in out.splitlines() if t.startswith("{")]
    assert mine["params"]["ddof"] == 1 and mine["params"]["pairing"] == "i-th"
    assert mine["convention"]["run_preset_params"].get("ddof") is None  # the preset's ddof did not run
