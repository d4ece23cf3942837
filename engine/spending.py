"""Before a paid model's first request: what its experiments will send, and whether that may be
spent.

An embedding service charges per token, so the runner asks the embedder (`Embedder.quote`, None for
a model that runs here) before its experiments start. The texts are found by running each
experiment's metric once on a stand-in that records every word and sentence asked for and answers
with deterministic vectors (nothing is sent, nothing is kept of that pass), so the count is that of
the real run whatever the metric does with its data. A metric that asks for replies (`generate`)
gets empty ones from the stand-in, and its requests reach `quote` as `Asked` values among the texts.
The embedder leaves out what its cache holds. Above the run's limit (`--max-cost`) the run stops
with the estimate, unless the spending was confirmed (`--confirm-cost`)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from bias.core.errors import USAGE, BiasError
from bias.core.generation import (
    Asked,
    GenerationRequest,
    Generations,
    Reply,
    Sampling,
    check_requests,
)
from bias.core.interfaces import Capability, Embedder, Quote
from bias.core.model import WordVectors
from bias.engine.inputs import InputModels, ModelInput

log = logging.getLogger(__name__)

DEFAULT_MAX_COST = 1.0  # US dollars a run may spend on one model without --confirm-cost
_WIDTH = 16


class Recorder(Embedder):
    """Stands in for a paid embedder: records the texts asked for, answers deterministic vectors."""

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.name, self.location, self.summary = real.name, real.location, "recording stand-in"
        # what it declares: available() could load (fit) it, and send
        self.capabilities = frozenset(real.capabilities)
        self.texts: dict[str, None] = {}
        self.asked: list[Asked] = []

    def available(self) -> frozenset[Capability]:
        return self.capabilities

    def _rows(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            self.texts[text] = None
            seed = int.from_bytes(
                hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).digest()[:8], "little"
            )
            rows.append(np.random.default_rng(seed).standard_normal(_WIDTH))
        return np.array(rows, dtype=np.float64).reshape(len(rows), _WIDTH)

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        kept = [w for w in dict.fromkeys(words) if isinstance(w, str) and w.strip()]
        return WordVectors(
            tuple(kept),
            self._rows(kept),
            lost=tuple(w for w in words if w not in set(kept)),
            approximated=(),
        )

    def encode(
        self, texts: Sequence[str], spans: Any = None, *, pooling: str = "mean", layer: Any = None
    ) -> np.ndarray:
        return self._rows(list(texts))

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling | None = None
    ) -> list[Generations]:
        """Records the requests; every reply is empty (the metric's count of unparsed replies is not
        kept)."""
        requests = check_requests(requests)
        sampling = sampling or Sampling()
        self.asked.append(Asked(tuple(requests), sampling))
        k = sampling.samples or 1
        return [
            Generations(tuple(Reply("") for _ in range(k)), sampling, "recording stand-in")
            for _ in requests
        ]

    def check(self) -> None:
        """Nothing to check: the real embedder was checked."""

    def fingerprint(self) -> str:
        return "recorder:" + self.real.fingerprint()


def texts_of(group: Sequence[Any], real: Embedder) -> tuple[list[Any], int]:
    """The texts the experiments of `group` (PlannedExperiment) will ask `real` for (and the `Asked`
    generation requests), and how many experiments could not be counted (their metric failed on the
    stand-in, or needs another model)."""
    recorder = Recorder(real)
    uncounted = 0
    previous = logging.root.manager.disable
    # the metrics' warnings belong to the real run, not to this count
    logging.disable(logging.WARNING)
    try:
        for p in group:
            uncounted += not _record(p, recorder)
    finally:
        logging.disable(previous)
    return [*recorder.texts, *recorder.asked], uncounted


def _record(p: Any, recorder: Recorder) -> bool:
    """Run one experiment's metric on the recorder; False when its texts could not be counted."""
    if any(isinstance(v, ModelInput) and v.spec is not None for v in p.inputs.values()):
        return False  # another model's texts: that model is asked when it is loaded, not here
    try:
        if p.inputs:
            p.metric.compute(
                recorder,
                p.data,
                seed=p.experiment.seed,
                inputs=InputModels().resolve(p.inputs, recorder),
            )
        else:
            p.metric.compute(recorder, p.data, seed=p.experiment.seed)
    except Exception:  # the real run reports its own errors; here only the texts matter
        log.debug("counting the texts of %s failed", p.experiment.key, exc_info=True)
        return False
    return True


def check_spending(
    embedder: Embedder,
    group: Sequence[Any],
    model: str,
    max_cost: float | None,
    confirmed: bool,
    config: Any = None,
) -> str | None:
    """The line announcing what `model`'s experiments will send and cost, or None when the model is
    free to ask; raises BiasError when the estimate is above `max_cost` and not confirmed. `config`
    (the model's ModelConfig): a price an experiment file gave can raise the estimate, never lower
    it."""
    if embedder.quote(()) is None:
        return None
    texts, uncounted = texts_of(group, embedder)
    quote: Quote | None = embedder.quote(texts)
    if quote is None:
        return None
    quote = _at_least_without_file_costs(quote, texts, config)
    line = quote.line(model, uncounted)
    limit = DEFAULT_MAX_COST if max_cost is None else max_cost
    # an experiment not counted, or a debiasing fit, may send anything: it counts as sending
    unpriced = (
        quote.usd is None and quote.sends(uncounted) and _at_provider(embedder) and not confirmed
    )
    if unpriced and max_cost is not None:
        # A paid provider's model without a list price: the user's cap cannot be checked, so nothing
        # is sent on the strength of it (a shared file may name any model).
        raise BiasError(
            f"{line} --max-cost {max_cost:g} cannot be checked without a price; nothing was sent.",
            "Give the model's price with --model-option price=N (US dollars per million tokens), "
            "or run again with --confirm-cost to send without an estimate.",
            exit_code=USAGE,
        )
    if quote.usd is not None and quote.usd > limit and not confirmed:
        raise BiasError(
            f"{line} That is above --max-cost {limit:g} (US dollars); nothing was sent.",
            "Run again with --confirm-cost to spend it, or raise --max-cost.",
            exit_code=USAGE,
        )
    if unpriced:
        # A paid provider's own address, a model whose price nobody gave: --max-cost cannot be
        # checked, and a file naming such a model with many samples could spend without a bound.
        raise BiasError(
            f"{line} The price is not known, so --max-cost cannot be checked; nothing was sent.",
            "Give the price with --model-option price=N --model-option price_output=M (US "
            "dollars per million tokens), or run again with --confirm-cost to send without an "
            "estimate.",
            exit_code=USAGE,
        )
    return line


def _at_provider(embedder: Embedder) -> bool:
    """Whether a service model sends to its provider's own (paid) address, not to a base_url
    given; a debiased view sends where its source does."""
    while isinstance(getattr(embedder, "source", None), Embedder):
        embedder = embedder.source
    default = str(getattr(embedder, "default_base_url", "") or "").rstrip("/")
    return bool(default) and str(getattr(embedder, "endpoint", "")).rstrip("/") == default


def _at_least_without_file_costs(quote: Quote, texts: Sequence[str], config: Any) -> Quote:
    """The estimate, no lower than it is without the options declared guard="cost" (a price) that an
    experiment file gave: a file can make a run look dearer, never cheaper, so it cannot get past
    the user's --max-cost. The basis says which price counted and where it came from."""
    from bias import registry
    from bias.core.params import describe_params
    from bias.core.specs import ModelSpec
    from bias.registry.resolve import embedder_class

    if config is None or not getattr(config, "origin", ""):
        return quote
    parsed = config.parsed
    costs = {p.name for p in describe_params(embedder_class(parsed.embedder)) if p.guard == "cost"}
    given = {
        k: v
        for k, v in parsed.options.items()
        if str(k).replace("-", "_") in costs and k not in config.command_line
    }
    if not given:
        return quote
    written = ", ".join(f"{k} = {v}" for k, v in sorted(given.items()))
    without = {k: v for k, v in parsed.options.items() if k not in given}
    floor = registry.build_embedder(
        ModelSpec(parsed.embedder, parsed.location, without), config.debias
    ).quote(texts)
    if floor is not None and floor.usd is None and quote.usd is not None:
        # Without the file's price there is none: the file's would be the only one, and it could
        # be as low as the file likes.
        return attrs.evolve(
            floor,
            basis=f"{floor.basis}; {written} from {config.origin} is not "
            "used (a file's price can only raise an estimate)",
        )
    if floor is None or floor.usd is None or (quote.usd is not None and quote.usd >= floor.usd):
        return attrs.evolve(quote, basis=f"{quote.basis} ({written} from {config.origin})")
    return attrs.evolve(
        floor, basis=f"{floor.basis}; {written} from {config.origin} is lower and not used"
    )
