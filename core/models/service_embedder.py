"""Embedders over embeddings APIs (OpenAI-compatible `/v1/embeddings`, Voyage): the vectors of
texts, sent in batches through the shared service machinery (`bias.core.models.services`).

Every vector is kept in the encoding cache (`bias.core.models.encoding_cache`), keyed by endpoint,
model, output dimensions and text, so a rerun, or another metric on the same texts, sends nothing;
an answer of a width other than the model's is refused before anything is cached. `quote` tells the
runner, before the first request, how many texts and tokens a run would send and what that costs
for the models whose price is known (`PRICES`, or the `price` option).

Subclasses only say how to build their client and send one batch (`_client`, `_send`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.core.errors import FAILURE, BiasError
from bias.core.interfaces import Capability, Quote
from bias.core.model import WordVectors
from bias.core.models import encoding_cache, service_http
from bias.core.models.service_errors import public_url
from bias.core.models.service_http import Stop
from bias.core.models.services import ServiceModel, estimate_tokens
from bias.core.params import at_most, int_at_least, param

# List prices in US dollars per million input tokens (as published by the providers in 2025); a
# deployment with another price gives it with the `price` option.
PRICES: dict[str, float] = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
    "voyage-multilingual-2": 0.12,
    "voyage-3": 0.06,
    "voyage-3-lite": 0.02,
    "voyage-3-large": 0.18,
    "voyage-3.5": 0.06,
    "voyage-3.5-lite": 0.02,
}
# The width of each known model's vectors at its provider (without a `dimensions` asked for): an
# answer of another width is refused before anything is cached.
WIDTHS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "voyage-multilingual-2": 1024,
    "voyage-3": 1024,
    "voyage-3-lite": 512,
    "voyage-3-large": 1024,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
}
SERVICE_CAPABILITIES = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})


@attrs.define
class ServiceEmbedder(ServiceModel):
    """A model behind an embeddings API, named by its model id (`openai:text-embedding-3-small`).

    Sentence vectors are the service's own (its pooling; `pooling` and `layer` of a metric do not
    apply); a word's vector is the word sent alone as a text. Spans inside sentences are not
    offered.
    """

    capabilities: ClassVar[frozenset[Capability]] = SERVICE_CAPABILITIES

    batch_size: int = param(
        128, "texts per request (at most 2048)", validator=[int_at_least(1), at_most(2048)]
    )
    truncate: int | None = param(
        None,
        "keep only the first N components of each vector, as the BIAS Detection Framework does "
        "(768) for OpenAI vectors",
        validator=attrs.validators.optional(int_at_least(1)),
    )

    _cache: encoding_cache.EncodingCache | None = attrs.field(init=False, default=None, repr=False)
    _sent: dict[str, int] = attrs.field(
        init=False, factory=lambda: {"requests": 0, "texts": 0, "tokens": 0}, repr=False
    )
    _width: int | None = attrs.field(init=False, default=None, repr=False)

    @property
    def width(self) -> int | None:
        """The width this model's vectors must have, where it is known: the one asked for, else the
        provider's for a model it lists (at the provider's own address only)."""
        asked = self._asked_width()
        if asked is not None:
            return asked
        return (
            WIDTHS.get(self.location)
            if self.endpoint == self.default_base_url.rstrip("/")
            else None
        )

    def _asked_width(self) -> int | None:
        """The width asked of the server (an option such as `dimensions`), if any."""
        return None

    def answer_limit(self) -> int:
        """The most bytes one answer may take: a full batch of vectors of the known width."""
        return service_http.answer_limit(self.batch_size, self.width)

    def _send(self, client: Any, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """One request: the vectors of `texts` in order and the tokens the service counted (or
        None). Raises Transient or Refused (built with `refused_for_status`) for errors."""
        raise NotImplementedError

    def load(self) -> None:
        if not self._connect():
            return
        if self.cache:
            self._cache = encoding_cache.EncodingCache(
                self._cache_folder(), "service:" + encoding_cache.row_key(self._identity())
            )

    # ---------------------------------------------------- the cost, asked before any request

    def quote(self, texts: Sequence[str]) -> Quote:
        """The texts of `texts` not in the cache yet, their tokens and their price (None if
        unknown)."""
        self.load()
        wanted = [t for t in dict.fromkeys(texts) if isinstance(t, str) and t.strip()]
        found = (
            self._cache.get([encoding_cache.row_key(t) for t in wanted])
            if self._cache is not None
            else {}
        )
        missing = [t for t in wanted if encoding_cache.row_key(t) not in found]
        tokens = estimate_tokens(missing)
        listed = (
            PRICES.get(self.location)
            if self.endpoint == self.default_base_url.rstrip("/")
            else None
        )
        rate = self.price if self.price is not None else listed
        usd = tokens * rate / 1e6 if rate is not None else None
        if rate is None:
            basis = "no list price for this model at this endpoint; --model-option price=N sets one"
        else:
            basis = f"${rate:g} per million tokens, " + (
                "the price option"
                if self.price is not None
                else f"the list price of {self.location}"
            )
        return Quote(
            texts=len(missing),
            tokens=tokens,
            cached=len(wanted) - len(missing),
            usd=usd,
            basis=basis,
        )

    # ------------------------------------------------------------------ vectors

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """The service's vector of each whole text (its own pooling: `pooling` and `layer` do not
        apply)."""
        texts = list(texts)
        if spans is not None and any(s is not None for s in spans):
            raise BiasError(
                f"{self.spec} gives one vector per whole text, not vectors of words inside a "
                "sentence.",
                "Use sentence-level SEAT/CEAT (--level sentence) with an embedding service.",
            )
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise BiasError(
                    f"{self.spec}: the text {text!r} is empty; a service gives no vector for it."
                )
        return self._vectors(texts)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Each word sent alone as a text; blank words are lost."""
        unique = list(dict.fromkeys(words))
        kept = [w for w in unique if isinstance(w, str) and w.strip()]
        rows = self._vectors(kept) if kept else np.zeros((0, self._width or 0))
        return WordVectors(
            tuple(kept), rows, lost=tuple(w for w in unique if w not in set(kept)), approximated=()
        )

    def _vectors(self, texts: list[str]) -> np.ndarray:
        self.load()
        keys = [encoding_cache.row_key(t) for t in texts]
        found, missing = encoding_cache.lookup(self._cache, keys)
        if missing:
            found.update(self._fetch([texts[i] for i in missing], [keys[i] for i in missing]))
        widths = {np.shape(found[k]) for k in keys}
        if len(widths) > 1:
            where = self._cache.path if self._cache is not None else "the cache"
            raise BiasError(
                f"{self.spec}: the vectors of these texts have unequal widths "
                f"({', '.join(sorted(str(w) for w in widths))}), some of them from the cache "
                f"{where}.",
                "Remove the cache file (or give --model-option cache=false) and run again.",
            )
        rows = np.vstack([found[k] for k in keys]) if keys else np.zeros((0, self._width or 0))
        self._width = rows.shape[1] if rows.size else self._width
        return rows[:, : self.truncate] if self.truncate else rows

    def _fetch(self, texts: list[str], keys: list[str]) -> dict[str, np.ndarray]:
        """Every text sent once, in batches, `concurrency` at a time; each batch cached as it
        arrives. The batches run in daemon threads that an interruption stops at once (see
        service_http); after a batch failed for good no new one is sent (the experiment fails;
        --resume sends the rest)."""
        batches = [
            (texts[i : i + self.batch_size], keys[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        got: dict[str, np.ndarray] = {}

        def keep(i: int, vectors: list[np.ndarray]) -> None:
            fresh = dict(zip(batches[i][1], vectors))
            if self._cache is not None:
                self._cache.put(fresh)
            got.update(fresh)

        self._sent_in_threads(lambda batch, stop: self._batch(batch[0], stop), batches, keep)
        return got

    def _batch(self, texts: list[str], stop: Stop) -> list[np.ndarray]:
        vectors, tokens = self._retrying(
            lambda: self._send(self._client_object, texts), stop, what=f"{len(texts)} text(s)"
        )
        rows = service_http.vector_rows(self.spec, vectors, len(texts), self.width)
        with self._lock:
            if self._width is not None and rows and len(rows[0]) != self._width:
                raise BiasError(
                    f"{self.spec}: the service answered vectors of {len(rows[0])} numbers after "
                    f"vectors of {self._width}.",
                    "Check the model name and the service's address.",
                    exit_code=FAILURE,
                )
            self._width = len(rows[0]) if rows else self._width
            self._sent["requests"] += 1
            self._sent["texts"] += len(texts)
            self._sent["tokens"] += (
                tokens
                if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
                else estimate_tokens(texts)
            )
        return rows

    # ------------------------------------------------------------------ provenance

    def fingerprint(self) -> str:
        identity = {**self._identity(), "truncate": self.truncate}
        digest = hashlib.sha256(encoding_cache.row_key(identity).encode()).hexdigest()
        return f"{self.spec}#{digest[:20]}"

    def describe(self) -> dict[str, Any]:
        return {
            **{k: (public_url(v) if k == "endpoint" else v) for k, v in self._identity().items()},
            "dimensions_used": self.truncate or self._width,
            "truncate": self.truncate,
            "key_env": self.key_variable,
            "cache": str(self._cache.path) if self._cache is not None else None,
        }

    def sent(self) -> dict[str, int]:
        with self._lock:
            return dict(self._sent)
