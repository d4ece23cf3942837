"""How far the methods of a run agree: correlations of their scores across (model, test) cells.

"Mind Your Bias" (Husse & Spitz 2022, Table 5 and Appendix E) compares bias detection methods by the
Pearson correlation of their scores across models and tests, once with every score and once with the
significant ones only, and shows the pairwise scatter plots. A *method* here is a metric with the
settings that vary in the run (WEAT, s-SEAT and w-SEAT are three methods; SEAT with two poolings
two).

Scores on different scales are first oriented so that a larger number is more bias: the value minus
the metric's no-bias reference, its sign flipped where the metric declares that a lower value is
more bias (`ValueKind.more_biased`, carried in each result's meta["value"]). Metrics whose number
says nothing about how biased a model is (no direction declared) are left out and named.
Correlations are unchanged by the shift; the orientation matters for the sign of r and for the
figure's axes.

A cell is (model, test); a method's several results in one cell (seeds) are averaged, and the cell
is significant when the largest Holm-adjusted p among them is below alpha, over the report's family,
so the significant-only correlations use the run's own correction. Everything comes from results
alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from bias.core.errors import BiasError
from bias.core.model import OK, Result
from bias.core.reports.cells import md_text, records_csv
from bias.core.reports.tables import Report
from bias.core.reports.values import ValueKind, kind_of, short_models, short_tests, variant_label
from bias.core.runs.folder import open_in_run
from bias.core.statistics.correlation import Correlation, pearson, spearman

ALPHA = 0.05
SUBSETS = ("all", "significant")
Cell = tuple[str, str]  # (model label, word set)


@attrs.frozen
class Score:
    """One method's oriented score in one cell (larger: more bias), its value as reported, and
    whether it is significant after the run's correction (None: the method gives no p-value)."""

    oriented: float
    value: float
    significant: bool | None


@attrs.frozen
class Pair:
    """Two methods over the cells both measured: every score, then the cells where both are
    significant."""

    first: str
    second: str
    pearson: dict[str, Correlation]  # by subset
    spearman: dict[str, Correlation]


@attrs.frozen
class Agreement:
    methods: list[str]
    kinds: dict[str, ValueKind]
    scores: dict[str, dict[Cell, Score]]
    pairs: list[Pair]
    left_out: dict[str, str]  # metric -> why its scores are not compared
    family: str
    alpha: float = ALPHA

    def cells(self, first: str, second: str, subset: str) -> list[Cell]:
        """The cells both methods measured (with `subset` significant: both significant), in run
        order."""
        a, b = self.scores[first], self.scores[second]
        shared = [c for c in a if c in b]
        if subset == "significant":
            shared = [c for c in shared if a[c].significant and b[c].significant]
        return shared


def _without_seed(settings: str) -> str:
    return ", ".join(p for p in settings.split(", ") if p and not p.startswith("seed="))


def method_of(report: Report, result: Result) -> str:
    """The method a result belongs to: its metric and the settings that vary in the run (seeds
    aside)."""
    return variant_label(result.metric, _without_seed(report.settings.get(result.key, "")))


def agreement(report: Report, alpha: float = ALPHA) -> Agreement:
    """Every pair of methods of `report` that share at least one cell; a user error when fewer than
    two methods have oriented scores."""
    members: dict[str, dict[Cell, list[Result]]] = {}
    kinds: dict[str, ValueKind] = {}
    left_out: dict[str, str] = {}
    for r in report.results:
        if r.status != OK or r.effect_size is None or not math.isfinite(r.effect_size):
            continue
        kind = kind_of(r)
        if kind.bias_sign is None:
            left_out[r.metric] = (
                f"its {kind.label} says nothing about how biased a model is (no direction declared)"
            )
            continue
        method = method_of(report, r)
        kinds.setdefault(method, kind)
        members.setdefault(method, {}).setdefault((r.model, r.wordset), []).append(r)
    scores: dict[str, dict[Cell, Score]] = {}
    for method, cells in members.items():
        kind = kinds[method]
        sign, reference = kind.bias_sign or 1, kind.reference or 0.0
        scores[method] = {}
        for cell, results in cells.items():
            value = float(np.mean([r.effect_size for r in results]))
            adjusted = [report.adjusted.get(r.key) for r in results]
            # type: ignore[union-attr]
            significant = (
                None if any(a is None for a in adjusted) else max(a.holm for a in adjusted) < alpha
            )
            scores[method][cell] = Score(sign * (value - reference), value, significant)
    methods = list(scores)
    if len(methods) < 2:
        found = f"only {methods[0]}" if methods else "none"
        extra = f" ({'; '.join(f'{m}: {why}' for m, why in left_out.items())})" if left_out else ""
        raise BiasError(
            "--agreement compares two or more methods with scores, and this run has "
            f"{found}{extra}.",
            "Run several metrics (or one metric with several settings, e.g. SEAT at both "
            "levels) on the same "
            "models and tests, e.g. examples/quickstart.toml.",
        )
    result = Agreement(methods, kinds, scores, [], left_out, report.family, alpha)
    pairs = []
    for first, second in combinations(methods, 2):
        by: dict[str, dict[str, Correlation]] = {"pearson": {}, "spearman": {}}
        for subset in SUBSETS:
            shared = result.cells(first, second, subset)
            x = [scores[first][c].oriented for c in shared]
            y = [scores[second][c].oriented for c in shared]
            by["pearson"][subset], by["spearman"][subset] = pearson(x, y), spearman(x, y)
        if by["pearson"]["all"].n:
            pairs.append(Pair(first, second, by["pearson"], by["spearman"]))
    return attrs.evolve(result, pairs=pairs)


# --- text ----------------------------------------------------------------------------------------


def number(c: Correlation) -> str:
    return "-" if c.value is None else f"{c.value:+.2f}"


def interval(c: Correlation) -> str:
    ci = c.interval
    return "" if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def with_interval(c: Correlation) -> str:
    return (number(c) + " " + interval(c)).strip()


def rows(found: Agreement) -> list[dict[str, str]]:
    """Formatted cells, two rows per pair (all scores, significant scores only)."""
    out = []
    for p in found.pairs:
        for subset in SUBSETS:
            out.append(
                {
                    "pair": f"{p.first} | {p.second}",
                    "scores": subset,
                    "n": str(p.pearson[subset].n),
                    "pearson": with_interval(p.pearson[subset]),
                    "spearman": with_interval(p.spearman[subset]),
                }
            )
    return out


HEADINGS = {
    "pair": "Methods",
    "scores": "Scores",
    "n": "n",
    "pearson": "Pearson r [95% CI]",
    "spearman": "Spearman rho [95% CI]",
}


def notes(found: Agreement) -> list[str]:
    flipped = sorted({m for m, k in found.kinds.items() if k.bias_sign == -1})
    shifted = sorted(
        {
            f"{k.label} {k.reference:g}{k.unit}"
            for k in found.kinds.values()
            if k.reference not in (None, 0.0)
        }
    )
    out = [
        "Methods: a metric with the settings that vary in the run (s-SEAT and w-SEAT are "
        "SEAT's sentence and word levels).",
        "Scores are oriented so that larger is more bias: the value minus the no-bias reference"
        + (f" ({', '.join(shifted)})" if shifted else "")
        + (f", sign flipped for {', '.join(flipped)} (lower is more bias)" if flipped else "")
        + ".",
        "n: (model, test) cells both methods measured (several seeds averaged); "
        "significant: both scores have "
        f"Holm-adjusted p < {found.alpha:g} (family: {found.family}).",
        "95% CI: Fisher z, standard error 1/sqrt(n-3) for Pearson, sqrt(1.06/(n-3)) for "
        "Spearman (Fieller et al. 1957); "
        "none for n <= 3 or |r| = 1 (z is infinite there). '-': fewer than 3 cells, or a "
        "score that does not vary.",
    ]
    no_p = [
        m for m in found.methods if all(s.significant is None for s in found.scores[m].values())
    ]
    if no_p:
        out.append(f"No p-values, so no significant scores: {', '.join(no_p)}.")
    for metric, why in found.left_out.items():
        out.append(f"Not compared: {metric}, {why}.")
    return out


def records(found: Agreement) -> list[dict[str, Any]]:
    out = []
    for p in found.pairs:
        for subset in SUBSETS:
            r, s = p.pearson[subset], p.spearman[subset]
            out.append(
                {
                    "method_1": p.first,
                    "method_2": p.second,
                    "scores": subset,
                    "n": r.n,
                    "pearson_r": r.value,
                    "pearson_low": r.low,
                    "pearson_high": r.high,
                    "spearman_rho": s.value,
                    "spearman_low": s.low,
                    "spearman_high": s.high,
                    "alpha": found.alpha,
                    "family": found.family,
                }
            )
    return out


def to_csv(found: Agreement) -> str:
    return records_csv(records(found))


def to_markdown(report: Report, found: Agreement, figure: str | None = None) -> str:
    lines = ["# Agreement between methods", "", f"Run: {md_text(report.title)}.", ""]
    lines += ["| " + " | ".join(HEADINGS.values()) + " |", "|---|---|---|---|---|"]
    for row in rows(found):
        lines.append("| " + " | ".join(md_text(row[k]) for k in HEADINGS) + " |")
    lines += ["", "Notes:", ""] + [f"- {md_text(n)}" for n in notes(found)]
    if figure:
        lines += ["", f"![Scores of each pair of methods]({figure})"]
    return "\n".join(lines) + "\n"


def _tex_number(c: Correlation) -> str:
    if c.value is None:
        return "--"
    ci = c.interval
    text = f"${c.value:+.2f}$"  # math mode: a real minus sign
    return text + (f" $[{ci[0]:+.2f}, {ci[1]:+.2f}]$" if ci else "")


def to_latex(found: Agreement, *, label: str = "tab:bias-agreement") -> str:
    """A booktabs table: one block per pair of methods, all and significant scores."""
    from bias.core.reports.latex import escape

    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{llrll}",
        "\\toprule",
        "Methods & Scores & $n$ & Pearson $r$ [95\\% CI] & Spearman $\\rho$ [95\\% CI] \\\\",
        "\\midrule",
    ]
    for i, p in enumerate(found.pairs):
        if i:
            lines.append("\\addlinespace")
        for subset in SUBSETS:
            # "|" is a dash in OT1
            name = f"{escape(p.first)} \\textbar{{}} {escape(p.second)}" if subset == "all" else ""
            lines.append(
                f"{name} & {subset} & {p.pearson[subset].n} & {_tex_number(p.pearson[subset])} & "
                f"{_tex_number(p.spearman[subset])} \\\\"
            )
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines.append("\\caption{Agreement between methods. " + escape(" ".join(notes(found))) + "}")
    lines += [f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def to_html(found: Agreement, figure_png: bytes | None) -> str:
    """The section of report.html: the table, its notes and the scatter-plot matrix."""
    import base64
    import html

    def e(text: object) -> str:
        return html.escape(str(text), quote=True)

    out = [
        '<h2 id="agreement">Agreement between methods</h2>',
        '<div style="overflow-x:auto"><table class="results"><thead><tr>',
    ]
    out.append(
        "".join(f'<th scope="col">{e(h)}</th>' for h in HEADINGS.values()) + "</tr></thead><tbody>"
    )
    for row in rows(found):
        out.append(
            "<tr>"
            + "".join(
                f"<td{' class=num' if k in ('n', 'pearson', 'spearman') else ''}>{e(row[k])}</td>"
                for k in HEADINGS
            )
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    out.append(
        '<div class="notes"><ul>'
        + "".join(f"<li>{e(n)}</li>" for n in notes(found))
        + "</ul></div>"
    )
    if figure_png:
        data = base64.b64encode(figure_png).decode("ascii")
        out.append(
            '<figure><img alt="agreement" '
            f'src="data:image/png;base64,{data}"><figcaption>agreement</figcaption></figure>'
        )
    return "\n".join(out)


def write_agreement(
    report: Report, found: Agreement, folder: Path, formats: Sequence[str]
) -> list[Path]:
    """agreement.md, .tex, .csv and the scatter-plot matrix (agreement.png / .svg) as `formats`
    ask."""
    folder = Path(folder)
    written: list[Path] = []
    images = tuple(f for f in formats if f in ("png", "svg"))
    figure = None
    if images:
        from bias.core.reports.agreement_figure import draw

        paths = draw(report, found, folder, images)
        written += paths
        figure = paths[-1].name if paths else None
    texts = {
        "md": ("agreement.md", lambda: to_markdown(report, found, figure)),
        "tex": ("agreement.tex", lambda: to_latex(found)),
        "csv": ("agreement.csv", lambda: to_csv(found)),
    }
    for fmt, (name, make) in texts.items():
        if fmt in formats:
            with open_in_run(folder, name) as fh:
                fh.write(make())
            written.append(folder / name)
    return written


def labels(report: Report) -> tuple[dict[str, str], dict[str, str]]:
    """Short model and test names, for the figure's legend."""
    return short_models(report.results), short_tests(report.results)
