"""Voyage AI's embeddings (voyage-multilingual-2, voyage-3, ...) through the official `voyageai`
client.

`voyage:MODEL`, with `input_type` (none, query or document: Voyage puts a prompt before the text for
the last two) and `output_dimension` for the models that offer several widths. The key is read from
VOYAGE_API_KEY, or from the variable `key_env` names. Batching, retries, the cache and the cost
estimate are the shared service machinery (`bias.api.services`).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import attrs
from bias.api import Capability, int_at_least, one_of, param
from bias.api.services import (
    connection_lost,
    in_index_order,
    Refused,
    ServiceEmbedder,
    Transient,
    bounded_requests_session,
    refused_for_status,
)

INPUT_TYPES = ("none", "query", "document")


@attrs.define
class VoyageEmbedder(ServiceEmbedder):
    """Voyage AI's embeddings API, through the official client (its retries off: the shared
    machinery retries, honouring Retry-After)."""

    name: ClassVar[str] = "voyage"
    summary: ClassVar[str] = (
        "Voyage AI embeddings API (voyage-multilingual-2, voyage-3): sentence and word vectors."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.WORD_VECTORS, Capability.CONTEXTUAL}
    )
    default_key_env: ClassVar[str] = "VOYAGE_API_KEY"
    library: ClassVar[str] = "voyageai"
    default_base_url: ClassVar[str] = "https://api.voyageai.com/v1"

    input_type: str = param(
        "none",
        "none (the text as it is), query or document (Voyage adds its prompt for these)",
        validator=one_of(INPUT_TYPES),
    )
    output_dimension: int | None = param(
        None,
        "vector width for the models that offer several (voyage-3-large, voyage-3.5: 256, "
        "512, 1024, 2048)",
        validator=attrs.validators.optional(int_at_least(1)),
    )

    def _identity(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "model": self.location,
            "dimensions": self.output_dimension,
            "input_type": self.input_type,
        }

    def _asked_width(self) -> int | None:
        return self.output_dimension

    def _client(self, key: str) -> Any:
        import voyageai

        # The client makes its requests through the session this factory gives (one per thread): no
        # redirect followed, no answer longer than a batch of vectors can be (bias.api.services).
        limit, timeout, spec = self.answer_limit(), self.timeout, self.spec
        voyageai.requestssession = lambda: bounded_requests_session(
            limit, timeout, lambda body: _in_index_order(spec, body)
        )
        return voyageai.Client(
            api_key=key, max_retries=0, timeout=self.timeout, base_url=self.endpoint
        )

    def _send(self, client: Any, texts: list[str]) -> tuple[list[list[float]], int | None]:
        from voyageai import error

        try:
            result = client.embed(
                texts,
                model=self.location,
                input_type=None if self.input_type == "none" else self.input_type,
                truncation=True,
                output_dimension=self.output_dimension,
            )
        except error.Timeout:
            raise Transient(f"no answer within {self.timeout:g} s") from None
        except error.APIConnectionError as exc:
            raise Transient(connection_lost(exc)) from None
        except error.VoyageError as exc:
            status = exc.http_status if isinstance(exc.http_status, int) else 500
            raise refused_for_status(
                status, str(exc.user_message or ""), self._key(), exc.headers, self.endpoint
            ) from None
        except (KeyError, AttributeError, TypeError, ValueError):
            # the client reading an answer that is not Voyage's (no usage, an item without its
            # embedding, bytes that are not UTF-8 text)
            raise Refused(
                "the service answered something that is not a Voyage embeddings answer",
                "Check base_url: it must be a Voyage-compatible /v1 address.",
            ) from None
        return getattr(result, "embeddings", None), getattr(result, "total_tokens", None)


def _in_index_order(spec: str, body: bytes) -> bytes:
    """The answer with its vectors in their `index` order: the voyageai client reads them in the
    order they came, dropping the index (`in_index_order` refuses indices that are not 0 to n-1);
    without `usage`, with a count the shared count estimates. An answer that is not such JSON is
    left to the client to refuse."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        return body
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        return body
    ordered = in_index_order(spec, data, [item.get("index") for item in data])
    if "usage" not in answer:
        # a Voyage-compatible server that does not count tokens: the client needs a count, and a
        # negative one is what the shared count reads as "not said" (the tokens are estimated)
        answer = {**answer, "usage": {"total_tokens": -1}}
    elif ordered == data:
        return body
    return json.dumps({**answer, "data": ordered}).encode()
