"""The wrong-exit and weak cases of the bad-input review of 2026-11-28 besides the security ones: a BBQ
prompt with a format spec (Z46, Z48, Z49, Z52), a static: encoder folder with a vocab.txt that is not
UTF-8 (Z117), a one-dimensional matrix (Z121) or a cache that cannot be written (Z125), a results file
edited by hand under --agreement (Z108), BBQ lines answered with the file's own field names (Z26-Z30,
Z116), --robustness with --agreement (Z109), the stray '=:' of N41, the temporary file N58 left, a
`bias convert` output saved elsewhere (N13) and an MBBQ file in another language without its prompt
(Z33). Each exits as a user must see it: 2 with the file and field named, nothing changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bad_input_helpers import Case, World, assert_answered, case_decorator, cli, world  # noqa: F401 (world is a fixture)
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

CASES: list[Case] = []
case = case_decorator(CASES)
BBQ_HEADER = 'kind = "bbq"\nlanguage = "en"\nbias_type = "gender"\ntitle = "t"\nsource = "written by the tests"\nlicence = "CC0-1.0"\n'
ITEM = (
    '[[items]]\ncategory = "Gender"\ncontext = "Tom and Anna work here."\ncontext_condition = "ambiguous"\n'
    'question = "Who is bad?"\npolarity = "negative"\nanswers = ["Tom", "Anna", "Unknown"]\nunknown = 2\n'
    'stereotyped = 1\ntarget = "F"\nlabel = 2\n'
)


def _bbq_file(folder: Path, prompt: str) -> Path:
    path = folder / "questions.toml"
    path.write_text(BBQ_HEADER + f"prompt = {json.dumps(prompt)}\n" + ITEM, encoding="utf-8")
    return path


# Z46, Z48, Z49, Z52: a prompt takes plain {context} and {question} fields only ---------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "{context:>1000000} {question}",
        "{context!r} {question}",
        "{context:{question}} {question}",
        "{context.__class__} {question}",
        "{context[0]} {question}",
        "{context:>30000000} {question}",
        # P07: a field repeated, each copy a copy of every context (20,000 made 605 MB)
        "{context}" * 20_000 + " {question}",
        "{context}" * 5 + " {question}",
        "x" * 10_001 + "{context} {question}",
    ],
    ids=lambda p: p[:24] + (f"...({len(p)})" if len(p) > 24 else ""),
)
def test_a_prompt_with_a_format_spec_is_refused_when_the_file_is_read(
    world: World, tmp_path: Path, prompt: str
) -> None:
    path = _bbq_file(tmp_path, prompt)
    done = cli(
        "run",
        "--model",
        f"word2vec:{world.w2v_bin}",
        "--wordset",
        str(path),
        "--metric",
        "bbq",
        cwd=tmp_path,
    )
    assert done.code == 2 and "Traceback" not in done.both, done.both
    assert (
        str(path) in done.err and "prompt" in done.err and "plain {name} fields only" in done.err
    ), done.err
    assert len(done.err_lines()) <= 2


@pytest.mark.parametrize(
    "template",
    ["{context:>9} {question}", "{context!s} {question}", "{context}" * 5 + "{question}"],
)
def test_a_template_parameter_with_a_format_spec_is_refused(
    world: World, tmp_path: Path, template: str
) -> None:
    path = _bbq_file(tmp_path, "{context} {question}")
    done = cli(
        "run",
        "--model",
        f"word2vec:{world.w2v_bin}",
        "--wordset",
        str(path),
        "--metric",
        "bbq",
        "--param",
        f"template={template}",
    )
    assert done.code == 2 and "template" in done.err and "plain {name} fields only" in done.err, (
        done.both
    )


def test_plain_fields_are_filled_without_str_format() -> None:
    from bias.core.data.bias_questions import fill, placeholders

    assert placeholders("{context} {question}\n{{Answer}}:") == {"context", "question"}
    assert (
        fill("{context} {question}\n{{Answer}}:", context="{question:>9}", question="Q?")
        == "{question:>9} Q?\n{Answer}:"
    )


# Z117, Z121, Z125: the folder of a static: model -----------------------------------------------------


def _encoder(world: World, folder: Path) -> Path:
    """The tiny BERT as an encoder folder the static: embedder reads (a WordPiece vocab.txt beside it)."""
    target = folder / "encoder"
    shutil.copytree(world.bert, target)
    vocab = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    (target / "vocab.txt").write_text(
        "".join(f"{t}\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])), encoding="utf-8"
    )
    return target


def _static_run(world: World, folder: Path, model: Path) -> list[str]:
    return [
        "run",
        "--model",
        f"static:{model}",
        "--wordset",
        str(world.wordset),
        "--bootstrap",
        "0",
    ]


@case("Z117-vocab-txt-not-utf-8", names=("vocab.txt", "not UTF-8", "0xe9"))
def _(world, folder):
    model = _encoder(world, folder)
    with (model / "vocab.txt").open("ab") as fh:
        fh.write("caf\xe9\n".encode("latin-1"))
    return _static_run(world, folder, model)


@case(
    "Z121-one-dimensional-matrix",
    names=("bert.embeddings.word_embeddings.weight", "(4,)", "(tokens, dimensions)"),
)
def _(world, folder):
    from safetensors.numpy import save_file

    model = _encoder(world, folder)
    save_file(
        {"bert.embeddings.word_embeddings.weight": np.zeros(4, dtype=np.float32)},
        str(model / "model.safetensors"),
    )
    return _static_run(world, folder, model)


def test_Z125_a_cache_folder_that_cannot_be_written_exits_2(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BIAS_CACHE_DIR naming a file (so no folder can be made in it): as a read-only folder, the user's
    setting to change, not a failure of the program."""
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("not a folder\n")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(blocked))
    done = cli(*_static_run(world, tmp_path, _encoder(world, tmp_path)))
    assert done.code == 2, done.both
    assert (
        "Cannot write the static vectors" in done.both
        and "BIAS_CACHE_DIR" in done.both
        and "Traceback" not in done.both
    )


# Z108, Z109, N41, N58: run folders ------------------------------------------------------------------


def _tampered(world: World, folder: Path, value: object) -> Path:
    run = folder / "runs" / "z108"
    shutil.copytree(world.finished, run)
    lines = (run / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["effect_size"] = value
    (run / "results.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return run


@case(
    "Z108-agreement-on-an-edited-effect-size",
    names=("results.jsonl", "line 1", "effect_size 'abc' is not a finite number"),
)
def _(world, folder):
    return ["report", str(_tampered(world, folder, "abc")), "--agreement"]


@case(
    "Z108-report-on-an-infinite-effect-size",
    names=("results.jsonl", "effect_size", "not a finite number"),
)
def _(world, folder):
    run = _tampered(world, folder, 1.0)
    text = (
        (run / "results.jsonl")
        .read_text()
        .replace('"effect_size": 1.0', '"effect_size": Infinity', 1)
    )
    (run / "results.jsonl").write_text(text)
    return ["report", str(run), "--agreement"]


@case("Z109-robustness-with-agreement", names=("--robustness", "--agreement"))
def _(world, folder):
    run = folder / "runs" / "z109"
    shutil.copytree(world.finished, run)
    return ["report", str(run), "--robustness", "--agreement"]


@case(
    "N41-no-stray-equals-colon",
    names=("figures.scores in results.jsonl: '../../x.csv'", "outside the run folder"),
    absent=("=:",),
)
def _(world, folder):
    run = folder / "runs" / "n41"
    shutil.copytree(world.finished, run)
    lines = (run / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["figures"]["scores"] = "../../x.csv"
    (run / "results.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return ["report", str(run), "--format", "html"]


def test_N58_a_temporary_file_of_a_killed_writer_is_removed(world: World, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(world.finished, run)
    stale = run / ".manifest.json.99999999.tmp"  # no process has that number
    stale.write_bytes(b"")
    done = cli(
        "run",
        "-m",
        f"word2vec:{world.w2v_bin}",
        "-w",
        str(world.wordset),
        "--bootstrap",
        "0",
        "--out",
        str(run),
        "--resume",
    )
    assert done.code == 0, done.both
    assert not stale.exists() and not list(run.glob(".*.tmp"))


# Z26-Z30, Z116: BBQ lines, named as the file writes them ------------------------------------------


def _bbq_line(**changes: object) -> str:
    row = {
        "example_id": 1,
        "question_index": "1",
        "question_polarity": "neg",
        "context_condition": "ambig",
        "category": "Gender_identity",
        "answer_info": {
            "ans0": ["Tom", "M"],
            "ans1": ["Anna", "F"],
            "ans2": ["Can't be determined", "unknown"],
        },
        "additional_metadata": {
            "subcategory": "None",
            "stereotyped_groups": ["F"],
            "version": "a",
            "source": "test",
        },
        "context": "Tom and Anna work here.",
        "question": "Who is bad?",
        "ans0": "Tom",
        "ans1": "Anna",
        "ans2": "Can't be determined",
        "label": 2,
    }
    row.update(changes)
    return json.dumps(row)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"target_loc": 5}, "target_loc 5 must be 0, 1 or 2"),
        ({"target_loc": "1"}, "target_loc '1' must be 0, 1 or 2"),
        (
            {"target_loc": 2},
            "target_loc 2 names ans2, which answer_info marks as the unknown answer",
        ),
        ({"target_loc": True}, "target_loc True must be 0, 1 or 2"),
        (
            {"question_polarity": "negative"},
            'question_polarity \'negative\' must be "neg" or "nonneg"',
        ),
        (
            {"context_condition": "ambiguous"},
            'context_condition \'ambiguous\' must be "ambig" or "disambig"',
        ),
        ({"label": 3}, "label 3 must be 0, 1 or 2"),
    ],
    ids=[
        "Z26-out-of-range",
        "Z27-text",
        "Z28-unknown",
        "Z29-bool",
        "Z30-polarity",
        "Z116-condition",
        "label",
    ],
)
def test_bbq_lines_are_refused_with_the_files_own_field_names(
    world: World, tmp_path: Path, changes: dict, words: str
) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(
        _bbq_line() + "\n" + _bbq_line(example_id=2, **changes) + "\n", encoding="utf-8"
    )
    done = cli(
        "run", "--model", f"word2vec:{world.w2v_bin}", "--wordset", str(path), "--metric", "bbq"
    )
    assert done.code == 2 and "Traceback" not in done.both, done.both
    assert (
        f"{path}: line 2" in done.err
        and words in done.err
        and "stereotyped" not in done.err.split("\n")[0]
    ), done.err


def test_an_imported_bbq_file_states_no_direction(tmp_path: Path) -> None:
    from bias.registry import load_wordset

    path = tmp_path / "questions.jsonl"
    path.write_text(_bbq_line() + "\n", encoding="utf-8")
    assert load_wordset(str(path)).meta.expected_direction == "none"


def test_Z33_a_dutch_mbbq_file_without_its_prompt_is_said(tmp_path: Path) -> None:
    path = tmp_path / "Gender_identity_nl.jsonl"
    path.write_text(
        _bbq_line() + "\n" + _bbq_line(example_id=2, context_condition="disambig", label=0) + "\n",
        encoding="utf-8",
    )
    done = cli("validate", str(path))
    assert "prompt" in done.out and "nl questions in its English prompt" in done.out, done.out


# N13: a converted config saved in another folder runs ------------------------------------------------


def test_N13_a_converted_config_saved_elsewhere_runs(world: World, tmp_path: Path) -> None:
    weat = tmp_path / "fw" / "datasets" / "en" / "WEAT"
    weat.mkdir(parents=True)
    (weat / "planted.txt").write_text(
        "\n".join(", ".join(ws) for ws in (X_WORDS, Y_WORDS, A_WORDS, B_WORDS)) + "\n"
    )
    (tmp_path / "fw" / "models").mkdir()
    shutil.copy(world.w2v_bin, tmp_path / "fw" / "models" / "GoogleNews-vectors-negative300.bin")
    (tmp_path / "fw" / "config.txt").write_text("planted,WEAT,word2vec,en,None\n")
    converted = cli("convert", "fw/config.txt", cwd=tmp_path)
    assert converted.code == 0, converted.both
    (tmp_path / "conv").mkdir()
    (tmp_path / "conv" / "conv.toml").write_text(converted.out, encoding="utf-8")
    # Its word sets lie outside its folder: the command line confirms them, one by one or by folder.
    refused = cli("run", "conv/conv.toml", cwd=tmp_path)
    assert refused.code == 2 and "--allow wordset=" in refused.err, refused.both
    done = cli("run", "conv/conv.toml", "--allow", "wordset=fw/datasets", cwd=tmp_path)
    assert done.code == 0, done.both
    assert str((tmp_path / "fw" / "models").resolve()) in converted.out


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_review_28_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
