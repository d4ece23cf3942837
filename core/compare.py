"""Before/after tables of two runs: the same tests on two models (typically a model and its debiased
version), paired by word set, metric and parameters, as in Table 1 of the Dutch word-embedding study
(effect before -> after, significance marked).

Built from results files alone, like every report, so a comparison can be redone at any time.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

import attrs
from bias.core.errors import BiasError
from bias.core.model import OK, Result
from bias.core.reports.tables import significance

STARS = (
    "Marks on the Holm-adjusted p over each run's tests (as `bias run` marks them): "
    "* p < 0.05, ** p < 0.01, *** p < 0.001; no mark: not significant or no p-value."
)


@attrs.frozen
class Comparison:
    """One test on both models; either side may be missing (the test ran in one run only)."""

    wordset: str
    metric: str
    params: dict[str, Any]
    before: Result | None
    after: Result | None

    @property
    def change(self) -> float | None:
        """after - before of the effect sizes (None unless both are there)."""
        b, a = _effect(self.before), _effect(self.after)
        return None if a is None or b is None else a - b

    @property
    def magnitude_change(self) -> float | None:
        """|after| - |before|: negative when the effect moved towards zero."""
        b, a = _effect(self.before), _effect(self.after)
        return None if a is None or b is None else abs(a) - abs(b)


@attrs.frozen
class ComparisonTable:
    before_model: str
    after_model: str
    rows: tuple[Comparison, ...]
    notes: tuple[str, ...] = ()
    holm: dict[str, float] = attrs.Factory(dict)  # Holm-adjusted p by result key, within each run's model


def _effect(r: Result | None) -> float | None:
    return r.effect_size if r is not None and r.status == OK else None


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


def single_model(results: Sequence[Result], side: str, model: str | None) -> tuple[list[Result], str]:
    """The results of one model of a run: the one named, or the only one there is."""
    models = list(dict.fromkeys(r.model for r in results))
    if model is not None:
        chosen = [r for r in results if r.model == model]
        if not chosen:
            raise BiasError(f"The {side} run has no results of model '{model}'.", f"Its models: {', '.join(models) or 'none'}.")
        return chosen, model
    if len(models) > 1:
        raise BiasError(
            f"The {side} run holds results of {len(models)} models ({', '.join(models[:4])}); a comparison pairs one model with another.",
            f"Choose one with --{side}-model MODEL.",
        )
    if not models:
        raise BiasError(f"The {side} run has no results.", "Give a folder written by `bias run --out`.")
    return list(results), models[0]


def compare(
    before: Sequence[Result], after: Sequence[Result], *, before_model: str | None = None, after_model: str | None = None
) -> ComparisonTable:
    """Pair the results of two runs by (word set, metric, parameters), in the order of the before run.

    Where one side has several results of the same test (several seeds, or a test run twice), results
    are paired by seed; otherwise the last result of each side is taken, and a note says so.
    """
    before_results, before_label = single_model(before, "before", before_model)
    after_results, after_label = single_model(after, "after", after_model)
    notes: list[str] = []
    groups: dict[tuple[str, str, str], dict[str, list[Result]]] = {}
    for side, results in (("before", before_results), ("after", after_results)):
        for r in results:
            groups.setdefault((r.wordset, r.metric, params_key(r.params)), {"before": [], "after": []})[side].append(r)
    rows: list[Comparison] = []
    for (wordset, metric, _), sides in groups.items():
        params = (sides["before"] or sides["after"])[0].params
        b, a = sides["before"], sides["after"]
        if len(b) <= 1 and len(a) <= 1:
            rows.append(Comparison(wordset, metric, params, b[0] if b else None, a[0] if a else None))
            continue
        b_seed = {r.seed: r for r in b}  # the last result of each seed
        a_seed = {r.seed: r for r in a}
        shared = [s for s in b_seed if s in a_seed]
        if shared:
            rows.extend(Comparison(wordset, metric, params, b_seed[s], a_seed[s]) for s in shared)
            unpaired = len(b_seed) + len(a_seed) - 2 * len(shared)
            if unpaired:
                notes.append(f"{wordset} / {metric}: {unpaired} result(s) with a seed run on one side only were left out")
        else:
            rows.append(Comparison(wordset, metric, params, b[-1] if b else None, a[-1] if a else None))
            notes.append(f"{wordset} / {metric}: several results without a shared seed; the last of each run is compared")
    only = [r for r in rows if r.before is None or r.after is None]
    if only:
        notes.append(f"{len(only)} test(s) ran in one run only (shown with '-' on the other side)")
    from bias.core.multiple_testing import adjust

    holm = {key: a.holm for results in (before_results, after_results) for key, a in adjust(_latest(results)).items()}
    return ComparisonTable(before_label, after_label, tuple(rows), tuple(notes), holm)


def _latest(results: Sequence[Result]) -> list[Result]:
    """One result per key (the last line of each), as the run's own report corrects them."""
    return list({r.key: r for r in results}.values())


# --- rendering (plain text cells, shared by the terminal, Markdown and CSV) ------------------------


def effect_cell(r: Result | None, holm: dict[str, float] | None = None) -> str:
    if r is None:
        return "-"
    if r.status != OK:
        return r.status
    if r.effect_size is None:
        return "-"
    from bias.core.reports.values import kind_of

    return f"{kind_of(r.metric).format(r.effect_size, 3)}{significance((holm or {}).get(r.key))}"


def change_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def varying_params(table: ComparisonTable) -> dict[tuple[str, str], list[str]]:
    """For each (word set, metric) that appears with several parameter sets, the parameters that differ;
    only those are worth a column entry."""
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in table.rows:
        seen.setdefault((row.wordset, row.metric), []).append(row.params)
    out = {}
    for key, all_params in seen.items():
        names = sorted({k for p in all_params for k in p})
        differ = [k for k in names if len({json.dumps(p.get(k), sort_keys=True, default=str) for p in all_params}) > 1]
        if differ:
            out[key] = differ
    return out


def cells(table: ComparisonTable) -> list[dict[str, str]]:
    varying = varying_params(table)
    out = []
    for row in table.rows:
        names = varying.get((row.wordset, row.metric), [])
        out.append(
            {
                "wordset": row.wordset,
                "metric": row.metric + (" (" + ", ".join(f"{k}={row.params.get(k)}" for k in names) + ")" if names else ""),
                "before": effect_cell(row.before, table.holm),
                "after": effect_cell(row.after, table.holm),
                "change": change_cell(row.change),
            }
        )
    return out


COLUMNS = (("wordset", "Test"), ("metric", "Metric"), ("before", "Before"), ("after", "After"), ("change", "Change"))


def markdown(table: ComparisonTable, title: str = "Before and after") -> str:
    lines = [f"# {title}", "", f"Before: {table.before_model}  ", f"After: {table.after_model}", ""]
    lines.append("| " + " | ".join(label for _, label in COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in cells(table):
        lines.append("| " + " | ".join(row[k].replace("|", "\\|") for k, _ in COLUMNS) + " |")
    lines += ["", f"Effect sizes as each metric defines them (see `bias info METRIC`); change = after - before. {STARS}"]
    if table.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in table.notes]
    return "\n".join(lines) + "\n"


CSV_FIELDS = (
    "wordset", "metric", "params", "before_model", "after_model",
    "before_status", "before_effect", "before_p", "before_p_holm", "before_significance",
    "after_status", "after_effect", "after_p", "after_p_holm", "after_significance",
    "change", "magnitude_change",
)


def csv_text(table: ComparisonTable) -> str:
    """Every figure in full precision, for spreadsheets and plots; `*_p_holm` is the Holm-adjusted p
    over the tests of that model in its run (as the run's report computes it)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in table.rows:
        entry: dict[str, Any] = {
            "wordset": row.wordset,
            "metric": row.metric,
            "params": params_key(row.params),
            "before_model": table.before_model,
            "after_model": table.after_model,
            "change": "" if row.change is None else repr(row.change),
            "magnitude_change": "" if row.magnitude_change is None else repr(row.magnitude_change),
        }
        for side, r in (("before", row.before), ("after", row.after)):
            entry[f"{side}_status"] = "missing" if r is None else r.status
            entry[f"{side}_effect"] = "" if _effect(r) is None else repr(_effect(r))
            p = r.p_value if r is not None and r.status == OK else None
            entry[f"{side}_p"] = "" if p is None else repr(p)
            holm = table.holm.get(r.key) if r is not None and p is not None else None
            entry[f"{side}_p_holm"] = "" if holm is None else repr(holm)
            entry[f"{side}_significance"] = significance(holm)
        writer.writerow(entry)
    return buffer.getvalue()


__all__ = ["Comparison", "ComparisonTable", "compare", "markdown", "csv_text", "cells", "STARS"]
