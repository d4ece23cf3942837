"""Time and memory of the resampling an experiment asks for, estimated before any work.

A typo such as `--permutations 1000000000000` must not end hours later in a MemoryError: the count is
checked against a stated limit when the run is planned, and refused with the estimate and a hint.
The rates are deliberately rough (elements of the sampled matrices per second on one core); what
matters is the order of magnitude.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from bias.core.errors import BiasError

log = logging.getLogger(__name__)

MAX_SECONDS = 3600.0  # one experiment's resampling may take up to an hour; beyond that it is refused
WARN_SECONDS = 60.0  # announced beforehand when longer than a minute
MEMORY_SHARE = 0.5  # of the memory available now
ELEMENTS_PER_SECOND = 1e8  # sampled-matrix elements handled per second (benchmarks/ measure 0.3-2e8)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux MemAvailable, else physical pages free), None if unknown."""
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
    return f"about {seconds:,.0f} seconds"


def estimate(params: dict[str, Any], sizes: dict[str, int]) -> tuple[float, int, list[str]]:
    """Seconds, bytes and the options that dominate them, for a test with target sets X, Y and
    attribute sets A, B of the given sizes."""
    from bias.core.stats import n_partitions

    n_x, n_y = sizes.get("X", 0), sizes.get("Y", 0)
    n_a, n_b = sizes.get("A", 0), sizes.get("B", 0)
    n = n_x + n_y
    seconds, memory, causes = 0.0, 0, []
    permutations = params.get("permutations")
    if isinstance(permutations, int) and n_x and n_y:
        exact = n_partitions(n, n_x)
        if exact <= int(params.get("exact_limit", 100_000)):
            part = exact * n / ELEMENTS_PER_SECOND
            memory += exact * (n_x + 1) * 8  # the partition table and the null distribution
            causes.append((f"--exact-limit {params.get('exact_limit'):,} (an exact test of {exact:,} partitions)", part))
        else:
            part = permutations * max(n, 40) / ELEMENTS_PER_SECOND
            causes.append((f"--permutations {permutations:,}", part))
        seconds += part
    resamples = params.get("bootstrap")
    if isinstance(resamples, int) and resamples > 0 and n:
        per = (n_a + n_b) * n + 2 * n
        part = resamples * max(per, 40) / ELEMENTS_PER_SECOND
        seconds += part
        memory += resamples * 8 * 3
        causes.append((f"--bootstrap {resamples:,}", part))
    # Name only what makes the cost: the options taking at least a tenth of the time.
    return seconds, memory, [c for c, part in causes if part >= 0.1 * seconds]


def check(label: str, params: dict[str, Any], sizes: dict[str, int]) -> None:
    """Refuse an experiment whose resampling would exceed the limits; announce a long one."""
    seconds, memory, causes = estimate(params, sizes)
    what = " and ".join(causes) or "its settings"
    if seconds > MAX_SECONDS:
        raise BiasError(
            f"{label}: {what} would take {duration(seconds)}, beyond the limit of {duration(MAX_SECONDS)} per experiment.",
            "Use fewer: --permutations 100000 resolves p down to 1e-5, --bootstrap 2000 gives a stable 95% interval.",
        )
    free = available_memory()
    if free is not None and memory > MEMORY_SHARE * free:
        raise BiasError(
            f"{label}: {what} would need about {memory / 2**30:,.1f} GiB of memory; {free / 2**30:,.1f} GiB are available.",
            "Use fewer permutations or resamples, or a lower --exact-limit.",
        )
    if seconds > WARN_SECONDS:
        log.warning("%s: %s will take %s.", label, what, duration(seconds))
