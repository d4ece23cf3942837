"""Conversations as a local model reads them: through its tokenizer's chat template, or as plain
text.

An instruction-tuned model was trained on conversations wrapped in its own markers
(`<|im_start|>user`, `[INST]`, ...); scored or sampled on raw text it is measured on input it never
saw. The tokenizer's `chat_template` (in tokenizer_config.json or chat_template.jinja) says how:
`apply_chat_template` with `add_generation_prompt=True` gives the text up to the start of the
assistant's turn, so a reply is generated, or an answer scored, inside that turn.

When the template is used (`chat = "auto"` with a template present, or `chat = "true"`), the text it
gives is what the model reads, less a start token written at its front: the scoring and generation
code puts the model's start token itself (the tokenizer's own, or BOS when it adds none), so it is
never there twice. A template that refuses a system message (some allow user and assistant turns
only) gets the system text at the front of the first user message, and the result says so. Without
a template the messages' contents are joined by blank lines.
"""

from __future__ import annotations

from typing import Any

from bias.core.errors import BiasError
from bias.core.generation import GenerationRequest, Message

CHAT_MODES = ("auto", "true", "false")


def has_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def uses_template(tokenizer: Any, chat: str, spec: str) -> bool:
    """Whether conversations go through the chat template: `chat` true (refused when the model has
    none), auto (when it has one) or false (never)."""
    if chat == "false":
        return False
    if has_template(tokenizer):
        return True
    if chat == "true":
        raise BiasError(
            f"The model {spec} has no chat template (tokenizer_config.json names no "
            "chat_template), so chat = true cannot apply one.",
            "Use an instruction-tuned model's folder, or --model-option chat=false to give "
            "it plain text.",
        )
    return False


def _merged_system(messages: tuple[Message, ...]) -> list[dict[str, str]]:
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    rest = [m.as_dict() for m in messages if m.role != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0] = {"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def templated(tokenizer: Any, request: GenerationRequest) -> tuple[str, str]:
    """The text up to the assistant's turn, as the template writes it (a BOS at its front included:
    see `strip_start`), and how it was made (for the result's convention)."""
    messages = [m.as_dict() for m in request.messages]
    how = "the tokenizer's chat template, up to the assistant's turn"
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # jinja's TemplateError: a template that raises on a system turn, say
        if request.system is None:
            raise BiasError(
                f"The model's chat template failed on a conversation: {type(exc).__name__}: {exc}"
            ) from exc
        text = tokenizer.apply_chat_template(
            _merged_system(request.messages), tokenize=False, add_generation_prompt=True
        )
        how += " (it takes no system turn: the system text opens the first user message)"
    if not isinstance(text, str):
        raise BiasError("The model's chat template gave no text.")
    return text, how


def strip_start(tokenizer: Any, text: str) -> tuple[str, bool]:
    """`text` without the BOS token a template writes at its front, and whether it was there."""
    bos = getattr(tokenizer, "bos_token", None)
    if isinstance(bos, str) and bos and text.startswith(bos):
        return text[len(bos) :], True
    return text, False


def conversation_text(
    tokenizer: Any, request: GenerationRequest, template: bool
) -> tuple[str, str]:
    """What the model reads for `request`: the templated text, or the contents joined by blank
    lines."""
    if template:
        return templated(tokenizer, request)
    return (
        request.plain_text(),
        "plain text: the messages' contents joined by blank lines (no chat template)",
    )


__all__ = [
    "CHAT_MODES",
    "conversation_text",
    "has_template",
    "strip_start",
    "templated",
    "uses_template",
]
