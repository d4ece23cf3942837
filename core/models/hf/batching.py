"""How texts reach a Hugging Face model: the model's token limit, right padding, length-sorted
batches that halve when the device runs out of memory, and the one error a user sees when even a
single row does not fit.

Vectors (`bias.core.models.hf.vectors`) and LM scores (`bias.core.models.hf.lm_scoring`) both go
through here, so they cut, pad and batch alike. torch is imported inside the functions only."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from bias.core.errors import FAILURE, BiasError
from bias.core.text import shown

log = logging.getLogger(__name__)

NOT_SET = 1_000_000  # tokenizers report a huge model_max_length when the limit is unknown
# Model types whose position ids start after the padding index (RoBERTa's create_position_ids), so
# padding_idx + 1 of max_position_embeddings are never available to a sequence.
OFFSET_POSITIONS = (
    "roberta",
    "xlm-roberta",
    "camembert",
    "longformer",
    "data2vec-text",
    "xmod",
    "roberta-prelayernorm",
)
ROBERTA_PADDING_IDX = 1  # what RoBERTa-style configs use when they name no pad_token_id


def token_limit(model: Any, tokenizer: Any) -> int | None:
    """The longest sequence (special tokens included) the model accepts, when it says so: the
    smaller of the tokenizer's model_max_length and the position table, less the positions a
    RoBERTa-style model reserves up to its padding index (a pad id of 0 reserves one position, not
    two)."""
    limits = []
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < NOT_SET:
        limits.append(tokenizer_limit)
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", "") in OFFSET_POSITIONS:
            pad = getattr(config, "pad_token_id", None)
            positions -= (ROBERTA_PADDING_IDX if pad is None else int(pad)) + 1
        limits.append(positions)
    return min(limits) if limits else None


def pad_id(tokenizer: Any, model: Any = None) -> int:
    """The id written into padding: the pad token, else EOS or UNK (GPT-2 has no pad token), else 0;
    one the model has an embedding for (a pad token added to a tokenizer whose model was not
    resized has none). Padding sits behind the attention mask and on the right, so its value never
    reaches a real token."""
    rows = embedding_rows(model)
    for name in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None and (rows is None or 0 <= int(value) < rows):
            return int(value)
    return 0


def embedding_rows(model: Any) -> int | None:
    """How many token ids the model has an input embedding for (None when it does not say)."""
    try:
        return int(model.get_input_embeddings().num_embeddings)
    except (AttributeError, NotImplementedError, TypeError):
        return None


def right_pad(
    rows: Sequence[Mapping[str, Sequence[int]]], tokenizer: Any, device: Any, model: Any = None
) -> dict[str, Any]:
    """One long tensor per input name, every row padded on the right to the longest.

    Padding by hand, always on the right, lets models without a pad token work and moves no real
    token: a causal LM's tokens never see a pad, and positions stay 0..n-1 whatever padding side the
    tokenizer prefers.
    """
    import torch

    pad_values = {
        "input_ids": pad_id(tokenizer, model),
        "attention_mask": 0,
        "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0) or 0,
    }
    width = max(len(row["input_ids"]) for row in rows)
    columns: dict[str, list[list[int]]] = {name: [] for name in rows[0]}
    for row in rows:
        for name, values in row.items():
            columns[name].append(list(values) + [pad_values.get(name, 0)] * (width - len(values)))
    return {
        name: torch.tensor(values, dtype=torch.long, device=device)
        for name, values in columns.items()
    }


def id_rows(sequences: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
    """Already-tokenised sequences as `right_pad` rows: the ids and an attention mask of ones."""
    return [{"input_ids": list(ids), "attention_mask": [1] * len(ids)} for ids in sequences]


def length_order(lengths: Sequence[int]) -> list[int]:
    """Indices longest first (ties in request order): batches of similar length pad little, and the
    memory peak comes with the first batch."""
    return sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))


def in_length_batches(
    lengths: Sequence[int],
    batch_size: int,
    work: Callable[[list[int]], None],
    *,
    max_tokens: int | None = None,
) -> None:
    """Call `work(batch)` on consecutive slices of `length_order(lengths)` (see `in_batches`)."""
    order = length_order(lengths)
    widths = [lengths[i] for i in order]
    in_batches(
        len(order),
        batch_size,
        lambda start, end: work(order[start:end]),
        widths=widths,
        max_tokens=max_tokens,
    )


def in_batches(
    count: int,
    batch_size: int,
    work: Callable[[int, int], None],
    *,
    widths: Sequence[int] | None = None,
    max_tokens: int | None = None,
) -> None:
    """Call `work(start, end)` on consecutive ranges of 0..count, `batch_size` long; with `widths`
    (the rows' lengths, longest first) and `max_tokens`, a batch of long rows holds fewer rows, so
    that batch x width stays within `max_tokens` (at least one row).

    When the device runs out of memory, the batch is halved and retried, and later batches keep the
    size that fitted (a warning says so). A single row that does not fit is re-raised, for
    `memory_guard` to turn into the user's error.
    """
    if batch_size < 1:
        raise BiasError(f"batch_size must be a positive whole number, not {batch_size!r}.")
    size, start = batch_size, 0
    while start < count:
        rows = size
        if widths is not None and max_tokens:
            rows = min(rows, max(1, max_tokens // max(1, int(widths[start]))))
        end = min(count, start + rows)
        try:
            work(start, end)
        except BiasError:
            raise
        except Exception as exc:
            if not is_out_of_memory(exc) or end - start == 1:
                raise
            size = max(1, (end - start) // 2)
            log.warning(
                "The device ran out of memory with batches of %d; carrying on with batches of %d.",
                end - start,
                size,
            )
            _free_device_memory()
            continue
        start = end


# batch_size = auto: what a GPU's batches may take of the device memory free once the model is
# loaded, the live activations of one token (about 24 hidden-width vectors: residual, attention and
# feed-forward intermediates, in the weights' precision, plus one attention row per head), and the
# most tokens a batch holds (beyond that a GPU is full, and attention's index arithmetic nears
# 2^31).
AUTO_SHARE = 0.5
AUTO_MAX_TOKENS = 1 << 17
CPU_BATCH = 32  # rows of a batch on a CPU (bigger batches only pad more there)
# tokens of a batch on a CPU: no faster beyond a few hundred, and a decoder's activations grow with
# them (BBQ's packed questions through GPT-2: 2,048 tokens a batch peaked 250 MB above the weights,
# 512 a third of that, in the same CPU time)
CPU_TOKENS = 512
TOKENS_PER_ROW = 64  # a batch of long rows holds at most rows x TOKENS_PER_ROW tokens


def auto_tokens(free_bytes: int, hidden: int, heads: int, width: int, element_bytes: int) -> int:
    """Tokens per batch for `batch_size = auto` on a GPU: AUTO_SHARE of the free memory over one
    token's live activations (rows of `width` tokens), at most AUTO_MAX_TOKENS, at least one row."""
    per_token = element_bytes * (24 * hidden + 2 * heads * width)
    return int(max(width, min(AUTO_MAX_TOKENS, AUTO_SHARE * free_bytes // max(per_token, 1))))


def batch_limits(batch_size: int | str, model: Any, device: Any) -> tuple[int, int, str]:
    """(rows, tokens) a batch may hold, and how they were chosen, for the record.

    A number: that many rows, and at most rows x TOKENS_PER_ROW tokens. auto: CPU_BATCH rows and at
    most CPU_TOKENS tokens on a CPU; on a GPU a token budget from its free memory (`auto_tokens`,
    rows of 512 tokens assumed for the attention term), the rows of a batch then following its
    length. A batch that runs out of memory is halved either way (`in_batches`)."""
    import torch

    if batch_size != "auto":
        rows = int(batch_size)
        return rows, rows * TOKENS_PER_ROW, str(rows)
    if torch.device(device).type != "cuda":
        return (
            CPU_BATCH,
            CPU_TOKENS,
            f"auto: {CPU_BATCH} rows, at most {CPU_TOKENS} tokens ({torch.device(device).type})",
        )
    config = getattr(model, "config", None)
    hidden = int(getattr(config, "hidden_size", 0) or getattr(config, "n_embd", 0) or 4096)
    heads = int(getattr(config, "num_attention_heads", 0) or getattr(config, "n_head", 0) or 32)
    free, total = torch.cuda.mem_get_info(device)
    element = next(model.parameters()).element_size()
    tokens = auto_tokens(free, hidden, heads, 512, element)
    return (
        AUTO_MAX_TOKENS,
        tokens,
        f"auto: {tokens} tokens per batch ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free)",
    )


def padded_rows(rows: Sequence[Sequence[int]], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row in one int64 matrix, padded on the right with `fill`, and the rows' lengths: built
    by numpy in one pass, never row by row in Python."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    width = int(lengths.max()) if len(rows) else 0
    out = np.full((len(rows), width), fill, dtype=np.int64)
    out[np.arange(width) < lengths[:, None]] = np.fromiter(
        itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum())
    )
    return out, lengths


def check_ids_fit(model: Any, tokenizer: Any, *matrices: np.ndarray) -> None:
    """Refuse a token id the model has no embedding for (a tokenizer saved after tokens were added
    to it, its model not resized, or a tokenizer of another model): torch would stop with an
    IndexError naming neither the token nor the model."""
    rows = embedding_rows(model)
    if rows is None:
        return
    top = max((int(m.max()) for m in matrices if m.size), default=-1)
    if top < rows:
        return
    try:
        token = str(tokenizer.convert_ids_to_tokens(top))
    except Exception:  # a damaged tokenizer: the id alone still says enough
        token = "?"
    raise BiasError(
        f"The tokenizer gives the token {shown(token, 40)!r} the id {top}, but the model "
        f"({type(model).__name__}) has embeddings for ids below {rows} only: the tokenizer does "
        "not belong to the model as saved.",
        "Save the model with its own tokenizer (after adding tokens to a tokenizer, resize the "
        "model's embeddings with model.resize_token_embeddings(len(tokenizer)) and save both).",
    )


def on_device(array: np.ndarray, device: Any) -> Any:
    """A numpy array as a torch tensor on `device`; to a GPU through pinned memory without waiting,
    so the copy overlaps what the device is still computing."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's CUDA out-of-memory error, or a RuntimeError saying so (other back ends, older
    torch)."""
    import torch

    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


@contextlib.contextmanager
def memory_guard(device: Any, batch_size: int) -> Iterator[None]:
    """A device running out of memory is the user's to fix with a smaller batch, not a traceback."""
    try:
        yield
    except BiasError:
        raise
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        raise BiasError(
            f"The device {device} ran out of memory with batches of {batch_size} texts.",
            "Use a smaller --batch-size (or --model-option batch_size=N), or --device cpu.",
            exit_code=FAILURE,
        ) from exc


def _free_device_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
