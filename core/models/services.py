"""Embedders over paid web services (OpenAI-compatible `/v1/embeddings`, Voyage): what they share.

A service is slow, can refuse for a while (HTTP 429), can fail for a moment (5xx, timeouts) and costs
money per token, so the same work is done once here for every service embedder:

- Keys come from the environment only (the variable a `key_env` option names); they are never put
  in a file, the manifest, a log line or an error message: messages are built from status codes,
  and any text a server sends back is scrubbed of the key before it is shown.
- Texts are sent in batches, several batches at a time (`concurrency`), each retried on 429, 5xx,
  timeouts and refused connections with exponential backoff that honours `Retry-After`, within the
  bounds of `bias.core.models.service_http` (retries, waits, answer sizes, no redirects, Ctrl-C at
  once). A batch still failing after the retries is a failure of the experiment (exit code 1, status
  `failed`), so `--resume` runs it again; the batches that succeeded are in the cache by then.
- Where requests go (`base_url`), which variable's key goes with them (`key_env`) and where the cache
  is written (`cache_dir`) are route parameters: an experiment file sets them only with the user's
  `--allow` (bias.engine.guards). A file's `price` can only raise the estimate.
- Every vector is kept in the encoding cache (`bias.core.models.encoding_cache`), keyed by endpoint,
  model, output dimensions and text, so a rerun, or another metric on the same texts, sends nothing.
- `quote` tells the runner, before the first request, how many texts and tokens a run would send and
  what that costs for the models whose price is known (`PRICES`, or the `price` option).

Subclasses only say how to build their client and send one batch (`_client`, `_send`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs
import numpy as np

from bias.core.errors import FAILURE, BiasError
from bias.core.interfaces import Capability, Contact, Embedder, Quote
from bias.core.model import WordVectors
from bias.core.models import encoding_cache, service_http
from bias.core.models.service_errors import (  # noqa: F401 (part of this module's interface)
    Refused,
    Transient,
    public_url,
    refused_for_status,
    retry_after,
    scrub,
)
from bias.core.models.service_http import MAX_BACKOFF, MAX_RETRIES, MAX_TIMEOUT, Stop
from bias.core.params import at_most, int_at_least, param

log = logging.getLogger(__name__)

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
# A provider's model id: text-embedding-3-small, voyage-3.5-lite, gpt-4o-mini, meta-llama/Llama-3.1-8B,
# ft:gpt-4o-mini:org:name:id (a fine-tuned model), models/NAME@001, a local server's /path/to/model.
_MODEL_ID = re.compile(r"[A-Za-z0-9./][A-Za-z0-9._:/@+-]*")
CHARS_PER_TOKEN = 4  # a rough count for European languages; the estimate is rounded up
SERVICE_CAPABILITIES = frozenset({Capability.WORD_VECTORS, Capability.CONTEXTUAL})


def estimate_tokens(texts: Sequence[str]) -> int:
    """About how many tokens `texts` are: one per CHARS_PER_TOKEN characters, at least one per text."""
    return sum(max(1, math.ceil(len(t) / CHARS_PER_TOKEN)) for t in texts)


@attrs.define
class ServiceModel(Embedder):
    """A model behind a web API, named by its model id: what every service shares (where requests
    go, the key's variable, concurrency, retries, the price and the cache folder). Its subclasses
    say what the service gives: vectors (ServiceEmbedder) or replies (the chat embedder)."""

    default_key_env: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    library: ClassVar[str] = ""  # the provider's client package, imported when the model is loaded

    location: str = param(
        attrs.NOTHING, "the model's id at the service (e.g. text-embedding-3-small, gpt-4o-mini)"
    )
    base_url: str | None = param(
        None,
        "the API's base URL (default: the provider's own), e.g. http://127.0.0.1:8000/v1",
        guard="route",
    )
    key_env: str | None = param(
        None,
        "the environment variable holding the API key (default: the provider's usual one)",
        guard="route",
    )
    concurrency: int = param(
        4, "requests in flight at once (at most 32)", validator=[int_at_least(1), at_most(32)]
    )
    retries: int = param(
        5,
        f"times a request is sent again after a 429, 5xx, timeout or refused connection (at most {MAX_RETRIES})",
        validator=[int_at_least(0), at_most(MAX_RETRIES)],
    )
    backoff: float = param(
        1.0,
        f"seconds before the first retry (at most {MAX_BACKOFF:g}), doubled for each next one; a Retry-After "
        f"header wins; no wait is longer than {service_http.MAX_WAIT:g} s",
    )
    timeout: float = param(
        60.0, f"seconds a request may take before it is retried (at most {MAX_TIMEOUT:g})"
    )
    price: float | None = param(
        None,
        "US dollars per million (input) tokens, for the cost estimate (default: the list price of known models)",
        guard="cost",
    )
    cache: bool = param(
        True, "keep what the service answered on disk so a repeated run sends no request"
    )
    cache_dir: str | None = param(
        None,
        "folder of the cache (default: $BIAS_CACHE_DIR/encodings or ~/.cache/bias-framework/encodings)",
        guard="route",
    )

    _client_object: Any = attrs.field(init=False, default=None, repr=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, repr=False)
    # The failure that ended this model's requests for good, if one did: the model's later requests
    # (the run's next experiments) fail at once with it instead of retrying in full again.
    _failed: BiasError | None = attrs.field(init=False, default=None, repr=False)

    # ------------------------------------------------------------------ what subclasses give

    def _client(self, key: str) -> Any:
        """The provider's client for `key` and `self.endpoint`, with its own retries off."""
        raise NotImplementedError

    def _identity(self) -> dict[str, Any]:
        """What decides the answers besides the request (the cache's and the fingerprint's key)."""
        return {"endpoint": self.endpoint, "model": self.location}

    def _library(self, module: str) -> Any:
        """The provider's client library, or a clear error naming the extra that installs it."""
        import importlib

        try:
            return importlib.import_module(module)
        except ImportError:
            raise BiasError(
                f"The {self.name} embedder needs the Python package {module}, which is not installed.",
                "Install it with: pip install 'bias-framework[services]'",
            ) from None

    # ------------------------------------------------------------------ settings

    @property
    def endpoint(self) -> str:
        return (self.base_url or self.default_base_url).rstrip("/")

    @property
    def key_variable(self) -> str:
        return self.key_env or self.default_key_env

    def answer_limit(self) -> int:
        """The most bytes one answer may take (see service_http); each kind of service says less."""
        return service_http.MAX_ANSWER_BYTES

    def contacts(self) -> tuple[Contact, ...]:
        return (Contact(self.endpoint, self.key_variable),)

    def _key(self) -> str:
        key = os.environ.get(self.key_variable, "").strip()
        if not key:
            raise BiasError(
                f"{self.spec}: no API key: the environment variable {self.key_variable} is not set.",
                f"Set {self.key_variable} (keys are read from the environment only), or name another variable with --model-option key_env=NAME.",
            )
        return key

    def check(self) -> None:
        """Before any work: a key in the environment, a usable URL and sensible numbers."""
        if not self.location.strip():
            raise BiasError(
                f"{self.name}: no model id given.", f"For example --model {self.name}:MODEL_ID."
            )
        if not _MODEL_ID.fullmatch(self.location) or "://" in self.location:
            # A bracket, an equals sign or a space in a model id is an option the spec did not read:
            # sent as a model id, the requests (and the key) would go to the provider's own host.
            raise BiasError(
                f"{self.name}: {self.location!r} is not a model id (letters, digits and . _ - : / @ +).",
                f"Options go in one bracket after the id: {self.name}:MODEL_ID[base_url=URL].",
            )
        # An option given empty is refused, never dropped: requests would go to the provider's own
        # address, or the provider's usual key with them, which the user did not ask for.
        for name in ("base_url", "key_env"):
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                raise BiasError(
                    f"{self.spec}: {name} is empty.",
                    f"Give {name}=VALUE, or leave the option out for the provider's own "
                    f"({self.default_base_url if name == 'base_url' else self.default_key_env}).",
                )
        try:
            parts = urlsplit(self.endpoint)
            parts.port  # noqa: B018 - raises ValueError for a port that is no number
        except ValueError as exc:
            raise BiasError(
                f"{self.spec.split('[', 1)[0]}: base_url {public_url(self.endpoint)!r} is not a "
                f"well-formed URL ({exc}).",
                "Give the API's base URL, e.g. --model-option base_url=http://[::1]:8000/v1.",
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BiasError(
                f"{self.spec}: base_url {public_url(self.endpoint)!r} is not an http(s) URL.",
                "Give the API's base URL, e.g. --model-option base_url=http://127.0.0.1:8000/v1.",
            )
        if parts.username is not None or parts.password is not None:
            # The client would send them in place of the key, and the spec (with them) is written
            # into every result file.
            raise BiasError(
                f"{self.spec.split('[', 1)[0]}: base_url {public_url(self.endpoint)!r} holds a user "
                "name or password before '@'; it would be written into the results.",
                f"Give the address without it and the key in {self.key_variable} (or key_env=NAME).",
            )
        bounds = (
            ("backoff", self.backoff, 0.0, MAX_BACKOFF),
            ("timeout", self.timeout, 1e-3, MAX_TIMEOUT),
            ("price", self.price, 0.0, math.inf),
        )
        for name, value, least, most in bounds:
            if value is not None and not (math.isfinite(value) and least <= value <= most):
                limits = f">= {least:g}" if most == math.inf else f"between {least:g} and {most:g}"
                raise BiasError(
                    f"{self.spec}: {name} must be a number {limits}, not {value}.",
                    f"Correct {name} where the model's options are given (the experiment file, or --model-option {name}=N).",
                )
        self._key()

    def _connect(self) -> bool:
        """Check the settings and build the client once; False when it was built already."""
        if self._client_object is not None:
            return False
        self.check()
        self._library(self.library)
        self._client_object = self._client(self._key())
        return True

    def _cache_folder(self) -> Path:
        return (
            Path(self.cache_dir).expanduser()
            if self.cache_dir
            else encoding_cache.default_cache_dir()
        )

    def _retrying(
        self, call: Callable[[], Any], stop: Stop | None = None, *, what: str = "the request"
    ) -> Any:
        """`call()`, one request, sent again after a Transient error (429, 5xx, timeout, no
        connection) up to `retries` times with exponential backoff (a Retry-After wins, no wait over
        MAX_WAIT), each wait cut short when the run stops (`stop`, see service_http); a Refused error
        is the user's to fix (exit 2, redone by --resume); a Transient one after the last attempt, a
        redirect or an answer too large fails the experiment (what arrived before is cached, so
        --resume sends only the rest)."""
        if self._failed is not None:
            failed = self._failed
            raise BiasError(failed.message, failed.hint, failed.exit_code, redo=failed.redo)
        key = self._key()
        stop = stop if stop is not None else Stop()
        for attempt in range(self.retries + 1):
            try:
                return call()
            except Transient as exc:
                if attempt == self.retries:
                    raise self._fails(
                        BiasError(
                            f"{self.spec}: {scrub(exc.what, key)} after {self.retries + 1} attempt(s) at {public_url(self.endpoint)}.",
                            "What was received so far is cached; run again with --resume to send only the rest.",
                            exit_code=FAILURE,
                        )
                    ) from None
                wait = service_http.backoff_wait(attempt, self.backoff, exc.retry_after)
                log.info(
                    "%s: %s; sending again in %.1f s (attempt %d of %d).",
                    self.spec,
                    scrub(exc.what, key),
                    wait,
                    attempt + 2,
                    self.retries + 1,
                )
                if stop.wait(wait):
                    raise service_http.Stopped from None  # the run stopped meanwhile
            except Refused as exc:  # the key, the model or an option: the user's to fix (exit 2), redone by --resume
                raise self._fails(
                    BiasError(f"{self.spec}: {scrub(exc.what, key)}.", exc.hint or None, redo=True)
                ) from None
            except service_http.Redirected as exc:
                raise self._fails(
                    service_http.redirect_refusal(self.spec, exc.status, scrub(exc.target, key))
                ) from None
            except (
                RecursionError
            ):  # a JSON answer nested thousands deep, where the client parsed it
                raise self._fails(
                    BiasError(
                        f"{self.spec}: the service answered JSON nested too deeply to read.",
                        "Check the model name and the service's address.",
                        exit_code=FAILURE,
                    )
                ) from None
            except service_http.AnswerTooLarge as exc:
                raise BiasError(
                    f"{self.spec}: the service's answer to {what} is longer than {exc.limit:,} bytes, more than "
                    "this model's answers can take.",
                    "Check the model name and the service's address.",
                    exit_code=FAILURE,
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _fails(self, error: BiasError) -> BiasError:
        """`error` ends this model's requests for good: a refused key or model, a redirect, a service
        that failed every retry. The run's later experiments with the model fail at once with it."""
        self._failed = error
        return error

    def _sent_in_threads(
        self,
        work: Callable[[Any, Stop], Any],
        items: Sequence[Any],
        keep: Callable[[int, Any], None],
    ) -> None:
        """`work(item, stop)` for every item, `concurrency` at a time in daemon threads that an
        interruption stops at once (see service_http); `keep(i, answer)` takes each answer as it comes
        (cached there, so --resume sends only the rest). After a request failed for good no new one
        is sent, and the first failure is raised once the ones under way are done."""
        failure: BaseException | None = None
        stop = Stop()

        def one(item: Any) -> Any:
            try:
                return work(item, stop)
            except BiasError:
                stop.set()  # failed for good: the experiment fails, no new request is sent
                raise

        for i, outcome in service_http.in_threads(one, list(items), self.concurrency, stop):
            if isinstance(outcome, service_http.Stopped):
                continue  # given up after the first failure
            if isinstance(outcome, BaseException):
                failure = failure or outcome
                continue
            keep(i, outcome)
        if failure is not None:
            raise failure


@attrs.define
class ServiceEmbedder(ServiceModel):
    """A model behind an embeddings API, named by its model id (`openai:text-embedding-3-small`).

    Sentence vectors are the service's own (its pooling; `pooling` and `layer` of a metric do not
    apply); a word's vector is the word sent alone as a text. Spans inside sentences are not offered.
    """

    capabilities: ClassVar[frozenset[Capability]] = SERVICE_CAPABILITIES

    batch_size: int = param(
        128, "texts per request (at most 2048)", validator=[int_at_least(1), at_most(2048)]
    )
    truncate: int | None = param(
        None,
        "keep only the first N components of each vector, as the BIAS Detection Framework does (768) for OpenAI vectors",
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
        """One request: the vectors of `texts` in order and the tokens the service counted (or None).
        Raises Transient or Refused (built with `refused_for_status`) for errors."""
        raise NotImplementedError

    def load(self) -> None:
        if not self._connect():
            return
        if self.cache:
            self._cache = encoding_cache.EncodingCache(
                self._cache_folder(), "service:" + encoding_cache.row_key(self._identity())
            )

    # ------------------------------------------------------------------ the cost, asked before any request

    def quote(self, texts: Sequence[str]) -> Quote:
        """The texts of `texts` not in the cache yet, their tokens and their price (None if unknown)."""
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
        """The service's vector of each whole text (its own pooling: `pooling` and `layer` do not apply)."""
        texts = list(texts)
        if spans is not None and any(s is not None for s in spans):
            raise BiasError(
                f"{self.spec} gives one vector per whole text, not vectors of words inside a sentence.",
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
                f"{self.spec}: the vectors of these texts have unequal widths ({', '.join(sorted(str(w) for w in widths))}), "
                f"some of them from the cache {where}.",
                "Remove the cache file (or give --model-option cache=false) and run again.",
            )
        rows = np.vstack([found[k] for k in keys]) if keys else np.zeros((0, self._width or 0))
        self._width = rows.shape[1] if rows.size else self._width
        return rows[:, : self.truncate] if self.truncate else rows

    def _fetch(self, texts: list[str], keys: list[str]) -> dict[str, np.ndarray]:
        """Every text sent once, in batches, `concurrency` at a time; each batch cached as it arrives.
        The batches run in daemon threads that an interruption stops at once (see service_http); after
        a batch failed for good no new one is sent (the experiment fails; --resume sends the rest)."""
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
                    f"{self.spec}: the service answered vectors of {len(rows[0])} numbers after vectors of {self._width}.",
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
        return f"{self.spec}#{hashlib.sha256(encoding_cache.row_key(identity).encode()).hexdigest()[:20]}"

    def describe(self) -> dict[str, Any]:
        return {
            **{k: (public_url(v) if k == "endpoint" else v) for k, v in self._identity().items()},
            "dimensions_used": self.truncate or self._width,
            "truncate": self.truncate,
            "key_env": self.key_variable,
            "sent": dict(self._sent),
            "cache": str(self._cache.path) if self._cache is not None else None,
        }
