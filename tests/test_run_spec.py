"""One front door: the command line, an experiment file and a BIAS Detection Framework config build
one RunSpec with one vocabulary. The same run written in any of them plans the same experiments under
the same keys; the command line replaces a file's values and says so; a run written on the command
line, printed with --print-toml and run as a file, gives the same keys and the same results."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fixtures.in_process import cli
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS
from test_experiments import write_sets

from bias.cli.run_command import CODE_FLAGS, CODE_OPTIONS, COMMAND_OPTIONS
from bias.core.errors import BiasError
from bias.engine import planning
from bias.engine.experiment_file import KNOWN_FIELDS, read_experiment_file
from bias.engine.front_door import from_options, spec_for_run
from bias.engine.vocabulary import COMMAND_LINE, OPTIONS, PARAM, RUN, SHARED, WORDSET


def _keys(spec) -> list[tuple[str, str, dict]]:
    """Each planned experiment's key with its metric and parameters (after the metric's defaults)."""
    return sorted(
        (p.experiment.key, p.experiment.metric, p.experiment.params)
        for p in planning.plan(spec.experiments()).runnable
    )


def _bias(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`bias ARGS` in this process, from `cwd`."""
    done = cli(*args, cwd=cwd)
    return done.code, done.out, done.err


def test_flags_a_file_and_a_framework_config_plan_the_same_experiments(
    planted_files, tmp_path, monkeypatch
):
    """The framework's line `T1,WEAT,word2vec,en,None` is `--model word2vec:models/... --wordset
    datasets/en/WEAT/T1.txt --metric weat --preset bias-framework`, and an experiment file saying so."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "datasets" / "en" / "WEAT").mkdir(parents=True)
    (tmp_path / "datasets" / "en" / "WEAT" / "T1.txt").write_text(
        "\n".join(", ".join(ws) for ws in (X_WORDS, Y_WORDS, A_WORDS, B_WORDS)) + "\n"
    )
    (tmp_path / "models").mkdir()
    shutil.copy(
        planted_files.word2vec_bin, tmp_path / "models" / "GoogleNews-vectors-negative300.bin"
    )
    (tmp_path / "config.txt").write_text("T1,WEAT,word2vec,en,None\n")
    model, wordset = "word2vec:models/GoogleNews-vectors-negative300.bin", "datasets/en/WEAT/T1.txt"
    (tmp_path / "exp.toml").write_text(
        f'models = ["{model}"]\nwordsets = ["{wordset}"]\nmetrics = ["weat"]\npreset = "bias-framework"\n'
    )

    flags = spec_for_run(
        from_options(
            {
                "models": [model],
                "wordsets": [wordset],
                "metrics": ["weat"],
                "preset": "bias-framework",
            }
        )
    )
    file = spec_for_run(from_options({}), Path("exp.toml"))
    framework = spec_for_run(
        from_options({}), Path("config.txt"), datasets=Path("datasets"), models_dir=Path("models")
    )
    assert framework.listed and not file.listed  # three ways of writing it
    expected = _keys(flags)
    # the preset's parameters
    assert len(expected) == 1
    assert expected[0][2]["ddof"] == 0 and expected[0][2]["duplicates"] == "keep"
    assert _keys(file) == expected == _keys(framework)


def test_every_option_has_one_name_on_the_command_line_and_in_a_file(planted_files, tmp_path):
    """Each option of the run, written as a flag and as the file's key of the same name, gives the
    same spec; metric parameters by their flag, by --param and in [params] / [grid] alike."""
    sets = write_sets(tmp_path)
    model = f"word2vec:{planted_files.word2vec_bin}"
    options = {
        "models": [model],
        "wordsets": [str(sets[0])],
        "metrics": ["weat"],
        "seeds": [1, 2],
        "limit": 6,
        "family": "model",
        "executor": "local",
        "max_cost": 0.5,
        "formats": ["md", "csv"],
        "title": "one name",
        "fail_fast": True,
        "wide": True,
        "json": True,
        "duplicates": "keep",
        "preset": "wefe",
        "out": tmp_path / "out",
        "permutations": [300],
        "ddof": [0, 1],
        "batch_size": 4,
    }
    flags = spec_for_run(from_options(options))
    (tmp_path / "exp.toml").write_text(
        f'models = ["{model}"]\nwordsets = ["{sets[0]}"]\nmetrics = ["weat"]\nseeds = [1, 2]\nlimit = 6\nfamily = "model"\n'
        'executor = "local"\nmax_cost = 0.5\nformats = ["md", "csv"]\ntitle = "one name"\nfail_fast = true\nwide = true\njson = true\n'
        'duplicates = "keep"\npreset = "wefe"\nout = "out"\nbatch_size = 4\n[params]\npermutations = 300\n[grid]\nddof = [0, 1]\n'
    )
    file = spec_for_run(from_options({}), tmp_path / "exp.toml")
    for name in (
        "seeds",
        "limit",
        "family",
        "executor",
        "max_cost",
        "formats",
        "title",
        "fail_fast",
        "wide",
        "json",
        "duplicates",
        "preset",
        "out",
    ):
        assert getattr(flags, name) == getattr(file, name), name
    assert _keys(flags) == _keys(file) and len(_keys(flags)) == 4
    by_param = spec_for_run(
        from_options(
            {
                **{k: v for k, v in options.items() if k not in ("permutations", "ddof")},
                "params": {"permutations": ["300"], "ddof": ["0", "1"]},
            }
        )
    )
    assert _keys(by_param) == _keys(flags)
    # every name a file may write at its top level is a vocabulary name (or a table of the file)
    writable = {
        o.name for o in OPTIONS if o.file != COMMAND_LINE and o.to in (RUN, SHARED, WORDSET)
    }
    assert set(KNOWN_FIELDS) == writable | {"seed", "description", "params", "grid", "experiments"}
    assert {o.name for o in COMMAND_OPTIONS if o.file == COMMAND_LINE} == {
        "trust_remote_code",
        "allow_pickle",
        "datasets",
        "models_dir",
        "print_toml",
        "confirm_cost",
        "allow",
    }
    assert {o.name for o in CODE_OPTIONS} == {"trust_remote_code", "allow_pickle"} and not set(
        CODE_FLAGS
    ) & set(KNOWN_FIELDS)
    assert all(o.to == PARAM for o in OPTIONS if o.in_file.startswith("[params]")), (
        "metric flags are aliases of --param"
    )


def test_the_command_line_replaces_the_files_values_and_says_so(planted_files, tmp_path):
    sets = write_sets(tmp_path)
    path = tmp_path / "exp.toml"
    path.write_text(
        f'models = ["word2vec:{planted_files.word2vec_bin}"]\nwordsets = ["{sets[0]}"]\nmetrics = [{{ name = "weat", permutations = 900 }}]\n'
        'limit = 8\nfamily = "run"\nseeds = [0, 1]\n[params]\nbootstrap = 0\n[grid]\nddof = [0, 1]\n'
    )
    notices: list[str] = []
    given = {"limit": 4, "family": "metric", "permutations": [100], "ddof": [1], "seeds": [5]}
    spec = spec_for_run(from_options(given), path, on_notice=notices.append)
    experiments = spec.experiments()
    assert [
        (e.limit, e.seed, e.params["permutations"], e.params["ddof"], e.params["bootstrap"])
        for e in experiments
    ] == [(4, 5, 100, 1, 0)]
    assert spec.family == "metric"
    assert sorted(notices) == sorted(
        [
            "--limit 4 replaces the experiment file's limit = 8.",
            "--family metric replaces the experiment file's family = 'run'.",
            "--permutations 100 replaces the experiment file's permutations = 900.",
            "--ddof 1 replaces the experiment file's ddof = 0 1.",
            "--seed 5 replaces the experiment file's seeds = [0, 1].",
        ]
    )
    # given the file's own value, nothing is said
    notices.clear()
    spec_for_run(from_options({"limit": 8}), path, on_notice=notices.append)
    assert notices == []


def test_a_file_may_lower_the_cost_limit_but_raising_it_needs_the_command_line(
    planted_files, tmp_path
):
    sets = write_sets(tmp_path)
    body = f'models = ["word2vec:{planted_files.word2vec_bin}"]\nwordsets = ["{sets[0]}"]\n'
    (tmp_path / "low.toml").write_text(body + "max_cost = 0.25\n")
    assert spec_for_run(from_options({}), tmp_path / "low.toml").max_cost == 0.25
    (tmp_path / "high.toml").write_text(body + "max_cost = 20\n")
    with pytest.raises(BiasError, match="a file can only lower that limit") as refused:
        spec_for_run(from_options({}), tmp_path / "high.toml")
    assert "--max-cost 20" in (refused.value.hint or "")
    assert spec_for_run(from_options({"max_cost": 20.0}), tmp_path / "high.toml").max_cost == 20.0


def test_a_file_with_pairs_and_top_level_loader_options(planted_files, tmp_path):
    """`pairs` and `analogies` add to the word sets as the flags do; a top-level `device` reaches the
    models whose embedder declares it (hf), not the others (word2vec), and is no part of the key."""
    sets = write_sets(tmp_path)
    (tmp_path / "exp.toml").write_text(
        f'models = ["word2vec:{planted_files.word2vec_bin}", "hf:bert-folder"]\nwordsets = ["planted.toml"]\npairs = ["pairs.toml"]\n'
        'device = "cpu"\ndtype = "float32"\n'
    )
    spec = spec_for_run(from_options({}), tmp_path / "exp.toml")
    assert (
        read_experiment_file(tmp_path / "exp.toml").wordsets
        == spec.wordsets
        == (str(sets[0]), str(sets[1]))
    )
    assert [m.options for m in spec.models] == [{}, {"device": "cpu", "dtype": "float32"}]
    flags = from_options(
        {
            "models": [f"word2vec:{planted_files.word2vec_bin}", "hf:bert-folder"],
            "wordsets": [str(sets[0])],
            "pairs": [str(sets[1])],
            "device": "cpu",
            "dtype": "float32",
        }
    )
    assert flags.models == spec.models and flags.wordsets == spec.wordsets


def test_a_run_on_the_command_line_printed_and_run_as_a_file_gives_the_same_keys_and_results(
    planted_files, tmp_path
):
    sets = write_sets(tmp_path)
    run = [
        "run",
        "-m",
        f"word2vec:{planted_files.word2vec_bin}",
        "-w",
        str(sets[0]),
        "--metric",
        "weat",
        "--permutations",
        "300",
        "--exact-limit",
        "0",
        "--ddof",
        "0",
        "--ddof",
        "1",
        "--seed",
        "3",
        "--limit",
        "7",
        "--bootstrap",
        "50",
        "--preset",
        "sent-bias",
        "--title",
        "saved",
    ]
    code, printed, err = _bias(*run, "--print-toml", cwd=tmp_path)
    assert code == 0, err
    saved = tmp_path / "elsewhere" / "saved.toml"
    saved.parent.mkdir()
    saved.write_text(printed, encoding="utf-8")
    assert _bias(*run, "--out", str(tmp_path / "one"), "--json", cwd=tmp_path)[0] == 0
    # the saved file names the word set where it is, outside the file's folder: confirmed as any
    # shared file's would be
    code, _, err = _bias(
        "run", str(saved), "--out", str(tmp_path / "two"), "--json", "--allow", f"wordset={tmp_path}",
        cwd=tmp_path / "elsewhere",
    )
    assert code == 0, err
    one, two = (
        [json.loads(line) for line in (tmp_path / name / "results.jsonl").read_text().splitlines()]
        for name in ("one", "two")
    )
    assert len(one) == 2 and sorted(r["key"] for r in one) == sorted(r["key"] for r in two)
    by_key = {r["key"]: r for r in two}
    for row in one:
        assert (
            row["status"] == "ok" and row["meta"]["limit"] == 7
            if "limit" in row["meta"]
            else row["status"] == "ok"
        )
        other = by_key[row["key"]]
        assert (row["effect_size"], row["p_value"], row["convention"]) == (
            other["effect_size"],
            other["p_value"],
            other["convention"],
        )
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert manifest["title"] == "saved" and manifest["config_text"] == printed


def test_print_toml_leaves_out_what_a_file_cannot_decide(tmp_path):
    """A code option of the command line becomes a comment naming its flag, never a value of the file."""
    (tmp_path / "bert").mkdir()
    code, printed, err = _bias(
        "run",
        "-m",
        "hf:bert",
        "-w",
        "en/weat1",
        "--trust-remote-code",
        "--allow",
        "base_url=http://127.0.0.1:1/v1",
        "--print-toml",
        cwd=tmp_path,
    )
    assert code == 0, err
    assert (
        "trust_remote_code =" not in printed
        and "# give --trust-remote-code on the command line" in printed
    )
    assert "# confirm on the command line with --allow base_url=http://127.0.0.1:1/v1" in printed
    import tomllib

    data = tomllib.loads(printed)
    assert data["models"] == [{"spec": f"hf:{(tmp_path / 'bert').resolve()}"}] and data[
        "wordsets"
    ] == ["en/weat1"]


def test_run_help_is_grouped_and_lists_a_metrics_parameters(tmp_path):
    code, out, _ = _bias("run", "--help", cwd=tmp_path)
    assert code == 0
    headings = re.findall(r"^([A-Z][a-z]+):$", out, flags=re.M)
    # the vocabulary's panels, in its order, between the argument and the help option
    assert headings == [
        "Arguments",
        "Model",
        "Data",
        "Metric",
        "Statistics",
        "Output",
        "Execution",
        "Options",
    ], headings
    # each option under its own panel
    model = out.index("\nModel:\n")
    data = out.index("\nData:\n")
    assert model < out.index("--device") < data < out.index("--wordset") < out.index("\nMetric:\n")
    code, out, _ = _bias("run", "--metric", "weat", "--help", cwd=tmp_path)
    assert code == 0 and "Parameters of weat" in out
    assert (
        "permutations (--permutations)" in out
        and "lost_threshold (--lost-threshold)" in out
        and "ties" in out
    )


def test_the_docs_table_of_options_is_the_vocabulary():
    """docs/run-options.md lists every option of `bias run`, in its panel, with its flags, its file
    key and its help, as the command line has them: a new option cannot go undocumented."""
    from bias.engine.vocabulary import PANELS

    text = (Path(__file__).resolve().parents[1] / "docs" / "run-options.md").read_text(
        encoding="utf-8"
    )
    documented, panel = [], None
    for line in text.splitlines():
        if line.startswith("### "):
            panel = line[4:].strip()
        elif line.startswith("| `"):
            cells = [
                c.strip().replace("`", "").replace("\\|", "|") for c in line.strip("|").split(" | ")
            ]
            documented.append((panel, *cells))
    rows = [(o.panel, o.name, ", ".join(o.flags), o.file_form(), o.help) for o in COMMAND_OPTIONS]
    expected = [tuple(cell.replace("`", "") for cell in row) for row in rows]
    assert sorted(documented, key=lambda row: PANELS.index(row[0])) == sorted(
        expected, key=lambda row: PANELS.index(row[0])
    )


def test_a_parameter_of_one_listed_experiment_is_checked_against_its_own_metric_only(tmp_path):
    """CrowS-Pairs' `masked_score = "pll"` in its own [[experiments]] entry beside a StereoSet one:
    the value is right for crows and is not StereoSet's to check (it was refused as "must be one of
    token-space, bias-bench"); shared params are still checked against every metric."""
    (tmp_path / "hf-model").mkdir()
    entries = (
        '[[experiments]]\nwordset = "en/crows-sample"\nmetric = "crows"\nmodel = "hf:hf-model"\n'
        'params = { masked_score = "pll" }\n'
        '[[experiments]]\nwordset = "en/weat6"\nmetric = "stereoset"\nmodel = "hf:hf-model"\n'
    )
    (tmp_path / "exp.toml").write_text(entries, encoding="utf-8")
    spec = spec_for_run(from_options({}), tmp_path / "exp.toml")
    assert [e.params for e in spec.listed] == [{"masked_score": "pll"}, {}]
    (tmp_path / "bad.toml").write_text(entries.replace("pll", "token-space"), encoding="utf-8")
    with pytest.raises(BiasError, match=r"experiments\[0\]\.params\.masked_score \(metric crows\)"):
        spec_for_run(from_options({}), tmp_path / "bad.toml")
    # a parameter its own metric lacks is refused, whichever other metric of the run has it
    (tmp_path / "other.toml").write_text(
        entries + 'params = { likelihood = "mean" }\n', encoding="utf-8"
    )
    with pytest.raises(BiasError) as refused:
        spec_for_run(from_options({}), tmp_path / "other.toml")
    assert refused.value.message.endswith(
        "experiments[1].params.likelihood: the metric stereoset has no parameter 'likelihood'."
    ), refused.value.message
    (tmp_path / "entry.toml").write_text(
        'metrics = [{ name = "stereoset", likelihood = "mean" }, "crows"]\n'
        'models = ["hf:hf-model"]\nwordsets = ["en/weat6"]\n',
        encoding="utf-8",
    )
    with pytest.raises(BiasError, match="metrics.0..likelihood: the metric stereoset has no param"):
        spec_for_run(from_options({}), tmp_path / "entry.toml")
    shared = 'metrics = ["crows", "stereoset"]\nmodels = ["hf:hf-model"]\nwordsets = ["en/weat6"]\n'
    (tmp_path / "shared.toml").write_text(shared + '[params]\nmasked_score = "pll"\n', encoding="utf-8")
    with pytest.raises(BiasError, match=r"params\.masked_score \(metric stereoset\)"):
        spec_for_run(from_options({}), tmp_path / "shared.toml")
