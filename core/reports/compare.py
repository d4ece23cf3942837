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
from pathlib import Path
from typing import Any

import attrs
from bias.core.text import cell_value, csv_cell, natural_key
from bias.core.errors import BiasError
from bias.core.statistics.mcnemar import McNemar, mcnemar
from bias.core.model import OK, Result
from bias.core.reports.cells import md_text
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
    paired: McNemar | None = None  # McNemar's test on the per-item predictions (probe results)

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
    # Holm-adjusted p by result key, within each run's model
    holm: dict[str, float] = attrs.Factory(dict)


def _effect(r: Result | None) -> float | None:
    return r.effect_size if r is not None and r.status == OK else None


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


def side_name(label: str) -> str:
    """A model label as a reader tells the two sides apart: the spec, then what was done to it
    (`hf:bert[debias=sent,debias_lists=en/debias-gender]` -> `hf:bert, debiased by sent (lists
    en/debias-gender)`), so an original and its debiased version never read as the same model."""
    spec, bracket, rest = label.partition("[")
    if not bracket or not rest.endswith("]"):
        return label
    options = dict(part.split("=", 1) for part in rest[:-1].split(",") if "=" in part)
    method = options.pop("debias", None)
    said = [f"debiased by {method}"] if method else []
    lists = options.pop("debias_lists", None) or options.pop("debias_language", None)
    if method and lists:
        said[0] += f" (lists {lists})"
    said += [f"{k}={v}" for k, v in options.items()]
    return f"{spec}, {', '.join(said)}" if said else spec


def single_model(
    results: Sequence[Result], side: str, model: str | None
) -> tuple[list[Result], str]:
    """The results of one model of a run: the one named, or the only one there is."""
    models = list(dict.fromkeys(r.model for r in results))
    if model is not None:
        chosen = [r for r in results if r.model == model]
        if not chosen:
            raise BiasError(
                f"The {side} run has no results of model '{model}'.",
                f"Its models: {', '.join(models) or 'none'}.",
            )
        return chosen, model
    if len(models) > 1:
        raise BiasError(
            f"The {side} run holds results of {len(models)} models "
            f"({', '.join(models[:4])}); a comparison pairs one model with another.",
            f"Choose one with --{side}-model MODEL.",
        )
    if not models:
        raise BiasError(
            f"The {side} run has no results.", "Give a folder written by `bias run --out`."
        )
    return list(results), models[0]


def _other_settings(only: Sequence[Comparison]) -> list[str]:
    """For a test that each run ran with other parameters (two rows, each one-sided): which
    parameters differ, so that "ran in one run only" is not read as a test one run left out."""
    out = []
    for wordset, metric in dict.fromkeys((r.wordset, r.metric) for r in only):
        before = [r.params for r in only if (r.wordset, r.metric) == (wordset, metric) and r.before]
        after = [r.params for r in only if (r.wordset, r.metric) == (wordset, metric) and r.after]
        if before and after:
            b, a = before[0], after[0]
            differ = sorted(k for k in {*b, *a} if b.get(k) != a.get(k))
            if not differ:  # the same values written apart (1 and 1.0)
                continue
            out.append(
                f"{wordset} / {metric} ran in both runs, with other settings: "
                + ", ".join(f"{k} {b.get(k)!r} before, {a.get(k)!r} after" for k in differ[:6])
                + (f" and {len(differ) - 6} more" if len(differ) > 6 else "")
            )
    return out


def compare(
    before: Sequence[Result],
    after: Sequence[Result],
    *,
    before_model: str | None = None,
    after_model: str | None = None,
    before_folder: Path | None = None,
    after_folder: Path | None = None,
) -> ComparisonTable:
    """Pair the results of two runs by (word set, metric, parameters), in the order of the before
    run.

    Where one side has several results of the same test (several seeds, or a test run twice),
    results are paired by seed; otherwise the last result of each side is taken, and a note says so.
    Results with per-item predictions (the probe; kept in a CSV beside the results, found in the run
    folders) also get McNemar's test on the texts both runs predicted."""
    before_results, before_label = single_model(before, "before", before_model)
    after_results, after_label = single_model(after, "after", after_model)
    notes: list[str] = []
    groups: dict[tuple[str, str, str], dict[str, list[Result]]] = {}
    for side, results in (("before", before_results), ("after", after_results)):
        for r in results:
            groups.setdefault(
                (r.wordset, r.metric, params_key(r.params)), {"before": [], "after": []}
            )[side].append(r)
    rows: list[Comparison] = []
    # Tests in natural order (weat2 before weat10), the metrics of one test as they ran.
    for (wordset, metric, _), sides in sorted(
        groups.items(), key=lambda item: natural_key(item[0][0])
    ):
        params = (sides["before"] or sides["after"])[0].params
        b, a = sides["before"], sides["after"]
        if len(b) <= 1 and len(a) <= 1:
            rows.append(
                Comparison(wordset, metric, params, b[0] if b else None, a[0] if a else None)
            )
            continue
        b_seed = {r.seed: r for r in b}  # the last result of each seed
        a_seed = {r.seed: r for r in a}
        shared = [s for s in b_seed if s in a_seed]
        if shared:
            rows.extend(Comparison(wordset, metric, params, b_seed[s], a_seed[s]) for s in shared)
            unpaired = len(b_seed) + len(a_seed) - 2 * len(shared)
            if unpaired:
                notes.append(
                    f"{wordset} / {metric}: {unpaired} result(s) with a seed run on one "
                    "side only were left out"
                )
        else:
            rows.append(
                Comparison(wordset, metric, params, b[-1] if b else None, a[-1] if a else None)
            )
            notes.append(
                f"{wordset} / {metric}: several results without a shared seed; the last of "
                "each run is compared"
            )
    rows = [_with_paired_test(row, before_folder, after_folder, notes) for row in rows]
    only = [r for r in rows if r.before is None or r.after is None]
    if only:
        notes.append(f"{len(only)} test(s) ran in one run only (shown with '-' on the other side)")
        notes += _other_settings(only)
    from bias.core.statistics.multiple_testing import adjust

    holm = {
        key: a.holm
        for results in (before_results, after_results)
        for key, a in adjust(_latest(results)).items()
    }
    return ComparisonTable(before_label, after_label, tuple(rows), tuple(notes), holm)


def predictions_of(result: Result, folder: Path | None) -> list[dict[str, Any]] | None:
    """The per-item predictions of a result: inline rows, or the CSV the result store wrote beside
    results.jsonl (named in figures["predictions"]); None when there are none or the file is
    gone."""
    found = (result.figures or {}).get("predictions")
    if isinstance(found, list):
        return found
    if not isinstance(found, str) or folder is None:
        return None
    from bias.core.runs.folder import readable_in_run

    path = readable_in_run(Path(folder), found, "figures.predictions in results.jsonl")
    if path is None:
        return None
    from bias.core.runs.item_tables import table_text, within_cells

    try:
        with table_text(path, "table") as fh:
            reader = csv.DictReader(fh)
            rows = within_cells(reader, len(reader.fieldnames or ()), path)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    # the cells as written before `csv_cell` defused them
    return [{cell_value(k): cell_value(v) for k, v in row.items()} for row in rows]


def _truth(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _with_paired_test(
    row: Comparison, before_folder: Path | None, after_folder: Path | None, notes: list[str]
) -> Comparison:
    if row.before is None or row.after is None or row.before.status != OK or row.after.status != OK:
        return row
    if "predictions" not in (row.before.figures or {}) or "predictions" not in (
        row.after.figures or {}
    ):
        return row
    where = f"{row.wordset} / {row.metric}"
    sides = [predictions_of(row.before, before_folder), predictions_of(row.after, after_folder)]
    if sides[0] is None or sides[1] is None:
        notes.append(f"{where}: the per-item predictions file of a run is missing; no paired test")
        return row
    keyed = [{str(r.get("index")): r for r in side} for side in sides]
    shared = [k for k in keyed[0] if k in keyed[1]]
    differ = [
        k
        for k in shared
        if (keyed[0][k].get("text"), str(keyed[0][k].get("label")))
        != (keyed[1][k].get("text"), str(keyed[1][k].get("label")))
    ]
    if differ or not shared:
        notes.append(
            f"{where}: the two runs predicted different texts (item {differ[0]} differs)"
            if differ
            else f"{where}: the two runs share no predicted text (different splits: same seed "
            "and test_size are needed)"
        )
        return row
    if len(shared) < max(len(keyed[0]), len(keyed[1])):
        notes.append(
            f"{where}: McNemar on the {len(shared)} texts both runs held out (the splits "
            "differ; use the same seed and test_size)"
        )
    test = mcnemar(
        [_truth(keyed[0][k].get("correct")) for k in shared],
        [_truth(keyed[1][k].get("correct")) for k in shared],
    )
    return attrs.evolve(row, paired=test)


def _latest(results: Sequence[Result]) -> list[Result]:
    """One result per key (the last line of each), as the run's own report corrects them."""
    return list({r.key: r for r in results}.values())


# --- rendering (plain text cells, shared by the terminal, Markdown and CSV)
# ------------------------


def effect_cell(r: Result | None, holm: dict[str, float] | None = None) -> str:
    if r is None:
        return "-"
    if r.status != OK:
        return r.status
    if r.effect_size is None:
        return "-"
    from bias.core.reports.values import kind_of

    return f"{kind_of(r).format(r.effect_size, 3)}{significance((holm or {}).get(r.key))}"


def change_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def paired_cell(test: McNemar | None) -> str:
    """McNemar's p with its counts: `p=0.031 (b=9, c=2; exact)`."""
    if test is None:
        return ""
    from bias.core.reports.values import format_p

    form = "exact" if test.statistic is None else "chi2"
    return f"p={format_p(test.p_value)} (b={test.before_only}, c={test.after_only}; {form})"


PAIRED_NOTE = (
    "McNemar: paired test of the per-text predictions; b = texts right before and wrong "
    "after, c = wrong "
    "before and right after; exact = two-sided exact binomial test of b among b + c (used "
    "when b + c < 25), "
    "chi2 = chi-square with continuity correction (|b - c| - 1)^2 / (b + c), 1 degree of freedom."
)


def has_paired(table: ComparisonTable) -> bool:
    return any(row.paired is not None for row in table.rows)


def columns(table: ComparisonTable) -> tuple[tuple[str, str], ...]:
    """The table's columns: McNemar's only when some row has a paired test."""
    return COLUMNS + ((("paired", "McNemar"),) if has_paired(table) else ())


def varying_params(table: ComparisonTable) -> dict[tuple[str, str], list[str]]:
    """For each (word set, metric) that appears with several parameter sets, the parameters that
    differ; only those are worth a column entry."""
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in table.rows:
        seen.setdefault((row.wordset, row.metric), []).append(row.params)
    out = {}
    for key, all_params in seen.items():
        names = sorted({k for p in all_params for k in p})
        differ = [
            k
            for k in names
            if len({json.dumps(p.get(k), sort_keys=True, default=str) for p in all_params}) > 1
        ]
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
                "metric": row.metric
                + (
                    " (" + ", ".join(f"{k}={row.params.get(k)}" for k in names) + ")"
                    if names
                    else ""
                ),
                "before": effect_cell(row.before, table.holm),
                "after": effect_cell(row.after, table.holm),
                "change": change_cell(row.change),
                "paired": paired_cell(row.paired),
            }
        )
    return out


COLUMNS = (
    ("wordset", "Test"),
    ("metric", "Metric"),
    ("before", "Before"),
    ("after", "After"),
    ("change", "Change"),
)


def markdown(table: ComparisonTable, title: str = "Before and after") -> str:
    lines = [
        f"# {md_text(title)}",
        "",
        f"Before: {md_text(side_name(table.before_model))}  ",
        f"After: {md_text(side_name(table.after_model))}",
        "",
    ]
    shown = columns(table)
    lines.append("| " + " | ".join(label for _, label in shown) + " |")
    lines.append("|" + "|".join("---" for _ in shown) + "|")
    for row in cells(table):
        lines.append("| " + " | ".join(md_text(row[k]) for k, _ in shown) + " |")
    lines += [
        "",
        "Effect sizes as each metric defines them (see `bias info METRIC`); change = "
        f"after - before. {STARS}",
    ]
    if has_paired(table):
        lines += ["", PAIRED_NOTE]
    if table.notes:
        lines += ["", "## Notes", ""] + [f"- {md_text(n)}" for n in table.notes]
    return "\n".join(lines) + "\n"


CSV_FIELDS = (
    "wordset",
    "metric",
    "params",
    "before_model",
    "after_model",
    "before_status",
    "before_effect",
    "before_p",
    "before_p_holm",
    "before_significance",
    "after_status",
    "after_effect",
    "after_p",
    "after_p_holm",
    "after_significance",
    "change",
    "magnitude_change",
    "paired_test",
    "paired_n",
    "paired_before_only",
    "paired_after_only",
    "paired_statistic",
    "paired_p",
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
        test = row.paired
        entry.update(
            {
                "paired_test": "" if test is None else f"McNemar, {test.method}",
                "paired_n": "" if test is None else test.n,
                "paired_before_only": "" if test is None else test.before_only,
                "paired_after_only": "" if test is None else test.after_only,
                "paired_statistic": ""
                if test is None or test.statistic is None
                else repr(test.statistic),
                "paired_p": "" if test is None else repr(test.p_value),
            }
        )
        for side, r in (("before", row.before), ("after", row.after)):
            entry[f"{side}_status"] = "missing" if r is None else r.status
            entry[f"{side}_effect"] = "" if _effect(r) is None else repr(_effect(r))
            p = r.p_value if r is not None and r.status == OK else None
            entry[f"{side}_p"] = "" if p is None else repr(p)
            holm = table.holm.get(r.key) if r is not None and p is not None else None
            entry[f"{side}_p_holm"] = "" if holm is None else repr(holm)
            entry[f"{side}_significance"] = significance(holm)
        writer.writerow({k: csv_cell(v) for k, v in entry.items()})
    return buffer.getvalue()


__all__ = [
    "Comparison",
    "ComparisonTable",
    "compare",
    "markdown",
    "csv_text",
    "cells",
    "columns",
    "STARS",
    "PAIRED_NOTE",
]
