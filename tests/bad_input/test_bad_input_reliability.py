"""Bad inputs of the reliability review, each built here and answered as a user must see it: rich
markup in any text shown as written, hostile JSON and workbooks refused naming the file, a bad
parameter value said as that, framework config lines that cannot run left out with their line
number while the others run, and refusals that say why in at most two lines."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from bad_input_helpers import Case, Outcome, World, assert_answered, cli, copy_model, words_toml, world  # noqa: F401 (world is a fixture)
from bad_input_helpers import case_decorator, local_wordset, write_experiment
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES: list[Case] = []
case = case_decorator(CASES)
DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's recursion limit


def w2v(world: World) -> list[str]:
    return ["-m", f"word2vec:{world.w2v_bin}"]


def results_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]


# A BIAS Detection Framework folder: datasets/en/WEAT/T1.txt in the planted words, the planted model as
# models/GoogleNews-vectors-negative300.bin, the config under experiments/en/.


def framework(world: World, folder: Path, *lines: str, name: str = "cfg.txt") -> Path:
    weat = folder / "fw" / "datasets" / "en" / "WEAT"
    weat.mkdir(parents=True, exist_ok=True)
    (weat / "T1.txt").write_text("\n".join(",".join(ws) for ws in (X_WORDS, Y_WORDS, A_WORDS, B_WORDS)) + "\n", encoding="utf-8")
    (folder / "fw" / "models").mkdir(exist_ok=True)
    shutil.copy(world.w2v_bin, folder / "fw" / "models" / "GoogleNews-vectors-negative300.bin")
    config = folder / "fw" / "experiments" / "en" / name
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# dataset,metric,embedding,language,modelname\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return config


def fw_args(config: Path, folder: Path) -> list[str]:
    return ["--datasets", str(folder / "fw" / "datasets"), "--models", str(folder / "fw" / "models")]


GOOD = "T1,WEAT,word2vec,en,None"


def _one_ok(result: Outcome, folder: Path) -> None:
    found = results_of(folder / "out")
    assert [r["status"] for r in found] == ["ok"], found


@case("fw-missing-model-skips-its-line", code=0, names=("line 3", "glove.840B.300d.txt", "--models"), absent=("Model file not found", "--model."), lines=6, check=_one_ok)
def _(world, folder):
    config = framework(world, folder, GOOD, "T1,WEAT,glove,en,None")
    return ["run", str(config), *fw_args(config, folder), "--out", str(folder / "out")]


@case("fw-markup-in-fields-run", code=0, names=("[/b]", "[red]x[/x]"), lines=6, check=_one_ok)
def _(world, folder):
    config = framework(world, folder, GOOD, "T1,[/b],word2vec,en,None", "T1,WEAT,[red]x[/x],en,None")
    return ["run", str(config), *fw_args(config, folder), "--out", str(folder / "out")]


def _converted(result: Outcome, folder: Path) -> None:
    data = tomllib.loads(result.out)
    assert len(data["experiments"]) == 1 and data["experiments"][0]["metric"] == "weat"


@case("fw-markup-in-fields-convert", code=0, names=("[/b]", "line 3"), check=_converted)
def _(world, folder):
    config = framework(world, folder, GOOD, "T1,[/b],word2vec,en,None")
    return ["convert", str(config), *fw_args(config, folder)]


def _outside_not_read(result: Outcome, folder: Path) -> None:
    _one_ok(result, folder)
    assert result.err.count("leads out of the --datasets folder") == 3, result.err


@case("fw-dataset-leaving-the-folder", code=0, names=("line 3", "line 4", "line 5"), lines=6, check=_outside_not_read)
def _(world, folder):
    outside = folder / "outside.txt"
    outside.write_text("\n".join(",".join(ws) for ws in (X_WORDS, Y_WORDS, A_WORDS, B_WORDS)) + "\n", encoding="utf-8")
    config = framework(world, folder, GOOD, "../../../../outside,WEAT,word2vec,en,None", f"{folder / 'outside'},WEAT,word2vec,en,None",
                       "T1,WEAT,word2vec,../../..,None")
    return ["run", str(config), *fw_args(config, folder), "--out", str(folder / "out")]


def _model_outside(result: Outcome, folder: Path) -> None:
    _one_ok(result, folder)
    assert result.err.count("leads out of the --models folder") == 2, result.err


@case("fw-model-leaving-the-folder", code=0, names=("line 3", "line 4"), lines=6, check=_model_outside)
def _(world, folder):
    config = framework(world, folder, GOOD, f"T1,WEAT,bert,en,{world.bert}", "T1,WEAT,bert,en,../../../bert")
    return ["run", str(config), *fw_args(config, folder), "--out", str(folder / "out")]


@case("fw-convert-only-comments", names=("nothing to convert", "only comments"))
def _(world, folder):
    config = framework(world, folder)
    return ["convert", str(config), *fw_args(config, folder)]


def _toml_with_del(result: Outcome, folder: Path) -> None:
    data = tomllib.loads(result.out)  # the generated file parses
    assert data["title"] == "cfg\x7fdel" and "<U+007F>" in result.out and "\x7f" not in result.out


@case("fw-convert-control-character-in-name", code=0, check=_toml_with_del, stream="out")
def _(world, folder):
    config = framework(world, folder, GOOD, name="cfg\x7fdel.txt")
    return ["convert", str(config), *fw_args(config, folder)]


@case("fw-convert-finds-the-framework-folders", code=0, check=_converted, stream="out")
def _(world, folder):
    config = framework(world, folder, GOOD)
    return ["convert", str(config.relative_to(folder))]  # run from the scratch folder: no ./datasets there


# [[experiments]] model paths are read against the file's folder ---------------------------------------------


def _ran(result: Outcome, folder: Path) -> None:
    assert [r["status"] for r in results_of(folder / "exp" / "out")] == ["ok"]


@case("experiments-model-beside-the-file", code=0, check=_ran)
def _(world, folder):
    (folder / "exp").mkdir()
    shutil.copy(world.w2v_bin, folder / "exp" / "local.bin")
    words_toml(folder / "exp" / "ws.toml")
    body = '[params]\nbootstrap = 0\n[[experiments]]\nwordset = "ws.toml"\nmetric = "weat"\nmodel = "word2vec:local.bin"\n'
    return ["run", str(write_experiment(folder / "exp", body)), "--out", str(folder / "exp" / "out")]


# Hostile JSON, workbooks and scores tables --------------------------------------------------------------------


@case("lpbs-json-nested-100000-deep", names=("lpbs_deep.jsonl", "nested"))
def _(world, folder):
    (folder / "lpbs_deep.jsonl").write_text(DEEP, encoding="utf-8")
    return ["run", "-m", f"hf:{world.bert}", "--metric", "lpbs", "-w", str(folder / "lpbs_deep.jsonl")]


@case("fise-json-nested-100000-deep", names=("fise_deep.json", "nested"))
def _(world, folder):
    (folder / "fise_deep.json").write_text('{"g": {"a": ' + DEEP + ', "b": ["x"]}}', encoding="utf-8")
    return ["run", *w2v(world), "--metric", "fise", "-w", str(folder / "fise_deep.json")]


FISE = json.dumps({"gender": {"m": list(X_WORDS[:3]), "f": list(Y_WORDS[:3])}, "mood": {"p": list(A_WORDS[:3]), "n": list(B_WORDS[:3])}})


@case("fise-trait-line-nested-100000-deep", names=("traits_deep.txt", "line 2", "not a list of words"))
def _(world, folder):
    (folder / "fise.json").write_text(FISE, encoding="utf-8")
    (folder / "traits_deep.txt").write_text("brave\n" + DEEP + "\n", encoding="utf-8")
    return ["run", *w2v(world), "--metric", "fise", "-w", str(folder / "fise.json"), "--param", f"traits={folder / 'traits_deep.txt'}"]


def crows_workbook(path: Path, sheet: bytes | None = None) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["sent_more", "sent_less", "stereo_antistereo", "bias_type"])
    book.active.append(["he is a doctor", "she is a doctor", "stereo", "gender"])
    book.save(path)
    if sheet is not None:
        with zipfile.ZipFile(path) as old:
            members = [(item, old.read(item.filename)) for item in old.infolist()]
        with zipfile.ZipFile(path, "w") as new:
            for item, data in members:
                new.writestr(item, sheet if item.filename == "xl/worksheets/sheet1.xml" else data)
    return path


@case("crows-xlsx-sheet-xml-cut", names=("badxml.xlsx", "not a readable .xlsx workbook"))
def _(world, folder):
    crows_workbook(folder / "badxml.xlsx")
    with zipfile.ZipFile(folder / "badxml.xlsx") as book:
        sheet = book.read("xl/worksheets/sheet1.xml")
    crows_workbook(folder / "badxml.xlsx", sheet[: len(sheet) // 2] + b"<<&&garbage")
    return ["run", "-m", f"hf:{world.bert}", "--metric", "crows", "--pairs", str(folder / "badxml.xlsx")]


LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10) for i in range(1, 10))
    + b']><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">'
    b'<c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'
)


@case("crows-xlsx-billion-laughs", names=("lol.xlsx", "not a readable .xlsx workbook"))
def _(world, folder):
    crows_workbook(folder / "lol.xlsx", LAUGHS)
    return ["run", "-m", f"hf:{world.bert}", "--metric", "crows", "--pairs", str(folder / "lol.xlsx")]


@case("report-scores-csv-not-a-number", names=("scores-", "line 2", "'abc'"))
def _(world, folder):
    run = folder / "run"
    shutil.copytree(world.finished, run)
    [scores] = run.glob("scores-*.csv")
    lines = scores.read_text(encoding="utf-8").splitlines()
    column = lines[0].split(",").index("s")
    row = lines[1].split(",")
    row[column] = "abc"
    scores.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n", encoding="utf-8")
    return ["report", str(run), "--format", "html"]


# A bad parameter value is said as that ---------------------------------------------------------------------


NOT_A_SKIP = ("every combination was skipped", "Choose metrics that fit")


@case("param-word-for-an-integer-in-a-file", names=("permutations", "weat", "an integer", "'many'"), absent=NOT_A_SKIP)
def _(world, folder):
    body = f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n[params]\npermutations = "many"\n'
    return ["run", str(write_experiment(folder, body))]


@case("param-fraction-for-an-integer-in-a-file", names=("ddof", "an integer", "1.5"), absent=NOT_A_SKIP)
def _(world, folder):
    body = f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n[params]\nddof = 1.5\n'
    return ["run", str(write_experiment(folder, body))]


@case("param-word-for-an-integer-on-the-command-line", names=("permutations", "'abc'"), absent=NOT_A_SKIP)
def _(world, folder):
    return ["run", *w2v(world), "-w", str(world.wordset), "--param", "permutations=abc"]


@case("pooling-that-does-not-exist", names=("'nonsense'", "is not a pooling", "cls, mean, first, last", "target-mean"), absent=NOT_A_SKIP)
def _(world, folder):
    return ["run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--metric", "seat", "--pooling", "nonsense"]


@case("word-set-file-name-not-utf8", names=("not be written as UTF-8", "t\\udcff.toml", "Rename the file"))
def _(world, folder):
    # a name in another encoding (Latin-1 0xff), as the file system hands it to Python
    import os

    name = os.fsdecode(bytes(folder) + b"/t\xff.toml")
    shutil.copy(world.wordset, name)
    return ["run", *w2v(world), "-w", name]


# Word similarity, probe data, pairs files ------------------------------------------------------------------


def similarity_file(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    path.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in rows), encoding="utf-8")
    return path


WORDS = [*X_WORDS, *Y_WORDS]


@case("similarity-constant-human-scores", names=("every human score", "undefined"))
def _(world, folder):
    path = similarity_file(folder / "const.tsv", [(WORDS[i], WORDS[i + 1], 5.0) for i in range(8)])
    return ["run", *w2v(world), "--metric", "word-similarity", "-w", str(path)]


def _two_repeats(result: Outcome, folder: Path) -> None:
    assert result.err.count("another order or case") == 2, result.err
    assert json.loads((folder / "out" / "results.jsonl").read_text().splitlines()[0])["figures"]["pairs"] == 8


@case("similarity-reversed-and-case-variant-pairs", code=0, check=_two_repeats)
def _(world, folder):
    rows = [(WORDS[i], WORDS[i + 1], float(i)) for i in range(8)]
    rows += [(WORDS[1], WORDS[0], 9.0), (WORDS[2].upper(), WORDS[1], 3.0)]
    path = similarity_file(folder / "dups.tsv", rows)
    return ["run", *w2v(world), "--metric", "word-similarity", "-w", str(path), "--out", str(folder / "out")]


def labelled(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("text,label\n" + "".join(f"{t},{l}\n" for t, l in rows), encoding="utf-8")
    return path


def _labels_named(result: Outcome, folder: Path) -> None:
    assert "'01', '1', '1.0'" in result.err and "written differently" in result.err, result.err


@case("probe-one-number-written-three-ways", code=0, check=_labels_named)
def _(world, folder):
    labels = ["1", "1.0", "01", "0", "0", "1", "1.0", "01", "0", "0"]
    path = labelled(folder / "labels.csv", [(WORDS[i], label) for i, label in enumerate(labels)])
    return ["run", *w2v(world), "--metric", "probe", "-w", str(path)]


def _grouped(result: Outcome, folder: Path) -> None:
    warnings = [line for line in result.err.splitlines() if "repeat" in line]
    assert len(warnings) == 1 and "more item(s) repeat an earlier text" in result.err, result.err[:2000]
    assert len(result.err.splitlines()) < 10


@case("probe-100000-rows-of-repeated-texts", code=0, check=_grouped)
def _(world, folder):
    words = [*X_WORDS, *Y_WORDS, *A_WORDS, *B_WORDS]
    rows = [(f"{words[i % len(words)]} {words[(i // len(words)) % len(words)]}", str(i % 2)) for i in range(100_000)]
    return ["run", *w2v(world), "--metric", "probe", "-w", str(labelled(folder / "big.csv", rows))]


@case("probe-long-well-quoted-field", code=0)
def _(world, folder):
    path = labelled(folder / "long.csv", [(WORDS[i], str(i % 2)) for i in range(10)])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('"' + " ".join([WORDS[0]] * 40_000) + '",1\n')
    return ["run", *w2v(world), "--metric", "probe", "-w", str(path)]


def pairs_csv(path: Path, rows: list[str]) -> Path:
    path.write_text("sent_more,sent_less,stereo_antistereo,bias_type\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


@case("pairs-all-identical", names=("identical.csv", "the two sentences are identical", "lines 2, 3, 4"))
def _(world, folder):
    path = pairs_csv(folder / "identical.csv", [f"he is {i},he is {i},stereo,gender" for i in range(3)])
    return ["run", "-m", f"hf:{world.bert}", "--metric", "crows", "--pairs", str(path)]


def _short_lines(result: Outcome, folder: Path) -> None:
    refusal = [line for line in result.err.splitlines() if line.startswith("refused")]
    assert len(refusal) == 1 and len(refusal[0]) < 400, refusal


@case("pairs-sentence-beyond-the-model-limit", names=("line 2", "longer than the model's limit", "characters)"), check=_short_lines, lines=3)
def _(world, folder):
    path = pairs_csv(folder / "long.csv", ["he said " + "the old man walked to the market " * 300 + ",she said hi,stereo,gender"])
    return ["run", "-m", f"hf:{world.bert}", "--metric", "crows", "--pairs", str(path)]


@case("pairs-file-with-other-columns", names=("wrongcols.csv", "sent_more", "CrowS-Pairs"), absent=("labelled-texts", "columns text and label"))
def _(world, folder):
    path = folder / "wrongcols.csv"
    path.write_text("sent1,sent2,label\nhe is a doctor,she is a doctor,1\nhe runs,she runs,0\n", encoding="utf-8")
    return ["run", "-m", f"hf:{world.bert}", "--metric", "crows", "--pairs", str(path)]


@case("list-language-given-as-a-name", names=("'dutch'", "not the code", "nl"))
def _(world, folder):
    return ["list", "wordsets", "--language", "dutch"]


# Rich markup in paths: shown as written -------------------------------------------------------------------


def _written_to_markup_path(result: Outcome, folder: Path) -> None:
    assert "Written to " in result.out and "[/x]n43" in result.out
    assert (folder / "runs" / "[/x]n43" / "results.jsonl").is_file()


@case("markup-in-out-path", code=0, check=_written_to_markup_path)
def _(world, folder):
    return ["run", *w2v(world), "-w", str(world.wordset), "--bootstrap", "0", "--out", "runs/[/x]n43"]


def _debiased_into_markup_path(result: Outcome, folder: Path) -> None:
    assert "[/y]n44" in result.out and "record:" in result.out
    assert (folder / "runs" / "[/y]n44" / "debias.json").is_file()


@case("markup-in-debias-out-path", code=0, check=_debiased_into_markup_path)
def _(world, folder):
    pairs = "[" + ", ".join(f'["{x}", "{y}"]' for x, y in zip(X_WORDS, Y_WORDS)) + "]"
    lists = folder / "lists.toml"
    lists.write_text(
        'kind = "debias-lists"\nlanguage = "en"\nbias_type = "non-social"\nsource = "written by the tests"\nlicence = "CC0-1.0"\n'
        f"definitional = {pairs}\nequalize = {pairs}\n",
        encoding="utf-8",
    )
    return ["debias", "--model", f"word2vec:{world.w2v_bin}", "--method", "hard", "--lists", str(lists), "--out", "runs/[/y]n44"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_reliability_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_cases_have_unique_names() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 29


def test_progress_bar_shows_a_markup_path_as_written(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the progress bar names the word set; `[/x]` in its path is text, not a closing tag."""
    import io

    from rich.console import Console

    from bias.cli import consoles

    (tmp_path / "ws" / "[").mkdir(parents=True)  # "[/x]ok.toml" is the file "x]ok.toml" in the folder "["
    shutil.copy(world.wordset, tmp_path / "ws" / "[/x]ok.toml")
    screen = io.StringIO()
    monkeypatch.setitem(consoles._made, False, Console(file=screen, force_terminal=True, width=200))
    result = cli("run", *w2v(world), "-w", "ws/[/x]ok.toml", "--bootstrap", "0", cwd=tmp_path)
    assert result.code == 0 and "Traceback" not in result.both, result.both
    assert "MarkupError" not in result.both + screen.getvalue()
    assert "[/x]ok.toml" in screen.getvalue()  # the bar (and the table) drew the path as written


def test_cli_prints_user_text_one_way() -> None:
    """Every line of text `bias.cli` prints goes through `bias.cli.say` (which shows user text literally);
    no other module builds rich markup around it or prints a string itself."""
    import re

    import bias.cli

    folder = Path(bias.cli.__path__[0])
    offending = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "say.py":
            continue
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"\.print\(\s*f?[\"']|rich\.markup|\bescape\(|\bText\(|rich\.text import", text):
                offending.append(f"{path.name}:{number}: {text.strip()}")
    assert not offending, "\n".join(offending)
