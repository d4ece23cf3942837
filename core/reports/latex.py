"""The report table as LaTeX (booktabs): paste it into a paper with `\\usepackage{booktabs}` and
`\\usepackage{graphicx}` (which shrinks a table wider than the line; a narrower one keeps its size).

No custom macros: significance marks are math superscripts defined in the table notes, numbers are
typeset in math mode (a real minus sign), and every special character of names and paths is escaped.
"""

from __future__ import annotations

import math
import re

from bias.core.model import OK
from bias.core.text import visible
from bias.core.reports.tables import Report, significance

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def escape(text: str) -> str:
    """`text` with every LaTeX special character escaped (one pass, so escapes are not
    re-escaped), control, bidi and invisible characters first written as <U+XXXX>."""
    return "".join(_SPECIAL.get(ch, ch) for ch in visible(text))


def _p(text: str) -> str:
    """A p-value as `format_p` writes it, typeset: 1.0e-05 -> $1.0\\times 10^{-5}$, <=x -> $\\le$
    x."""
    if text in ("-", ""):
        return "--"
    bound = ""
    if text.startswith("<="):
        bound, text = "\\le ", text[2:]
    elif text.startswith("<"):
        bound, text = "< ", text[1:]
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = (
            f"{mantissa}\\times " if mantissa not in ("1", "") else ""
        ) + f"10^{{{int(exponent)}}}"
    return f"${bound}{text}$"


def _marks(mark: str) -> str:
    # Text-mode superscript after the closing $: never a double superscript, whatever the number is.
    return f"\\textsuperscript{{{mark}}}" if mark else ""


# Characters of a row that fit one column of a two-column paper in a compact layout (\footnotesize,
# narrower column gaps; \small with the usual gaps fits no table of this shape); a wider table spans
# both columns (`table*`, which a one-column document sets as a plain `table`) in \small.
_COLUMN_CHARS = 62
# Rows of one float: a longer table is split into parts of at most this many rows, each its own
# float (a page of text holds about 40 rows in \small; the last part also carries the notes). Split
# floats, not a `longtable`, which two-column documents refuse.
_ROWS_PER_PART = 30


def to_latex(report: Report, *, caption: str | None = None, label: str = "tab:bias-results") -> str:
    """A booktabs `tabular` of the ok results in a float, with notes under it, that fits a one- or
    two-column paper: `table` in a compact layout where it fits one column, else `table*`; shrunk to
    the line width where the estimate of its width fell short (graphicx's \\resizebox, which never
    enlarges); split into floats of at most 30 rows ("part 2 of 4" in the caption) where it is long,
    the notes under the last.

    Short model and test names (legend in the notes), two decimals for the values and their
    intervals, p as `format_p` writes it."""
    from bias.core.reports.tables import ci_text
    from bias.core.reports.values import (
        format_p,
        kind_of,
        result_p,
        short_models,
        short_tests,
        variant_label,
    )

    ok = [r for r in report.results if r.status == OK]
    adjusted = report.adjusted
    models = short_models(report.results)
    tests = short_tests(report.results)
    several = len(models) > 1
    head = (["Model"] if several else []) + [
        "Test",
        "Metric",
        "Value",
        escape(report.ci_label).replace("\\%", "\\,\\%"),
        "$p$",
        "$p_{\\mathrm{Holm}}$",
    ]
    spec = ("l" if several else "") + "llrcrr"
    rows = []
    widths = []
    for r in ok:
        adj = adjusted.get(r.key)
        kind = kind_of(r)
        value = kind.format(r.effect_size) + ("\\%" if kind.unit == "%" else "")
        ci = ci_text(r, 2).replace("%", "\\%") if r.figures.get("ci_low") is not None else "--"
        cells = ([escape(models[r.model])] if several else []) + [
            escape(tests[r.wordset]),
            escape(variant_label(r.metric, report.settings.get(r.key, ""))),
            f"${value}$" if kind.unit != "%" else value,
            f"${ci}$" if ci != "--" else ci,
            _p(result_p(r)),
            (_p(format_p(adj.holm)) + _marks(significance(adj.holm))) if adj else "--",
        ]
        widths.append(
            sum(
                len(c)
                for c in (
                    models[r.model] if several else "",
                    tests[r.wordset],
                    r.metric,
                    report.settings.get(r.key, ""),
                )
            )
            + 40
        )
        rows.append(" & ".join(cells) + " \\\\")
    widest = max(widths, default=0)
    compact = widest <= _COLUMN_CHARS
    float_env = "table" if compact else "table*"
    notes = [_note(n) for n in report.notes() if not n.startswith("Significance marks")]
    notes.append(
        "Marks on $p_{\\mathrm{Holm}}$: \\textsuperscript{*}\\,$p<0.05$, "
        "\\textsuperscript{**}\\,$p<0.01$, "
        "\\textsuperscript{***}\\,$p<0.001$."
    )
    left_out = len(report.results) - len(ok)
    if left_out:
        notes.append(f"{left_out} experiment(s) refused or failed are not shown (see report.md).")
    parts = max(1, math.ceil(len(rows) / _ROWS_PER_PART))
    size = max(1, math.ceil(len(rows) / parts))
    title = escape(caption or report.title)
    lines = [
        "% Requires \\usepackage{booktabs} and \\usepackage{graphicx}. Generated by "
        "bias-framework from results.jsonl."
    ]
    for part in range(parts):
        last = part == parts - 1
        lines += [
            f"\\begin{{{float_env}}}[{'htbp' if float_env == 'table' else 'tbp'}]",
            "\\centering",
        ]
        lines += ["\\footnotesize", "\\setlength{\\tabcolsep}{3pt}"] if compact else ["\\small"]
        # Shrink a table wider than the line (the width is an estimate from the characters), never
        # enlarge one.
        lines.append("\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%")
        lines += [
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(head) + " \\\\",
            "\\midrule",
            *rows[part * size : (part + 1) * size],
            "\\bottomrule",
            "\\end{tabular}}",
        ]
        if last:
            lines += [
                "\\par\\smallskip",
                "\\begin{minipage}{\\linewidth}\\footnotesize",
                " ".join(notes),
                "\\end{minipage}",
            ]
        where = (
            ""
            if parts == 1
            else f" (part {part + 1} of {parts}" + (", notes under the last)" if not last else ")")
        )
        lines.append(f"\\caption{{{title}{where}}}")
        lines.append(f"\\label{{{label}}}" if part == 0 else f"\\label{{{label}-{part + 1}}}")
        lines.append(f"\\end{{{float_env}}}")
    return "\n".join(lines) + "\n"


# Long words of a note (file paths, model specs with options) may break after these; TeX breaks a
# line only at spaces and hyphens, and a path wider than a column of a two-column paper sticks out.
_BREAK_AFTER = re.compile(r"(/|\\_|\.|,|=|:|\[|-)(?=[^\s])")
_LONG_WORD = 16


def breakable(text: str) -> str:
    """LaTeX text with a permitted line break (`\\allowbreak`) after each separator of its long
    words (paths, model specs); short words are left as they are."""
    return " ".join(
        _BREAK_AFTER.sub(lambda m: m.group(1) + "\\allowbreak{}", word)
        if len(word) > _LONG_WORD
        else word
        for word in text.split(" ")
    )


def _note(text: str) -> str:
    """A note in LaTeX: escaped, with `<=` as a real sign, long paths breakable."""
    return breakable(escape(text)).replace("\\textless{}=", "$\\le$")


def standalone(report: Report, *, two_columns: bool = False) -> str:
    """A complete document around the table (for checking that it compiles and fits)."""
    return (
        "\\documentclass"
        + ("[twocolumn]" if two_columns else "")
        + "{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
        "\\begin{document}\n" + to_latex(report) + "\\end{document}\n"
    )
