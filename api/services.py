"""Building blocks of embedders over web services: the shared base classes (`ServiceModel`: address,
key, concurrency, retries honouring Retry-After; `ServiceEmbedder`: batched vectors, their on-disk
cache and cost estimate; `ChatServiceModel`: replies of a chat API, their cache and cost estimate),
the errors a subclass maps its client's exceptions to, and the HTTP rules every service client
follows (no redirects, bounded retries, waits and answers, Ctrl-C at once: see
bias.core.models.service_http).

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.models.service_http import (
    MAX_BACKOFF,
    MAX_RETRIES,
    MAX_TIMEOUT,
    MAX_WAIT,
    MAX_WIDTH,
    AnswerTooLarge,
    Compressed,
    Redirected,
    Stop,
    Stopped,
    answer_limit,
    backoff_wait,
    bounded_httpx_client,
    bounded_requests_session,
    in_index_order,
    in_threads,
    openai_client,
    read_bounded,
    redirect_refusal,
    too_large_in,
    urllib_opener,
    vector_rows,
)
from bias.core.models.chat_service import CHAT_PRICES, ChatServiceModel
from bias.core.models.services import ServiceModel, estimate_tokens
from bias.core.models.service_embedder import PRICES, ServiceEmbedder
from bias.core.models.service_errors import (
    Refused,
    Transient,
    connection_lost,
    refused_for_status,
    retry_after,
    scrub,
    server_words,
)

__all__ = [
    "MAX_BACKOFF",
    "MAX_RETRIES",
    "MAX_TIMEOUT",
    "MAX_WAIT",
    "MAX_WIDTH",
    "CHAT_PRICES",
    "ChatServiceModel",
    "PRICES",
    "AnswerTooLarge",
    "Compressed",
    "Redirected",
    "Refused",
    "ServiceEmbedder",
    "ServiceModel",
    "Stop",
    "Stopped",
    "Transient",
    "answer_limit",
    "backoff_wait",
    "bounded_httpx_client",
    "bounded_requests_session",
    "connection_lost",
    "estimate_tokens",
    "in_index_order",
    "in_threads",
    "openai_client",
    "read_bounded",
    "redirect_refusal",
    "refused_for_status",
    "retry_after",
    "scrub",
    "server_words",
    "too_large_in",
    "urllib_opener",
    "vector_rows",
]
