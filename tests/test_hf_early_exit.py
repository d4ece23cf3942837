"""A hidden state below the last is taken from a forward pass that stops at its layer: it must be the
very tensor the whole pass gives (BERT, and GPT-2 whose last state alone has the final layer norm),
the layers above must not run, and a model whose stop does not give that tensor is run whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch


def loaded_model(folder: Path) -> Any:
    from bias.core.models.hf.loading import load

    return load(str(folder), device="cpu", head="auto", dtype="float32", max_length=None, trust_remote_code=False)


def inputs_of(loaded: Any) -> dict[str, Any]:
    from bias.core.models.hf.batching import right_pad

    texts = ["the doctor said hello", "a nurse"]
    return right_pad([{"input_ids": loaded.tokenizer(t)["input_ids"]} for t in texts], loaded.tokenizer, loaded.device)


def runs_per_block(loaded: Any) -> tuple[list[int], list[Any]]:
    from bias.core.models.hf.early_exit import _blocks

    counts = [0] * len(_blocks(loaded.encoder))
    hooks = [
        block.register_forward_hook(lambda module, args, output, i=i: counts.__setitem__(i, counts[i] + 1))
        for i, block in enumerate(_blocks(loaded.encoder))
    ]
    return counts, hooks


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_gpt2_dir"])
def test_a_layer_below_the_last_is_the_whole_pass_state_without_the_layers_above(fixture: str, request: pytest.FixtureRequest) -> None:
    from bias.core.models.hf import early_exit
    from bias.core.models.hf.vectors import hidden_states

    loaded = loaded_model(request.getfixturevalue(fixture))
    inputs = inputs_of(loaded)
    with torch.inference_mode():
        whole = loaded.encoder(**inputs, output_hidden_states=True, return_dict=True).hidden_states
        layers = len(whole) - 1
        for layer in [*range(-len(whole), len(whole))] * 2:  # the second round after each check
            index = layer % len(whole)
            checked = early_exit._CHECKED.get(loaded.encoder, {}).get(index)  # before this call
            counts, hooks = runs_per_block(loaded)
            got = hidden_states(loaded, inputs, layer)
            for hook in hooks:
                hook.remove()
            assert torch.equal(got, whole[layer]), (fixture, layer)
            if 1 <= index < layers and checked:
                assert counts[index:] == [0] * (layers - index), (layer, counts)  # nothing above ran
                assert counts[:index] == [1] * index, (layer, counts)
            else:  # a check, or a layer never stopped at: the whole pass (twice for a check)
                assert min(counts) >= 1, (layer, counts)
    assert all(early_exit._CHECKED[loaded.encoder].values()) and set(early_exit._CHECKED[loaded.encoder]) == set(range(1, layers))


def test_a_stop_that_differs_from_the_whole_pass_is_not_used_again(tiny_gpt2_dir: Path) -> None:
    from bias.core.models.hf import early_exit

    loaded = loaded_model(tiny_gpt2_dir)
    inputs = inputs_of(loaded)

    def whole(given: dict[str, Any]) -> Any:
        states = loaded.encoder(**given, output_hidden_states=True, return_dict=True).hidden_states
        return tuple(s + 1.0 for s in states)  # a model whose stop would not be its state

    with torch.inference_mode():
        first = early_exit.stopped_state(loaded, inputs, 2, whole)
        assert torch.equal(first, whole(inputs)[2])  # the checked call answers with the whole pass
        assert early_exit._CHECKED[loaded.encoder][2] is False
        assert early_exit.stopped_state(loaded, inputs, 2, whole) is None  # run whole from then on
        assert early_exit.stopped_state(loaded, inputs, -1, whole) is None  # the last: never stopped
        assert early_exit.stopped_state(loaded, inputs, 0, whole) is None  # the embeddings
