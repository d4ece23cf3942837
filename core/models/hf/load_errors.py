"""What transformers and safetensors say when a checkpoint cannot be loaded, said as what is wrong
with which file and what to do, in the CLI's two lines.
"""

from __future__ import annotations

from pathlib import Path

from bias.core.errors import BiasError, said_as_data


def brief(exc: BaseException | str) -> str:
    """The first line of an exception, short enough for the CLI's two-line error."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def config_error(folder: Path, exc: BaseException, remote: bool) -> BiasError:
    """transformers' complaint about a config.json, as what is wrong with the file and what to
    do."""
    import json

    path = folder / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as bad:
        return BiasError(
            f"{path} is damaged: not valid JSON ({brief(said_as_data(bad))}).",
            "Copy the model's config.json again, or save the model again with save_pretrained.",
        )
    if not isinstance(data, dict) or "model_type" not in data and "architectures" not in data:
        return BiasError(
            f"{path} names no model_type: it is not a Hugging Face model configuration.",
            "Save the model with save_pretrained.",
        )
    if "auto_map" in data and not remote:
        return BiasError(
            f"The model in '{folder}' ships its own Python code (auto_map in config.json), which "
            "runs only when you allow it.",
            "If you trust the model, give --trust-remote-code on the command line.",
        )
    return BiasError(
        f"{path} cannot be read by transformers (model_type {data.get('model_type')!r}): "
        f"{brief(exc)}",
        "A newer transformers may know this model type; otherwise the file is damaged.",
    )


def weights_error(folder: Path, exc: BaseException) -> BiasError:
    """transformers' and safetensors' complaints about weight files, translated."""
    text = str(exc)
    lowered = text.lower()
    if any(
        mark in lowered
        for mark in (
            "incomplete metadata",
            "header too large",
            "headertoolarge",
            "metadataincompletebuffer",
            "invalidheader",
            "deserializing header",
        )
    ):
        return BiasError(
            f"A weights file in '{folder}' is truncated or damaged (safetensors: {brief(exc)}).",
            "Copy or download the .safetensors file again; its size must match the original.",
        )
    if (
        "size mismatch" in text
        or "look at the above report" in text
        or "shape" in text
        and "mismatch" in text
    ):
        return BiasError(
            f"The weights in '{folder}' do not fit its config.json (a layer's shape differs from "
            "what the config describes).",
            "The config and weights come from different models: save both again with "
            "save_pretrained.",
        )
    if "weights_only" in text or "Weights only load failed" in text or "pickle" in text.lower():
        return BiasError(
            f"pytorch_model.bin in '{folder}' holds more than tensors (pickled objects), so it is "
            "not opened.",
            "Use a model.safetensors file, which cannot hold code.",
        )
    return BiasError(f"The model weights in '{folder}' cannot be loaded: {brief(exc)}")
