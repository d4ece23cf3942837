"""An OpenAI-compatible completion server (vLLM, llama.cpp's server, ...) as a causal language model
that scores the answers of multiple-choice questions (the `bbq` metric).

A model too large for this machine is often served elsewhere. Such a server answers
`POST {location}/completions` with `echo: true` and `logprobs: 1` by returning the prompt's own
tokens with their log-probabilities (`choices[i].logprobs.tokens`, `token_logprobs`, `text_offset`),
which is all an answer's log-likelihood needs: the tokens whose text starts at or after the end of
the prompt are the answer's. One request carries a batch of texts (`prompt` as a list); `max_tokens`
is 1 (some servers refuse 0) and the generated token, which starts after the text, is left out. A
server that returns no log-probabilities for the text is refused with that reason, never read as 0.

The server tokenises the text itself, with its own start token; the result records the server and
the model it named. Nothing is sent anywhere else: the location is the only address contacted, a
redirect is refused (it would carry the key elsewhere), and an answer longer than its texts can
explain is refused before it is parsed (the shared rules of `bias.api.services`). The location is a
network address and `api_key_env` names the key sent: from an experiment file, both need the user's
--allow."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import (
    FAILURE,
    BiasError,
    Capability,
    ChoiceRequest,
    ChoiceScores,
    Contact,
    Embedder,
    at_most,
    int_at_least,
    param,
)
from bias.api.services import (
    MAX_TIMEOUT,
    AnswerTooLarge,
    Redirected,
    read_bounded,
    redirect_refusal,
    urllib_opener,
)

# An answer's bound: its texts echoed as tokens (each token with its text, log-probability, offset
# and the top alternative, about BYTES_PER_CHAR bytes of JSON per character of text at most), plus
# room.
BYTES_PER_CHAR = 400
ANSWER_SLACK = 2**20


def _positive_seconds(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (0 < value <= MAX_TIMEOUT)
    ):
        raise BiasError(
            f"{attribute.name} must be a positive number of seconds, at most "
            f"{MAX_TIMEOUT:g}, not {value!r}."
        )


@attrs.define
class CompletionServer(Embedder):
    """A completion server speaking the OpenAI API (`/v1/completions`) that returns prompt
    log-probabilities with `echo` (vLLM, llama.cpp's server): answer log-likelihoods for the bbq
    metric. `location` is the base URL (`http://localhost:8000/v1`)."""

    name: ClassVar[str] = "completions"
    summary: ClassVar[str] = (
        "OpenAI-compatible completion server (vLLM, llama.cpp) returning prompt "
        "log-probabilities: answer scores for bbq."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.CAUSAL_LM})
    location_is_address: ClassVar[bool] = True

    location: str = param(attrs.NOTHING, "the server's base URL, e.g. http://localhost:8000/v1")
    model: str = param(
        "", "the model the server is asked for (empty: the first of its /models list)"
    )
    api_key_env: str = param(
        "", "environment variable holding the server's API key (empty: none sent)", guard="route"
    )
    timeout: float = param(
        120.0,
        f"seconds to wait for one answer of the server (at most {MAX_TIMEOUT:g})",
        validator=_positive_seconds,
    )
    batch_size: int = param(
        16, "texts per request (at most 256)", validator=[int_at_least(1), at_most(256)]
    )

    _served: str | None = attrs.field(init=False, default=None, repr=False)
    # The failure that ended this server's requests for good (unreachable, timed out, refused): the
    # run's later experiments with it fail at once with it instead of waiting out the timeout again.
    _failed: BiasError | None = attrs.field(init=False, default=None, repr=False)

    def contacts(self) -> tuple[Contact, ...]:
        return (Contact(self.location, self.api_key_env or None),)

    def check(self) -> None:
        from urllib.parse import urlsplit

        try:
            host = urlsplit(self.location).hostname if isinstance(self.location, str) else None
        except ValueError:  # an unclosed IPv6 bracket, a port that is no number
            host = None
        if (
            not isinstance(self.location, str)
            or not self.location.startswith(("http://", "https://"))
            or not host
        ):
            raise BiasError(
                "A completion server is given by its URL (http://... or https://...), not "
                f"{self.location!r}.",
                "For example --model completions:http://localhost:8000/v1 (an IPv6 host in "
                "brackets: http://[::1]:8000/v1)",
            )

    def load(self) -> None:
        if self._served is not None:
            return
        self.check()
        if self.model:
            self._served = self.model
            return
        found = self._call("GET", "/models", None)
        names = (
            [m.get("id") for m in found.get("data", []) if isinstance(m, dict)]
            if isinstance(found, dict)
            else []
        )
        if not names or not isinstance(names[0], str):
            raise BiasError(
                f"The completion server at {self.location} lists no model.",
                "Name one with --model-option model=NAME.",
            )
        self._served = names[0]

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, limit: int = ANSWER_SLACK
    ) -> Any:
        if self._failed is not None:
            raise BiasError(
                self._failed.message,
                self._failed.hint,
                self._failed.exit_code,
                redo=self._failed.redo,
            )
        try:
            return self._send(method, path, body, limit)
        except BiasError as exc:
            self._failed = exc
            raise

    def _send(self, method: str, path: str, body: dict[str, Any] | None, limit: int) -> Any:
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.location.rstrip("/") + path, data=data, headers=headers, method=method
        )
        try:  # no redirect followed (it would carry the key), no answer longer than `limit` read
            with urllib_opener().open(request, timeout=self.timeout) as response:  # noqa: S310 (the user's URL)
                return json.loads(read_bounded(response, limit, self.timeout).decode("utf-8"))
        except Redirected as exc:
            raise redirect_refusal(self.spec, exc.status, exc.target) from None
        except AnswerTooLarge as exc:
            raise BiasError(
                f"The completion server at {self.location} answered more than "
                f"{exc.limit:,} bytes to {path}, more than "
                "its texts can explain.",
                "Check the URL and the model name.",
            ) from None
        except urllib.error.HTTPError as exc:
            # the server's trouble, for now: a failure
            if exc.code >= 500 or exc.code in (
                408,
                429,
            ):
                raise BiasError(
                    f"The completion server at {self.location} answered {exc.code} to "
                    f"{path}: {exc.reason}.",
                    "Run again with --resume when the server is back.",
                    exit_code=FAILURE,
                    redo=True,
                ) from None
            # the URL, the key or the model: fixed outside the run's files
            raise BiasError(
                f"The completion server at {self.location} answered {exc.code} to {path}: "
                f"{exc.reason}.",
                "Check the URL, the model name, the key and that the server allows echo "
                "with logprobs.",
                redo=True,
            ) from None
        except TimeoutError:
            # reached, but it did not answer in time (a trickle counts as no answer)
            raise BiasError(
                f"The completion server at {self.location} did not answer {path} within "
                f"{self.timeout:g} s.",
                "Run again with --resume when the server answers (or raise --model-option "
                "timeout=S).",
                exit_code=FAILURE,
                redo=True,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(getattr(exc, "reason", None), TimeoutError):
                raise BiasError(
                    f"The completion server at {self.location} did not answer {path} "
                    f"within {self.timeout:g} s.",
                    "Run again with --resume when the server answers (or raise "
                    "--model-option timeout=S).",
                    exit_code=FAILURE,
                    redo=True,
                ) from None
            raise BiasError(
                f"The completion server at {self.location} cannot be reached: "
                f"{getattr(exc, 'reason', exc)}.",
                "Start the server, or check the URL given with --model.",
                redo=True,
            ) from None
        except (ValueError, RecursionError):
            # not JSON (or nested thousands deep), not UTF-8, an invalid URL
            raise BiasError(
                f"The completion server at {self.location} did not answer JSON to {path}."
            ) from None

    def choice_log_probs(self, requests: Sequence[ChoiceRequest]) -> list[ChoiceScores]:
        self.load()
        texts = [(r.prompt, r.prompt + c) for r in requests for c in r.continuations]
        values: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            limit = ANSWER_SLACK + BYTES_PER_CHAR * sum(len(t) + 16 for _, t in batch)
            answer = self._call(
                "POST",
                "/completions",
                {
                    "model": self._served,
                    "prompt": [t for _, t in batch],
                    "max_tokens": 1,
                    "temperature": 0,
                    "echo": True,
                    "logprobs": 1,
                },
                limit,
            )
            choices = answer.get("choices") if isinstance(answer, dict) else None
            if not isinstance(choices, list) or len(choices) != len(batch):
                raise BiasError(
                    f"The completion server at {self.location} returned "
                    f"{len(choices) if isinstance(choices, list) else 'no'} "
                    f"choices for {len(batch)} texts.",
                    "It must answer a list prompt with one choice per text.",
                )
            ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
            for (prompt, text), choice in zip(batch, ordered):
                values.append(self._answer_log_probs(prompt, text, choice))
        out, k = [], 0
        for r in requests:
            out.append(
                ChoiceScores(
                    tuple(values[k : k + len(r.continuations)]),
                    f"the server's own tokenisation and start token ({self.location}, "
                    f"model {self._served})",
                )
            )
            k += len(r.continuations)
        return out

    def _answer_log_probs(self, prompt: str, text: str, choice: Any) -> np.ndarray:
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        scores = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
        offsets = logprobs.get("text_offset") if isinstance(logprobs, dict) else None
        if (
            not isinstance(scores, list)
            or not isinstance(offsets, list)
            or len(scores) != len(offsets)
        ):
            raise BiasError(
                f"The completion server at {self.location} returned no log-probabilities "
                f"of the prompt's tokens for {text[:40]!r}...",
                "The bbq metric needs echo with logprobs (vLLM and llama.cpp's server give "
                "them); this server or model does not.",
            )
        picked = [
            s
            for s, at in zip(scores, offsets)
            if isinstance(at, int) and len(prompt) <= at < len(text)
        ]
        if not picked or any(not isinstance(s, (int, float)) for s in picked):
            raise BiasError(
                f"The completion server at {self.location} gave no log-probability to the "
                f"answer's tokens in {text[:40]!r}...",
                "The bbq metric needs echo with logprobs (vLLM and llama.cpp's server give "
                "them); this server or model does not.",
            )
        return np.asarray(picked, dtype=np.float64)

    def fingerprint(self) -> str:
        return f"{self.spec}#model={self.model or self._served or ''}"

    def describe(self) -> dict[str, Any]:
        return {"server": self.location, "model": self._served or self.model}
