"""Secondary inputs a metric asks for (`Metric.inputs`): resolved by the planner before the run, word
sets loaded and kind-checked, models built before and loaded once per run, and handed to `compute`.

The metric here is a third-party plugin installed for the test (a dist-info on sys.path), so the
planner finds it the way it finds any metric; it reports what it was given in its result.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from bias import registry
from bias.core.errors import USAGE, BiasError
from bias.core.interfaces import MODEL_INPUT, InputRequest, ResolvedModel
from bias.core.model import OK
from bias.engine import inputs as engine_inputs
from bias.engine import planning, runner
from bias.engine.experiments import Experiment, ModelConfig
from bias.engine.inputs import InputModels, ModelInput, model_input, recorded_source
from test_registry import make_distribution, run_bias

WORDS = {
    "X": ["rose", "tulip", "daisy", "lily"],
    "Y": ["ant", "wasp", "beetle", "moth"],
    "A": ["joy", "love", "peace", "happy"],
    "B": ["pain", "hatred", "war", "ugly"],
}

INPUTS_PLUGIN = '''
from typing import ClassVar

import attrs

from bias.core.interfaces import MODEL_INPUT, WORDSET_INPUT, Capability, InputRequest, Metric
from bias.core.model import ASSOCIATION
from bias.core.params import param


@attrs.define
class NeedsInputs(Metric):
    """Asks for a word set and a model beside its data, and records what it received."""

    name: ClassVar[str] = "needs-inputs"
    summary: ClassVar[str] = "Records the secondary inputs it was given (test plugin)."
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = ASSOCIATION

    extra: str = param("en/seat-templates", "word set asked for beside the data")
    extra_kind: str = param("templates", "the kind it must be")
    original: str = param("", "model asked for; empty: the original of the model measured")

    def inputs(self, data):
        return {
            "extra": InputRequest(WORDSET_INPUT, self.extra, self.extra_kind, "Give another set with --param extra=NAME."),
            "original": InputRequest(MODEL_INPUT, self.original or None, hint="Give the original with --param original=SPEC."),
        }

    def compute(self, embedder, data, *, seed=None, inputs):
        original = inputs["original"]
        vector = original.embedder.word_vectors(["rose"]).as_dict()["rose"]
        figures = {
            "extra": inputs["extra"].name,
            "extra_kind": inputs["extra"].meta.kind,
            "original": original.embedder.spec,
            "how": original.how,
            "is_measured": original.embedder is embedder,
        }
        return self.make_result(embedder.spec, data, seed, effect_size=float(vector[0]), figures=figures)
'''


def write_vectors(path: Path, first: float) -> Path:
    """A word2vec text file whose vector of "rose" starts with `first`, so a result shows which model
    it was computed from."""
    words = [w for ws in WORDS.values() for w in ws]
    rng = np.random.default_rng(0)
    rows = []
    for word in words:
        values = rng.normal(size=4)
        if word == "rose":
            values[0] = first
        rows.append(word + " " + " ".join(f"{v:.5f}" for v in values))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{len(words)} 4\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The test metric installed, and a word set for it; entry points rescanned before and after."""
    from bias.registry import entry_points

    module = tmp_path / "bias_needs_inputs.py"
    module.write_text(INPUTS_PLUGIN, encoding="utf-8")
    site = make_distribution(tmp_path / "site", "bias-needs-inputs", {"bias.metrics": {"needs-inputs": "bias_needs_inputs:NeedsInputs"}}, module)
    monkeypatch.syspath_prepend(str(site))
    entry_points.refresh()
    wordset = tmp_path / "flowers.toml"
    wordset.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "test"\nlicence = "CC0-1.0"\n'
        + "".join(f"[sets.{k}]\nwords = {ws!r}\n".replace("'", '"') for k, ws in WORDS.items()),
        encoding="utf-8",
    )
    yield {"site": site, "wordset": str(wordset)}
    entry_points.refresh()


@pytest.fixture
def loads(monkeypatch):
    """How many times each word2vec file was read (load() called on a model not yet loaded; the
    embedder calls load() itself before each lookup, which reads nothing the second time)."""
    cls = registry.get("embedder", "word2vec")
    real = cls.load
    counts: Counter[str] = Counter()

    def counting(self):
        if self._kv is None:
            counts[Path(self.location).name] += 1
        return real(self)

    monkeypatch.setattr(cls, "load", counting)
    return counts


def experiments(model: str, wordset: str, params: dict, seeds=(0, 1, 2)) -> list[Experiment]:
    return [Experiment(ModelConfig(model), wordset, "needs-inputs", dict(params), seed) for seed in seeds]


def test_inputs_are_resolved_once_and_the_model_asked_for_is_loaded_once(plugin, tmp_path, loads):
    measured = write_vectors(tmp_path / "measured.txt", 1.0)
    other = write_vectors(tmp_path / "other.txt", 7.0)
    plan = planning.plan(experiments(f"word2vec:{measured}", plugin["wordset"], {"original": f"word2vec:{other}"}))
    assert sum(loads.values()) == 0  # planning loads no model
    assert len({id(p.inputs["extra"]) for p in plan.runnable}) == 1  # the word set is loaded once
    results = list(runner.run(plan.runnable, input_models=plan.input_models))
    assert [r.status for r in results] == [OK, OK, OK]
    assert [r.effect_size for r in results] == [7.0, 7.0, 7.0]
    assert results[0].figures == {
        "extra": "en/seat-templates", "extra_kind": "templates", "original": f"word2vec:{other}", "how": f"word2vec:{other}",
        "is_measured": False,
    }
    assert loads == Counter({"measured.txt": 1, "other.txt": 1})


def test_without_a_name_the_original_is_the_model_itself_or_the_source_in_debias_json(plugin, tmp_path, loads):
    plain = write_vectors(tmp_path / "plain.txt", 1.0)
    results = list(runner.run(planning.plan(experiments(f"word2vec:{plain}", plugin["wordset"], {}, seeds=(0,))).runnable))
    assert results[0].figures["how"] == "same" and results[0].figures["is_measured"] is True
    assert results[0].effect_size == 1.0

    folder = tmp_path / "debiased"
    debiased = write_vectors(folder / "vectors.txt", 2.0)
    write_vectors(folder / "orig.txt", 5.0)
    (folder / "debias.json").write_text(json.dumps({"source_model": "word2vec:orig.txt"}), encoding="utf-8")
    plan = planning.plan(experiments(f"word2vec:{debiased}", plugin["wordset"], {}, seeds=(0, 1)))
    results = list(runner.run(plan.runnable, input_models=plan.input_models))
    assert [r.effect_size for r in results] == [5.0, 5.0]
    assert results[0].figures["how"] == "source_model of debias.json (word2vec:orig.txt)"
    assert results[0].figures["original"] == f"word2vec:{folder / 'orig.txt'}"
    assert loads["orig.txt"] == 1


def test_a_missing_word_set_stops_the_plan_before_any_model_loads(plugin, tmp_path, loads):
    measured = write_vectors(tmp_path / "measured.txt", 1.0)
    with pytest.raises(BiasError) as missing:
        planning.plan(experiments(f"word2vec:{measured}", plugin["wordset"], {"extra": "xx/no-such-set"}))
    assert missing.value.exit_code == USAGE
    assert "needs-inputs" in missing.value.message and "xx/no-such-set" in missing.value.message
    assert missing.value.hint == "Give another set with --param extra=NAME."
    with pytest.raises(BiasError) as wrong:
        planning.plan(experiments(f"word2vec:{measured}", plugin["wordset"], {"extra": "en/weat1"}))
    assert wrong.value.message == "Metric 'needs-inputs' needs a word set of kind templates, and 'en/weat1' is of kind association."
    assert wrong.value.exit_code == USAGE
    assert sum(loads.values()) == 0


def test_bias_run_refuses_a_missing_input_with_exit_2_before_touching_the_model(plugin, tmp_path):
    """The measured model's file does not exist: had any model been checked or loaded first, the
    error would be about that file."""
    out = tmp_path / "out"
    proc = run_bias(
        ["run", "--model", f"word2vec:{tmp_path / 'absent.txt'}", "--wordset", plugin["wordset"], "--metric", "needs-inputs",
         "--param", "extra=xx/no-such-set", "--out", str(out)],
        plugin["site"],
    )
    assert proc.returncode == 2, proc.stderr
    assert "xx/no-such-set" in proc.stderr and "--param extra=NAME" in proc.stderr
    assert "absent.txt" not in proc.stderr
    assert not (out / "results.jsonl").exists()


def test_model_input_follows_the_name_the_debias_option_and_debias_json(tmp_path):
    request = InputRequest(MODEL_INPUT, None, hint="Name it.")
    assert model_input(InputRequest(MODEL_INPUT, "word2vec:b.bin"), ModelConfig("word2vec:a.bin")) == ModelInput("word2vec:b.bin", "word2vec:b.bin")
    # Debiased in this run: its source is known once it is built.
    assert model_input(request, ModelConfig("word2vec:a.bin", {"debias": "hard"})) == ModelInput(None, "same", original=True)
    assert model_input(request, ModelConfig(f"word2vec:{tmp_path / 'a.bin'}")) == ModelInput(None, "same", original=True)
    (tmp_path / "debias.json").write_text(json.dumps({"source_model": "word2vec:pkg:some_module/vectors.bin"}), encoding="utf-8")
    assert model_input(request, ModelConfig(f"word2vec:{tmp_path / 'a.bin'}")) == ModelInput(
        "word2vec:pkg:some_module/vectors.bin", "source_model of debias.json (word2vec:pkg:some_module/vectors.bin)", original=True
    )
    # A folder model keeps its record inside the folder.
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "debias.json").write_text(json.dumps({"source_model": "hf:/abs/original"}), encoding="utf-8")
    assert model_input(request, ModelConfig(f"hf:{tmp_path / 'model'}")).spec == "hf:/abs/original"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "cannot read the record of the debiasing"),
        (json.dumps({"method": "hard"}), "no 'source_model' spec in the record of the debiasing"),
        (json.dumps({"source_model": "vectors.bin"}), "no 'source_model' spec in the record of the debiasing"),
    ],
)
def test_a_damaged_debias_record_is_an_error_with_the_requests_hint(tmp_path, text, message):
    record = tmp_path / "debias.json"
    record.write_text(text, encoding="utf-8")
    with pytest.raises(BiasError, match=message) as err:
        recorded_source(record, "Give the original with --param original=SPEC.")
    assert err.value.hint == "Give the original with --param original=SPEC."


def test_resolve_prefers_the_source_of_a_model_debiased_in_this_run(tmp_path, loads):
    source = registry.build_embedder(f"word2vec:{write_vectors(tmp_path / 'source.txt', 3.0)}")

    class Debiased:  # what matters is the `source` attribute a debiased model has
        spec = "word2vec:debiased"

    measured = Debiased()
    measured.source = source  # type: ignore[attr-defined]
    models = InputModels()
    found = models.resolve({"original": ModelInput(None, "same", original=True), "words": "a word set"}, measured)
    assert found == {"original": ResolvedModel(source, f"the source of the debiased model ({source.spec})"), "words": "a word set"}
    # A model named by the metric is taken as named, even for a debiased model.
    other = write_vectors(tmp_path / "other.txt", 4.0)
    named = models.resolve({"original": ModelInput(f"word2vec:{other}", "named")}, measured)["original"]
    again = models.resolve({"original": ModelInput(f"word2vec:{other}", "named")}, measured)["original"]
    assert named.how == "named" and named.embedder is again.embedder
    assert loads == Counter({"other.txt": 1})


def test_an_unknown_input_kind_is_an_error_of_the_metric():
    with pytest.raises(BiasError, match="unknown kind 'corpus'"):
        engine_inputs.resolve_requests({"x": InputRequest("corpus", "c.txt")}, "m", ModelConfig("word2vec:a.bin"), {}, InputModels())
