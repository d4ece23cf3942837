"""Building blocks of embedders over web services: the shared base classes (`ServiceModel`: address,
key, concurrency, retries honouring Retry-After; `ServiceEmbedder`: batched vectors, their on-disk
cache and cost estimate; `ChatServiceModel`: replies of a chat API, their cache and cost estimate) and
the errors a subclass maps its client's exceptions to.

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.models.chat_service import CHAT_PRICES, ChatServiceModel
from bias.core.models.services import (
    PRICES,
    Refused,
    ServiceEmbedder,
    ServiceModel,
    Transient,
    estimate_tokens,
    refused_for_status,
    retry_after,
    scrub,
)

__all__ = ["CHAT_PRICES", "ChatServiceModel", "PRICES", "Refused", "ServiceEmbedder", "ServiceModel", "Transient", "estimate_tokens", "refused_for_status", "retry_after", "scrub"]
