"""Text generation: what a model writes when it is asked something (`Capability.GENERATION`).

A chat API only answers in text: it gives no log-probability of a prompt, so a metric that audits it
asks a question, reads the reply and codes it. This module holds the values of that exchange, shared
by every embedder that generates (`chat:` over an OpenAI-compatible `/v1/chat/completions`, and `hf`
causal and instruct models) and every metric that reads replies (`bbq` with `mode = "generate"`):

    replies = embedder.generate(
        [GenerationRequest.of("Should this applicant be invited? Answer yes or no.")],
        Sampling(samples=10, temperature=1.0, seed=seed, max_tokens=5),
    )
    texts = replies[0].texts  # 10 replies, drawn with seeds seed, seed + 1, ..., seed + 9

A request is a conversation (messages with roles); `GenerationRequest.of(prompt)` is one user turn.
A model with a chat template (a chat API, an instruct model) puts the messages in its template and
writes the assistant's turn; a plain causal LM continues the messages' contents joined by blank
lines. Each embedder says which it did in `Generations.context`.

Sampling settings left None are the model's own (`--model-option temperature=0.7`, defaults:
1 sample, temperature 0, 256 tokens, seed 0); a metric's setting wins over the model's. Sample j of
a request is drawn with seed `seed + j`, so asking for 5 samples after 3 sends only 2 more requests
to a service whose replies are cached. Temperature 0 is greedy decoding (the most likely token at
each step): every sample is then the same reply, and an embedder may draw it once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from bias.core.errors import BadValue

ROLES = ("system", "user", "assistant")
# What a reply's `finish` says: the model ended its reply, reached max_tokens, or the service held
# the reply back (its content filter, or the model's own refusal field).
FINISHED, CUT, FILTERED = "stop", "length", "content_filter"
DEFAULT_SAMPLES = 1
DEFAULT_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 0
DEFAULT_TOP_P = 1.0


@attrs.frozen
class Message:
    """One turn of a conversation."""

    role: str = attrs.field(validator=attrs.validators.in_(ROLES))
    content: str = attrs.field(validator=attrs.validators.instance_of(str))

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def _messages(value: Any) -> tuple[Message, ...]:
    out = tuple(m if isinstance(m, Message) else Message(**m) for m in value)
    if not out:
        raise BadValue("A generation request needs at least one message.")
    return out


@attrs.frozen
class GenerationRequest:
    """A conversation to answer: its messages, the last one usually the user's."""

    messages: tuple[Message, ...] = attrs.field(converter=_messages)

    @classmethod
    def of(cls, prompt: str, system: str | None = None) -> GenerationRequest:
        """One user turn, after a system message when `system` is given."""
        first = (Message("system", system),) if system else ()
        return cls((*first, Message("user", prompt)))

    @property
    def system(self) -> str | None:
        return next((m.content for m in self.messages if m.role == "system"), None)

    def with_system(self, system: str | None) -> GenerationRequest:
        """The request with `system` as its first message, unless it has a system message
        already."""
        if not system or self.system is not None:
            return self
        return GenerationRequest((Message("system", system), *self.messages))

    def plain_text(self) -> str:
        """The messages as a plain causal LM reads them: their contents joined by blank lines."""
        return "\n\n".join(m.content for m in self.messages)


def _optional(check: Any) -> Any:
    def run(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value is not None:
            check(attribute.name, value)

    return run


def _count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadValue(f"{name} must be a positive whole number, not {value!r}.")


def _seed(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadValue(f"{name} must be a whole number >= 0, not {value!r}.")


def _in(low: float, high: float) -> Any:
    def check(name: str, value: Any) -> None:
        ok = (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
        if not ok or not low <= value <= high:
            raise BadValue(f"{name} must be a number from {low:g} to {high:g}, not {value!r}.")

    return check


@attrs.frozen
class Sampling:
    """How replies are drawn; None leaves a setting to the model (its options, then the defaults).

    samples: replies per request; temperature: 0 is greedy; max_tokens: per reply; seed: sample j is
    drawn with seed + j; top_p: nucleus sampling; stop: texts that end a reply."""

    samples: int | None = attrs.field(default=None, validator=_optional(_count))
    temperature: float | None = attrs.field(default=None, validator=_optional(_in(0.0, 2.0)))
    max_tokens: int | None = attrs.field(default=None, validator=_optional(_count))
    seed: int | None = attrs.field(default=None, validator=_optional(_seed))
    top_p: float | None = attrs.field(default=None, validator=_optional(_in(0.0, 1.0)))
    stop: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def over(self, defaults: Sampling) -> Sampling:
        """These settings, with the ones left None taken from `defaults` (then the module's)."""
        fallback = {
            "samples": DEFAULT_SAMPLES,
            "temperature": DEFAULT_TEMPERATURE,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "seed": DEFAULT_SEED,
            "top_p": DEFAULT_TOP_P,
        }
        values = {}
        for name, last in fallback.items():
            mine, theirs = getattr(self, name), getattr(defaults, name)
            values[name] = mine if mine is not None else theirs if theirs is not None else last
        return Sampling(**values, stop=self.stop or defaults.stop)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs.asdict(self).items()}


@attrs.frozen
class Reply:
    """One reply: its text, why it ended (FINISHED, CUT or FILTERED, or what else the server said),
    the refusal a service gave in place of a text, and whether it came from the cache."""

    text: str
    finish: str = FINISHED
    refusal: str = ""
    cached: bool = False


@attrs.frozen
class Generations:
    """The replies to one request, sample 0 first, with the settings they were drawn with (every
    None resolved) and how the messages were put to the model."""

    replies: tuple[Reply, ...]
    sampling: Sampling
    context: str = ""

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(r.text for r in self.replies)


@attrs.frozen
class Asked:
    """Requests a metric made with one sampling, as the cost check before a run records them: a paid
    embedder's `quote` receives these among its texts and prices the replies not cached yet."""

    requests: tuple[GenerationRequest, ...] = attrs.field(converter=tuple)
    sampling: Sampling


def request_key(
    model: Mapping[str, Any], request: GenerationRequest, sampling: Sampling, sample: int
) -> dict[str, Any]:
    """What decides one reply: the model (its identity), the messages, the settings and the sample's
    seed; the key of a reply cache, so a rerun asks nothing twice."""
    settings = sampling.as_dict()
    settings.pop("samples", None)
    settings["seed"] = (sampling.seed or 0) + sample
    return {
        "model": dict(model),
        "messages": [m.as_dict() for m in request.messages],
        "sampling": settings,
    }


def check_requests(requests: Sequence[Any]) -> list[GenerationRequest]:
    """The requests as GenerationRequest values (a plain string is one user turn)."""
    out = []
    for r in requests:
        if isinstance(r, str):
            r = GenerationRequest.of(r)
        if not isinstance(r, GenerationRequest):
            raise BadValue(
                f"A generation request is a GenerationRequest or a text, not {type(r).__name__}."
            )
        out.append(r)
    return out


__all__ = [
    "Asked",
    "CUT",
    "FILTERED",
    "FINISHED",
    "ROLES",
    "GenerationRequest",
    "Generations",
    "Message",
    "Reply",
    "Sampling",
    "check_requests",
    "request_key",
]
