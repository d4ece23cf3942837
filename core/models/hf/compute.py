"""Where and in what precision a Hugging Face model computes: the torch device asked for (auto is a
GPU when one is visible), the weights' dtype, and TF32 matrix units for float32 products on a GPU.
torch is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from bias.core.errors import BiasError

# The devices a model may be asked to run on (`--device`, a model's `device` option).
DEVICES = r"auto|cpu|mps|cuda(:[0-9]+)?"

# Weights' precisions: torch's names, and tf32 (float32 weights whose matrix products a GPU's tensor
# cores run with TF32 inputs, see `matmul_precision`).
WEIGHTS = {
    "float32": "float32",
    "tf32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float64": "float64",
}


@contextlib.contextmanager
def matmul_precision(dtype: str, device: Any) -> Iterator[None]:
    """TF32 matrix units for float32 products on a GPU while the block runs (dtype "tf32"), restored
    after; nothing otherwise (a CPU has no TF32: there tf32 computes in float32)."""
    import torch

    if dtype != "tf32" or torch.device(device).type != "cuda":
        yield
        return
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def resolve_device(device: str) -> Any:
    """The torch device asked for; auto is CUDA when a GPU is visible, else the CPU. Only devices a
    model computes on are taken (torch also knows "meta", which holds no numbers)."""
    import torch

    wanted = str(device).strip().lower()
    if not re.fullmatch(DEVICES, wanted):
        raise BiasError(
            f"device = '{device}': not a device a model runs on.",
            "Use auto, cpu, cuda, cuda:N or mps.",
        )
    if wanted == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        found = torch.device(wanted)
    except (RuntimeError, ValueError) as exc:
        raise BiasError(
            f"'{device}' is not a torch device.", "Use auto, cpu, cuda, cuda:N or mps."
        ) from exc
    if found.type == "cuda" and not torch.cuda.is_available():
        raise BiasError(
            f"Device '{device}' was asked for, but no CUDA GPU is visible.",
            "Use --device cpu or auto.",
        )
    if found.type == "mps" and not torch.backends.mps.is_available():
        raise BiasError(
            f"Device '{device}' was asked for, but MPS is not available.",
            "Use --device cpu or auto.",
        )
    return found
