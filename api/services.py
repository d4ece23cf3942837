"""Building blocks of embedders over web services: the shared base class (batching, concurrency,
retries honouring Retry-After, the on-disk cache, the cost estimate), the errors a subclass maps
its client's exceptions to, and the HTTP rules every service client follows (no redirects, bounded
retries, waits and answers, Ctrl-C at once: see bias.core.models.service_http).

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
    Redirected,
    Stop,
    Stopped,
    answer_limit,
    backoff_wait,
    bounded_httpx_client,
    bounded_requests_session,
    in_threads,
    openai_client,
    read_bounded,
    redirect_refusal,
    too_large_in,
    urllib_opener,
    vector_rows,
)
from bias.core.models.services import (
    PRICES,
    Refused,
    ServiceEmbedder,
    Transient,
    estimate_tokens,
    refused_for_status,
    retry_after,
    scrub,
)

__all__ = [
    "MAX_BACKOFF",
    "MAX_RETRIES",
    "MAX_TIMEOUT",
    "MAX_WAIT",
    "MAX_WIDTH",
    "PRICES",
    "AnswerTooLarge",
    "Redirected",
    "Refused",
    "ServiceEmbedder",
    "Stop",
    "Stopped",
    "Transient",
    "answer_limit",
    "backoff_wait",
    "bounded_httpx_client",
    "bounded_requests_session",
    "estimate_tokens",
    "in_threads",
    "openai_client",
    "read_bounded",
    "redirect_refusal",
    "refused_for_status",
    "retry_after",
    "scrub",
    "too_large_in",
    "urllib_opener",
    "vector_rows",
]
