"""Any OpenAI-compatible `/v1/chat/completions` endpoint as a model that answers in text: OpenAI
itself, Azure OpenAI, and the servers that speak the same protocol (vLLM, Ollama, llama.cpp's
server, `transformers serve`).

`chat:MODEL` with `--model-option base_url=URL` for a server other than OpenAI's. The key is read
from OPENAI_API_KEY, or from the variable `key_env` names (a local server that needs none still
wants the variable set, to any value). Replies, their cache, concurrency, rate limit, retries and
the cost estimate are the shared machinery (`bias.api.services.ChatServiceModel`); this class only
sends one request through the official client."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
from bias.api.services import (
    connection_lost,
    ChatServiceModel,
    Refused,
    Transient,
    openai_client,
    refused_for_status,
    server_words,
)


@attrs.define
class ChatEmbedder(ChatServiceModel):
    """An OpenAI-compatible chat API, through the official `openai` client (its retries off: the
    shared machinery retries, honouring Retry-After)."""

    name: ClassVar[str] = "chat"
    summary: ClassVar[str] = (
        "OpenAI-compatible chat API (OpenAI, Azure, vLLM, Ollama, llama.cpp, transformers "
        "serve): replies to prompts."
    )
    default_key_env: ClassVar[str] = "OPENAI_API_KEY"
    library: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def _client(self, key: str) -> Any:
        # Its own retries off, no redirect followed, no answer longer than a reply can be (the
        # shared rules of bias.api.services).
        return openai_client(key, self.endpoint, self.timeout, self.answer_limit())

    def _ask(self, client: Any, body: dict[str, Any]) -> dict[str, Any]:
        import openai

        try:
            response = client.chat.completions.create(**body)
        except openai.APITimeoutError:
            raise Transient(f"no answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise Transient(connection_lost(exc)) from None
        except openai.APIStatusError as exc:
            said = server_words(str(getattr(exc, "message", "")), getattr(exc, "body", None))
            raise refused_for_status(
                exc.status_code, said, self._key(), exc.response.headers, self.endpoint
            ) from None
        except (openai.APIError, ValueError, TypeError, RecursionError):  # not a chat completion
            # (RecursionError: JSON nested thousands deep, which Python's parser cannot read)
            raise Refused(
                "the service answered something that is not a chat completion",
                "Check base_url: it must be an OpenAI-compatible /v1 address.",
            ) from None
        choices = getattr(response, "choices", None)
        first = choices[0] if isinstance(choices, list) and choices else None
        message = getattr(first, "message", None)
        usage = getattr(response, "usage", None)
        return {
            "text": (getattr(message, "content", None) or "") if message is not None else None,
            "finish": getattr(first, "finish_reason", None),
            "refusal": getattr(message, "refusal", None),
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }
