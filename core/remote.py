"""What a model that runs elsewhere tells a run before it sends anything: what its requests will
cost (`Quote`, from `Embedder.quote`) and where they go, with which key (`Contact`, from
`Embedder.contacts`). The runner stops above the user's --max-cost on the first, and `bias run`
says the second to the user, one line per address.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Quote:
    """What a paid embedder would send for a run: the texts not cached yet, about how many tokens
    they are, how many were found in the cache, and the price in US dollars (None: not known)."""

    texts: int
    tokens: int
    cached: int = 0
    usd: float | None = None
    basis: str = ""  # how the price was found ("$0.02 per million tokens")
    # Requests a minute at most (the model's `rate` option; 0: no limit). A run whose requests are
    # spaced out says how long that makes it before it starts: a rate of one a minute, written into
    # a shared file, would otherwise only show as a run that seems to hang.
    rate: float = 0.0
    # What is sent besides the texts counted, said with them ("the debiasing lists' words, sent
    # once for the fit, come on top"); not empty means something is sent whatever `texts` says.
    on_top: str = ""

    def sends(self, uncounted: int = 0) -> bool:
        """Whether anything may be sent: texts counted, something on top, or experiments whose
        texts could not be counted beforehand."""
        return bool(self.texts or self.on_top or uncounted)

    def line(self, model: str, uncounted: int = 0) -> str:
        """The line said before a model's first request; `uncounted`: its experiments whose texts
        could not be counted beforehand."""
        if not self.sends(uncounted):  # a price, or how to give one, is noise then
            return f"{model}: will send nothing ({self.cached:,} already cached)."
        return self._line(model) + (
            f" ({uncounted} experiment(s) could not be counted beforehand.)" if uncounted else ""
        )

    def _line(self, model: str) -> str:
        if self.usd is None:
            cost = f"not estimated ({self.basis})"
        else:
            cost = f"about ${self.usd:.2f}" if self.usd >= 0.01 else f"about ${self.usd:.6f}"
            cost += f" ({self.basis})" if self.basis else ""
        cost += f"; {self.on_top}" if self.on_top else ""
        return (
            f"{model}: will send {self.texts:,} text(s), about {self.tokens:,} tokens "
            f"({self.cached:,} already cached); "
            f"cost {cost}." + self._paced()
        )

    def _paced(self) -> str:
        """What the rate limit adds: the last of n requests spaced 60 / rate seconds apart starts
        (n - 1) * 60 / rate seconds after the first."""
        least = (self.texts - 1) * 60.0 / self.rate if self.rate > 0 else 0.0
        if least < 1:
            return ""
        from bias.core.runs.budget import duration

        rate = f"{self.rate:,.0f}" if self.rate == int(self.rate) else f"{self.rate:,.2f}"
        return (
            f" At most {rate} request(s) a minute (its rate option): the last is sent "
            f"{duration(least)} after the first."
        )


@attrs.frozen
class Contact:
    """An address a model sends requests to, and the environment variable whose key goes with them
    (None: no key is sent). Said to the user before a run sends anything."""

    url: str
    key_env: str | None = None

    def line(self, model: str) -> str:
        key = f"with the key in {self.key_env}" if self.key_env else "with no key"
        return f"{model} sends requests to {shown_url(self.url)} {key}"


def shown_url(url: str) -> str:
    """An address as the user should read it: scheme, host (an IPv6 one in brackets), port and path,
    without a user name or password; a text that is no URL, as written."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    if not parts.scheme or not parts.hostname:
        return url
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path}"
