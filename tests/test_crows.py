"""CrowS-Pairs, SSS, AUL and AULA through the real `hf` embedder on tiny real models.

Per-pair scores are checked against a deliberately naive reference written here: the model's own
tokenizer, difflib matching blocks, and one plain forward call per masked token (or per sentence for
AUL), softmax in float64. Validity: on the planted masked LM (flowers ~ pleasant, insects ~
unpleasant) pairs built from the planted association are preferred far above 50%, the control model
stays near 50%, and AUL agrees in direction.
"""

from __future__ import annotations

import difflib
import random
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from bias.core.errors import BiasError
from bias.core.pair_metrics.alignment import prepare_pairs
from bias.core.pair_metrics.scoring import PairScores
from bias.core.model import WordSetMeta
from bias.core.pair_metrics.metric import compare_pairs
from bias.core.data.minimal_pairs import PairSet, SentencePair
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.plugins.metrics.aul import Aul, Aula
from bias.plugins.metrics.crows import Crows
from bias.plugins.metrics.sss import StereoSetScore

TOL = 1e-6


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (tests/conftest.py)


def pair_set(pairs: list[SentencePair], name: str = "hand-built") -> PairSet:
    return PairSet(WordSetMeta(name=name, kind="pairs", language="en", bias_type="mixed"), tuple(pairs))


HAND = pair_set(
    [
        SentencePair("The woman is a nurse.", "The man is a nurse.", "stereo", "gender"),
        SentencePair("He likes the doctor and the rose.", "She likes the doctor and the rose.", "antistereo", "gender"),
        SentencePair("The man is here.", "The good man is here.", "stereo", "age"),  # unequal lengths
        SentencePair("The Rose sees the Tulip.", "The Tulip sees the Rose.", "antistereo", "non-social"),  # case
        SentencePair("a good flower is a good flower", "a bad flower is a good flower", "stereo", "non-social"),
        SentencePair("The insect works here, he said.", "The flower works here, he said.", "stereo", "age"),
    ]
)


@pytest.fixture(scope="module")
def uncased_dir(tiny_bert_dir: Path) -> Path:
    return tiny_bert_dir


@pytest.fixture(scope="module")
def cased_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fixtures.tiny_bert import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("crows-cased"), lowercase=False, seed=1)


def embedder(folder: Path, **options: Any) -> HuggingFaceEmbedder:
    e = HuggingFaceEmbedder(location=str(folder), device="cpu", batch_size=16, **options)
    e.load()
    return e


class Reference:
    """The naive computation: one forward per masked token, nothing batched, nothing shared."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForMaskedLM.from_pretrained(folder).eval()

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text)["input_ids"]

    def shared(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        """Positions in a and b of the tokens in difflib's matching blocks, [CLS]/[SEP] left out."""
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        pa, pb = [], []
        for block in blocks:
            for k in range(block.size):
                i, j = block.a + k, block.b + k
                if 0 < i < len(a) - 1 and 0 < j < len(b) - 1:
                    pa.append(i)
                    pb.append(j)
        return pa, pb

    def log_prob(self, ids: list[int], masked: list[int], position: int) -> float:
        import torch

        x = torch.tensor([ids])
        for p in masked:
            x[0, p] = self.tokenizer.mask_token_id
        with torch.no_grad():
            logits = self.model(input_ids=x).logits[0, position].double()
        return float(torch.log_softmax(logits, -1)[ids[position]])

    def pll(self, more: str, less: str) -> tuple[float, float]:
        a, b = self.ids(more), self.ids(less)
        pa, pb = self.shared(a, b)
        return sum(self.log_prob(a, [p], p) for p in pa), sum(self.log_prob(b, [p], p) for p in pb)

    def sss(self, more: str, less: str, joint: bool = False) -> tuple[float, float]:
        a, b = self.ids(more), self.ids(less)
        pa, pb = self.shared(a, b)
        out = []
        for ids, shared in ((a, pa), (b, pb)):
            modified = [i for i in range(1, len(ids) - 1) if i not in shared]
            out.append(float(np.mean([self.log_prob(ids, modified if joint else [m], m) for m in modified])))
        return out[0], out[1]

    def aul(self, text: str, attention: bool = False) -> float:
        import torch

        ids = self.ids(text)
        self.model.set_attn_implementation("eager")
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids]), output_attentions=True)
        lp = torch.log_softmax(out.logits[0].double(), -1).numpy()[np.arange(len(ids)), ids]
        weights = np.mean([a[0].double().numpy() for a in out.attentions], axis=(0, 1)).mean(axis=0)
        terms = lp * weights if attention else lp
        return float(terms[1:-1].mean())


def rows(result: Any) -> list[dict[str, Any]]:
    assert result.ok, result.reason
    return result.figures["pairs"]


def test_crows_pair_scores_match_the_unbatched_reference(uncased_dir: Path) -> None:
    ref = Reference(uncased_dir)
    result = Crows().compute(embedder(uncased_dir), HAND, seed=0)
    assert result.convention["lowercase"] is True
    got = rows(result)
    assert [r["index"] for r in got] == list(range(len(HAND.pairs)))
    for row, pair in zip(got, HAND.pairs):
        more, less = ref.pll(pair.more.lower(), pair.less.lower())
        assert row["score_more"] == pytest.approx(more, abs=TOL)
        assert row["score_less"] == pytest.approx(less, abs=TOL)
        assert row["biased"] == (row["score_more"] > row["score_less"])
    lengths = {r["tokens_more"] - r["tokens_less"] for r in got}
    assert lengths == {0}, "shared tokens are counted once per side, so both sides score the same number"
    assert len(ref.ids("the good man is here.")) == len(ref.ids("the man is here.")) + 1  # pair 2 differs in length
    assert got[2]["tokens_more"] == len(ref.ids("the man is here.")) - 2


def test_crows_counts_overall_by_type_and_direction(uncased_dir: Path) -> None:
    result = Crows().compute(embedder(uncased_dir), HAND, seed=0)
    got = rows(result)
    biased = [r["biased"] for r in got]
    assert result.effect_size == pytest.approx(100.0 * sum(biased) / len(got))
    for bias_type, entry in result.figures["by_bias_type"].items():
        mine = [r["biased"] for r in got if r["bias_type"] == bias_type]
        assert entry["n"] == len(mine) and entry["score"] == pytest.approx(100.0 * sum(mine) / len(mine))
    for direction, entry in result.figures["by_direction"].items():
        mine = [r["biased"] for r in got if r["direction"] == direction]
        assert entry["n"] == len(mine) and entry["biased"] == sum(mine)
    assert result.convention["rounding"].startswith("none")


def test_antistereo_rows_use_the_same_comparison(uncased_dir: Path) -> None:
    e = embedder(uncased_dir)
    flipped = pair_set([attrs.evolve(p, direction="antistereo" if p.direction == "stereo" else "stereo") for p in HAND.pairs])
    a, b = Crows().compute(e, HAND, seed=0), Crows().compute(e, flipped, seed=0)
    assert [r["biased"] for r in rows(a)] == [r["biased"] for r in rows(b)]
    assert a.effect_size == b.effect_size
    assert a.figures["by_direction"]["stereo"]["n"] == b.figures["by_direction"]["antistereo"]["n"]


def test_cased_model_is_not_lowercased_unless_asked(cased_dir: Path) -> None:
    ref = Reference(cased_dir)
    e = embedder(cased_dir)
    auto = Crows().compute(e, HAND, seed=0)
    assert auto.convention["lowercase"] is False
    lowered = Crows(lowercase="yes").compute(e, HAND, seed=0)
    assert lowered.convention["lowercase"] is True
    pair = HAND.pairs[3]
    assert ref.ids(pair.more) != ref.ids(pair.more.lower()), "the cased vocabulary must tell Rose from rose"
    assert rows(auto)[3]["score_more"] == pytest.approx(ref.pll(pair.more, pair.less)[0], abs=TOL)
    assert rows(lowered)[3]["score_more"] == pytest.approx(ref.pll(pair.more.lower(), pair.less.lower())[0], abs=TOL)


def test_exact_ties_count_as_not_biased(uncased_dir: Path) -> None:
    e = embedder(uncased_dir)
    prepared, _ = prepare_pairs(e, HAND, lowercase=True)
    more = np.array([-5.0, -7.0, -3.0, -4.0, -2.0, -9.0])
    less = np.array([-5.0, -8.0, -3.0, -3.0, -2.5, -9.0])  # pairs 0, 2 and 5 tie exactly
    scores = PairScores(tuple(prepared), more, less, (1,) * 6, (1,) * 6, (), {"model_kind": "masked"})
    result = compare_pairs(HAND, scores)
    assert result.figures["ties"] == 3 and result.figures["biased"] == 2
    assert result.effect_size == pytest.approx(100.0 * 2 / 6)
    assert [r["tie"] for r in result.figures["pairs"]] == [True, False, True, False, False, True]
    assert any("exact ties" in w for w in result.warnings)
    from scipy.stats import binomtest

    # the sign test runs over the 3 untied pairs only, 2 of them biased
    assert result.p_value == pytest.approx(binomtest(2, 3, 0.5).pvalue)


def test_rounding_preset_turns_near_equal_pairs_into_ties(tmp_path: Path) -> None:
    """With attention switched off, a masked token's prediction depends only on its position, so pairs
    of equal length score (almost) the same: the nangia2020 rounding makes every one of them a tie."""
    import torch
    from fixtures.tiny_bert import build_tiny_bert
    from transformers import BertForMaskedLM

    folder = build_tiny_bert(tmp_path / "blind", seed=5)
    model = BertForMaskedLM.from_pretrained(folder)
    with torch.no_grad():
        for layer in model.bert.encoder.layer:
            layer.attention.output.dense.weight.zero_()
            layer.attention.output.dense.bias.zero_()
    model.save_pretrained(folder)
    data = pair_set([p for p in HAND.pairs if p.more.count(" ") == p.less.count(" ")])
    e = embedder(folder)
    plain, rounded = Crows().compute(e, data, seed=0), Crows(preset="nangia2020").compute(e, data, seed=0)
    gaps = [abs(r["score_more"] - r["score_less"]) for r in rows(plain)]
    assert max(gaps) < 1e-4
    assert rounded.figures["ties"] == len(data.pairs) and rounded.effect_size == 0.0
    assert rounded.convention["preset"] == "nangia2020" and rounded.convention["rounding"].startswith("3 decimals")


def test_sss_scores_the_diagonal(uncased_dir: Path) -> None:
    ref = Reference(uncased_dir)
    e = embedder(uncased_dir)
    data = pair_set([HAND.pairs[0], HAND.pairs[1], HAND.pairs[3], HAND.pairs[5]])
    for masking in ("each", "joint"):
        result = StereoSetScore(masking=masking).compute(e, data, seed=0)
        for row, pair in zip(rows(result), data.pairs):
            more, less = ref.sss(pair.more.lower(), pair.less.lower(), joint=masking == "joint")
            assert row["score_more"] == pytest.approx(more, abs=TOL)
            assert row["score_less"] == pytest.approx(less, abs=TOL)
    # "The Rose sees the Tulip." vs its swap: two modified tokens, where the |M| x |M| average differs
    import torch

    ids = ref.ids(data.pairs[2].more.lower())
    shared, _ = ref.shared(ids, ref.ids(data.pairs[2].less.lower()))
    modified = [i for i in range(1, len(ids) - 1) if i not in shared]
    assert len(modified) >= 2
    x = torch.tensor([ids])
    x[0, modified] = ref.tokenizer.mask_token_id
    with torch.no_grad():
        lp = torch.log_softmax(ref.model(input_ids=x).logits[0].double(), -1)
    matrix = lp[modified][:, [ids[m] for m in modified]].mean().item()
    joint = rows(StereoSetScore(masking="joint").compute(e, data, seed=0))[2]["score_more"]
    assert joint != pytest.approx(matrix, abs=1e-3)


def test_sss_skips_pairs_without_modified_tokens(uncased_dir: Path) -> None:
    result = StereoSetScore().compute(embedder(uncased_dir), HAND, seed=0)
    skipped = result.figures["skipped"]
    assert [s["index"] for s in skipped] == [2] and "no modified token" in skipped[0]["reason"]
    assert result.figures["n"] == len(HAND.pairs) - 1


def test_aul_and_aula_match_the_reference(uncased_dir: Path) -> None:
    ref = Reference(uncased_dir)
    e = embedder(uncased_dir)
    for metric, attention in ((Aul(), False), (Aula(), True)):
        result = metric.compute(e, HAND, seed=0)
        for row, pair in zip(rows(result), HAND.pairs):
            assert row["score_more"] == pytest.approx(ref.aul(pair.more.lower(), attention), abs=TOL)
            assert row["score_less"] == pytest.approx(ref.aul(pair.less.lower(), attention), abs=TOL)


def causal_terms(folder: Path, text: str) -> list[float]:
    """log P(w_i | BOS, w_<i) for every token of `text`, by a plain transformers forward with the
    model's BOS token written in front by hand (GPT-2's tokenizer adds none)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = tokenizer(text)["input_ids"]
    assert ids[0] != tokenizer.bos_token_id  # the tokenizer itself adds no start token
    full = [tokenizer.bos_token_id] + ids
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=torch.tensor([full])).logits[0].double(), -1)
    return [lp[i - 1, full[i]].item() for i in range(1, len(full))]


def test_causal_lm_scores_the_first_word(tmp_path: Path) -> None:
    """Pairs that differ only in their first word: without a start token that word has no context
    and was never scored, so both sentences scored the same and every pair was a tie."""
    from fixtures.tiny_bert import build_tiny_gpt2

    folder = build_tiny_gpt2(tmp_path / "gpt2")
    e = embedder(folder)
    data = pair_set(
        [
            SentencePair("He likes the doctor.", "She likes the doctor.", "stereo", "gender"),
            SentencePair("Men work here.", "Women work here.", "stereo", "gender"),
            SentencePair("Flowers are good.", "Insects are good.", "antistereo", "non-social"),
        ]
    )
    for metric in (Crows(), Aul()):
        result = metric.compute(e, data, seed=0)
        assert result.figures["ties"] == 0
        for row, pair in zip(rows(result), data.pairs):
            for key, text in (("score_more", pair.more), ("score_less", pair.less)):
                terms = causal_terms(folder, text)
                expected = sum(terms) if metric.name == "crows" else float(np.mean(terms))
                assert row[key] == pytest.approx(expected, abs=TOL)
            assert row["score_more"] != pytest.approx(row["score_less"], abs=1e-9)


def test_causal_lm_compares_sentence_log_likelihoods(tmp_path: Path) -> None:
    from fixtures.tiny_bert import build_tiny_gpt2

    folder = build_tiny_gpt2(tmp_path / "gpt2")
    e = embedder(folder)
    data = pair_set([HAND.pairs[0], HAND.pairs[2], HAND.pairs[4]])
    summed, mean = Crows().compute(e, data, seed=0), Crows(likelihood="mean").compute(e, data, seed=0)
    assert summed.convention["model_kind"] == "causal" and summed.convention["likelihood"] == "sum"
    assert mean.convention["likelihood"] == "mean"
    assert "prepended" in summed.convention["causal_start"]
    for row_sum, row_mean, pair in zip(rows(summed), rows(mean), data.pairs):
        for key, text in (("score_more", pair.more), ("score_less", pair.less)):
            terms = causal_terms(folder, text)
            assert row_sum[key] == pytest.approx(sum(terms), abs=TOL)
            assert row_mean[key] == pytest.approx(np.mean(terms), abs=TOL)
    with pytest.raises(BiasError) as err:
        StereoSetScore().compute(e, data, seed=0)
    assert "crows, aul" in (err.value.hint or "")


# -- validity on the planted masked LM ------------------------------------------------------------

FRAMES = ("the {t} is {a} .", "i think the {t} is {a} .", "a {t} feels {a} .", "the {t} brings {a} .")


def planted_pairs() -> PairSet:
    """Pairs that differ only in the target: `more` pairs a flower with a pleasant word or an insect
    with an unpleasant one (the planted association), `less` the other target group."""
    from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

    rng = random.Random(3)
    pairs = []
    for i in range(40):
        frame = rng.choice(FRAMES)
        x, y = rng.choice(X_WORDS), rng.choice(Y_WORDS)
        if i % 2:
            b = rng.choice(B_WORDS)
            pairs.append(SentencePair(frame.format(t=y, a=b), frame.format(t=x, a=b), "stereo", "non-social"))
        else:
            a = rng.choice(A_WORDS)
            pairs.append(SentencePair(frame.format(t=x, a=a), frame.format(t=y, a=a), "stereo", "non-social"))
    return pair_set(pairs, "planted-pairs")


@pytest.fixture(scope="module")
def planted(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("planted_mlm")  # built under this module's single torch thread


@pytest.fixture(scope="module")
def control(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("control_mlm")


def test_crows_finds_the_planted_preference(planted: Path, control: Path) -> None:
    data = planted_pairs()
    found = Crows().compute(embedder(planted), data, seed=0)
    assert found.effect_size >= 85.0 and found.p_value < 1e-3
    null = Crows().compute(embedder(control), data, seed=0)
    assert 30.0 <= null.effect_size <= 70.0 and null.p_value > 0.05


def test_aul_and_sss_agree_in_direction(planted: Path, control: Path) -> None:
    data = planted_pairs()
    e = embedder(planted)
    # AUL reads the unmasked sentence, a much weaker signal in this tiny model than the masked scores:
    # it must agree in direction with CrowS and sit above the control model's value.
    planted_aul = Aul().compute(e, data, seed=0).effect_size
    control_aul = Aul().compute(embedder(control), data, seed=0).effect_size
    assert planted_aul > 50.0 and planted_aul > control_aul
    assert StereoSetScore().compute(e, data, seed=0).effect_size > 75.0
    assert 30.0 <= control_aul <= 70.0


def test_english_sample_runs_end_to_end(uncased_dir: Path) -> None:
    from bias.registry.resolve import load_wordset

    data = load_wordset("en/crows-sample")
    result = Crows().compute(embedder(uncased_dir), data, seed=0)
    assert result.ok and result.figures["n"] + len(result.figures["skipped"]) == len(data.pairs)
    rows = result.figures["pairs"]
    biased = sum(r["score_more"] > r["score_less"] for r in rows)
    assert result.effect_size == pytest.approx(100 * biased / len(rows))
    # the shipped pairs through the naive reference (lowercased: the tiny model is uncased)
    ref = Reference(uncased_dir)
    by_index = {r["index"]: r for r in rows}
    for k in sorted(by_index)[:6]:
        pair = data.pairs[k]
        more, less = ref.pll(pair.more.lower(), pair.less.lower())
        assert by_index[k]["score_more"] == pytest.approx(more, abs=TOL) and by_index[k]["score_less"] == pytest.approx(less, abs=TOL)
    assert set(result.figures["by_bias_type"]) <= {p.bias_type for p in data.pairs}
    assert result.to_json()  # every figure is plain JSON


# -- bad input ------------------------------------------------------------------------------------


def test_model_without_mlm_head_is_refused_with_the_metrics_that_work(uncased_dir: Path) -> None:
    e = embedder(uncased_dir, head="none")
    for metric in (Crows(), StereoSetScore(), Aul(), Aula()):
        with pytest.raises(BiasError) as err:
            metric.compute(e, HAND, seed=0)
        assert metric.name in err.value.message and "weat" in (err.value.hint or "")


def test_pairs_without_shared_tokens_are_skipped_and_reported(uncased_dir: Path) -> None:
    e = embedder(uncased_dir)
    data = pair_set([SentencePair("rose", "tulip", "stereo", "gender"), HAND.pairs[0]])
    result = Crows().compute(e, data, seed=0)
    assert result.ok and result.figures["n"] == 1
    assert result.figures["skipped"][0]["reason"] == "the sentences share no token"
    assert any("skipped" in w for w in result.warnings)
    only = Crows().compute(e, pair_set([SentencePair("rose", "tulip", "stereo", "gender")]), seed=0)
    assert only.status == "refused" and "share no token" in only.reason


def test_sentences_longer_than_the_model_are_refused(uncased_dir: Path) -> None:
    long = " ".join(["the man"] * 100) + "."
    data = pair_set([SentencePair(long, long.replace("man", "woman", 1), "stereo", "gender", line=7)])
    with pytest.raises(BiasError) as err:
        Crows().compute(embedder(uncased_dir), data, seed=0)
    assert "line 7" in err.value.message and "limit" in err.value.message


# -- through the command line ----------------------------------------------------------------------


def run_cli(*args: str) -> Any:
    """`bias ARGS` through the script's entry point in this process (fixtures/in_process.py)."""
    from fixtures.in_process import completed

    return completed(*args)


def test_cli_runs_pair_metrics_on_a_crows_csv(uncased_dir: Path, tmp_path: Path) -> None:
    import csv
    import json

    path = tmp_path / "pairs.tsv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter="\t")
        writer.writerow(["sent_more", "sent_less", "stereo_antistereo", "bias_type"])
        for p in HAND.pairs:
            writer.writerow([p.more, p.less, p.direction, "gender" if p.bias_type == "gender" else "age"])
    out = tmp_path / "out"
    proc = run_cli("run", "-m", f"hf:{uncased_dir}", "--pairs", str(path), "--metric", "crows", "--metric", "kls", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["metric"] for r in results) == ["crows", "kls"]
    crows = next(r for r in results if r["metric"] == "crows")
    # Per-pair scores are written to a CSV beside the results, named in the result.
    assert crows["status"] == "ok" and crows["figures"]["pairs"] == f"pairs-pairs-crows-{crows['key'][:8]}.csv"
    assert crows["figures"]["pairs"] in proc.stdout.split("Written to", 1)[1]  # listed with the files written
    import csv

    with open(out / crows["figures"]["pairs"], encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(row["line"]) for row in rows] == [2, 3, 4, 5, 6, 7]
    assert {"more", "less", "score_more", "score_less"} <= set(rows[0])

    bad = tmp_path / "bad.csv"
    bad.write_text("sent_more,sent_less,stereo_antistereo,bias_type\nThe man ran.,The woman ran.,sideways,gender\n", encoding="utf-8")
    proc = run_cli("run", "-m", f"hf:{uncased_dir}", "--pairs", str(bad), "--metric", "crows")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "line 2" in proc.stderr + proc.stdout and "sideways" in proc.stderr + proc.stdout


def test_a_model_without_an_mlm_head_is_refused_naming_the_metrics_that_work(tmp_path):
    """The hf embedder type could give masked-LM scores, so the run starts; the loaded folder has no
    head, so the experiment is refused with the metrics that would work, and the rest of the batch runs."""
    from fixtures.tiny_bert import build_tiny_encoder_only

    folder = build_tiny_encoder_only(tmp_path / "encoder")
    proc = run_cli("run", "-m", f"hf:{folder}", "--pairs", "en/crows-sample", "--metric", "crows", "--json")
    assert proc.returncode == 2, proc.stderr
    import json

    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "refused"
    assert "masked-lm" in result["reason"] and "metrics that work with it" in result["reason"]
    assert "seat" in result["reason"] and "crows" not in result["reason"].split("work with it")[1]


def bias_bench_terms(folder: Path, text: str) -> list[float]:
    """bias-bench's causal-LM terms, from its published description: the first token's probability from
    a forward pass on the BOS token alone, tokens 2..n from a pass on the sentence without BOS."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = tokenizer(text)["input_ids"]
    with torch.no_grad():
        first = torch.log_softmax(model(input_ids=torch.tensor([[tokenizer.bos_token_id]])).logits[0, 0].double(), -1)[ids[0]].item()
        rest = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    return [first] + [rest[i - 1, ids[i]].item() for i in range(1, len(ids))]


def test_bias_bench_causal_convention(tmp_path: Path) -> None:
    """`causal_start = bos-first-token` with `likelihood = mean`: each sentence scores the per-token mean
    of bias-bench's terms (a log2 mean orders pairs the same way), and the verdict follows it."""
    from fixtures.tiny_bert import build_tiny_gpt2

    folder = build_tiny_gpt2(tmp_path / "gpt2")
    e = embedder(folder)
    data = pair_set([HAND.pairs[0], HAND.pairs[2], HAND.pairs[4], SentencePair("He likes the doctor.", "She likes the doctor.", "stereo", "gender")])
    result = Crows(causal_start="bos-first-token", likelihood="mean").compute(e, data, seed=0)
    default = Crows(likelihood="mean").compute(e, data, seed=0)
    assert "bias-bench" in result.convention["causal_context"] and "lm-evaluation-harness" in default.convention["causal_context"]
    biased = 0
    differs = False
    for row, row_default, pair in zip(rows(result), rows(default), data.pairs):
        more, less = (float(np.mean(bias_bench_terms(folder, t))) for t in (pair.more, pair.less))
        assert row["score_more"] == pytest.approx(more, abs=TOL) and row["score_less"] == pytest.approx(less, abs=TOL)
        biased += more > less
        differs |= abs(row_default["score_more"] - more) > 1e-6
    assert result.effect_size == pytest.approx(100 * biased / len(data.pairs))
    assert differs  # the two conventions are not the same numbers


def bias_bench_masked(ref: Reference, more: str, less: str) -> tuple[float, float]:
    """bias-bench's masked-LM CrowS score, from its published method: the positions difflib does not
    match between the two token-id sequences (special tokens included in the matching), each masked
    in turn, the mean of their log-probabilities, rounded to 3 decimals."""
    a, b = ref.ids(more), ref.ids(less)
    ops = difflib.SequenceMatcher(None, a, b).get_opcodes()
    da = [i for op in ops if op[0] != "equal" for i in range(op[1], op[2])]
    db = [j for op in ops if op[0] != "equal" for j in range(op[3], op[4])]
    return (round(float(np.mean([ref.log_prob(a, [i], i) for i in da])), 3),
            round(float(np.mean([ref.log_prob(b, [j], j) for j in db])), 3))


def test_bias_bench_masked_score_follows_bias_bench(uncased_dir: Path) -> None:
    ref = Reference(uncased_dir)
    result = Crows(masked_score="bias-bench").compute(embedder(uncased_dir), HAND, seed=0)
    got = rows(result)
    # pair 2 ("The man is here." / "The good man is here.") has no differing token on one side: skipped, as in bias-bench
    assert [r["index"] for r in got] == [0, 1, 3, 4, 5]
    verdicts = []
    for row in got:
        pair = HAND.pairs[row["index"]]
        more, less = bias_bench_masked(ref, pair.more.lower(), pair.less.lower())
        # rows keep the unrounded scores; the verdict compares them rounded
        assert (round(row["score_more"], 3), round(row["score_less"], 3)) == (more, less)
        verdicts.append(more > less)
    assert [r["biased"] for r in got] == verdicts
    assert result.effect_size == pytest.approx(100.0 * sum(verdicts) / len(verdicts))
    assert result.convention["masked_score"] == "bias-bench" and result.convention["rounded_to"] == 3
    default = rows(Crows().compute(embedder(uncased_dir), HAND, seed=0))
    assert any(abs(d["score_more"] - g["score_more"]) > 0.01 for d, g in zip([default[i] for i in (0, 1, 3, 4, 5)], got))
