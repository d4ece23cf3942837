"""Helpers of the bad-input corpus: tiny real models and files built once per session, and the `bias` command
run in-process (fixtures/in_process.py: its own `main`, exit code, stdout and stderr captured) so hundreds of
bad inputs take seconds, not one interpreter start each."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from fixtures.in_process import Outcome, cli  # noqa: F401 (the corpus's modules import them from here)
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS, corpus, save_word2vec_binary, save_word2vec_text, train_word2vec


def words_toml(path: Path, X=X_WORDS, Y=Y_WORDS, A=A_WORDS, B=B_WORDS, extra: str = "") -> Path:
    """A house-format association test written by the tests (TOML strings escaped as TOML wants)."""

    def words(ws):
        return "[" + ", ".join('"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in ws) + "]"

    path.write_text(
        f'kind = "association"\nlanguage = "en"\nbias_type = "non-social"\nsource = "written by the tests"\n'
        f'licence = "CC0-1.0"\n{extra}\n[sets.X]\nwords = {words(X)}\n[sets.Y]\nwords = {words(Y)}\n'
        f"[sets.A]\nwords = {words(A)}\n[sets.B]\nwords = {words(B)}\n",
        encoding="utf-8",
    )
    return path


@attrs.frozen
class World:
    """Files every case may read (never write): a planted word2vec model in both layouts, a word set
    of its words, a tiny BERT and a finished run."""

    root: Path
    w2v_bin: Path
    w2v_txt: Path
    wordset: Path
    bert: Path
    finished: Path


_BUILT: list[World] = []  # the fixture is imported by several modules; the world is built once


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    if not _BUILT:
        _BUILT.append(_build_world(tmp_path_factory))
    return _BUILT[0]


def _build_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    from fixtures.tiny_bert import build_tiny_bert

    root = tmp_path_factory.mktemp("bad-input-world")
    kv = train_word2vec(corpus(sentences=600), dim=10).wv
    w2v_bin = save_word2vec_binary(kv, root / "planted.bin")
    w2v_txt = save_word2vec_text(kv, root / "planted.txt")
    wordset = words_toml(root / "planted.toml")
    bert = build_tiny_bert(root / "bert")
    finished = root / "finished"
    done = cli("run", "-m", f"word2vec:{w2v_bin}", "-w", str(wordset), "--bootstrap", "0", "--out", str(finished))
    assert done.code == 0, done.both
    return World(root, w2v_bin, w2v_txt, wordset, bert, finished)


def snapshot(*folders: Path) -> dict[str, str]:
    """SHA-256 of every file under the folders: what a bad input must leave as it was."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != ".bias-run.lock":  # the lock notes who holds it
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def unchanged(before: dict[str, str]) -> list[str]:
    """The files of `before` that are gone or differ now."""
    changed = []
    for name, digest in before.items():
        path = Path(name)
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            changed.append(name)
    return changed


@attrs.frozen
class Case:
    """One bad input: `build(world, folder)` writes the files and returns the arguments; the run must
    exit with `code`, print no traceback, answer in at most `lines` lines of stderr naming every one
    of `names`, never show any of `absent`, and leave every file that existed before unchanged."""

    name: str
    build: Callable[[World, Path], list[str]]
    code: int = 2
    names: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    lines: int = 2
    check: Callable[[Outcome, Path], None] | None = None
    stream: str = "err"  # where the answer is printed: stderr, or stdout for `bias validate`'s report


def case_decorator(cases: list[Case]) -> Callable[..., Callable[[Callable[[World, Path], list[str]]], Callable[[World, Path], list[str]]]]:
    """The `@case(name, ...)` decorator of a test module: each builder it decorates joins `cases`
    (the module's own list, which its parametrized test runs)."""

    def case(name: str, code: int = 2, names: tuple[str, ...] = (), absent: tuple[str, ...] = (), lines: int = 2, check=None, stream: str = "err"):
        def register(build: Callable[[World, Path], list[str]]) -> Callable[[World, Path], list[str]]:
            cases.append(Case(name, build, code, names, absent, lines, check, stream))
            return build

        return register

    return case


def write_experiment(folder: Path, body: str, name: str = "exp.toml") -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def local_wordset(world: World, folder: Path) -> Path:
    """The planted word set copied into `folder`: a file reads word sets from its own folder (one
    elsewhere needs --allow wordset=PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / world.wordset.name
    if not target.exists():
        shutil.copyfile(world.wordset, target)
    return target


def basic_experiment(world: World, folder: Path) -> str:
    """An experiment file's body that runs in `folder`: the planted word2vec model, the planted word
    set (a copy in the folder), WEAT."""
    return f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = ["weat"]\n'


def copy_model(world: World, folder: Path, name: str = "bert") -> Path:
    target = folder / name
    shutil.copytree(world.bert, target)
    return target


def assert_answered(case: Case, world: World, folder: Path) -> Outcome:
    """Run a case and check everything every bad input must satisfy."""
    folder.mkdir(parents=True, exist_ok=True)
    args = case.build(world, folder)
    before = snapshot(folder, world.root)
    result = cli(*args, cwd=folder)
    assert result.code == case.code, f"exit {result.code}, expected {case.code}\n{result.both}"
    assert "Traceback" not in result.both, result.both
    shown = result.err if case.stream == "err" else result.out
    if case.code != 0:
        # the "[k/N] test metric: status (time)" progress lines of a run off a terminal are not the answer
        lines = [line for line in shown.splitlines() if line.strip() and not re.match(r"\[\d+/\d+\] ", line)]
        assert lines, f"no message on std{case.stream}"
        assert len(lines) <= case.lines, shown
        assert "Results" not in result.out, "a results table under a refusal:\n" + result.out
    for fragment in case.names:
        assert fragment in shown, f"{fragment!r} not named in:\n{shown}"
    for fragment in case.absent:
        assert fragment not in result.both, f"{fragment!r} shown in:\n{result.both}"
    changed = unchanged(before)
    assert not changed, f"files changed by a bad input: {changed}"
    if case.check is not None:
        case.check(result, folder)
    return result


# Hostile model files: what runs code when loaded, leaving a marker file if it does ------------------

MARKER = "PWNED"


class RunsCode:
    """What a hostile .kv file holds: a pickle whose loading creates the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


def nothing_ran(result: Outcome, folder: Path) -> None:
    assert not (folder / MARKER).exists(), "the file's code ran"


def evil_kv(folder: Path) -> Path:
    import pickle

    path = folder / "evil.kv"
    path.write_bytes(pickle.dumps(RunsCode(folder / MARKER)))
    return path


def remote_code_model(world: World, folder: Path) -> Path:
    """A real model folder whose config names its own Python module, which creates the marker when imported."""
    import json

    model = copy_model(world, folder, "remote")
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "evil_config.EvilConfig"}
    (model / "config.json").write_text(json.dumps(config))
    (model / "evil_config.py").write_text(
        f"open({str(folder / MARKER)!r}, 'w').close()\n"
        "from transformers import BertConfig\n\n\nclass EvilConfig(BertConfig):\n    model_type = 'bert'\n"
    )
    return model


# A bbq-prompts file of the tests' own ({extra}: its variants and fields), and a variant that is right.
BBQ_PROMPTS_FILE = """kind = "bbq-prompts"
language = "en"
bias_type = "mixed"
source = "written by the tests"
licence = "CC0-1.0"
{extra}
"""
GOOD_BBQ_VARIANT = (
    '[[variants]]\nname = "v"\nprompt = "{context} {question} (A) {ans0} (B) {ans1} (C) {ans2}"\n'
)
