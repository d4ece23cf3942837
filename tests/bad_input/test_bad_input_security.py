"""Hostile files: an experiment file that tries to run code or join a machine, a run folder with links
planted in it, a results.jsonl edited to point outside its folder, names that carry HTML. Each is
written here and answered as a user must see it (exit 2, the file or field named, nothing run, nothing
outside the folder written or read)."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from bad_input_helpers import Case, Outcome, World, assert_answered, cli, copy_model, words_toml, world  # noqa: F401 (world is a fixture)
from bad_input_helpers import basic_experiment, case_decorator, evil_kv, local_wordset, nothing_ran, remote_code_model, write_experiment
from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

CASES: list[Case] = []
case = case_decorator(CASES)


# N63, N64: settings that run code, in an [[experiments]] entry's model ------------------------------


@case("N63-experiments-model-allow-pickle", names=("experiments[0].model", "allow_pickle", "--allow-pickle"), check=nothing_ran)
def _(world, folder):
    body = (
        f'[[experiments]]\nwordset = "{local_wordset(world, folder)}"\nmetric = "weat"\n'
        f'model = {{ spec = "kv:{evil_kv(folder)}", allow_pickle = true }}\n'
    )
    return ["run", str(write_experiment(folder, body))]


@case("N64-experiments-model-trust-remote-code", names=("experiments[0].model", "trust_remote_code", "--trust-remote-code"), check=nothing_ran)
def _(world, folder):
    model = remote_code_model(world, folder)
    body = (
        f'[[experiments]]\nwordset = "{local_wordset(world, folder)}"\nmetric = "weat"\n'
        f'model = {{ spec = "hf:{model}", trust_remote_code = true }}\n'
    )
    return ["run", str(write_experiment(folder, body))]


@case("code-option-in-experiments-params", names=("experiments[0].params", "trust_remote_code"))
def _(world, folder):
    body = (
        f'[[experiments]]\nwordset = "{local_wordset(world, folder)}"\nmetric = "weat"\nmodel = "word2vec:{world.w2v_bin}"\n'
        "params = { trust_remote_code = true }\n"
    )
    return ["run", str(write_experiment(folder, body))]


@case("code-option-in-listed-params", names=("[params]", "allow-pickle", "--allow-pickle"))
def _(world, folder):
    body = f'[[experiments]]\nwordset = "{local_wordset(world, folder)}"\nmetric = "weat"\nmodel = "word2vec:{world.w2v_bin}"\n[params]\nallow-pickle = true\n'
    return ["run", str(write_experiment(folder, body))]



# N52: a file's ray_address is joined only when the command line confirms it -------------------------


@pytest.fixture()
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.setblocking(False)
    yield server
    server.close()


def test_N52_a_files_ray_address_needs_the_command_line(world: World, tmp_path: Path, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    config = write_experiment(tmp_path, f'executor = "ray"\nray_address = "127.0.0.1:{port}"\n' + basic_experiment(world, tmp_path))
    result = cli("run", str(config), cwd=tmp_path)
    assert result.code == 2, result.both
    assert "Traceback" not in result.both
    lines = result.err_lines()
    assert len(lines) <= 2 and "ray_address" in lines[0] and f"--ray-address 127.0.0.1:{port}" in result.err, result.err
    with pytest.raises(BlockingIOError):  # nobody knocked
        listener.accept()
    assert not (tmp_path / "results.jsonl").exists()


def test_the_command_line_replacing_a_files_ray_address_is_said(world: World, tmp_path: Path) -> None:
    from bias.engine.front_door import from_options, spec_for_run

    path = write_experiment(tmp_path, 'executor = "ray"\nray_address = "auto"\n' + basic_experiment(world, tmp_path))
    said: list[str] = []
    assert spec_for_run(from_options({"ray_address": "10.0.0.5:6379"}), path, on_notice=said.append).ray_address == "10.0.0.5:6379"
    assert said == ["--ray-address 10.0.0.5:6379 replaces the experiment file's ray_address = 'auto'."]
    assert spec_for_run(from_options({"ray_address": "auto"}), path, on_notice=said.append).ray_address == "auto" and len(said) == 1
    plain = write_experiment(tmp_path, basic_experiment(world, tmp_path), "plain.toml")
    assert spec_for_run(from_options({}), plain, on_notice=said.append).ray_address is None and len(said) == 1


# N61, N62: links planted in a run folder -----------------------------------------------------------


def _victim(folder: Path) -> Path:
    victim = folder / "victim.txt"
    victim.write_text("a file outside the run folder\n")
    return victim


@case("N61-report-md-is-a-link", names=("report.md", "symbolic link"))
def _(world, folder):
    run = folder / "runs" / "n61"
    shutil.copytree(world.finished, run)
    (run / "report.md").unlink(missing_ok=True)
    (run / "report.md").symlink_to(_victim(folder))
    return ["report", str(run), "--format", "md"]


@case("N62-lock-file-is-a-link", names=(".bias-run.lock", "symbolic link"))
def _(world, folder):
    run = folder / "runs" / "n62"
    shutil.copytree(world.finished, run)
    (run / ".bias-run.lock").unlink(missing_ok=True)
    (run / ".bias-run.lock").symlink_to(_victim(folder))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0", "--out", str(run), "--resume"]


@case("results-jsonl-is-a-link-target-of-appends", names=("results.jsonl", "symbolic link"))
def _(world, folder):
    run = folder / "runs" / "linked"
    run.mkdir(parents=True)
    (run / "results.jsonl").symlink_to(_victim(folder))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0", "--out", str(run)]


@case("figure-is-a-link", names=("forest.png", "symbolic link"))
def _(world, folder):
    run = folder / "runs" / "figure"
    shutil.copytree(world.finished, run)
    (run / "forest.png").symlink_to(_victim(folder))
    return ["report", str(run), "--format", "png"]


@case("manifest-is-a-link", names=("manifest.json", "symbolic link"))
def _(world, folder):
    run = folder / "runs" / "manifest"
    shutil.copytree(world.finished, run)
    (run / "manifest.json").unlink()
    (run / "manifest.json").symlink_to(_victim(folder))
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0", "--out", str(run), "--resume"]


def test_a_name_that_resolves_outside_through_a_linked_subfolder_is_refused(tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.core.runs.folder import open_in_run

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / "inner").symlink_to(outside, target_is_directory=True)
    with pytest.raises(BiasError) as err:
        open_in_run(run, "inner/report.md")
    assert "outside the run folder" in err.value.message and "inner/report.md" in err.value.message
    assert not list(outside.iterdir())
    with open_in_run(run, "report.md") as fh:  # a plain name in the same folder is written
        fh.write("ok")
    assert (run / "report.md").read_text() == "ok"


# N41: results.jsonl naming a file outside its folder ------------------------------------------------


def _tampered(world: World, folder: Path, value: str) -> Path:
    run = folder / "runs" / "n41"
    shutil.copytree(world.finished, run)
    (folder / "secret_scores.csv").write_text("item,word,set,s\n0,SECRET-TOKEN-FROM-OUTSIDE,X,0.5\n")
    lines = (run / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["figures"]["scores"] = value
    (run / "results.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return run


@case("N41-figures-scores-outside-html", names=("figures.scores", "../../secret_scores.csv", "outside the run folder"), absent=("SECRET-TOKEN",))
def _(world, folder):
    return ["report", str(_tampered(world, folder, "../../secret_scores.csv")), "--format", "html"]


@case("N41-figures-scores-absolute-png", names=("figures.scores", "outside the run folder"), absent=("SECRET-TOKEN",))
def _(world, folder):
    return ["report", str(_tampered(world, folder, str(folder / "secret_scores.csv"))), "--format", "png"]


# N39b: names carrying HTML are shown, never run, in report.md -----------------------------------------


def _md_escaped(result: Outcome, folder: Path) -> None:
    text = (folder / "out" / "report.md").read_text(encoding="utf-8")
    for raw in ("<script", "<iframe", "</li>", "</script"):
        assert raw not in text, f"{raw!r} left raw in report.md:\n{text}"
    assert "# &lt;script>alert(7)&lt;/script>" in text
    assert "&lt;iframe src=javascript:alert(8)>" in text
    assert "&lt;/li>&lt;script>alert(4)&lt;/script>" in text


@case("N39b-report-md-escapes-html-in-names", code=0, check=_md_escaped)
def _(world, folder):
    wordset = words_toml(folder / "ws.toml", X=[*X_WORDS, "</li><script>alert(4)</script>"])
    body = (
        'title = "<script>alert(7)</script>"\nwordsets = ["ws.toml"]\nmetrics = [{ name = "weat", bootstrap = 0 }]\n'
        f'[[models]]\nspec = "word2vec:{world.w2v_bin}"\nname = "<iframe src=javascript:alert(8)>"\n'
    )
    assert wordset.exists()
    return ["run", str(write_experiment(folder, body)), "--out", "out", "--format", "md"]


def test_markdown_escaping_keeps_what_is_no_tag() -> None:
    from bias.core.reports.cells import md_text

    assert md_text("<b>x</b> | <1e-6 a<b\nc") == "&lt;b>x&lt;/b> \\| <1e-6 a&lt;b c"
    assert md_text("<!-- x -->") == "&lt;!-- x -->" and md_text("<?php") == "&lt;?php"


# N60: links out of a datasets folder are said, not followed ------------------------------------------


def _link_said(result: Outcome, folder: Path) -> None:
    outside = (folder / "outside" / "weat9.txt").resolve()
    assert f"a symbolic link to {outside}" in result.out and "not followed" in result.out, result.out
    assert "SECRET" not in result.out


@case("N60-validate-datasets-with-links-out", code=0, check=_link_said, stream="out")
def _(world, folder):
    weat = folder / "datasets" / "en" / "WEAT"
    weat.mkdir(parents=True)
    lines = "\n".join(", ".join(ws) for ws in (X_WORDS, Y_WORDS, A_WORDS, B_WORDS)) + "\n"
    (weat / "weat1.txt").write_text(lines)
    (folder / "outside").mkdir()
    (folder / "outside" / "weat9.txt").write_text("SECRET, LINE\n")
    (weat / "weat9.txt").symlink_to(folder / "outside" / "weat9.txt")
    (weat / "weat1-again.txt").symlink_to(weat / "weat1.txt")  # a link inside the folder is read as usual
    return ["validate", "datasets"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_security_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_cases_have_unique_names() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 11


# The schema: no table, at any depth, of either form of an experiment file carries a code option -------


GRID_FORM: dict[str, Any] = {
    "title": "t", "description": "d", "out": "out", "seed": 0, "family": "run", "executor": "local",
    "preset": "bias-framework", "duplicates": "keep", "limit": 4, "resume": False, "fail_fast": True, "formats": ["md"],
    "json": False, "wide": True, "before_after": False, "max_cost": 0.5, "device": "cpu", "dtype": "float32", "threads": 1, "batch_size": 8,
    "pairs": ["en/crows-sample"], "analogies": ["en/analogies"],
    "models": [{"spec": "word2vec:v.bin", "name": "m", "resources": {"cpus": 1}, "binary": True}, "word2vec:w.bin"],
    "wordsets": ["en/weat6", {"language": "en", "bias_type": "race"}],
    "metrics": ["weat", {"name": "seat", "pooling": "mean"}],
    "params": {"ddof": 1},
    "grid": {"alternative": ["greater", "less"]},
}
LISTED_FORM: dict[str, Any] = {
    "title": "t", "seeds": [0, 1], "ray_address": "auto", "with_original": False,
    "params": {"ddof": 1},
    "experiments": [
        {"wordset": "en/weat6", "metric": "weat", "model": {"spec": "word2vec:v.bin", "binary": True}, "params": {"bootstrap": 0}},
        {"wordset": "en/weat7", "metric": "weat", "model": "word2vec:v.bin"},
    ],
}


def _toml(data: dict[str, Any]) -> str:
    """A TOML document of `data`, every table written inline so any nesting is expressible."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"

    return "".join(f"{json.dumps(k)} = {value(v)}\n" for k, v in data.items())


def _tables(node: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path to every table in `node` (the document itself included)."""
    found = []
    if isinstance(node, dict):
        found.append(trail)
        for k, v in node.items():
            found += _tables(v, (*trail, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _tables(v, (*trail, i))
    return found


def test_both_forms_of_the_schema_are_walked_whole() -> None:
    """The two documents above use every field an experiment file knows and every kind of entry of
    each (names and tables); a field added to the format must be added to them."""
    from bias.engine.experiment_file import EXPERIMENT_FIELDS, KNOWN_FIELDS

    assert set(GRID_FORM) | set(LISTED_FORM) == set(KNOWN_FIELDS)
    assert set(LISTED_FORM["experiments"][0]) == set(EXPERIMENT_FIELDS)
    assert len(_tables(GRID_FORM)) == 7 and len(_tables(LISTED_FORM)) == 6


@pytest.mark.parametrize("form", [GRID_FORM, LISTED_FORM], ids=["grid", "listed"])
@pytest.mark.parametrize("key, flag", [("allow_pickle", "--allow-pickle"), ("trust_remote_code", "--trust-remote-code"), ("trust-remote-code", "--trust-remote-code")])
def test_no_table_of_an_experiment_file_can_carry_a_code_option(form: dict[str, Any], key: str, flag: str, tmp_path: Path) -> None:
    """In every table of both forms, and in tables nested below any of them, the key is refused."""
    from bias.cli.run_command import CODE_FLAGS
    from bias.core.errors import BiasError
    from bias.engine.experiment_file import load_config

    path = tmp_path / "exp.toml"
    for trail in _tables(form):
        for planted in ({key: True}, {"nested": {"deeper": [{key: True}]}}):
            data = json.loads(json.dumps(form))
            node = data
            for step in trail:
                node = node[step]
            node.update(planted)
            path.write_text(_toml(data), encoding="utf-8")
            with pytest.raises(BiasError) as err:
                load_config(path, flags=CODE_FLAGS)
            assert key in err.value.message and "run code" in err.value.message, (trail, err.value.message)
            assert flag in (err.value.hint or ""), (trail, err.value.hint)


def test_the_command_line_still_switches_code_options_on(world: World, tmp_path: Path) -> None:
    """--allow-pickle on the command line reaches the models of a file (a refusal of the file's own
    key must not have taken the flag away): a real gensim .kv file then loads."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(world.w2v_bin), binary=True)
    kv.save(str(tmp_path / "model.kv"))
    config = write_experiment(tmp_path, f'models = ["kv:{tmp_path / "model.kv"}"]\nwordsets = ["{local_wordset(world, tmp_path)}"]\nmetrics = [{{ name = "weat", bootstrap = 0 }}]\n')
    refused = cli("run", str(config), cwd=tmp_path)
    assert refused.code == 2 and "--allow-pickle" in refused.err, refused.both
    ran = cli("run", str(config), "--allow-pickle", cwd=tmp_path)
    assert ran.code == 0, ran.both


def test_no_write_into_a_run_folder_bypasses_open_in_run() -> None:
    """Every write of core, engine and cli into a run folder goes through bias.core.runs.folder; the
    only other writes are the caches (encodings, an encoder's static vectors) and a temporary folder of
    report.html."""
    import re

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"""open\([^)]*["'](?:w|a|wb|ab|r\+b?|rb\+|a\+b?|x)["']|\.write_text\(|\.write_bytes\(|\.savefig\(\s*path|os\.open\(|json\.dump\(|\.to_csv\(\w*path""")
    allowed = {("core/runs/folder.py", "os.open("), ("core/reports/html.py", ".write_bytes("), ("engine/manifest.py", "json.dump("),
               ("core/models/static/from_encoder.py", 'open("wb"'),  # the static vectors' cache, outside any run folder
               ("core/regular_files.py", "os.open(")}  # O_RDONLY: the one way to open a file that may not be plain
    found = []
    for package in ("core", "engine", "cli"):
        for file in sorted((root / package).rglob("*.py")):
            relative = file.relative_to(root).as_posix()
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
                match = pattern.search(line)
                if match and (relative, match.group(0)) not in allowed:
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "writes outside bias.core.runs.folder.open_in_run:\n" + "\n".join(found)
    assert os.path.exists(root / "core" / "runs" / "folder.py")


def test_a_files_out_never_writes_over_a_folder_of_other_files(world: World, tmp_path: Path) -> None:
    """A shared file run from the user's home with out = "..": the user's own report.md and
    results.csv stay as they were (exit 2, the field and the flag that would confirm it named); a
    new folder, and that run's folder again with --resume, are written as before."""
    home, shared = tmp_path / "home", tmp_path / "home" / "Downloads"
    shared.mkdir(parents=True)
    (home / "report.md").write_text("my notes\n")
    (home / "results.csv").write_text("mine\n")
    config = write_experiment(shared, basic_experiment(world, shared) + 'out = ".."\n')
    result = cli("run", str(config), cwd=home)
    assert result.code == 2 and "Traceback" not in result.both, result.both
    lines = result.err_lines()
    assert len(lines) <= 2 and "out = '..'" in lines[0] and "holds other files" in lines[0], result.err
    assert f"--out {home.resolve()}" in result.err, result.err
    assert (home / "report.md").read_text() == "my notes\n" and (home / "results.csv").read_text() == "mine\n"
    assert not (home / "results.jsonl").exists() and not (home / "manifest.json").exists()
    # another tool's manifest.json and an empty results.jsonl do not make a folder a run's
    (home / "manifest.json").write_text('{"name": "app", "format": "web"}')
    (home / "results.jsonl").write_text("")
    for written in ('resume = true\n', ""):
        config = write_experiment(shared, basic_experiment(world, shared) + 'out = ".."\n' + written)
        result = cli("run", str(config), cwd=home)
        assert result.code == 2 and "holds other files" in result.err, result.both
    assert (home / "report.md").read_text() == "my notes\n" and (home / "results.jsonl").read_text() == ""
    config = write_experiment(shared, basic_experiment(world, shared) + 'out = "runs/one"\n[params]\nbootstrap = 0\n')
    first = cli("run", str(config), cwd=shared)
    assert first.code == 0, first.both
    again = cli("run", str(config), "--resume", cwd=shared)
    assert again.code == 0, again.both
    assert len((shared / "runs" / "one" / "results.jsonl").read_text().splitlines()) == 1
