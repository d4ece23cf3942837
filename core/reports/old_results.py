"""Results written by earlier versions of the framework, read the way reports read today's.

A run folder keeps its results.jsonl for years; its report must still come out right. Two things
changed in what a result carries:

- the declaration of its number (`meta["value"]`): results written before it was carried get the
  one their metric declares now, and those written before a field existed (`meaning`, `figures`)
  get that field from it;
- how its p-value was computed: results now say it in words (`convention["p_value"]`, with
  `convention["p_floor"]`, see `PermutationTest.convention`). Earlier, the permutation tests of the
  association metrics wrote only their settings (`method`, `permutations`, `seed`, `ddof`,
  `alternative`); such a result, recognised by all of these settings and no `p_value`, is given the
  words those settings meant then. Nothing else reads those keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from bias.core.model import Result

_SIDES = {"greater": "one-sided (greater)", "less": "one-sided (less)", "two-sided": "two-sided"}


def upgraded(
    result: Result, declared: Callable[[str], dict[str, Any] | None] | None = None
) -> Result:
    """`result` as a report of today reads it; `declared(metric)` gives what a metric declares now
    (None where it is not installed)."""
    return _with_p_words(_with_declaration(result, declared) if declared is not None else result)


def _with_declaration(result: Result, declared: Callable[[str], dict[str, Any] | None]) -> Result:
    carried = (result.meta or {}).get("value")
    if isinstance(carried, dict) and "figures" in carried and "meaning" in carried:
        return result
    now = declared(result.metric)
    if now is None:
        return result
    value = {**now, **carried} if isinstance(carried, dict) else now
    return attrs.evolve(result, meta={**(result.meta or {}), "value": value})


def _with_p_words(result: Result) -> Result:
    c = result.convention or {}
    method, permutations = c.get("method"), c.get("permutations")
    written_before = (
        "p_value" not in c
        and method in ("exact", "sampled")
        and isinstance(permutations, int)
        and not isinstance(permutations, bool)
        and permutations > 0
        and "seed" in c
        and "alternative" in c
    )
    if not written_before:
        return result
    if method == "exact":
        bits = [f"exact test over {permutations:,} partitions"]
    else:
        bits = [f"sampled permutation test ({permutations:,} permutations, seed {c['seed']})"]
    if c.get("ddof") is not None:
        bits.append(f"ddof={c['ddof']}")
    bits.append(_SIDES.get(str(c["alternative"]), str(c["alternative"])))
    added: dict[str, Any] = {"p_value": ", ".join(bits)}
    if method == "sampled":
        added["p_floor"] = 1.0 / (permutations + 1)
    return attrs.evolve(result, convention={**c, **added})
