"""`[[experiments]]` lists, `preset = "bias-framework"` and `duplicates` in experiment files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bias.core.errors import BiasError
from bias.engine.experiment_file import load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_listed_experiments_each_run_once_with_their_own_options(tmp_path: Path) -> None:
    path = _write(tmp_path, '''
seed = 3
[[experiments]]
wordset = "en/weat1"
metric = "weat"
model = "word2vec:a.bin"

[[experiments]]
wordset = "en/weat2"
metric = "seat"
model = { spec = "hf:bert", word_pooling = "first" }
params = { pooling = "mean" }
''')
    experiments, settings = load_config(path)
    assert [(e.wordset, e.metric, e.model.spec, e.model.options, e.params, e.seed) for e in experiments] == [
        ("en/weat1", "weat", f"word2vec:{tmp_path / 'a.bin'}", {}, {}, 3),  # a model file is read against the file's folder
        ("en/weat2", "seat", "hf:bert", {"word_pooling": "first"}, {"pooling": "mean"}, 3),
    ]
    assert "notes" not in settings


def test_the_preset_sets_only_what_each_metric_declares(tmp_path: Path) -> None:
    path = _write(tmp_path, '''
preset = "bias-framework"
[[experiments]]
wordset = "en/weat1"
metric = "weat"
model = "word2vec:a.bin"
[[experiments]]
wordset = "en/crows-sample"
metric = "crows"
model = "hf:bert"
[[experiments]]
wordset = "x.jsonl"
metric = "lpbs"
model = "hf:bert"
[[experiments]]
wordset = "en/weat1"
metric = "weat"
model = "word2vec:a.bin"
params = { ddof = 1 }
''')
    experiments, settings = load_config(path)
    lpbs = {"ddof": 0, "duplicates": "keep", "pairing": "i-th", "target_number": "singular", "multi_token": "one-mask"}
    assert [e.params for e in experiments] == [{"ddof": 0, "duplicates": "keep"}, {"lowercase": "yes"}, lpbs, {"ddof": 1, "duplicates": "keep"}]
    assert "can exceed 1" in settings["notes"][0]


def test_duplicates_setting_in_a_grid_file(tmp_path: Path) -> None:
    path = _write(tmp_path, 'duplicates = "keep"\nmodels = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["weat", "rnd"]\n')
    experiments, _ = load_config(path)
    assert {e.metric: e.params for e in experiments} == {"weat": {"duplicates": "keep"}, "rnd": {}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('preset = "wefee"\nmodels = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["weat"]\n', "preset must be one of bias-framework, bias-bench, sent-bias, wefe, not 'wefee'"),
        ('duplicates = "twice"\nmodels = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["weat"]\n', "duplicates must be one of drop, keep"),
        ('[[experiments]]\nwordset = "en/weat1"\nmetric = "weat"\n', r"experiments\[0\]\.model needs a spec"),
        ('models = ["word2vec:a.bin"]\n[[experiments]]\nwordset = "en/weat1"\nmetric = "weat"\nmodel = "x:y"\n', "not both"),
        ('[[experiments]]\nwordset = "en/weat1"\nmetric = "weat"\nmodel = "x:y"\nmetrik = 1\n', r"unknown field\(s\) metrik in experiments\[0\]"),
    ],
)
def test_mistakes_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(BiasError, match=message):
        load_config(_write(tmp_path, text))


def test_weat_with_duplicates_kept_counts_each_copy(planted_files) -> None:
    """The same test with a repeated attribute: kept, the copy weighs in the effect size; dropped,
    the result equals the test without the repeat."""
    from bias.core.model import WordList
    from bias.registry.resolve import build_embedder, build_metric
    from fixtures.planted import association_test

    test = association_test()
    a = test.A
    repeated = WordList(a.label, a.words, a.grammar, (*a.words, a.words[0], a.words[0]))
    doubled = __import__("attrs").evolve(test, A=repeated)
    embedder = build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    drop = build_metric("weat", bootstrap=0).compute(embedder, doubled, seed=0)
    keep = build_metric("weat", bootstrap=0, duplicates="keep").compute(embedder, doubled, seed=0)
    plain = build_metric("weat", bootstrap=0).compute(embedder, test, seed=0)
    assert drop.effect_size == pytest.approx(plain.effect_size)
    assert keep.sizes["A"] == len(a.words) + 2 and drop.sizes["A"] == len(a.words)
    assert keep.effect_size != pytest.approx(plain.effect_size)
    assert any("repeated stimuli kept" in w for w in keep.warnings)
    assert any("repeated stimuli dropped" in w for w in drop.warnings)


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        ("bias-bench", {"crows": {"causal_start": "bos-first-token", "likelihood": "mean", "masked_score": "bias-bench"}, "weat": {}, "seat": {}, "rnd": {}}),
        ("sent-bias", {
            "crows": {},
            "weat": {"ddof": 1, "alternative": "greater", "ties": "counted", "exact_limit": 100_000, "permutations": 99_999},
            "seat": {"ddof": 1, "alternative": "greater", "ties": "counted", "exact_limit": 100_000, "permutations": 99_999},
            "rnd": {},
        }),
        ("wefe", {"crows": {}, "weat": {"ddof": 0}, "seat": {"ddof": 0}, "rnd": {"normalise": False}}),
        ("bias-framework", {
            "crows": {"lowercase": "yes"}, "weat": {"ddof": 0, "duplicates": "keep"},
            "seat": {"ddof": 0, "duplicates": "keep", "static_sentence": "word-mean"}, "rnd": {},
        }),
    ],
)
def test_each_preset_gives_each_metric_what_it_declares(tmp_path: Path, preset: str, expected: dict) -> None:
    path = _write(tmp_path, f'preset = "{preset}"\nmodels = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["crows", "weat", "seat", "rnd"]\n')
    experiments, settings = load_config(path)
    assert {e.metric: e.params for e in experiments} == expected
    assert {e.preset for e in experiments} == {preset}
    assert settings["notes"][0].startswith(f"Preset {preset}:")


def test_a_preset_changes_the_experiment_key_and_no_preset_keeps_it(tmp_path: Path) -> None:
    """Results of a run without a preset keep their keys (a resumed run finds them)."""
    plain, _ = load_config(_write(tmp_path, 'models = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["rnd"]\n'))
    preset, _ = load_config(_write(tmp_path, 'preset = "bias-bench"\nmodels = ["word2vec:a.bin"]\nwordsets = ["en/weat1"]\nmetrics = ["rnd"]\n'))
    assert plain[0].params == preset[0].params == {}
    assert "preset" not in plain[0].canonical() and plain[0].key != preset[0].key


@pytest.mark.parametrize(
    "own, named",
    [
        ("", None),
        ('[params]\nmasked_score = "token-space"\n', "masked_score"),
        ('[grid]\nlikelihood = ["mean", "sum"]\n', "likelihood"),
        ('[params]\npermutations = 10\n', None),  # not one of the preset's parameters
    ],
)
def test_the_preset_note_says_which_of_its_parameters_the_run_sets_itself(
    tmp_path: Path, own: str, named: str | None
) -> None:
    path = _write(
        tmp_path,
        'preset = "bias-bench"\nmodels = ["hf:bert"]\nwordsets = ["en/stereoset-sample"]\n'
        'metrics = ["stereoset"]\n' + own,
    )
    _, settings = load_config(path)
    (note,) = settings["notes"]
    assert note.startswith("Preset bias-bench:")
    if named is None:
        assert "itself" not in note
    else:
        assert f"This run sets {named} itself" in note
