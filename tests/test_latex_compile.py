"""The LaTeX table compiles with pdflatex in a plain article with booktabs and fits the page, in one-
and two-column documents: the quickstart's 18 rows with starred p-values at the sampled floor, a wide
grid of two models with long names and settings, CrowS-style percentages, and a 120-row grid split
over several floats. In CI (CI=true) a missing pdflatex fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from bias.core.model import Result
from bias.core.reports import build
from bias.core.reports.latex import standalone, to_latex

from fixtures.values import value_of
from test_terminal_output import quickstart_like, weat_like


def pdflatex() -> str:
    found = shutil.which("pdflatex")
    if found:
        return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("pdflatex is missing; CI installs it (texlive-latex-base, texlive-latex-recommended in .ci/run)")
    pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")


def compile_log(tmp_path, tex: str) -> str:
    (tmp_path / "doc.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run([pdflatex(), "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    log = (tmp_path / "doc.log").read_text(encoding="latin-1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
    return log


def grid() -> list[Result]:
    out = []
    for model in ("word2vec:/data/models/nl/cc.nl.300_with_a_long_name.bin", "hf:/home/me/models/bert-base-dutch-cased[layer=-1,word_pooling=mean]"):
        for test in ("nl/weat6", "nl/labour-gender-occupations", "/home/me/tests/my_test&v2.toml"):
            for pooling in ("mean", "first"):
                for level in ("sentence", "word"):
                    out.append(weat_like(test, "seat", 0.81, 1 / 100_001, level=level, model=model, extra={"pooling": pooling}))
    out.append(Result(key="crows", model="hf:/home/me/models/bert-base-dutch-cased[layer=-1,word_pooling=mean]",
                      wordset="nl/crows-sample", metric="crows", effect_size=52.113, meta=value_of("crows")))
    return out


def long_grid() -> list[Result]:
    """120 rows: three models, ten tests, WEAT and three SEAT variants."""
    out = []
    for model in ("word2vec:/data/cc.nl.300.bin", "hf:/data/bert-base-dutch-cased", "hf:/data/xlm-roberta-base"):
        for n in range(1, 11):
            out.append(weat_like(f"nl/weat{n}", "weat", 1.5 - 0.1 * n, 1 / 100_001, model=model))
            for level, pooling in (("sentence", "mean"), ("word", "mean"), ("word", "first")):
                out.append(weat_like(f"nl/weat{n}", "seat", 0.2 * n - 1, 0.3, level=level, model=model, extra={"pooling": pooling}))
    return out


def fits(log: str) -> None:
    """Nothing sticks out of the line, no float is taller than the page."""
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)
    assert "Float too large" not in log, re.findall(r".*Float too large.*", log)
    assert "float specifier changed" not in log


@pytest.mark.parametrize("two_columns", [False, True], ids=["one-column", "two-column"])
@pytest.mark.parametrize("results", [quickstart_like(), grid()], ids=["quickstart", "wide-grid"])
def test_latex_compiles_and_fits_the_page(tmp_path, results, two_columns):
    report = build(results)
    tex = to_latex(report)
    fits(compile_log(tmp_path, standalone(report, two_columns=two_columns)))
    # the marks are defined, the floor is a bound, short names carry a legend
    assert "\\textsuperscript{***}" in tex and "Marks on $p_{\\mathrm{Holm}}$" in tex and "$\\le 1.0\\times 10^{-5}$" in tex
    # too wide for one column of a two-column paper: the table spans both
    assert "\\begin{table*}" in tex and "\\begin{table}" not in tex
    if len(results) > 20:
        assert "cc.nl.300\\_with\\_a\\_long\\_name &" in tex and "Models: " in tex
        assert "52.1\\%" in tex and "+52" not in tex


@pytest.mark.parametrize("two_columns", [False, True], ids=["one-column", "two-column"])
def test_a_120_row_grid_is_split_over_floats_that_fit_the_page(tmp_path, two_columns):
    report = build(long_grid())
    tex = to_latex(report)
    log = compile_log(tmp_path, standalone(report, two_columns=two_columns))
    fits(log)
    body = [line for line in tex.splitlines() if line.endswith("\\\\") and not line.startswith("Model &")]
    assert len(body) == 120  # every row, once
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == 4 and tex.count("\\toprule") == 4
    assert "(part 1 of 4, notes under the last)" in tex and "(part 4 of 4)" in tex
    assert tex.count("\\begin{minipage}") == 1 and tex.rindex("Marks on") > tex.rindex("\\begin{tabular}")
    assert tex.count("\\label{tab:bias-results}") == 1
    pages = int(re.search(r"Output written on doc.pdf \((\d+) pages?", log).group(1))
    assert pages >= 4  # one float per page at most: no part was cut


def test_a_narrow_table_stays_in_one_column(tmp_path):
    tests = ("en/weat1", "en/weat2", "en/weat10")
    report = build([weat_like(test, "weat", 0.5, 0.01, model="word2vec:w2v.bin") for test in tests])
    tex = to_latex(report)
    assert "\\begin{table}[htbp]" in tex and "table*" not in tex
    assert "\\setlength{\\tabcolsep}{3pt}" in tex  # the compact layout
    assert tex.index("en/weat2") < tex.index("en/weat10")  # natural order
    fits(compile_log(tmp_path, standalone(report, two_columns=True)))


def test_a_table_in_a_plain_article_needs_only_what_its_first_line_names(tmp_path):
    tex = to_latex(build(quickstart_like()))
    assert tex.startswith("% Requires \\usepackage{booktabs} and \\usepackage{graphicx}.")
    document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n" + tex + "\\end{document}\n"
    fits(compile_log(tmp_path, document))


def test_p_values_wider_than_the_estimate_are_shrunk_to_the_line(tmp_path):
    """Three short model names, two-digit tests, a setting and p written as a x 10^-b: typeset, the
    row is 41 pt wider than a one-column page; \\resizebox keeps it inside the line."""
    results = [weat_like(f"en/weat{n}", "weat", 1.9, 7.8e-05, model=f"word2vec:{m}.bin", permutations=200, extra={"ddof": ddof})
               for m in ("planted", "reversed", "control") for n in range(1, 11) for ddof in (0, 1)]
    fits(compile_log(tmp_path, standalone(build(results))))


def test_file_paths_in_the_notes_break_in_a_two_column_paper(tmp_path):
    """The legend of a run on the user's own files names each file in full: a path longer than a
    column may break after its separators, so nothing sticks out of the column."""
    tests = [f"/home/researcher/projects/biasaudit/wordsets/custom/{n}_gender_career_family_version2.toml" for n in ("first", "second")]
    model = "word2vec:/data/embeddings/nl/wikipedia_dutch_skipgram_300d_minimum5.bin"
    report = build([weat_like(test, "weat", 0.5, 0.01, model=model) for test in tests])
    tex = to_latex(report)
    fits(compile_log(tmp_path, standalone(report, two_columns=True)))
    assert "biasaudit/\\allowbreak{}wordsets/\\allowbreak{}" in tex and "\\_\\allowbreak{}" in tex
