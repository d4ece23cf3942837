"""Models behind paid web services (embeddings and chat APIs): what every one of them shares.

A service is slow, can refuse for a while (HTTP 429), can fail for a moment (5xx, timeouts) and
costs money per token, so the same work is done once here for every service model (`ServiceModel`):

- Keys come from the environment only (the variable a `key_env` option names); they are never put in
  a file, the manifest, a log line or an error message: messages are built from status codes, and
  any text a server sends back is scrubbed of the key before it is shown.
- Requests run several at a time (`concurrency`), each retried on 429, 5xx, timeouts and refused
  connections with exponential backoff that honours `Retry-After`, within the bounds of
  `bias.core.models.service_http` (retries, waits, answer sizes, no redirects, Ctrl-C at once). A
  request still failing after the retries is a failure of the experiment (exit code 1, status
  `failed`), so `--resume` runs it again; the answers that arrived are in the cache by then.
- Where requests go (`base_url`), which variable's key goes with them (`key_env`) and where the
  cache is written (`cache_dir`) are route parameters: an experiment file sets them only with the
  user's `--allow` (bias.engine.guards). A file's `price` can only raise the estimate.

What a service gives is its subclasses': vectors (`ServiceEmbedder`, in
`bias.core.models.service_embedder`) or replies (`ChatServiceModel`, in
`bias.core.models.chat_service`), each with its own cache and cost estimate (`quote`).
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs

from bias.core.errors import FAILURE, BiasError
from bias.core.interfaces import Contact, Embedder
from bias.core.models import encoding_cache, service_http
from bias.core.models.service_errors import Refused, Transient, public_url, scrub
from bias.core.models.service_http import MAX_BACKOFF, MAX_RETRIES, MAX_TIMEOUT, Stop
from bias.core.params import at_most, int_at_least, param

log = logging.getLogger(__name__)
# How far a long batch of requests has got, said every PROGRESS_EVERY seconds: the command line
# shows this logger's INFO lines unless -q (a run of 12,000 chat requests printed nothing for
# minutes, on a terminal or off it).
progress = logging.getLogger("bias.progress")
PROGRESS_EVERY = 30.0

# A provider's model id: text-embedding-3-small, voyage-3.5-lite, gpt-4o-mini,
# meta-llama/Llama-3.1-8B, ft:gpt-4o-mini:org:name:id (a fine-tuned model), models/NAME@001, a local
# server's /path/to/model.
_MODEL_ID = re.compile(r"[A-Za-z0-9./][A-Za-z0-9._:/@+-]*")
# A host in a model id (`m@127.0.0.1:8000/v1`, `m@api.example.com`, `localhost:8000/v1`): never read
# as an address, the requests would go to the provider's own host with the id as the model's name.
_HOST = r"(localhost|\d{1,3}(\.\d{1,3}){3}|[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,})\.?"
_ADDRESS_IN_ID = re.compile(
    rf"@{_HOST}(:\d+)?(?![a-z0-9.-])"  # after an @: a host (a top-level domain, an IP, localhost)
    r"|@[a-z0-9.-]+:\d+"  # after an @: any name with a port
    rf"|(^|/){_HOST}:\d+"  # a host and its port
    r"|^(localhost|\d{1,3}(\.\d{1,3}){3})\.?(?![a-z0-9.-])"  # an IP or localhost alone
    r"|^//",  # a scheme-relative address
    re.IGNORECASE,
)
_IPV6_HOST = re.compile(r"\[[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?\](:[0-9]+)?")
CHARS_PER_TOKEN = 4  # a rough count for European languages; the estimate is rounded up


def estimate_tokens(texts: Sequence[str]) -> int:
    """About how many tokens `texts` are: one per CHARS_PER_TOKEN characters, at least one per
    text."""
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
        attrs.NOTHING,
        "the model's id at the service (an embedding model such as text-embedding-3-small, or a "
        "chat model such as gpt-4o-mini)",
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
        "times a request is sent again after a 429, 5xx, timeout or refused connection (at most "
        f"{MAX_RETRIES})",
        validator=[int_at_least(0), at_most(MAX_RETRIES)],
    )
    backoff: float = param(
        1.0,
        f"seconds before the first retry (at most {MAX_BACKOFF:g}), doubled for each next one; a "
        f"Retry-After header wins; no wait is longer than {service_http.MAX_WAIT:g} s",
    )
    timeout: float = param(
        60.0, f"seconds a request may take before it is retried (at most {MAX_TIMEOUT:g})"
    )
    price: float | None = param(
        None,
        "US dollars per million (input) tokens, for the cost estimate (default: the list price of "
        "known models)",
        guard="cost",
    )
    cache: bool = param(
        True, "keep what the service answered on disk so a repeated run sends no request"
    )
    cache_dir: str | None = param(
        None,
        "folder of the cache (default: $BIAS_CACHE_DIR/encodings or "
        "~/.cache/bias-framework/encodings)",
        guard="route",
    )

    _client_object: Any = attrs.field(init=False, default=None, repr=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, repr=False)
    # The failure that ended this model's requests for good, if one did: the model's later requests
    # (the run's next experiments) fail at once with it instead of retrying in full again.
    _failed: BiasError | None = attrs.field(init=False, default=None, repr=False)
    # Whether a retry was said yet: the first is a warning (a stalled service with a long timeout
    # and many retries would otherwise keep a run silent for hours), the rest are said with -v.
    _retry_said: bool = attrs.field(init=False, default=False, repr=False)

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
                f"The {self.name} embedder needs the Python package {module}, which is not "
                "installed.",
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
                f"{self.spec}: no API key: the environment variable {self.key_variable} is not "
                "set.",
                f"Set {self.key_variable} (keys are read from the environment only), or name "
                "another variable with --model-option key_env=NAME.",
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
                f"{self.name}: {self.location!r} is not a model id (letters, digits and . _ - : / "
                "@ +).",
                f"Options go in one bracket after the id: {self.name}:MODEL_ID[base_url=URL].",
            )
        if _ADDRESS_IN_ID.search(self.location):
            raise BiasError(
                f"{self.name}: {self.location!r} holds an address; a model id is never read as one "
                f"(the requests would go to {self.default_base_url} under that name).",
                f"Give the address as base_url: {self.name}:MODEL_ID[base_url=http://HOST:PORT/v1] "
                "or --model-option base_url=URL.",
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
        host = parts.netloc.rsplit("@", 1)[-1]
        if any(c in parts.path + parts.query + parts.fragment for c in "[]") or (
            any(c in host for c in "[]") and not _IPV6_HOST.fullmatch(host)
        ):
            # a bracket of a spec's options left in the URL (`base_url=http://h/v1]`)
            raise BiasError(
                f"{self.spec.split('[', 1)[0]}: base_url {self.endpoint!r} holds a bracket that "
                "is not an IPv6 address's.",
                "Give the API's base URL alone, e.g. --model-option base_url=http://127.0.0.1:8000/v1.",
            )
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BiasError(
                f"{self.spec}: base_url {public_url(self.endpoint)!r} is not an http(s) URL.",
                "Give the API's base URL, e.g. --model-option base_url=http://127.0.0.1:8000/v1.",
            )
        if parts.username is not None or parts.password is not None:
            # The client would send them in place of the key, and the spec (with them) is written
            # into every result file.
            raise BiasError(
                f"{self.spec.split('[', 1)[0]}: base_url {public_url(self.endpoint)!r} holds a "
                "user name or password before '@'; it would be written into the results.",
                f"Give the address without it and the key in {self.key_variable} (or "
                "key_env=NAME).",
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
                    f"Correct {name} where the model's options are given (the experiment file, or "
                    f"--model-option {name}=N).",
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

    def _failed_hint(self, what: str) -> str:
        """What to do when a request kept failing: with nothing ever received, where to look first
        (a server not started, a wrong address); --resume keeps what the run finished."""
        if bool((self.sent() or {}).get("requests")):
            return (
                "What was received so far is cached; run again with --resume to send only the rest."
            )
        if what == "no connection to the service":
            return (
                "Nothing answered at that address: is the server running, and is base_url right? "
                "Then run again with --resume (what finished is kept)."
            )
        return "Run again with --resume when the service answers (what finished is kept)."

    def _retrying(
        self, call: Callable[[], Any], stop: Stop | None = None, *, what: str = "the request"
    ) -> Any:
        """`call()`, one request, sent again after a Transient error (429, 5xx, timeout, no
        connection) up to `retries` times with exponential backoff (a Retry-After wins, no wait over
        MAX_WAIT), each wait cut short when the run stops (`stop`, see service_http); a Refused
        error is the user's to fix (exit 2, redone by --resume); a Transient one after the last
        attempt, a redirect or an answer too large fails the experiment (what arrived before is
        cached, so --resume sends only the rest)."""
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
                            f"{self.spec}: {scrub(exc.what, key)} after {self.retries + 1} "
                            f"attempt(s) at {public_url(self.endpoint)}.",
                            self._failed_hint(exc.what),
                            exit_code=FAILURE,
                        )
                    ) from None
                wait = service_http.backoff_wait(attempt, self.backoff, exc.retry_after)
                first, self._retry_said = not self._retry_said, True
                log.log(
                    logging.WARNING if first else logging.INFO,
                    "%s: %s; sending again in %.1f s (attempt %d of %d).%s",
                    self.spec,
                    scrub(exc.what, key),
                    wait,
                    attempt + 2,
                    self.retries + 1,
                    " Later retries of this model are said with bias -v." if first else "",
                )
                if stop.wait(wait):
                    raise service_http.Stopped from None  # the run stopped meanwhile
            except Refused as exc:
                # the key, the model or an option: the user's to fix (exit 2), redone by --resume
                raise self._fails(
                    BiasError(f"{self.spec}: {scrub(exc.what, key)}.", exc.hint or None, redo=True)
                ) from None
            except service_http.Redirected as exc:
                raise self._fails(
                    service_http.redirect_refusal(self.spec, exc.status, scrub(exc.target, key))
                ) from None
            except RecursionError:
                # a JSON answer nested thousands deep, where the client parsed it
                raise self._fails(
                    BiasError(
                        f"{self.spec}: the service answered JSON nested too deeply to read.",
                        "Check the model name and the service's address.",
                        exit_code=FAILURE,
                    )
                ) from None
            except service_http.Compressed as exc:
                raise self._fails(
                    BiasError(
                        f"{self.spec}: the service answered compressed "
                        f"({scrub(exc.encoding, key)}) although asked for a plain answer; a "
                        "compressed answer's size cannot be bounded before it is decoded, so it "
                        "is not read.",
                        "Turn compression off on the service (or its proxy), or use another "
                        "address.",
                        exit_code=FAILURE,
                    )
                ) from None
            except service_http.AnswerTooLarge as exc:
                raise BiasError(
                    f"{self.spec}: the service's answer to {what} is longer than {exc.limit:,} "
                    "bytes, more than this model's answers can take.",
                    "Check the model name and the service's address.",
                    exit_code=FAILURE,
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _fails(self, error: BiasError) -> BiasError:
        """`error` ends this model's requests for good: a refused key or model, a redirect, a
        service that failed every retry. The run's later experiments with the model fail at once
        with it."""
        self._failed = error
        return error

    def _sent_in_threads(
        self,
        work: Callable[[Any, Stop], Any],
        items: Sequence[Any],
        keep: Callable[[int, Any], None],
    ) -> None:
        """`work(item, stop)` for every item, `concurrency` at a time in daemon threads that an
        interruption stops at once (see service_http); `keep(i, answer)` takes each answer as it
        comes (cached there, so --resume sends only the rest). After a request failed for good no
        new one is sent, and the first failure is raised once the ones under way are done."""
        failure: BaseException | None = None
        stop = Stop()
        started = said = time.monotonic()
        done = 0

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
            done += 1
            if (now := time.monotonic()) - said >= PROGRESS_EVERY and done < len(items):
                said = now
                from bias.core.runs.budget import duration

                left = (now - started) / done * (len(items) - done)
                progress.info(
                    "%s: %s of %s requests answered after %.0f s; %s left at this pace.",
                    self.spec,
                    f"{done:,}",
                    f"{len(items):,}",
                    now - started,
                    duration(left),
                )
        if failure is not None:
            raise failure
