"""What a service's failure means for a request: sent again (`Transient`, after the server's
Retry-After) or refused for good (`Refused`), and the server's words shown without the key."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit


class Transient(Exception):
    """A batch that may succeed when sent again (429, 5xx, timeout, connection refused)."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what, self.retry_after = what, retry_after


class Refused(Exception):
    """A batch the service refused for good (a bad key, an unknown model, a bad option)."""

    def __init__(self, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asks to wait: `retry-after-ms`, `Retry-After` in seconds or as an HTTP
    date."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def server_words(message: str, body: object) -> str:
    """What a server said with an error status: the client library's message, and the words of the
    answer's body where the message left them out (openai's message is "Error code: 400" when the
    body is not OpenAI's own {"error": {...}}, such as a FastAPI server's {"detail": ...})."""
    said = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        inner = inner if isinstance(inner, dict) else {"message": inner}
        found = next((inner[k] for k in ("message", "detail") if inner.get(k)), None)
        said = str(found if found is not None else body)
    elif isinstance(body, str):
        said = body
    message = str(message or "")
    return message if not said or said in message else f"{message} - {said}".strip(" -")


def refused_for_status(
    status: int,
    message: str,
    key: str,
    headers: Mapping[str, str] | None = None,
    url: str = "",
) -> Refused | Transient:
    """What an HTTP error status means for a batch (429, 408 and 5xx: try again, after the server's
    Retry-After if it gives one); `message` (the server's words) is shown without the key. `url`:
    the base URL asked, for the hint of a 404 (an address without /v1 is the usual cause)."""
    if status == 429 or status >= 500 or status == 408:
        return Transient(f"HTTP {status}", retry_after(headers))
    if 300 <= status < 400:
        location = (headers or {}).get("location") or (headers or {}).get("Location") or ""
        return Refused(
            f"the service answered HTTP {status}, a redirect to "
            f"{str(location)[:200] or 'no address'}, which is not followed",
            "If you trust the address it names, give that one as base_url.",
        )
    if status in (401, 403):
        return Refused(
            f"the service refused the API key (HTTP {status})",
            "Check the key in the environment variable (see key_env).",
        )
    shown = " ".join(scrub(message, key).split())[:200]
    return Refused(
        f"the service refused the request (HTTP {status}: {shown})",
        "Check the model name and the options (see `bias info`)"
        + (
            "; an OpenAI-compatible base_url usually ends in /v1."
            if status in (404, 405) and not str(url).rstrip("/").endswith("/v1")
            else "."
        ),
    )


# What the HTTP libraries raise for an answer they could not parse (a header too long, a malformed
# status line): the server did answer. A connection closed before any answer (RemoteDisconnected)
# is a lost connection.
_BROKEN_ANSWER = {
    "RemoteProtocolError",
    "LocalProtocolError",
    "LineTooLong",
    "BadStatusLine",
    "HeaderParsingError",
    "InvalidHeader",
    "HTTPException",
}


def connection_lost(exc: BaseException) -> str:
    """What an SDK's connection error was, in words: no connection, or an answer that broke HTTP
    (a header too long, a malformed status line), which the server did send. The SDKs wrap the
    HTTP library's error (as the cause, or inside another error's arguments): the chain is
    followed."""
    todo: list[BaseException] = [exc]
    seen: list[BaseException] = []
    while todo and len(seen) < 20:
        found = todo.pop(0)
        if any(found is s for s in seen):
            continue
        seen.append(found)
        if type(found).__name__ in _BROKEN_ANSWER:
            said = " ".join(str(found).split())[:120] or type(found).__name__
            return f"an answer that breaks HTTP ({said})"
        todo += [e for e in (found.__cause__, found.__context__) if e is not None]
        todo += [a for a in getattr(found, "args", ()) if isinstance(a, BaseException)]
    return "no connection to the service"


def scrub(text: str, key: str) -> str:
    """`text` without the key (nor a long piece of it)."""
    if key:
        text = text.replace(key, "***")
        if len(key) >= 16:
            for piece in (key[:12], key[-12:]):
                text = text.replace(piece, "***")
    return text


def public_url(url: str) -> str:
    """A URL as it may be recorded: without a user name or password in it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a malformed address (an unclosed bracket, a port that is no number)
        return url.rsplit("@", 1)[-1][:200]
    netloc = parts.hostname or ""
    if ":" in netloc:  # an IPv6 address keeps its brackets
        netloc = f"[{netloc}]"
    if port:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
