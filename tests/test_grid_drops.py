"""A grid drops the combinations that cannot work, each with its reason, and runs the rest: `cls`
pooling at word level, `cls` pooling of static vectors; SEAT on static vectors pools their mean."""

from __future__ import annotations

from bias.engine.experiments import ModelConfig, expand
from bias.engine.planning import plan
from bias.core.association.contexts import resolve_pooling


def test_grid_of_levels_and_poolings_drops_what_does_not_fit():
    experiments = expand(
        [ModelConfig("word2vec:vectors.bin"), ModelConfig("hf:some/bert")], ["en/weat6"], [("seat", {})], [0],
        {"level": ["sentence", "word"], "pooling": ["cls", "mean"]},
    )
    planned = plan(experiments)
    kept = {(e.experiment.model.spec, e.experiment.params["level"], e.experiment.params["pooling"]) for e in planned.runnable}
    assert kept == {
        ("word2vec:vectors.bin", "sentence", "mean"), ("word2vec:vectors.bin", "word", "mean"),
        ("hf:some/bert", "sentence", "cls"), ("hf:some/bert", "sentence", "mean"), ("hf:some/bert", "word", "mean"),
    }
    reasons = {(s.model, s.params.get("level"), s.params.get("pooling")): s.reason for s in planned.skipped}
    assert set(reasons) == {("word2vec:vectors.bin", "word", "cls"), ("hf:some/bert", "word", "cls"), ("word2vec:vectors.bin", "sentence", "cls")}
    assert "does not fit level word" in reasons[("hf:some/bert", "word", "cls")]
    assert "[CLS]" in reasons[("word2vec:vectors.bin", "sentence", "cls")]


def test_seat_on_static_vectors_pools_the_mean_by_default(planted_files):
    from bias.registry import build_embedder

    embedder = build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    assert resolve_pooling(None, "sentence", embedder) == "mean"
    assert resolve_pooling(None, "word", embedder) == "target-mean"
