"""A hidden state below the last, without running the layers above it: the encoder stops where the
chosen layer's block returns. A run over several layers of one encoder (the agreement and
robustness examples take layers 1, 3 and 6 of MiniLM) ran every layer for each of them.

Where the layers are is found from the model itself (the one list of modules as long as its number
of layers), and the first stop of each model and layer is checked against the full forward pass:
the state must be equal to the one the full pass gives, element for element, or the model is
always run whole for that layer. Nothing else changes: the layers below run exactly as before.
"""

from __future__ import annotations

import weakref
from typing import Any

_CHECKED: weakref.WeakKeyDictionary[Any, dict[int, bool]] = weakref.WeakKeyDictionary()
# Each encoder's list of layer modules (or None: it cannot stop early), found once, not per batch.
_BLOCKS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


class _Reached(Exception):
    def __init__(self, state: Any) -> None:
        super().__init__("the chosen layer was reached")
        self.state = state


def _blocks(encoder: Any) -> Any | None:
    """The encoder's list of layer modules: the one ModuleList as long as its number of layers."""
    import torch

    config = getattr(encoder, "config", None)
    count = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    if not isinstance(count, int) or count < 2:
        return None
    found = [
        module
        for module in encoder.modules()
        if isinstance(module, torch.nn.ModuleList) and len(module) == count
    ]
    return found[0] if len(found) == 1 else None


def stopped_state(loaded: Any, inputs: dict[str, Any], layer: int, full: Any) -> Any | None:
    """The hidden state `layer` (1 to the last but one, or negative) from a forward pass that stops
    there; None where it cannot stop early (then the caller runs the whole encoder). `full(inputs)`
    gives the whole pass's hidden states, used once per model and layer to check the stop."""
    if loaded.encoder not in _BLOCKS:
        _BLOCKS[loaded.encoder] = _blocks(loaded.encoder)
    blocks = _BLOCKS[loaded.encoder]
    if blocks is None:
        return None
    index = layer + len(blocks) + 1 if layer < 0 else layer
    if not 1 <= index < len(blocks):
        return None
    checked = _CHECKED.setdefault(loaded.encoder, {})
    if checked.get(index) is False:
        return None

    def stop(module: Any, args: Any, output: Any) -> None:
        raise _Reached(output[0] if isinstance(output, tuple) else output)

    hook = blocks[index - 1].register_forward_hook(stop)
    try:
        loaded.encoder(**inputs, return_dict=True)
    except _Reached as reached:
        state = reached.state
    else:  # the block's output did not end the pass: never stop early for this layer
        checked[index] = False
        return None
    finally:
        hook.remove()
    if index not in checked:
        import torch

        whole = full(inputs)[index]
        checked[index] = whole.shape == state.shape and bool(torch.equal(whole, state))
        return whole
    return state
