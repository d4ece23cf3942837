"""How many CPU threads a run's numerical libraries use (`bias run --threads`).

torch and the BLAS under numpy and scipy each start one thread per core by default. On a quiet
machine two threads nearly halve an LM's time; on a shared one every operator then waits for its
slowest thread, and the same work takes twice as long as on one thread. The number is therefore a
choice, set once for the process and recorded in every result (`meta.threads`).
"""

from __future__ import annotations

import os
import sys

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_chosen: int | None = None


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's or a scheduler's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def available_cores() -> int:
    """The threads torch starts with by default: OMP_NUM_THREADS when it is set to a count, else the
    CPUs this process may run on."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    return usable_cpus()


def use_threads(count: int) -> None:
    """`count` threads for BLAS (numpy, scipy) and torch from now on: libraries loaded already are
    set through threadpoolctl and torch's own call, libraries loaded later read the environment."""
    global _chosen
    # more threads than CPUs only wait for each other (a Ray worker's count comes from the driver)
    _chosen = max(1, min(int(count), usable_cpus()))
    for name in _ENV:
        os.environ[name] = str(_chosen)
    from threadpoolctl import threadpool_limits

    threadpool_limits(_chosen)
    apply_to_torch()


def apply_to_torch() -> None:
    """Give torch the chosen count if it was imported after `use_threads` (a model's load imports
    it)."""
    torch = sys.modules.get("torch")
    if _chosen is not None and torch is not None and torch.get_num_threads() != _chosen:
        torch.set_num_threads(_chosen)


def in_use() -> int | None:
    """The count chosen with `use_threads`, else torch's own when it is loaded, else None
    (unknown)."""
    if _chosen is not None:
        return _chosen
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None
