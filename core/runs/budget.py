"""Time and memory of the resampling an experiment asks for, estimated before any work.

A typo such as `--permutations 1000000000000` must not end hours later in a MemoryError: the count
is checked against a stated limit when the run is planned, and refused with the estimate and a hint.
Each metric declares what it costs (`Metric.cost`, built from the helpers here); this module reads
no parameter by name. The rates are deliberately rough (elements of the sampled matrices per second
on one core); what matters is the order of magnitude."""

from __future__ import annotations

import logging
import os

import attrs

from bias.core.errors import BiasError

log = logging.getLogger(__name__)

MAX_SECONDS = (
    3600.0  # one experiment's resampling may take up to an hour; beyond that it is refused
)
WARN_SECONDS = 60.0  # announced beforehand when longer than a minute
MEMORY_SHARE = 0.5  # of the memory available now
ELEMENTS_PER_SECOND = (
    1e8  # sampled-matrix elements handled per second (benchmarks/ measure 0.3-2e8)
)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux MemAvailable, else physical pages free), None if
    unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"about {seconds / size:,.1f} {unit}"
    if seconds < 1:
        return "less than a second"
    return f"about {seconds:,.0f} second{'' if round(seconds) == 1 else 's'}"


@attrs.frozen
class Cost:
    """What an experiment will cost, as its metric declares it before any work (`Metric.cost`).

    `causes` names what makes the cost, each with its share of the seconds, in the words of the
    option that sets it (`--permutations 1,000,000`), so a refusal tells the user what to lower;
    `hint` says what a sensible setting is. Costs add up: `permutation_cost(...) +
    bootstrap_cost(...)`."""

    seconds: float = 0.0
    memory: int = 0  # bytes
    causes: tuple[tuple[str, float], ...] = ()
    hint: str = ""

    @classmethod
    def of_elements(cls, elements: float, memory: int, cause: str, hint: str = "") -> Cost:
        """The cost of handling `elements` numbers of sampled matrices (seconds at a rough rate of
        ELEMENTS_PER_SECOND) and holding `memory` bytes, made by the option described in `cause`."""
        seconds = elements / ELEMENTS_PER_SECOND
        return cls(seconds, int(memory), ((cause, seconds),), hint)

    def __add__(self, other: Cost) -> Cost:
        hint = " ".join(h for h in (self.hint, other.hint) if h)
        return Cost(
            self.seconds + other.seconds,
            self.memory + other.memory,
            self.causes + other.causes,
            hint,
        )

    @property
    def what(self) -> str:
        """The options that make the cost: those taking at least a tenth of the time."""
        named = [c for c, part in self.causes if part >= 0.1 * self.seconds]
        return " and ".join(named) or "its settings"


PERMUTATION_HINT = "--permutations 100000 resolves p down to 1e-5."
BOOTSTRAP_HINT = "--bootstrap 2000 gives a stable 95% interval."


def permutation_cost(n_x: int, n_y: int, permutations: int, exact_limit: int) -> Cost:
    """A permutation test of two groups of n_x and n_y scores
    (`bias.core.statistics.association.permutation_test`): exact over every partition when there are
    at most `exact_limit`, else `permutations` random ones."""
    from bias.core.statistics.association import n_partitions

    if not (n_x and n_y):
        return Cost()
    n = n_x + n_y
    exact = n_partitions(n, n_x)
    if exact <= exact_limit:
        cause = f"--exact-limit {exact_limit:,} (an exact test of {exact:,} partitions)"
        # the partition table and the null distribution
        return Cost.of_elements(exact * n, exact * (n_x + 1) * 8, cause, PERMUTATION_HINT)
    return Cost.of_elements(
        permutations * max(n, 40), 0, f"--permutations {permutations:,}", PERMUTATION_HINT
    )


def bootstrap_cost(sizes: dict[str, int], resamples: int) -> Cost:
    """A bootstrap of an association test's effect size
    (`bias.core.statistics.bootstrap.association_ci`) with `resamples` resamples of target sets X, Y
    and attribute sets A, B of the given sizes."""
    n = sizes.get("X", 0) + sizes.get("Y", 0)
    if resamples <= 0 or not n:
        return Cost()
    per = (sizes.get("A", 0) + sizes.get("B", 0)) * n + 2 * n
    return Cost.of_elements(
        resamples * max(per, 40), resamples * 8 * 3, f"--bootstrap {resamples:,}", BOOTSTRAP_HINT
    )


def check(label: str, cost: Cost | None) -> None:
    """Refuse an experiment whose declared cost exceeds the limits; announce a long one. A metric
    that declares no cost (None) is not checked."""
    if cost is None:
        return
    what = cost.what
    hint = f"Use fewer: {cost.hint}" if cost.hint else "Choose smaller settings."
    if cost.seconds > MAX_SECONDS:
        raise BiasError(
            f"{label}: {what} would take {duration(cost.seconds)}, beyond the limit of "
            f"{duration(MAX_SECONDS)} per experiment.",
            hint,
        )
    free = available_memory()
    if free is not None and cost.memory > MEMORY_SHARE * free:
        raise BiasError(
            f"{label}: {what} would need about {cost.memory / 2**30:,.1f} GiB of memory; "
            f"{free / 2**30:,.1f} GiB are available.",
            hint,
        )
    if cost.seconds > WARN_SECONDS:
        log.warning("%s: %s will take %s.", label, what, duration(cost.seconds))
