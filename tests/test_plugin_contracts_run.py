"""The contract checks in run mode: every first-party plugin that a tiny model of this session can run
passes them, and each planted defect is caught by the check named for it, with a message naming the
plugin and what to fix."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

from bias import testing as bt
from bias.api import (
    AssociationMetric,
    Capability,
    Cost,
    Debiaser,
    Embedder,
    Measured,
    SetVectors,
    ValueKind,
    WordVectors,
    association_scores,
    param,
    permutation_test,
)
from bias.engine.experiments import ModelConfig
from bias.engine.inputs import InputModels, resolve_requests
from bias.registry import entry_points as eps
from bias.registry.resolve import build_embedder, load_wordset

# --- every first-party plugin in run mode ---------------------------------------------------------

# Each metric with the model kind and word set it runs on here: tiny models built in the session.
ON_VECTORS = ("weat", "rnd", "rnsb", "mac", "ect", "ripa")
ON_PAIRS = ("crows", "aul", "aula", "sss", "kls", "jss", "jss-mixture")
RUN_METRICS = {
    **{name: ("word2vec", "planted") for name in ON_VECTORS},
    "analogy": ("word2vec", "en/analogies"),
    "clustering": ("gender", "en/debias-gender"),
    "direct-bias": ("gender", "en/debias-gender"),
    **{name: ("bert", "en/crows-sample") for name in ON_PAIRS},
    "lpbs": ("bert", "en/lpbs-gender"),
    "seat": ("bert", "planted"),
    "bbq": ("gpt2", "bbq-planted"),  # questions short enough for the tiny GPT-2's 64 positions
}
# Parameters that suit the tiny models (the clustering test's default k = 500 needs a real vocabulary).
PARAMS = {"clustering": {"k": 10}}
# What runs on data only a test module builds (their own test files run them through check_metric).
ELSEWHERE = {
    "ceat": "test_ceat.py",
    "discrimination": "test_discrimination.py",
    "fise": "test_fise.py",
    "probe": "test_probe.py",
    "retrieval": "test_retrieval.py",
    "stereoset": "test_stereoset.py",
    "word-similarity": "test_word_similarity.py",
}
# Embedders with the model file they load here, and the words they are asked for.
RUN_EMBEDDERS = {
    "word2vec": "word2vec_bin",
    "glove": "glove",
    "vec": "vec",
    "kv": "kv",
    "fasttext": "fasttext_bin",
    "hf": "bert",
}
EMBEDDER_PARAMS = {
    "kv": {"allow_pickle": True},
    "hf": {"cache": False},
}  # the planted .kv is this session's own pickle


def test_every_first_party_metric_is_run_here_or_in_its_own_tests():
    assert set(RUN_METRICS) | set(ELSEWHERE) == {i.name for i in eps.entry_points("metrics")}


@pytest.fixture(scope="module")
def models(planted_files, planted_gender, tiny_bert_dir, tiny_gpt2_dir) -> dict[str, Any]:
    return {
        "word2vec": build_embedder(f"word2vec:{planted_files.word2vec_bin}"),
        "gender": build_embedder(f"word2vec:{planted_gender}"),
        "bert": build_embedder(f"hf:{tiny_bert_dir}[cache=false]"),
        "gpt2": build_embedder(f"hf:{tiny_gpt2_dir}[cache=false]"),
    }


@pytest.fixture(scope="module")
def bbq_questions(tmp_path_factory) -> Any:
    from test_bbq import planted_items, write_questions

    return load_wordset(
        str(write_questions(tmp_path_factory.mktemp("bbq") / "questions.toml", planted_items()))
    )


def _small(data: Any) -> Any:
    """A package's sample cut to a few items: each run check computes the metric several times."""
    if hasattr(data, "pairs"):
        return attrs.evolve(data, pairs=data.pairs[:6])
    if hasattr(data, "templates") and hasattr(
        data, "X"
    ):  # an LPBS test: two templates, four words a set
        cut = {k: attrs.evolve(w, words=w.words[:4]) for k, w in data.sets().items()}
        return attrs.evolve(data, templates=data.templates[:2], **cut)
    return data


def _context(name: str, models: dict[str, Any], planted_test: Any, bbq: Any) -> dict[str, Any]:
    model, data_name = RUN_METRICS[name]
    data = {"planted": planted_test, "bbq-planted": bbq}.get(data_name) or _small(
        load_wordset(data_name)
    )
    embedder = models[model]
    cls = eps.load("metrics", name)
    requests = cls(**PARAMS.get(name, {})).inputs(data)
    inputs = {}
    if requests:
        found = InputModels()
        resolved = resolve_requests(requests, name, ModelConfig(embedder.spec), {}, found)
        inputs = found.resolve(resolved, embedder)
    return {
        "embedder": embedder,
        "data": data,
        "inputs": inputs,
        "seed": 3,
        "params": PARAMS.get(name, {}),
    }


@bt.parametrize_with_checks([eps.load("metrics", name) for name in RUN_METRICS], run=True)
def test_first_party_metrics_pass_their_run_checks(
    check, models, planted_test, bbq_questions, one_torch_thread
):
    assert check(**_context(check.plugin.name, models, planted_test, bbq_questions)) >= 1


@bt.parametrize_with_checks([eps.load("embedders", name) for name in RUN_EMBEDDERS], run=True)
def test_first_party_embedders_pass_their_run_checks(
    check, planted_files, tiny_bert_dir, one_torch_thread
):
    field = RUN_EMBEDDERS[check.plugin.name]
    location = str(tiny_bert_dir) if field == "bert" else str(getattr(planted_files, field))
    params = EMBEDDER_PARAMS.get(check.plugin.name, {})
    assert (
        check(
            location=location,
            params=params,
            words=("rose", "tulip"),
            texts=("A rose.", "A tulip here."),
        )
        >= 1
    )


@bt.parametrize_with_checks(
    [eps.load("debiasers", i.name) for i in eps.entry_points("debiasers")], run=True
)
def test_first_party_debiasers_pass_their_run_checks(check, planted_gender):
    gender = build_embedder(f"word2vec:{planted_gender}")
    assert check(embedder=gender, lists=load_wordset("en/debias-gender")) >= 1


# --- planted defects ------------------------------------------------------------------------------


@attrs.define
class Good(AssociationMetric):
    name: ClassVar[str] = "good"
    summary: ClassVar[str] = "mean association gap"
    value: ClassVar[ValueKind] = ValueKind("gap")
    scale: float = param(1.0, "multiply the gap by this")

    def measure(self, sets: SetVectors, *, seed: int | None) -> Measured:
        m = sets.matrices
        sx, sy = (
            association_scores(m["X"], m["A"], m["B"]),
            association_scores(m["Y"], m["A"], m["B"]),
        )
        return Measured(effect_size=float(self.scale * (sx.mean() - sy.mean())))


def defect(base: type = Good, **body: Any) -> type:
    """A subclass of `base` with `body` (class attributes, methods, fields under "fields")."""
    fields = body.pop("fields", {})
    namespace = {
        "__annotations__": {k: v[0] for k, v in fields.items()},
        **{k: v[1] for k, v in fields.items()},
        **body,
    }
    return attrs.define(type(body.get("__qualname__", "Planted"), (base,), namespace))


def _float(self, sets, *, seed):
    return 0.25


def _nan(self, sets, *, seed):
    return Measured(effect_size=float("nan"))


def _p_too_big(self, sets, *, seed):
    return Measured(effect_size=0.1, p_value=1.5, convention={"p_value": "made up"})


def _undescribed_p(self, sets, *, seed):
    return Measured(effect_size=0.1, p_value=0.5)


CALLS: list[int | None] = []


def _unseeded(self, sets, *, seed):
    CALLS.append(seed)
    return Measured(effect_size=float(len(CALLS)))


def _in_place(self, sets, *, seed):
    x = sets.matrices["X"]
    x *= 2.0  # overwrites the caller's matrix
    return Measured(effect_size=float(x.mean()))


def _divides(self, sets, *, seed):
    return Measured(effect_size=1.0 / self.k)


def _raises_in_cost(self, data):
    raise TypeError("len() of unsized object")


def _endless_cost(self, data):
    return Cost(seconds=math.inf)


def _mutates_data(self, embedder, data, *, seed=None):
    object.__setattr__(data.meta, "title", "changed")
    return AssociationMetric.compute(self, embedder, data, seed=seed)


def _seeded(self, sets, *, seed):
    m = sets.matrices
    sx, sy = association_scores(m["X"], m["A"], m["B"]), association_scores(m["Y"], m["A"], m["B"])
    return Measured(
        effect_size=0.1, test=permutation_test(sx, sy, permutations=9, exact_limit=1, seed=seed)
    )


def _strictly_positive(instance, attribute, value):
    if value <= 0:
        raise ValueError("scale must be positive")


@attrs.define
class NeverRead(Good):
    name: ClassVar[str] = "never-read"
    spare: float = param(1.0, "read by nothing")  # its name is written nowhere else in this file


# (defect, planted class, needs a run, the words the message must hold)
PLANTED = [
    (
        "parameter without help",
        defect(fields={"wobble": (float, attrs.field(default=1.0))}),
        False,
        "parameter wobble has no help text",
    ),
    ("empty name", defect(name=""), False, "declares no name"),
    (
        "requires of strings",
        defect(requires=frozenset({"word-vectors"})),
        False,
        "requires must be a frozenset of Capability",
    ),
    (
        "validator raising ValueError",
        defect(fields={"scale": (float, param(1.0, "positive", validator=_strictly_positive))}),
        False,
        "parameter scale = '-1' raised ValueError: scale must be positive instead of a BiasError",
    ),
    (
        "no value declared",
        attrs.define(
            type(
                "Unlabelled",
                (AssociationMetric,),
                {"name": "unlabelled", "summary": "x", "measure": _float},
            )
        ),
        False,
        "declares no value (how reports label its number)",
    ),
    (
        "value of the wrong type",
        defect(value={"label": "gap"}),
        False,
        "value must be a ValueKind, not dict",
    ),
    (
        "data kind typo",
        defect(data_kind="assocation"),
        False,
        "data_kind 'assocation' is not an installed kind",
    ),
    (
        "mutable default",
        defect(fields={"words": (list, param([], "extra words"))}),
        False,
        "parameter words has a mutable default []",
    ),
    ("parameter never used", NeverRead, False, "parameter spare is never read"),
    (
        "state that is not a parameter",
        defect(fields={"_calls": (int, attrs.field(default=0, init=False))}),
        False,
        "params() gives what the class does not take back",
    ),
    ("ignores the seed", defect(measure=_unseeded), True, "seed 3 does not reproduce the result"),
    ("NaN effect size", defect(measure=_nan), True, "effect_size nan is not a finite float"),
    ("p = 1.5", defect(measure=_p_too_big), True, "p_value 1.5 is not a float in [0, 1]"),
    (
        "p not described",
        defect(measure=_undescribed_p),
        True,
        "gives a p-value without saying how it was computed",
    ),
    (
        "cost() gives inf",
        defect(cost=_endless_cost),
        True,
        "cost() is not a finite, non-negative estimate",
    ),
    (
        "cost() raises",
        defect(cost=_raises_in_cost),
        True,
        "cost() raised TypeError: len() of unsized object",
    ),
    (
        "measure returns a float",
        defect(measure=_float),
        True,
        "measure() returned float, not a Measured",
    ),
    (
        "bad value breaking compute",
        defect(measure=_divides, fields={"k": (int, param(1, "divide by this"))}),
        True,
        "parameter k = '0' is accepted, then compute() raises ZeroDivisionError",
    ),
    (
        "overwrites its input vectors",
        defect(measure=_in_place),
        True,
        "measure() overwrote the vectors it was given",
    ),
    (
        "changes the data",
        defect(compute=_mutates_data),
        True,
        "compute() changed the data or inputs it was given",
    ),
]


@pytest.mark.parametrize(("what", "planted", "run", "words"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_metric_defect_is_caught_and_named(
    what, planted, run, words, planted_files, planted_test
):
    data = copy.deepcopy(planted_test)  # a defect may change what it is given
    context = (
        {
            "embedder": build_embedder(f"word2vec:{planted_files.word2vec_bin}"),
            "data": data,
            "seed": 3,
        }
        if run
        else {}
    )
    with pytest.raises(AssertionError) as caught:
        bt.check_metric(planted, **context)
    message = str(caught.value)
    assert words in message, message
    assert message.startswith(f"{planted.__name__} ({planted.name}): "), message
    assert (
        bt.check_metric(defect(measure=_seeded), **context) > 5
    )  # the same shape without the defect passes


def test_a_check_declared_to_fail_is_skipped_and_must_keep_failing(planted_files, planted_test):
    context = {
        "embedder": build_embedder(f"word2vec:{planted_files.word2vec_bin}"),
        "data": planted_test,
    }
    unseeded = defect(measure=_unseeded)
    assert (
        bt.check_metric(
            unseeded,
            **context,
            expected_failed_checks={"check_metric_seed_reproduces": "draws its own"},
        )
        > 5
    )
    with pytest.raises(AssertionError, match="passes, but is declared to fail: known"):
        bt.check_metric(
            Good, **context, expected_failed_checks={"check_metric_seed_reproduces": "known"}
        )


# Embedders, debiasers and importers with a planted defect.


@attrs.define
class Overpromising(Embedder):
    name: ClassVar[str] = "overpromising"
    summary: ClassVar[str] = "word vectors that raise on unknown words"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    location: str = param("-", "where the model is")

    def check(self) -> None:
        pass

    def available(self) -> frozenset[Capability]:
        return frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})

    def word_vectors(self, words):
        raise KeyError(words[-1])


@attrs.define
class Lossy(Overpromising):
    name: ClassVar[str] = "lossy"

    def available(self) -> frozenset[Capability]:
        return self.capabilities

    def word_vectors(self, words):
        return WordVectors(
            words=["the"], vectors=np.array([[np.nan, 1.0]]), lost=[w for w in words if w != "the"]
        )


@attrs.define
class ForgetfulFit(Debiaser):
    name: ClassVar[str] = "forgetful"
    summary: ClassVar[str] = "fit() returns nothing"

    def fit(self, embedder, lists):
        return None

    def transform(self, embedder):
        return embedder


def test_planted_embedder_and_debiaser_defects_are_named(planted_gender):
    with pytest.raises(
        AssertionError,
        match=r"Overpromising \(overpromising\): available\(\) offers more than declared: \[<Capability.CONTEXTUAL",
    ):
        bt.check_embedder(Overpromising, location="-")
    with pytest.raises(
        AssertionError, match=r"Raising \(overpromising\): word_vectors\(\) raised KeyError"
    ):
        bt.check_embedder(
            attrs.define(type("Raising", (Overpromising,), {"available": Lossy.available})),
            location="-",
        )
    with pytest.raises(
        AssertionError, match=r"Lossy \(lossy\): word_vectors\(\) gives a vector that is not finite"
    ):
        bt.check_embedder(Lossy, location="-")
    gender = build_embedder(f"word2vec:{planted_gender}")
    with pytest.raises(
        AssertionError, match=r"ForgetfulFit \(forgetful\): fit\(\) must return the debiaser itself"
    ):
        bt.check_debiaser(ForgetfulFit, embedder=gender, lists=load_wordset("en/debias-gender"))


def test_every_format_reads_a_file_of_its_own_and_refuses_another(tmp_path):
    from fixtures.framework_data import build_datasets

    root = build_datasets(tmp_path / "datasets")
    samples = {
        "weat-txt": root / "en" / "WEAT" / "T2.txt",
        "crows-csv": root / "en" / "CROWS" / "crows_en.csv",
        "lpbs-json": root / "en" / "LPBS" / "LPBS_1.jsonl",
    }
    broken = tmp_path / "broken"
    broken.mkdir()
    for name, path in samples.items():
        cls = eps.load("formats", name)
        garbage = broken / f"garbage{path.suffix}"
        garbage.write_bytes(b"\x00\x01 not a word set \xff\n")
        assert bt.check_format(cls, path=path, broken=garbage) > 5, name


def test_a_format_that_lets_a_broken_file_through_is_named(tmp_path):
    from bias.api import WordSetFormat

    class Trusting(WordSetFormat):
        name: ClassVar[str] = "trusting"
        summary: ClassVar[str] = "reads anything"
        suffixes: ClassVar[tuple[str, ...]] = (".txt",)

        def record(self, path: Any) -> dict[str, Any]:
            return dict(line.split("=", 1) for line in Path(path).read_text().splitlines())

    (tmp_path / "bad.txt").write_text("no equals sign here\n")
    with pytest.raises(
        AssertionError, match=r"Trusting \(trusting\): record\(\) raised ValueError"
    ):
        bt.check_format(Trusting, path=tmp_path / "bad.txt")
