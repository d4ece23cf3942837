"""The report as one self-contained HTML file: nothing is fetched from anywhere (no fonts, scripts
or images from outside), so it can be mailed, archived or opened offline.

It holds the results table (sortable by any column, numbers sorted as numbers), the notes that
define every mark, the figures embedded as PNG data, each test's details (title, sizes, lost and
sub-word words, conventions, warnings, the target words with their s(w) where a score file exists)
and the run's manifest."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from bias.core.errors import BiasError
from bias.core.model import OK
from bias.core.text import shown, visible
from bias.core.reports.breakdown import breakdown_caption, breakdown_of
from bias.core.reports.tables import Report, ci_text, value_text
from bias.core.runs.folder import MAX_FIGURE, MAX_TABLE, read_in_run, readable_in_run
from bias.core.runs.manifest import manifest_text
from bias.core.reports.values import (
    convention_text,
    format_p,
    result_p,
    short_models,
    short_tests,
    significance,
    test_title,
    variant_label,
)

MAX_WARNINGS = 200  # warnings listed in the page; report.md lists them all

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
  max-width:72rem;padding:0 1rem;color:#222}
h1{font-size:1.5rem}
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table.results{border-collapse:collapse;font-size:.85rem;width:100%}
table.results th,table.results td{padding:.25rem .5rem;border-bottom:1px solid #eee;text-align:left;
  white-space:nowrap}
table.results th{cursor:pointer;background:#f6f6f6;position:sticky;top:0}
table.results th[aria-sort=ascending]::after{content:" \\25B2"}
table.results th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.results td.why{white-space:normal;min-width:14rem}
tr.refused td{color:#a06000}
tr.failed td{color:#b00020}
.notes{font-size:.85rem;color:#444}
figure{margin:1rem 0}
figure img{max-width:100%;border:1px solid #eee}
details{margin:.3rem 0}
summary{cursor:pointer}
pre{background:#f6f6f6;padding:.8rem;overflow:auto;font-size:.8rem}
"""

# Sorting without any library: numbers (the first number in a cell, p bounds included) sort as
# numbers.
_JS = """
(function(){
  function key(cell){
    var t=cell.getAttribute('data-sort');
    if(t===null){t=cell.textContent.trim();}
    var m=t.match(/^[<=]*\\s*([-+]?\\d*\\.?\\d+(?:e[-+]?\\d+)?)/i);
    return m?parseFloat(m[1]):t.toLowerCase();
  }
  function sortBy(table,col,th){
    var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
    var asc=th.getAttribute('aria-sort')!=='ascending';
    rows.sort(function(a,b){
      var x=key(a.cells[col]),y=key(b.cells[col]);
      if(typeof x===typeof y){return (x<y?-1:x>y?1:0)*(asc?1:-1);}
      return (typeof x==='number'?-1:1);
    });
    rows.forEach(function(r){body.appendChild(r);});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h){h.removeAttribute('aria-sort');});
    th.setAttribute('aria-sort',asc?'ascending':'descending');
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.results'),function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
      th.addEventListener('click',function(){sortBy(table,i,th);});
    });
  });
  document.body.setAttribute('data-ready','yes');
  window.biasSort=sortBy;
})();
"""


def _cell(text: str, cls: str, sort: str | None) -> str:
    """One table cell: its class for alignment, its sort key for the column sorter."""
    cls_attr = f' class="{cls}"' if cls else ""
    sort_attr = f' data-sort="{_e(sort)}"' if sort else ""
    return f"<td{cls_attr}{sort_attr}>{_e(text)}</td>"


def _e(text: Any) -> str:
    """Text for the page: escaped, and its control, bidi and invisible characters written as
    <U+XXXX> line by line (a right-to-left override from a received file would reorder the page)."""
    return html.escape("\n".join(visible(line) for line in str(text).split("\n")), quote=True)


MAX_SHOWN = 200_000  # characters of the manifest shown in the page
_REDRAWN = "Remove the folder's .png figures: the report draws them again when it finds none."


def _figures(report: Report, folder: Path) -> list[tuple[str, bytes]]:
    """The PNG figures of the report: those in the folder, else drawn now into a temporary
    folder."""
    from bias.core.reports.figures import FIGURES, write_figures

    found = []
    for base in FIGURES:
        # a figure of many panels goes on over further files: words.png, words-2.png, ...
        name, page = base, 1
        while (
            png := read_in_run(folder, f"{name}.png", "the figure", MAX_FIGURE, hint=_REDRAWN)
        ) is not None:
            found.append((name, png))
            page += 1
            name = f"{base}-{page}"
    if found:
        return found
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        # The score files the results name live in the run folder; the word plot reads copies of
        # them.
        from bias.core.runs.item_tables import read_scores

        for r in report.results:
            inside = readable_in_run(
                folder,
                r.figures.get("scores") if isinstance(r.figures, dict) else None,
                "figures.scores in results.jsonl",
            )
            if inside is not None:
                read_scores(inside)  # a damaged file is named where it lies, not in the copy
                table = read_in_run(folder, r.figures["scores"], "figures.scores", MAX_TABLE)
                (Path(tmp) / inside.name).write_bytes(table or b"")
        written = write_figures(report, Path(tmp), ("png",))
        return [(p.stem, p.read_bytes()) for p in written]


def _scores(folder: Path, r: Any) -> list[dict[str, str]]:
    path = readable_in_run(
        folder,
        r.figures.get("scores") if isinstance(r.figures, dict) else None,
        "figures.scores in results.jsonl",
    )
    if path is None:
        return []
    from bias.core.runs.item_tables import read_scores

    return read_scores(path)


def to_html(report: Report, folder: Path, agreement: Any = None) -> str:
    """The report page; with `agreement` (a `bias.core.reports.agreement.Agreement`) also its
    section, the scatter-plot matrix embedded from the folder's agreement.png (drawn now when it is
    not there)."""
    folder = Path(folder)
    names = short_models(report.results)
    tests = short_tests(report.results)
    counts = report.counts()
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(report.title)}</h1>",
        f"<p>{len(report.results)} experiment(s): {counts.get('ok', 0)} ok, "
        f"{counts.get('refused', 0)} refused, "
        f"{counts.get('failed', 0)} failed. Click a column heading to sort.</p>",
        '<h2 id="results">Results</h2>',
        '<div style="overflow-x:auto"><table class="results"><thead><tr>',
    ]
    heads = [
        "Model",
        "Test",
        "Metric",
        "Value",
        report.ci_label,
        "p",
        "Holm p",
        "BH p",
        "n (X/Y/A/B)",
        "Status",
    ]
    out.append("".join(f'<th scope="col">{_e(h)}</th>' for h in heads))
    out.append("</tr></thead><tbody>")
    for r in report.results:
        adj = report.adjusted.get(r.key)
        ok = r.status == OK
        holm = (format_p(adj.holm) + " " + significance(adj.holm)).strip() if adj else "-"
        sizes = (
            "/".join(str(r.sizes.get(k, "-")) for k in ("X", "Y", "A", "B"))
            if r.sizes and "X" in r.sizes
            else "-"
        )
        cells = [
            (names[r.model], "", None),
            (tests[r.wordset], "", None),
            (variant_label(r.metric, report.settings.get(r.key, "")), "", None),
            (
                value_text(r) if ok else "-",
                "num",
                None if r.effect_size is None else repr(r.effect_size),
            ),
            (ci_text(r, 2) if ok else "-", "num", None),
            (result_p(r) if ok else "-", "num", None if r.p_value is None else repr(r.p_value)),
            (holm if ok else "-", "num", None if not adj else repr(adj.holm)),
            (format_p(adj.bh) if adj and ok else "-", "num", None if not adj else repr(adj.bh)),
            (sizes, "", None),
            (r.status if ok else f"{r.status}: {r.reason}", "" if ok else "why", None),
        ]
        row = "".join(_cell(text, cls, sort) for text, cls, sort in cells)
        out.append(f'<tr class="{_e(r.status)}">{row}</tr>')
    out.append("</tbody></table></div>")
    out.append(
        '<div class="notes"><ul>'
        + "".join(f"<li>{_e(n)}</li>" for n in report.notes())
        + "</ul></div>"
    )
    broken_down = [r for r in report.results if breakdown_of(r)[1]]
    if broken_down:
        out.append('<h2 id="breakdown">Breakdown</h2>')
        for r in broken_down:
            columns, rows = breakdown_of(r)
            caption = breakdown_caption(r)
            out.append(
                f"<p>{_e(names[r.model])} / {_e(tests[r.wordset])} / {_e(r.metric)}"
                + (f'<br><span class="notes">{_e(caption)}</span>' if caption else "")
                + '</p><table class="results"><thead><tr>'
            )
            out.append(
                "".join(f'<th scope="col">{_e(c)}</th>' for c in columns) + "</tr></thead><tbody>"
            )
            out += [
                "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows
            ]
            out.append("</tbody></table>")
    warned = [(r, w) for r in report.results for w in r.warnings]
    if warned:  # the caveats of an audit, in sight (they were inside the collapsed Tests section)
        out.append('<h2 id="warnings">Warnings</h2><ul class="notes">')
        out += [
            f"<li>{_e(names[r.model])} / {_e(tests[r.wordset])} / {_e(r.metric)}: "
            f"{_e(shown(w, 600))}</li>"
            for r, w in warned[:MAX_WARNINGS]
        ]
        if len(warned) > MAX_WARNINGS:
            out.append(
                f"<li>... and {len(warned) - MAX_WARNINGS:,} more (report.md of "
                "`bias report --format md` lists all)</li>"
            )
        out.append("</ul>")
    if report.skipped:
        out.append("<h2>Combinations dropped before the run</h2><ul>")
        out += [
            f"<li>{_e(s.get('metric'))} on {_e(s.get('wordset'))} with "
            f"{_e(s.get('model'))}: {_e(s.get('reason'))}</li>"
            for s in report.skipped
        ]
        out.append("</ul>")
    figures = _figures(report, folder)
    if figures:
        out.append('<h2 id="figures">Figures</h2>')
        for name, data in figures:
            encoded = base64.b64encode(data).decode("ascii")
            out.append(
                f'<figure><img alt="{_e(name)}" '
                f'src="data:image/png;base64,{encoded}"><figcaption>{_e(name)}</figcaption></figure>'
            )
    if agreement is not None:
        out.append(_agreement_section(report, agreement, folder))
    out.append('<h2 id="tests">Tests</h2>')
    for wordset in dict.fromkeys(r.wordset for r in report.results):
        members = [r for r in report.results if r.wordset == wordset]
        title = next((test_title(r) for r in members if test_title(r)), "")
        out.append(f"<details><summary><b>{_e(tests[wordset])}</b> {_e(title)}</summary><ul>")
        if tests[wordset] != wordset:
            out.append(f"<li>file: {_e(wordset)}</li>")
        for r in members:
            what = f"{names[r.model]} {variant_label(r.metric, report.settings.get(r.key, ''))}"
            bits = [f"status {r.status}" + (f" ({r.reason})" if r.reason else "")]
            if r.sizes:
                bits.append("sizes " + ", ".join(f"{k} {v}" for k, v in r.sizes.items()))
            if convention_text(r):
                bits.append(convention_text(r))
            for key, words in r.lost.items():
                bits.append(f"lost from {key}: {', '.join(words)}")
            for key, words in r.approximated.items():
                bits.append(f"built from sub-words in {key}: {', '.join(words)}")
            bits += [f"warning: {w}" for w in r.warnings]
            out.append(f"<li>{_e(what)}: {_e('; '.join(bits))}")
            scores = _scores(folder, r)
            if scores and "s" in scores[0]:
                listing = ", ".join(
                    f"{row.get('word') or row['item']} ({row['set']}) {float(row['s']):+.3f}"
                    for row in scores[:200]
                )
                out.append(f"<br><small>s(w): {_e(listing)}</small>")
            out.append("</li>")
        out.append("</ul></details>")
    try:
        written = manifest_text(folder)
    except BiasError as exc:  # a pipe or a file of gigabytes in its place: said, not shown
        written = exc.message
    if written is not None:
        try:
            text = json.dumps(json.loads(written), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):  # shown as written
            text = written
        if len(text) > MAX_SHOWN:  # each control character becomes a <U+XXXX> of its own
            text = text[:MAX_SHOWN] + f"\n... ({len(text):,} characters; see manifest.json)"
        out.append(
            '<h2 id="manifest">Manifest</h2><details><summary>manifest.json: command, '
            "experiment file, versions, "
            f"model fingerprints, machine</summary><pre>{_e(text)}</pre></details>"
        )
    out.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(out) + "\n"


def _agreement_section(report: Report, agreement: Any, folder: Path) -> str:
    from bias.core.reports.agreement import to_html as agreement_html

    png = read_in_run(folder, "agreement.png", "the figure", MAX_FIGURE, hint=_REDRAWN)
    if png is not None:
        return agreement_html(agreement, png)
    import tempfile

    from bias.core.reports.agreement_figure import draw

    with tempfile.TemporaryDirectory() as tmp:
        (drawn,) = draw(report, agreement, Path(tmp), ("png",))
        return agreement_html(agreement, drawn.read_bytes())
