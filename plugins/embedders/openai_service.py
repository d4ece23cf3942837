"""Any OpenAI-compatible `/v1/embeddings` endpoint as an embedder: OpenAI itself, Azure OpenAI, and
the servers that speak the same protocol (vLLM, Text Embeddings Inference, Ollama, infinity-emb).

`openai:MODEL` with `--model-option base_url=URL` for a server other than OpenAI's, and
`dimensions=N` for the models that shorten their vectors on the server (text-embedding-3-*). The key
is read from OPENAI_API_KEY, or from the variable `key_env` names (a local server that needs none
still wants the variable set, to any value). Batching, retries, the cache and the cost estimate are
the shared service machinery (`bias.api.services`); this class only sends one batch through the
official client."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
from bias.api import Capability, int_at_least, param
from bias.api.services import (
    connection_lost,
    in_index_order,
    Refused,
    ServiceEmbedder,
    Transient,
    openai_client,
    refused_for_status,
    server_words,
)


@attrs.define
class OpenAIEmbedder(ServiceEmbedder):
    """An OpenAI-compatible embeddings API, through the official `openai` client (its retries off:
    the shared machinery retries, honouring Retry-After)."""

    name: ClassVar[str] = "openai"
    summary: ClassVar[str] = (
        "OpenAI-compatible embeddings API (OpenAI, Azure, vLLM, TEI, Ollama): sentence and "
        "word vectors."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
    )
    default_key_env: ClassVar[str] = "OPENAI_API_KEY"
    library: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    dimensions: int | None = param(
        None,
        "ask the server for vectors of N dimensions (text-embedding-3-* models; others refuse it)",
        validator=attrs.validators.optional(int_at_least(1)),
    )

    def _identity(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "model": self.location, "dimensions": self.dimensions}

    def _asked_width(self) -> int | None:
        return self.dimensions

    def _client(self, key: str) -> Any:
        # Its own retries off, no redirect followed, no answer longer than a batch of vectors can be
        # (the shared rules of bias.api.services).
        return openai_client(key, self.endpoint, self.timeout, self.answer_limit())

    def _send(self, client: Any, texts: list[str]) -> tuple[Any, int | None]:
        import openai

        options: dict[str, Any] = {
            "model": self.location,
            "input": texts,
            "encoding_format": "float",
        }
        if self.dimensions is not None:
            options["dimensions"] = self.dimensions
        try:
            response = client.embeddings.create(**options)
        except openai.APITimeoutError:
            raise Transient(f"no answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise Transient(connection_lost(exc)) from None
        except openai.APIStatusError as exc:
            said = server_words(str(getattr(exc, "message", "")), getattr(exc, "body", None))
            raise refused_for_status(
                exc.status_code, said, self._key(), exc.response.headers, self.endpoint
            ) from None
        except (openai.APIError, ValueError, TypeError):
            # not an embeddings answer (bytes that are not UTF-8 text, say); JSON nested thousands
            # deep is said by the shared machinery
            raise Refused(
                "the service answered something that is not an embeddings answer",
                "Check base_url: it must be an OpenAI-compatible /v1 address.",
            ) from None
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            # null, [], "x" or {"data": null}: no list of vectors at all (as voyage says it)
            raise Refused(
                "the service answered something that is not an embeddings answer (no list under "
                "data)",
                "Check base_url: it must be an OpenAI-compatible /v1 address.",
            )
        data = in_index_order(self.spec, data, [getattr(item, "index", None) for item in data])
        usage = getattr(response, "usage", None)
        return [getattr(item, "embedding", None) for item in data], getattr(
            usage, "prompt_tokens", None
        )
