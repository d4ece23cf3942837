"""The HTTP side every service client shares: what a server (or a file naming one) can make a run
do.

A server is someone else's program; a file may name one. So every client of a service embedder (the
openai and voyage clients, the completion server's urllib, a third party's) follows these rules:

- Redirects are not followed. A key is sent only to the address it was configured for: a 3xx answer
  is refused, naming where it pointed, so the user can give that address if they trust it.
- Retries and waits are bounded: at most MAX_RETRIES retries, a first backoff of at most
  MAX_BACKOFF seconds, and no single wait longer than MAX_WAIT seconds whatever Retry-After says.
- Waits end at once when the run is interrupted (`Stop`), and requests run in daemon threads
  (`in_threads`), which the program does not wait for when it ends: Ctrl-C ends a run in about a
  second even while workers wait on retries or on a server that does not answer.
- Answers are bounded in size before they are parsed (`answer_limit`, `bounded_httpx_client`,
  `bounded_requests_session`, `read_bounded`), and in time: a server that trickles its answer gets
  the request's timeout for the whole of it, not for each byte; vectors are bounded in width
  (MAX_WIDTH, or the width the model is known to have) before anything is cached (`vector_rows`).
"""

from __future__ import annotations

import importlib
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from bias.core.errors import FAILURE, BiasError

MAX_RETRIES = 10  # retries of one request after a 429, 5xx, timeout or refused connection
MAX_BACKOFF = 30.0  # seconds before the first retry (doubled for each next one, each wait capped)
MAX_WAIT = 60.0  # seconds of any one wait, whatever the server's Retry-After asks
MAX_TIMEOUT = 600.0  # seconds one request may take
MAX_WIDTH = 8_192  # numbers in one vector of a server's answer (the widest known models have 4,096)
NUMBER_BYTES = 32  # room for one number in a JSON answer ("-1.2345678901234567e-05, ")
MAX_ANSWER_BYTES = 256 * 2**20  # one answer, whatever the batch
SLACK_BYTES = 2**20  # the rest of an answer: field names, usage, ids

T = TypeVar("T")
R = TypeVar("R")


class AnswerTooLarge(Exception):
    """A server's answer longer than it can be for the request (see `answer_limit`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an answer of more than {limit:,} bytes")
        self.limit = limit


class Compressed(Exception):
    """An answer the server compressed although asked not to: its size once decoded cannot be
    bounded by counting what arrives (a few kilobytes of gzip decode to gigabytes)."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"an answer compressed with {encoding}")
        self.encoding = encoding


class Redirected(Exception):
    """A server's redirect, which is never followed (the key stays with its own address)."""

    def __init__(self, status: int, target: str) -> None:
        super().__init__(f"HTTP {status} redirect to {target or 'an address it did not give'}")
        self.status, self.target = status, target


def answer_limit(texts: int, width: int | None = None) -> int:
    """The most bytes an answer of `texts` vectors of `width` numbers (MAX_WIDTH when not known) can
    take, within MAX_ANSWER_BYTES."""
    return min(MAX_ANSWER_BYTES, SLACK_BYTES + texts * (width or MAX_WIDTH) * NUMBER_BYTES)


def redirect_refusal(spec: str, status: int, target: str) -> BiasError:
    """What the user reads when a service answers with a redirect."""
    shown = target[:200] if target else "no address"
    return BiasError(
        f"{spec}: the service answered HTTP {status}, a redirect to {shown}; redirects are not "
        "followed, so the key goes only to the address given.",
        "If you trust the address it names, give that one instead (base_url, or the location).",
        redo=True,
    )


def too_large_in(exc: BaseException | None) -> AnswerTooLarge | None:
    """The AnswerTooLarge behind an exception a client wrapped (its cause or context), if any."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, AnswerTooLarge):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


# ---------------------------------------------------------------------------------------- waiting


class Stop:
    """A run's interruption as the workers see it: `wait` sleeps until the time is up or the run is
    stopped, and says which."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep `seconds` (at most MAX_WAIT); True when the run was stopped meanwhile."""
        return self._event.wait(max(0.0, min(seconds, MAX_WAIT)))


def backoff_wait(attempt: int, backoff: float, retry_after: float | None) -> float:
    """Seconds before retry number `attempt + 1`: the server's Retry-After, else `backoff`
    doubled for each attempt; never more than MAX_WAIT."""
    wait = retry_after if retry_after is not None else backoff * 2 ** min(attempt, 30)
    return min(wait, MAX_WAIT) if math.isfinite(wait) else MAX_WAIT


class Stopped(Exception):
    """A request given up because the run stopped (interrupted, or another batch failed for
    good)."""


def in_threads(
    work: Callable[[T], R], items: Sequence[T], workers: int, stop: Stop
) -> Iterator[tuple[int, R | BaseException]]:
    """(index, result or the exception raised) of each item, in the order they finish, computed by
    at most `workers` daemon threads. The program does not wait for daemon threads when it ends (it
    does for a ThreadPoolExecutor's), so Ctrl-C ends a run at once. Once `stop` is set (by the
    caller, or when the loop is left early) the workers take no new item, and the loop ends when
    those in hand are done: the items never started are never yielded."""
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(items)):
        todo.put(i)
    done: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((i, work(items[i])))
                except BaseException as exc:  # handed to the caller, which decides
                    done.put((i, exc))
        finally:
            done.put(None)  # this worker has ended

    live = max(1, min(workers, len(items)))
    for _ in range(live):
        threading.Thread(target=worker, daemon=True, name="bias-service-request").start()
    try:
        while live:
            found = done.get()
            if found is None:
                live -= 1
            else:
                yield found
    finally:
        stop.set()


# ---------------------------------------------------------------------------------------- clients


def refuse_compressed(response: Any) -> None:
    """Close and refuse an answer the server compressed although asked not to (an httpx or a
    `requests` response: both name their headers the same way)."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        response.close()
        raise Compressed(encoding[:40])


def bounded_httpx_client(factory: Callable[..., Any], limit: int, timeout: float) -> Any:
    """An httpx-style client for an official SDK (`factory`: e.g. `openai.DefaultHttpxClient`) that
    follows no redirect and reads no answer longer than `limit` bytes. It asks for answers as they
    are (`Accept-Encoding: identity`) and refuses a compressed one: httpx decodes after the bytes
    are counted, so the limit would hold for the compressed size only."""

    def check(response: Any) -> None:
        if 300 <= response.status_code < 400:
            raise Redirected(response.status_code, response.headers.get("location", ""))
        refuse_compressed(response)
        length = response.headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            response.close()
            raise AnswerTooLarge(limit)
        response.stream = _counting_stream(response, limit, timeout)

    return factory(
        follow_redirects=False,
        timeout=timeout,
        headers={"Accept-Encoding": "identity"},
        event_hooks={"response": [check]},
    )


def openai_client(key: str, base_url: str, timeout: float, limit: int) -> Any:
    """The official `openai` client for `base_url` under these rules: its own retries off (the
    caller retries, bounded), no redirect followed, no answer longer than `limit` bytes. Every
    embedder over an OpenAI-compatible API (embeddings, chat, completions) builds it here."""
    import openai

    http = bounded_httpx_client(openai.DefaultHttpxClient, limit, timeout)
    return openai.OpenAI(
        api_key=key, base_url=base_url, max_retries=0, timeout=timeout, http_client=http
    )


def _counting_stream(response: Any, limit: int, timeout: float) -> Any:
    """The response's byte stream, raising AnswerTooLarge past `limit` bytes (a chunked answer has
    no length to check beforehand) and the httpx module's ReadTimeout (retried as a timeout) when
    the whole answer takes longer than `timeout`. Built on the stream class of the response's own
    module."""
    module = importlib.import_module(type(response).__module__.split(".")[0])
    inner = response.stream
    deadline = time.monotonic() + timeout

    class Counting(module.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            read = 0
            for chunk in inner:
                read += len(chunk)
                if read > limit:
                    raise AnswerTooLarge(limit)
                if time.monotonic() > deadline:
                    raise module.ReadTimeout(f"no whole answer within {timeout:g} s")
                yield chunk

        def close(self) -> None:
            inner.close()

    return Counting()


def bounded_requests_session(
    limit: int, timeout: float, reread: Callable[[bytes], bytes] | None = None
) -> Any:
    """A `requests` session (for an SDK built on it, such as voyageai) that follows no redirect,
    reads no answer longer than `limit` bytes and none for longer than `timeout` seconds, and asks
    for answers uncompressed, refusing a compressed one (as `bounded_httpx_client`). `reread`, if
    given, rewrites a successful answer's body before the SDK reads it (the voyage client puts
    vectors back in their `index` order, which the SDK ignores)."""
    import requests
    import urllib3

    class Bounded(requests.Session):
        def __init__(self) -> None:
            super().__init__()
            self.headers["Accept-Encoding"] = "identity"

        def send(self, request: Any, **kwargs: Any) -> Any:
            kwargs["allow_redirects"] = False
            kwargs["stream"] = True
            response = super().send(request, **kwargs)
            if response.is_redirect or 300 <= response.status_code < 400:
                response.close()
                raise Redirected(response.status_code, response.headers.get("location", ""))
            refuse_compressed(response)
            try:
                body = _read_within(
                    lambda n: response.raw.read1(n, decode_content=True),
                    limit,
                    timeout,
                    _socket_of(response.raw),
                )
            except (TimeoutError, urllib3.exceptions.ReadTimeoutError):  # urllib3 names a socket's
                response.close()
                raise requests.exceptions.ReadTimeout(
                    f"no whole answer within {timeout:g} s"
                ) from None
            except AnswerTooLarge:
                response.close()
                raise
            if reread is not None and response.ok:
                body = reread(body)
            response._content = body
            response._content_consumed = True
            return response

    return Bounded()


def read_bounded(response: Any, limit: int, timeout: float) -> bytes:
    """The body of a urllib response, refused past `limit` bytes or after `timeout` seconds, and
    when the connection closes before the length the server announced."""
    body = _read_within(response.read1, limit, timeout, _socket_of(response))
    if getattr(response, "length", None):  # http.client counts down what is still to come
        raise ConnectionError("the connection closed before the whole answer came")
    return body


def _socket_of(response: Any) -> Any:
    """The socket an http.client response (or urllib3's, which wraps one) reads from, or None."""
    inner = getattr(response, "_fp", None) or response
    raw = getattr(getattr(inner, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if hasattr(sock, "settimeout") else None


def _read_within(
    read: Callable[[int], bytes], limit: int, timeout: float, sock: Any = None
) -> bytes:
    """Chunks of `read` (which returns what has come, as `read1` does) until the end, at most
    `limit` bytes within `timeout` seconds in all. The socket's own timeout, when it is known, is
    cut to the time left before each read, so a server sending a byte now and then cannot hold the
    request past its deadline (a timeout per read alone would let it, a byte at a time)."""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole answer within {timeout:g} s")
        if sock is not None:
            sock.settimeout(left)
        try:
            chunk = read(min(2**16, limit + 1 - size))
        except TimeoutError:
            raise TimeoutError(f"no whole answer within {timeout:g} s") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(limit)


def urllib_opener() -> Any:
    """A urllib opener that follows no redirect (urllib's own would carry the Authorization header
    to wherever the server points)."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> None:
            raise Redirected(code, newurl)

    return urllib.request.build_opener(NoRedirect)


# ---------------------------------------------------------------------------------------- answers


def vector_rows(spec: str, vectors: Any, texts: int, width: int | None) -> list[np.ndarray]:
    """A server's vectors for `texts` texts as rows of floats, refused (exit 1, as a failure of the
    service) unless there is one per text, each a flat list of finite numbers of one width, no wider
    than MAX_WIDTH and as wide as `width` when the model's width is known."""

    def refuse(what: str) -> BiasError:
        return BiasError(
            f"{spec}: the service answered {what}.",
            "Check the model name and the service's address.",
            exit_code=FAILURE,
        )

    if not isinstance(vectors, (list, tuple)):
        raise refuse(f"{_kind(vectors)} where a list of vectors belongs")
    if len(vectors) != texts:
        raise refuse(f"{len(vectors)} vector(s) for {texts} text(s)")
    rows = []
    for i, vector in enumerate(vectors):
        if not isinstance(vector, (list, tuple)) or not vector:
            raise refuse(f"{_kind(vector)} as vector {i}, not a list of numbers")
        if len(vector) > MAX_WIDTH:
            raise refuse(
                f"a vector of {len(vector):,} numbers, "
                f"more than any embedding model gives ({MAX_WIDTH:,})"
            )
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in vector):
            bad = next(x for x in vector if isinstance(x, bool) or not isinstance(x, (int, float)))
            raise refuse(f"{_kind(bad)} inside vector {i}, not a number")
        row = np.asarray(vector, dtype=np.float64)
        if not np.isfinite(row).all():
            raise refuse(f"a number that is not finite in vector {i}")
        rows.append(row)
    widths = sorted({len(r) for r in rows})
    if len(widths) > 1:
        raise refuse(f"vectors of unequal width ({', '.join(map(str, widths[:4]))})")
    if width is not None and rows and widths[0] != width:
        raise refuse(f"vectors of {widths[0]:,} numbers where this model gives {width:,}")
    return rows


def in_index_order(spec: str, items: list[Any], index: list[Any]) -> list[Any]:
    """An embeddings answer's items in the order of their `index` (which text each vector is
    for): as they came when none has one; refused unless the indices are 0 to n-1 once each (read
    in arrival order, a repeated or stray index would pair texts with other texts' vectors)."""
    if all(i is None for i in index):
        return items
    if not (all(type(i) is int for i in index) and sorted(index) == list(range(len(items)))):
        raise BiasError(
            f"{spec}: the service answered vectors whose index is not 0 to {len(items) - 1} once "
            "each.",
            "Check the model name and the service's address.",
            exit_code=FAILURE,
        )
    return [item for _, item in sorted(zip(index, items), key=lambda pair: pair[0])]


def _kind(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "an empty list" if not value else "a nested list"
    if value is None:
        return "null"
    return f"{type(value).__name__} {str(value)[:20]!r}"
