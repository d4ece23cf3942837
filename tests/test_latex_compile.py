"""The LaTeX table compiles with pdflatex in a plain article with booktabs and fits the page: the
quickstart's 18 rows with starred p-values at the sampled floor, a wide grid of two models with
long names and settings, and CrowS-style percentages. In CI (CI=true) a missing pdflatex fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from bias.core.model import Result
from bias.core.reports import build
from bias.core.reports.latex import standalone, to_latex

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
                      wordset="nl/crows-sample", metric="crows", effect_size=52.113))
    return out


@pytest.mark.parametrize("results", [quickstart_like(), grid()], ids=["quickstart", "wide-grid"])
def test_latex_compiles_and_fits_the_page(tmp_path, results):
    report = build(results)
    tex = to_latex(report)
    log = compile_log(tmp_path, standalone(report))
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)
    # the marks are defined, the floor is a bound, short names carry a legend
    assert "\\textsuperscript{***}" in tex and "Marks on $p_{\\mathrm{Holm}}$" in tex and "$\\le 1.0\\times 10^{-5}$" in tex
    if results is not None and len(results) > 20:
        assert "cc.nl.300\\_with\\_a\\_long\\_name &" in tex and "Models: " in tex
        assert "52.1\\%" in tex and "+52" not in tex


def test_a_table_in_a_plain_article_needs_only_booktabs(tmp_path):
    tex = to_latex(build(quickstart_like()))
    document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + tex + "\\end{document}\n"
    log = compile_log(tmp_path, document)
    assert "Overfull \\hbox" not in log
