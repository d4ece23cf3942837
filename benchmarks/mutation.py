"""Mutation score of the statistical modules: how many single-token defects the fast tests catch.

Each mutant changes one token of one line: a comparison flipped or loosened (`<` <-> `<=`,
`==` <-> `!=`), an arithmetic operator swapped (`+` <-> `-`, `*` <-> `/`), an integer moved by one
(`ddof=1` -> `ddof=0`, an index, a count), `min` <-> `max`, `argmin` <-> `argmax`, `any` <-> `all`,
`and` <-> `or`, `True` <-> `False`, or a `not` dropped. Strings, comments, docstrings, imports and
`raise` lines are left alone. For every mutant the module's relevant test files run with `-x`; a
mutant is killed when a test fails or the run times out (an endless loop), and survives when every
test passes. Mutants run one at a time in forked children of a process that has already imported
numpy, scipy, scikit-learn, pytest, torch and transformers, so each costs only its tests; the models
the tests build (`built_once` in tests/conftest.py) are built by the first run and kept for the
others in a folder of the temporary directory named by the tests' source (BIAS_TEST_MODELS).

Slow (minutes per module, not part of CI). Run from the repository root:

    python benchmarks/mutation.py core/statistics/association.py            # one module, its tests from MODULES
    python benchmarks/mutation.py --all                    # every module listed below, one at a time
    python benchmarks/mutation.py core/statistics/association.py --lines 120-140 --list   # show the mutants only

Survivors are printed as `path:line  original -> mutant`; `--json FILE` writes every outcome. The
script mutates the files of the checkout it sits in; to keep working meanwhile, run it from a copy
(`cp -r . /tmp/copy && python /tmp/copy/benchmarks/mutation.py ...`): an editable install is pointed
at the copy for the test runs. Tests that run the command line in a subprocess are left out of
MODULES: that process imports the installed checkout, not the mutated copy, so they could only cost
time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# StereoSet's tests without the command-line runs and the hypothesis re-batching (their inputs are
# covered by the tie tests at every batch size); the models come from BIAS_TEST_MODELS (see main).
_STEREOSET_TESTS = ["tests/test_stereoset.py", "tests/test_stereoset_edges.py", "tests/test_stereoset_families.py",
                    "-k", "not smoke and not without_version and not bias_run and not shuffled"]

# Module -> the fast test files (and -k selections) that exercise it.
MODULES: dict[str, list[str]] = {
    "core/statistics/association.py": ["tests/test_stats.py"],
    "core/statistics/bootstrap.py": ["tests/test_bootstrap.py"],
    "core/statistics/multiple_testing.py": ["tests/test_multiple_testing.py"],
    "core/statistics/mcnemar.py": ["tests/test_probe.py", "-k", "mcnemar and not compare"],
    "core/association/conventions.py": ["tests/test_association.py", "tests/test_weat_metric.py"],
    "core/association/contexts.py": ["tests/test_association.py"],
    "core/association/lookup.py": ["tests/test_association.py", "tests/test_weat_metric.py"],
    "core/association/metric.py": ["tests/test_association.py", "tests/test_weat_metric.py"],
    "core/pair_metrics/scoring.py": ["tests/test_lm_pairs.py", "tests/test_crows.py", "-m", "not slow"],
    "core/pair_metrics/alignment.py": ["tests/test_lm_pairs.py", "tests/test_crows.py", "-m", "not slow"],
    "plugins/metrics/fise.py": ["tests/test_fise.py", "-k", "not contextual_encodings and not report_draws"],
    "core/statistics/quadrants.py": ["tests/test_fise.py", "-k", "not contextual_encodings and not report_draws"],
    "core/data/fise_tests.py": ["tests/test_fise.py", "tests/test_framework_import.py", "tests/bad_input", "-k", "fise and not contextual_encodings and not report_draws"],
    "plugins/metrics/probe.py": ["tests/test_probe.py", "-k", "not tiny_bert and not finetune and not readme and not compare and not bad_labelled and not validate_reads and not given_to_weat"],
    "core/models/debiasing/linear_erasure.py": ["tests/test_leace.py", "tests/test_inlp.py", "tests/test_linear_erasure_params.py", "-k", "not cli"],
    "core/reports/robustness.py": ["tests/test_robustness.py", "-k", "not cli"],
    "core/reports/robustness_report.py": ["tests/test_robustness.py", "-k", "not cli"],
    "core/reports/robustness_figure.py": ["tests/test_robustness.py", "-k", "not cli"],
    "plugins/metrics/stereoset.py": _STEREOSET_TESTS,
    "core/pair_metrics/stereoset_inputs.py": _STEREOSET_TESTS,
    "plugins/metrics/bbq.py": ["tests/test_bbq_options.py", "tests/test_bbq_scores.py"],
    "core/bbq/chosen.py": ["tests/test_bbq_chosen.py"],
    "plugins/metrics/lpbs.py": ["tests/test_lpbs_options.py", "tests/test_lpbs.py", "tests/test_lpbs_framework.py",
                                "-k", "not planted_association and not near_zero"],
    "core/pair_metrics/lpbs_scores.py": ["tests/test_lpbs_scores.py"],
    "core/reports/agreement.py": ["tests/test_agreement.py", "-k", "not command_line and not readme"],
    "core/statistics/correlation.py": ["tests/test_agreement.py", "-k", "not command_line and not readme"],
}

# Mutants judged equivalent: (module, a fragment of the mutated line, original token, replacement) ->
# why no test can tell them from the original. They are reported, and left out of the score.
_CHUNKING = "chunk size only: the same values in more or fewer pieces (memory and speed)"
_TIE = "the comparison is made with a tolerance: it differs only for a value exactly at the tolerance's edge"
EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    **{("core/statistics/association.py", "dtype=np.int32 if n_total < 2**31", a, b): "index dtype only: no enumerable partition table reaches 2**31 items"
       for a, b in (("<", "<="), ("<", ">"), ("2", "3"), ("2", "1"), ("**", "*"), ("31", "32"), ("31", "30"))},
    ("core/statistics/association.py", "tol = 1e-12 * max(1.0,", "1.0", "0.0"): "the floor of 1 matters only for scores summing below 1, whose rounding errors are far below 1e-12 times their sum",
    ("core/statistics/association.py", "hits, n_seen, mean, m2 = 0, 0, 0.0, 0.0", "0.0", "1.0"): "the first chunk's update replaces the running mean whatever it was (its weight is 0)",
    **{("core/statistics/association.py", fragment, a, b): _TIE for fragment, a, b in (
        ("null > observed + tol if strict else null >= observed - tol", ">", ">="),
        ("null > observed + tol if strict else null >= observed - tol", ">=", ">"),
        ("null < observed - tol if strict else null <= observed + tol", "<", "<="),
        ("null < observed - tol if strict else null <= observed + tol", "<=", "<"),
        ("distance > gap + tol if strict else distance >= gap - tol", ">", ">="),
        ("distance > gap + tol if strict else distance >= gap - tol", ">=", ">"),
    )},
    **{("core/statistics/association.py", "chunk = max(1, min(permutations, _CHUNK_ELEMENTS // n_total))", a, b): _CHUNKING
       for a, b in (("max", "min"), ("1", "2"), ("1", "0"), ("min", "max"), ("//", "/"))},
    ("core/statistics/association.py", "if spread <= 1e-12 * max(1.0,", "<=", "<"): _TIE,
    ("core/statistics/association.py", "if spread <= 1e-12 * max(1.0,", "0.0", "1.0"): "max(1.0, x, initial=1.0) equals max(1.0, x, initial=0.0)",
    ("core/statistics/association.py", "if spread <= 1e-12 * max(1.0,", "max", "min"): "with a spread this small every value has the same magnitude, so the largest and smallest |value| agree",
    ("core/statistics/bootstrap.py", "d[~(std > tiny)] = np.nan", ">", ">="): _TIE,
    ("core/statistics/bootstrap.py", "tiny = 1e-12 * np.maximum(1.0, np.abs(mean))", "1.0", "0.0"): "the floor of 1 matters only for values below 1, whose rounding errors are far below 1e-12 times their size",
    ("core/statistics/bootstrap.py", "if n < 2:", "2", "1"): "a set of one stimulus has u = 0 and adds nothing to either sum",
    **{("core/statistics/bootstrap.py", "size = max(1, min(total, _CHUNK_ELEMENTS // max(1, per_resample)))", a, b): _CHUNKING
       for a, b in (("max", "min"), ("1", "2"), ("1", "0"))},
    ("core/statistics/bootstrap.py", "for start, rows in _chunks(resamples,", "*", "*"): _CHUNKING + "; any token of the size estimate",
    ("core/statistics/multiple_testing.py", ".reshape(-1)", "1", "2"): "numpy reads any negative size as 'the rest' here: reshape(-2) flattens too",
    ("core/statistics/multiple_testing.py", "first = repeats[0]", "0", "1"): "the repeats of a hypothesis share its model, word set and metric: any of them names it",
    ("core/reports/robustness_figure.py", "return (1, 0.0, v)", "1", "2"): "any non-zero first element marks a value as text; the rest of the key is then unused",
    ("core/reports/robustness_figure.py", "return (1, 0.0, v)", "0.0", "1.0"): "the key is used only when every value is a number, so a text value's key is never compared",
    **{("core/statistics/quadrants.py", "_ROWS = 1000", "1000", b): _CHUNKING for b in ("1001", "999")},
    **{("core/statistics/quadrants.py", fragment, "2000", "2001"): "a buffer one row longer than a batch of draws; only its first rows are used"
       for fragment in ("mxb, myb = np.ones((2000, nx + 1)), np.ones((2000, ny + 1))", "keys = {n: (np.empty((2000, n)), np.empty((2000, n)))")},
    ("core/statistics/quadrants.py", "strengths.append(strength(xs, ys, scratch=True))", "True", "False"):
        "scratch only says whether x and y may be overwritten; they are not read again, so the values are the same",
    ("plugins/metrics/fise.py", "dim = len(next(iter(vectors.values()))) if vectors else 0", "0", "1"): "with no vector at all every group is empty and the test is refused before the width is used",
    ("plugins/metrics/fise.py", "extreme = int(np.sum(t_null >= t_obs - 1e-12 * max(1.0, abs(t_obs))))", ">=", ">"): _TIE,
    **{("plugins/metrics/fise.py", "extreme = int(np.sum(t_null >= t_obs - 1e-12 * max(1.0, abs(t_obs))))", a, b):
       "the strength lies in [0, 2 sqrt(2)] (cosines lie in [-1, 1]) and its rounding errors are ~1e-16 of its size: "
       "far below the tolerance with or without its floor or scale" for a, b in (("*", "/"), ("max", "min"), ("1.0", "0.0"))},
    ("plugins/metrics/fise.py", '"permutations": drawn if method == "sampled" else len(t_null)', "==", "!="): "the exact null's length is the number of partitions it returns as drawn",
    **{("plugins/metrics/fise.py", "strength = (sx * x[members] + sy * y[members]) / math.sqrt(2)", a, b):
       "this strength only orders the quadrant's traits (the reported value is computed apart), and a positive factor keeps the order"
       for a, b in (("/", "*"), ("2", "3"), ("2", "1"))},
    ("plugins/metrics/fise.py", "for i in range(4)], axis=1)", "4", "5"): "a fifth column counts quadrant 4, which no trait is in; it is never read",
    ("core/statistics/bootstrap.py", "if not 0.0 < level < 1.0:", "<", "<="): "association_ci checks the level up front and interval() checks it again with the same error",
    ("core/statistics/bootstrap.py", "estimate = float(association_effects(*mats, *ones(1), ddof)[0])", "1", "2"): "two rows of the same full weights give the same estimate twice; the first is read",
    ("core/statistics/bootstrap.py", "    accel = 0.0", "0.0", "1.0"): "set for the percentile method only, which never reads the acceleration (BCa overwrites it)",
    ("core/reports/robustness.py", '(1 if name == "seed" else 0)', "1", "2"): "any positive offset sorts the seed after every other dimension",
    ("core/reports/robustness.py", "label=kinds[0].scale_name", "0", "1"):
        "the label's kinds[0].scale_name: every member of a curve has the curve's scale name (it is part of the curve's key)",
    ("core/statistics/multiple_testing.py", "if m == 0:", "0", "1"): "one p-value adjusts to min(1, p) = p, which the early return gives too",
    **{("core/statistics/correlation.py", "if tied.sum() > 1:", a, b): "a value tied with itself alone gets the mean of its one rank: the same rank"
       for a, b in ((">", ">="), ("1", "0"))},
    **{("core/reports/agreement.py", "sign, reference = kind.bias_sign or 1", "1", b):
       "bias_sign is +1 or -1 here (a result without a declared direction is left out above): the fallback is never read"
       for b in ("2", "0")},
    ("core/reports/agreement.py", "significant = None if any(a is None for a in adjusted) else max(a.holm", "max", "min"):
        "a cell's results are the seeds of one test, one hypothesis: each carries that hypothesis's adjusted p, so the largest is the smallest",
    ("core/reports/agreement.py", "significant = None if any(a is None for a in adjusted) else max(a.holm", "any", "all"):
        "a cell's results are the seeds of one test of one method: they all have an adjusted p or none has",
    ("core/reports/agreement.py", "no_p = [m for m in found.methods if all(s.significant is None", "all", "any"):
        "a method is one metric with one setting: it gives p-values in all its cells or in none",
    ("core/reports/agreement.py", "writer = csv.DictWriter(buffer, fieldnames=list(data[0])", "0", "1"):
        "every record has the same keys, and a pair gives two records (all and significant scores)",
    ("core/reports/agreement.py", "figure = paths[-1].name if paths else None", "1", "0"):
        "with PNG and SVG both written, either file is the same figure for the Markdown to show",
    ("core/reports/agreement.py", "return html.escape(str(text), quote=True)", "True", "False"):
        "the escaped text goes into element content only, never an attribute, where a quote reads the same escaped or not",
    ("core/pair_metrics/scoring.py", '"causal_start": scores[0].context if scores else ""', "0", "1"):
        "one call gives every sequence with tokens the same start context, and every sentence that reaches a scorer has tokens: any of them names it",
    ("plugins/metrics/probe.py", "if n < AUTO_CV_BELOW and smallest >= 2 else 1", "2", "1"):
        "with one text in its rarest label, min(AUTO_FOLDS, 1) is the single split the else gives",
    ("plugins/metrics/probe.py", "if folds >= 2 and smallest < folds:", "2", "1"):
        "every label has a text, so smallest < 1 never holds: with one fold nothing is refused either way",
    ("plugins/metrics/probe.py", "fold_of = np.full(n, -1, dtype=np.int64)", "1", "2"):
        "any negative fold marks a text used for training only; only fold >= 0 is ever read",
    **{("core/bbq/chosen.py", "rows = max(1, CHUNK_ELEMENTS // n)", "1", b):
       _CHUNKING + " (a floor of 0, 1 or 2 rows differs only past 2,000,000 questions; BBQ has 58,492)"
       for b in ("0", "2")},
    **{("core/pair_metrics/lpbs_scores.py", f"pieces[it.{key}_key][it.", "0", "1"):
       "every slot covers at least one token (the metric refuses one that covers none): "
       "a start of 0 or 1 gives the same largest number of pieces"
       for key in ("t", "a")},
    **{("core/pair_metrics/lpbs_scores.py", f"{a}_first = it.{a}_pos[0] if it.{a}_pos[0] < it.{b}_pos[0]", "<", "<="):
       "the target and attribute slots share no token (the metric refuses them), so their first positions are never equal"
       for a, b in (("t", "a"), ("a", "t"))},
    **{("core/models/debiasing/linear_erasure.py", line, "2", "1"): "check_pairs asks for max(2, needed) pairs: needing 1 or 2 both mean 2"
       for line in ("check_pairs(pairs, 2, origin)", 'check_pairs(pairs, 2, "the list pairs the model has")')},
}

# Functions left out of a module's mutants, and why: they are not statistics, and the fast tests do
# not run them (figure geometry is checked by eye, figure file names by the report tests; fine-tuning
# is a slow test of its own).
SKIP_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "core/reports/robustness_figure.py": ("draw", "figure_names", "_slug"),
    "plugins/metrics/probe.py": ("_finetuner",),
}

SWAP_OPS = {
    "<": ["<=", ">"], "<=": ["<", ">="], ">": [">=", "<"], ">=": [">", "<="], "==": ["!="], "!=": ["=="],
    "+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "//": ["/"], "**": ["*"],
    "+=": ["-="], "-=": ["+="], "*=": ["/="], "/=": ["*="],
}
SWAP_NAMES = {
    "min": ["max"], "max": ["min"], "argmin": ["argmax"], "argmax": ["argmin"], "any": ["all"], "all": ["any"],
    "and": ["or"], "or": ["and"], "True": ["False"], "False": ["True"], "not": [""], "floor": ["ceil"], "ceil": ["floor"],
}
SKIP_STARTS = ("import ", "from ", "raise ", "@", "__all__", "def ")


def _skipped_lines(source: str, functions: tuple[str, ...]) -> set[int]:
    import ast

    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in functions:
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


def mutants(source: str, skip_functions: tuple[str, ...] = ()) -> list[tuple[int, int, int, str, str]]:
    """Every single-token mutant: (line, start column, end column, original, replacement)."""
    lines = source.splitlines(keepends=True)
    skipped = _skipped_lines(source, skip_functions)
    out = []
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        before = previous
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            previous = tok.string
        if tok.start[0] != tok.end[0] or tok.start[0] > len(lines) or tok.start[0] in skipped:
            continue
        if tok.string in ("*", "**") and before in ("(", ",", "[", ""):  # *args, **kwargs, a keyword-only marker
            continue
        text = lines[tok.start[0] - 1].strip()
        if text.startswith(SKIP_STARTS):
            continue
        s = tok.string
        options: list[str] = []
        if tok.type == tokenize.OP:
            options = SWAP_OPS.get(s, [])
        elif tok.type == tokenize.NAME:
            options = SWAP_NAMES.get(s, [])
        elif tok.type == tokenize.NUMBER and s.isdigit():
            n = int(s)
            options = [str(n + 1)] + ([str(n - 1)] if n > 0 else [])
        elif tok.type == tokenize.NUMBER and s in ("0.0", "1.0", "0.5", "2.0"):
            options = [{"0.0": "1.0", "1.0": "0.0", "0.5": "1.0", "2.0": "1.0"}[s]]
        for new in options:
            out.append((tok.start[0], tok.start[1], tok.end[1], s, new))
    return out


def apply(source: str, mutant: tuple[int, int, int, str, str]) -> str:
    line, start, end, _, new = mutant
    lines = source.splitlines(keepends=True)
    text = lines[line - 1]
    lines[line - 1] = text[:start] + new + text[end:]
    return "".join(lines)


def _import_from_here() -> None:
    """Point an editable install of the framework at this checkout, so that a copy of the repository
    can be mutated while the original stays untouched (the copy's modules are imported, not the
    installed ones)."""
    for name, module in list(sys.modules.items()):
        mapping = getattr(module, "MAPPING", None)
        if name.startswith("__editable___bias_framework") and isinstance(mapping, dict):
            for package, where in mapping.items():
                mapping[package] = str(ROOT / Path(where).name)


def run_tests(args: list[str], timeout: float) -> str:
    """'killed', 'survived' or 'timeout' for one pytest run in a forked child."""
    pid = os.fork()
    if pid == 0:  # the child: fresh imports of the project, the third-party modules already loaded
        import pytest

        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        sys.dont_write_bytecode = True
        _import_from_here()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-W", "ignore", *args])
        os._exit(int(code))
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return "survived" if code == 0 else "killed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


def _clear_bytecode(path: Path) -> None:
    for cached in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        cached.unlink(missing_ok=True)


def _equivalent(module: str, source_line: str, old: str, new: str) -> str | None:
    for (where, fragment, a, b), why in EQUIVALENT.items():
        if where == module and fragment in source_line and (a, b) in ((old, new), ("*", "*")):
            return why
    return None


def mutate_module(module: str, tests: list[str], lines: tuple[int, int] | None, only_list: bool, before: dict | None = None) -> dict:
    path = ROOT / module
    original = path.read_text(encoding="utf-8")
    source_lines = original.splitlines()
    found = [m for m in mutants(original, SKIP_FUNCTIONS.get(module, ())) if lines is None or lines[0] <= m[0] <= lines[1]]
    done: dict[tuple[int, int, str, str], str] = {}
    if before is not None:  # a rerun: a mutant killed before stays killed (tests are only ever added)
        done = {(o["line"], o["col"], o["from"], o["to"]): o["outcome"] for o in before["outcomes"] if o["outcome"] != "survived"}
    if only_list:
        for m in found:
            print(f"{module}:{m[0]}  {m[3]} -> {m[4] or '(removed)'}")
        return {"module": module, "mutants": len(found)}
    _clear_bytecode(path)
    start = time.monotonic()
    if run_tests(tests, 900) != "survived":
        raise SystemExit(f"{module}: the tests fail before any mutation ({' '.join(tests)})")
    baseline = time.monotonic() - start
    outcomes = []
    try:
        for i, m in enumerate(found, 1):
            outcome = done.get((m[0], m[1], m[3], m[4]))
            if outcome is None:
                path.write_text(apply(original, m), encoding="utf-8")
                _clear_bytecode(path)
                outcome = run_tests(tests, max(30.0, 3 * baseline))
            why = _equivalent(module, source_lines[m[0] - 1], m[3], m[4]) if outcome == "survived" else None
            outcomes.append({"line": m[0], "col": m[1], "from": m[3], "to": m[4], "outcome": "equivalent" if why else outcome})
            if outcome == "survived":
                state = f"equivalent ({why})" if why else "SURVIVED"
                print(f"  {state} {module}:{m[0]}  {m[3]} -> {m[4] or '(removed)'}    | {source_lines[m[0] - 1].strip()[:90]}", flush=True)
            if i % 25 == 0:
                print(f"  {module}: {i}/{len(found)}", file=sys.stderr, flush=True)
    finally:
        path.write_text(original, encoding="utf-8")
        _clear_bytecode(path)
    killed = sum(o["outcome"] in ("killed", "timeout") for o in outcomes)
    equivalent = sum(o["outcome"] == "equivalent" for o in outcomes)
    counted = len(outcomes) - equivalent
    score = killed / counted if counted else 1.0
    print(f"{module}: {killed}/{counted} non-equivalent mutants killed ({score:.1%}; {equivalent} judged equivalent, "
          f"{len(outcomes)} in all), tests {' '.join(tests)}, {time.monotonic() - start:.0f} s", flush=True)
    return {"module": module, "tests": tests, "killed": killed, "mutants": counted, "equivalent": equivalent, "outcomes": outcomes}


def _models_folder() -> Path:
    """Where the tests' models are kept from one forked run to the next (tests/conftest.py,
    `built_once`): a folder of the temporary directory named by the tests' own source, so that the
    models are built by the first run and a changed builder or test gets new ones."""
    import hashlib
    import tempfile

    digest = hashlib.sha256()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return Path(tempfile.gettempdir()) / f"bias-test-models-{digest.hexdigest()[:16]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="module paths from the repository root (default with --all: every module listed)")
    parser.add_argument("--all", action="store_true", help="every module in MODULES, one at a time")
    parser.add_argument("--lines", help="only lines A-B of the module")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--json", help="write every outcome to this file")
    parser.add_argument("--again", help="a --json file of an earlier run: rerun only the mutants that survived it")
    args = parser.parse_args()
    modules = list(MODULES) if args.all else args.modules
    if not modules:
        parser.error("name a module or give --all")
    lines = tuple(int(x) for x in args.lines.split("-")) if args.lines else None
    import importlib

    # Loaded once, shared by every forked run (the project itself is imported afresh in each).
    for name in ("numpy", "scipy.stats", "scipy.special", "sklearn.linear_model", "sklearn.model_selection", "sklearn.pipeline",
                 "sklearn.preprocessing", "sklearn.metrics", "pytest", "hypothesis", "hypothesis.strategies", "attrs",
                 "matplotlib", "gensim.models", "anyio", "pytest_benchmark.plugin", "torch", "transformers", "tokenizers",
                 "transformers.models.bert", "transformers.models.gpt2", "transformers.models.roberta", "transformers.models.llama",
                 # the modelling code transformers imports lazily on a first from_pretrained: seconds in every fork
                 "transformers.modeling_utils", "transformers.models.auto.modeling_auto", "transformers.tokenization_utils_fast",
                 "transformers.models.bert.modeling_bert", "transformers.models.roberta.modeling_roberta",
                 "transformers.models.gpt2.modeling_gpt2", "transformers.models.llama.modeling_llama"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass

    os.chdir(ROOT)
    os.environ.setdefault("BIAS_TEST_MODELS", str(_models_folder()))
    earlier = {r["module"]: r for r in json.loads(Path(args.again).read_text(encoding="utf-8"))} if args.again else {}
    reports = []
    for module in modules:
        if module not in MODULES:
            raise SystemExit(f"{module}: no tests listed for it in MODULES")
        reports.append(mutate_module(module, MODULES[module], lines, args.list, earlier.get(module)))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1), encoding="utf-8")
    done = [r for r in reports if "killed" in r]
    if len(done) > 1:
        killed, total = sum(r["killed"] for r in done), sum(r["mutants"] for r in done)
        print(f"all: {killed}/{total} non-equivalent mutants killed ({killed / total:.1%})")


if __name__ == "__main__":
    main()
