"""`bias report --format html`: one self-contained file, opened in a real headless Chromium: it renders
with no console message, its table sorts numbers as numbers, figures are embedded, nothing is fetched
from outside. In CI (CI=true) a missing Chromium fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from fixtures.in_process import cli


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("Chromium is missing; CI installs it (Debian package chromium in .ci/run)")
    pytest.skip("Chromium is not installed (apt-get install chromium)")


def open_in_chromium(path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", *extra, path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )


@pytest.fixture(scope="module")
def html_report(tmp_path_factory, big_grid_figures):
    """`bias report --format html` on a copy of the 100-experiment grid whose figures are drawn
    (conftest's `big_grid_figures`): the report embeds the PNGs of the folder."""
    folder = tmp_path_factory.mktemp("html") / "grid"
    shutil.copytree(big_grid_figures, folder, ignore=shutil.ignore_patterns("*.lock", ".complete", "written.txt"))
    proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "report", str(folder), "--format", "html"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    assert f"Written to {folder}/: report.html" in " ".join(proc.stdout.split())
    return folder / "report.html"


def test_self_contained(html_report):
    text = html_report.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text) and "@import" not in text and "url(http" not in text
    # forest, heatmap, words (96 panels: words.png and words-2 ... words-8), languages, p-vs-effect
    assert text.count('src="data:image/png;base64,') == 12 and "<figcaption>words-8</figcaption>" in text
    assert text.count("<tr class=") == 100 and "nl/labour-gender-occupations" in text
    assert "Holm" in text and "refused" in text and "s(w):" in text


def test_a_folder_without_figures_gets_them_drawn_for_the_report_and_keeps_none(tmp_path):
    """The figures of a run folder that has none are drawn into a temporary folder and embedded:
    the report shows them, the run folder gains no PNG."""
    from bias.core.model import Result
    from bias.core.runs.results import ResultStore
    from fixtures.values import value_of

    folder = tmp_path / "run"
    store = ResultStore(folder)
    for n in range(1, 4):
        scores = [{"set": s, "item": f"{s}{i}", "s": (i - 2) / 10} for s in "XY" for i in range(4)]
        store.append(Result(key=f"k{n}", model="word2vec:w.bin", wordset=f"en/weat{n}", metric="weat", effect_size=0.5 * n,
                            p_value=0.01, figures={"scores": scores}, meta={"language": "en", **value_of("weat")}))
    done = cli("report", str(folder), "--format", "html")
    assert done.code == 0, done.both
    text = (folder / "report.html").read_text(encoding="utf-8")
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", text)
    assert {"forest", "words", "p-vs-effect"} <= set(captions), captions
    assert text.count('src="data:image/png;base64,') == len(captions)
    assert not list(folder.glob("*.png"))


def test_renders_in_chromium_without_console_messages(html_report):
    proc = open_in_chromium(html_report, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '<body data-ready="yes">' in proc.stdout  # the page's script ran to its end
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_the_table_sorts_numbers_as_numbers(html_report, tmp_path):
    # The report's own sorting code, driven as a click would: sort by value, read the order back.
    harness = tmp_path / "sorted.html"
    check = """<script>
var table=document.querySelector('table.results');var th=table.tHead.rows[0].cells[3];
window.biasSort(table,3,th);
var values=Array.prototype.map.call(table.tBodies[0].rows,function(r){return r.cells[3].getAttribute('data-sort');});
var out=document.createElement('pre');out.id='check';out.textContent=values.join(' ');document.body.appendChild(out);
</script></body>"""
    harness.write_text(html_report.read_text(encoding="utf-8").replace("</body>", check), encoding="utf-8")
    proc = open_in_chromium(harness, "--dump-dom")
    found = re.search(r'<pre id="check">([^<]*)</pre>', proc.stdout)
    assert found, proc.stdout[-500:]
    values = [float(v) for v in found.group(1).split() if v not in ("null", "")]
    assert len(values) >= 90 and values == sorted(values)


def test_warnings_are_a_section_of_their_own(tmp_path):
    """An audit's caveats (no applicant selected, a fit that did not converge) in sight, as
    report.md lists them, not only inside the collapsed Tests section; escaped as any text."""
    from bias.core.model import Result
    from bias.core.reports import build
    from bias.core.reports.html import to_html

    warned = Result(
        key="k", model="hf:m", wordset="it/hiring", metric="discrimination", status="ok", effect_size=0.1,
        warnings=["the mixed model did not converge: <b>not</b> to be trusted"],
    )
    quiet = Result(key="q", model="hf:m", wordset="en/weat6", metric="weat", status="ok", effect_size=0.2)
    text = to_html(build([warned, quiet]), tmp_path)
    section = text.split('<h2 id="warnings">Warnings</h2>', 1)[1].split("</ul>", 1)[0]
    assert section.count("<li>") == 1
    assert "it/hiring / discrimination: the mixed model did not converge: &lt;b&gt;not&lt;/b&gt; to be trusted" in section
    assert '<h2 id="warnings">' not in to_html(build([quiet]), tmp_path)


def test_the_warnings_section_is_bounded(tmp_path):
    from bias.core.model import Result
    from bias.core.reports import build
    from bias.core.reports.html import MAX_WARNINGS, to_html

    many = Result(key="k", model="hf:m", wordset="en/weat6", metric="weat", status="ok", effect_size=0.1,
                  warnings=[f"warning {i} " + "x" * 5000 for i in range(MAX_WARNINGS + 5)])
    section = to_html(build([many]), tmp_path).split('<h2 id="warnings">Warnings</h2>', 1)[1].split("</ul>", 1)[0]
    assert section.count("<li>") == MAX_WARNINGS + 1 and "... and 5 more (report.md of `bias report --format md` lists all)" in section
    assert "x" * 700 not in section and "(5,010 characters)" in section
