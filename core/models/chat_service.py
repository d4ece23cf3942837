"""Models behind a chat API (an OpenAI-compatible `/v1/chat/completions`): replies to conversations.

What the service machinery of `bias.core.models.services` does for vectors, done for replies:

- Every reply is one request (no `n`, which some servers refuse): sample j of a conversation is sent
  with seed `seed + j`, so a reply is known by its model, messages, settings and seed
  (`bias.core.generation.request_key`). Replies are cached on disk under that key as soon as they
  arrive (`ReplyCache`): a rerun, another metric asking the same, or `--resume` after a crash sends
  nothing twice. At temperature 0 a conversation is sent once and its reply stands for every sample.
- Requests run `concurrency` at a time, at most `rate` per minute, each retried on 429, 5xx,
  timeouts and refused connections (the shared `_retrying`, honouring Retry-After), in daemon
  threads whose waits an interruption cuts short (`service_http`): Ctrl-C ends a run at once.
- `quote` prices a run before its first request: the input tokens of every conversation not cached
  yet (estimated from its characters) and, as an upper bound, `max_tokens` output tokens per reply,
  at the list price of known models (`CHAT_PRICES`) or the `price` / `price_output` options.
- A server's answer is checked before it is cached: a reply must be text, and not longer than
  `max_tokens` tokens could be (`MAX_CHARS_PER_TOKEN` characters each).

Subclasses say how to build their client and send one request (`_client`, `_ask`).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from bias.core.errors import FAILURE, BiasError
from bias.core.generation import (
    Asked,
    GenerationRequest,
    Generations,
    Reply,
    Sampling,
    check_requests,
    request_key,
)
from bias.core.interfaces import Capability, Quote
from bias.core.models import encoding_cache, service_http
from bias.core.models.reply_cache import ReplyCache
from bias.core.models.services import ServiceModel, estimate_tokens
from bias.core.models.service_errors import public_url
from bias.core.params import at_most, between, int_at_least, param

log = logging.getLogger(__name__)

# List prices in US dollars per million input and output tokens, as OpenAI published them in 2025; a
# deployment with other prices gives them with the `price` and `price_output` options.
CHAT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}
MAX_CHARS_PER_TOKEN = 64  # no tokenizer's token is longer; a longer reply did not honour max_tokens
MAX_REPLY_TOKENS = 32_768  # the longest reply a run may ask for
MAX_SAMPLES = 1_000  # replies per prompt at most


def _rate(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """0 (no limit) or at least one request a minute: a smaller rate would wait hours between
    requests."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (value == 0 or 1 <= value <= 1_000_000):
        raise BiasError(
            f"{attribute.name} must be 0 (no limit) or from 1 to 1000000 requests a "
            f"minute, not {value!r}."
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unicode(text: str) -> str:
    """`text` with any lone surrogate (JSON allows "\\ud800", UTF-8 does not) replaced by U+FFFD:
    a server's reply must not stop the result files from being written."""
    return _SURROGATE.sub("\ufffd", text)


@attrs.define
class ChatServiceModel(ServiceModel):
    """A chat model behind a web API: `generate` sends conversations and returns the replies."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.GENERATION})

    system: str = param(
        "", "system prompt put before every conversation that has none (empty: none)"
    )
    samples: int = param(
        1,
        f"replies per prompt, unless the metric asks for a number (at most {MAX_SAMPLES:,})",
        validator=[int_at_least(1), at_most(MAX_SAMPLES)],
    )
    temperature: float = param(
        0.0,
        "sampling temperature, unless the metric sets one (0: greedy)",
        validator=between(0.0, 2.0),
    )
    top_p: float = param(
        1.0,
        "nucleus sampling: the smallest set of tokens with this much probability",
        validator=between(0.0, 1.0),
    )
    max_tokens: int = param(
        256,
        f"longest reply in tokens, unless the metric sets it (at most {MAX_REPLY_TOKENS:,})",
        validator=[int_at_least(1), at_most(MAX_REPLY_TOKENS)],
    )
    seed: int = param(
        0,
        "seed of the first sample, unless the metric sets one (sample j: seed + j)",
        validator=int_at_least(0),
    )
    rate: float = param(
        0.0,
        "requests per minute at most, for a service's rate limit (0: no limit)",
        validator=_rate,
    )
    price_output: float | None = param(
        None,
        "US dollars per million output tokens, for the cost estimate (default: the list "
        "price of known models)",
        guard="cost",
    )

    _replies: ReplyCache | None = attrs.field(init=False, default=None, repr=False)
    _next_start: float = attrs.field(init=False, default=0.0, repr=False)
    _sent: dict[str, int] = attrs.field(
        init=False,
        factory=lambda: {"requests": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0},
        repr=False,
    )

    def answer_limit(self) -> int:
        """The most bytes one answer may take: a reply and a refusal of the longest length a run may
        ask for, in the widest UTF-8, with room for the JSON around them."""
        return 64 * 1024 + 2 * 4 * MAX_CHARS_PER_TOKEN * MAX_REPLY_TOKENS

    # ------------------------------------------------------------------ what subclasses give

    def _ask(self, client: Any, body: dict[str, Any]) -> dict[str, Any]:
        """One request: the reply as {text, finish, refusal, prompt_tokens, completion_tokens}.
        Raises Transient or Refused (built with `refused_for_status`) for errors."""
        raise NotImplementedError

    # ------------------------------------------------------------------ settings

    def load(self) -> None:
        if not self._connect():
            return
        if self.cache:
            self._replies = ReplyCache(
                self._cache_folder(), "chat:" + encoding_cache.row_key(self._identity())
            )

    def defaults(self) -> Sampling:
        """The model's own sampling settings, which a metric's settings override."""
        return Sampling(self.samples, self.temperature, self.max_tokens, self.seed, self.top_p)

    def _plan(
        self, requests: Sequence[Any], sampling: Sampling | None
    ) -> tuple[list[GenerationRequest], Sampling, int]:
        asked = [r.with_system(self.system) for r in check_requests(requests)]
        resolved = (sampling or Sampling()).over(self.defaults())
        draws = 1 if resolved.greedy else int(resolved.samples or 1)
        return asked, resolved, draws

    def _reply_key(self, request: GenerationRequest, sampling: Sampling, sample: int) -> str:
        return encoding_cache.row_key(request_key(self._identity(), request, sampling, sample))

    def _body(self, request: GenerationRequest, sampling: Sampling, sample: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.location,
            "messages": [m.as_dict() for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": int(sampling.seed or 0) + sample,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body

    # ------------------------------------------------------------------ replies

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling | None = None
    ) -> list[Generations]:
        """Each conversation's replies, sample j drawn with seed + j (once at temperature 0), every
        reply looked up in the cache first and cached as it arrives."""
        self.load()
        asked, resolved, draws = self._plan(requests, sampling)
        keys = [[self._reply_key(r, resolved, j) for j in range(draws)] for r in asked]
        flat = [k for row in keys for k in row]
        found = self._cached(flat, resolved)
        jobs = {}
        for i, request in enumerate(asked):
            for j, key in enumerate(keys[i]):
                if key not in found and key not in jobs:
                    jobs[key] = self._body(request, resolved, j)
        with self._lock:
            self._sent["cached"] += len(set(flat)) - len(jobs)
        found.update(self._fetch_replies(jobs, resolved))
        context = (
            f"messages sent to {public_url(self.endpoint)}/chat/completions as model "
            f"{self.location!r}"
            + (f", after the system prompt {self.system!r}" if self.system else "")
            + (
                "; temperature 0: one reply per prompt, repeated for every sample"
                if draws == 1 and resolved.samples != 1
                else ""
            )
        )
        out = []
        for row in keys:
            replies = [self._reply(found[k], cached=k not in jobs) for k in row]
            if draws == 1:
                replies = replies * int(resolved.samples or 1)
            out.append(Generations(tuple(replies), resolved, context))
        return out

    def _cached(self, keys: list[str], sampling: Sampling) -> dict[str, dict[str, Any]]:
        """The cached replies among `keys` that a server's answer could have been (see `_one`): a
        row altered on disk into a reply longer than max_tokens allows is asked again, not read."""
        if self._replies is None:
            return {}
        limit = MAX_CHARS_PER_TOKEN * int(sampling.max_tokens or 1)
        found = self._replies.get(keys)
        return {
            k: v
            for k, v in found.items()
            if len(v["text"]) <= limit
            and all(isinstance(v.get(f, ""), (str, type(None))) for f in ("finish", "refusal"))
            and len(str(v.get("finish") or "")) <= 40
            and len(str(v.get("refusal") or "")) <= limit
        }

    @staticmethod
    def _reply(stored: dict[str, Any], cached: bool) -> Reply:
        return Reply(
            _unicode(stored["text"]),
            _unicode(str(stored.get("finish") or "")),
            _unicode(str(stored.get("refusal") or "")),
            cached,
        )

    def _fetch_replies(
        self, jobs: dict[str, dict[str, Any]], sampling: Sampling
    ) -> dict[str, dict[str, Any]]:
        if not jobs:
            return {}
        got: dict[str, dict[str, Any]] = {}
        items = list(jobs.items())

        def keep(i: int, reply: dict[str, Any]) -> None:
            key = items[i][0]
            if self._replies is not None:
                self._replies.put({key: reply})
            got[key] = reply

        self._sent_in_threads(lambda item, stop: self._one(item[1], sampling, stop), items, keep)
        return got

    def _one(
        self, body: dict[str, Any], sampling: Sampling, stop: service_http.Stop
    ) -> dict[str, Any]:

        def attempt() -> dict[str, Any]:  # a retry waits for its turn too: `rate` counts every send
            self._pace(stop)
            return self._ask(self._client_object, body)

        reply = self._retrying(attempt, stop, what="a request")
        text = reply.get("text") if isinstance(reply, dict) else None
        if not isinstance(text, str):
            raise BiasError(
                f"{self.spec}: the service answered without a reply text.", exit_code=FAILURE
            )
        limit = MAX_CHARS_PER_TOKEN * int(sampling.max_tokens or 1)
        if len(text) > limit:
            raise BiasError(
                f"{self.spec}: the service answered {len(text):,} characters for at most "
                f"{sampling.max_tokens} tokens.",
                "The server did not honour max_tokens; check the server, or the model's "
                "max_tokens option.",
                exit_code=FAILURE,
            )
        clean = {
            "text": _unicode(text),
            "finish": _unicode(str(reply.get("finish") or "")[:40]),
            "refusal": _unicode(str(reply.get("refusal") or "")[:limit]),
        }
        with self._lock:
            self._sent["requests"] += 1
            for name in ("prompt_tokens", "completion_tokens"):
                value = reply.get(name)
                self._sent[name] += (
                    value
                    if isinstance(value, int) and not isinstance(value, bool) and value >= 0
                    else 0
                )
        return clean

    def _pace(self, stop: service_http.Stop) -> None:
        """Wait for this request's turn when a rate limit is set (requests spaced 60 / rate
        seconds); the wait ends at once when the run stops."""
        if self.rate <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + 60.0 / self.rate
        while (left := start - time.monotonic()) > 0:
            if stop.wait(left):
                raise service_http.Stopped

    # ------------------------------------------------------------------ the cost, asked before any
    # request

    def _prices(self) -> tuple[float | None, float | None, str]:
        listed = CHAT_PRICES.get(self.location) if self.endpoint == self.default_base_url else None
        given_in, given_out = self.price, self.price_output
        rate_in = given_in if given_in is not None else (listed[0] if listed else None)
        rate_out = given_out if given_out is not None else (listed[1] if listed else None)
        if rate_in is None or rate_out is None:
            return (
                None,
                None,
                "no list price for this model at this endpoint; --model-option price=N "
                "--model-option price_output=M set one",
            )
        return (
            rate_in,
            rate_out,
            f"${rate_in:g} / ${rate_out:g} per million input / output tokens, output "
            "counted at max_tokens",
        )

    def quote(self, texts: Sequence[Any]) -> Quote:
        """The replies the `Asked` requests among `texts` need that the cache lacks, their tokens
        (input estimated, output at max_tokens) and their price (None when not known)."""
        self.load()
        # reply key -> (input tokens, output tokens at most). Without the cache a reply asked by
        # two experiments is sent twice (one `generate` call sends each of its own once): counted
        # once per call then.
        wanted: dict[Any, tuple[int, int]] = {}
        for n, asked in enumerate(t for t in texts if isinstance(t, Asked)):
            requests, resolved, draws = self._plan(asked.requests, asked.sampling)
            for request in requests:
                size = estimate_tokens([m.content for m in request.messages])
                for j in range(draws):
                    key = self._reply_key(request, resolved, j)
                    slot = key if self._replies is not None else (n, key)
                    wanted.setdefault(slot, (size, int(resolved.max_tokens or 0)))
        found = self._cached(list(wanted), resolved) if wanted and self._replies else {}
        todo = [v for k, v in wanted.items() if k not in found]
        tokens_in = sum(v[0] for v in todo)
        tokens_out = sum(v[1] for v in todo)
        rate_in, rate_out, basis = self._prices()
        usd = (
            None
            if rate_in is None or rate_out is None
            else (tokens_in * rate_in + tokens_out * rate_out) / 1e6
        )
        return Quote(
            texts=len(todo),
            tokens=tokens_in + tokens_out,
            cached=len(wanted) - len(todo),
            usd=usd,
            basis=basis,
            rate=self.rate,
        )

    # ------------------------------------------------------------------ provenance

    def fingerprint(self) -> str:
        import hashlib

        identity = {**self._identity(), "system": self.system}
        digest = hashlib.sha256(encoding_cache.row_key(identity).encode()).hexdigest()
        return f"{self.spec}#{digest[:20]}"

    def describe(self) -> dict[str, Any]:
        return {
            "endpoint": public_url(self.endpoint),
            "model": self.location,
            "system": self.system,
            "key_env": self.key_variable,
            # the model's own settings; a metric's (its samples, temperature, max_tokens) win and
            # are in the result's parameters and convention
            "default_sampling": self.defaults().as_dict(),
            "cache": str(self._replies.path) if self._replies is not None else None,
        }

    def sent(self) -> dict[str, int]:
        with self._lock:
            return dict(self._sent)


__all__ = ["CHAT_PRICES", "ChatServiceModel"]
