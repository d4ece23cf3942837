"""What a results folder someone sent, a file's titles and a server's answers can still make a run
or a report do: escape codes from a file's `title`, a model's `name` or a tampered manifest are
shown as <U+XXXX> (on the terminal, in report.md and results.tex), a results line nested thousands
deep or holding 1e308 is skipped as damaged (not a failure), a compressed answer is refused before
it is decoded (tests/test_service_http.py), an embeddings answer whose indices are not 0..n-1 is
refused, an answer with an oversized header is said as such, and a value given twice in a file's
model is refused naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bad_input_helpers import World, basic_experiment, cli, world, write_experiment  # noqa: F401 (world is a fixture)

ESCAPES = "\u001b[2J\u001b[1A"
BIDI = "\u202e"


@pytest.fixture(scope="module")
def two_methods(world: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the planted test by two metrics, WEAT at two settings: what --agreement and
    --robustness compare."""
    folder = tmp_path_factory.mktemp("received") / "run"
    args = ["-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0"]
    grid = ["--metric", "weat", "--metric", "ect", "--param", "ddof=0", "--param", "ddof=1"]
    done = cli("run", *args, *grid, "--out", str(folder))
    assert done.code == 0, done.both
    return folder


def _without_models(world: World, folder: Path) -> str:
    """The planted experiment's top-level lines but its models (given as [[models]] after them)."""
    return basic_experiment(world, folder).split("\n", 1)[1]


def _raw(text: str) -> list[str]:
    return [ch for ch in ("\u001b", BIDI) if ch in text]


def test_a_files_title_and_model_name_reach_no_output_raw(world: World, tmp_path: Path) -> None:
    """X01, X02: the title of the results table (stdout), report.md and results.tex show the
    file's escape codes and bidi override as <U+XXXX>."""
    title = json.dumps(f"T{ESCAPES} fake {BIDI}")  # TOML reads JSON's \u escapes
    name = json.dumps(f"M{ESCAPES}ok")
    model = f'[[models]]\nspec = "word2vec:{world.w2v_bin}"\nname = {name}\n'
    config = write_experiment(tmp_path, f"title = {title}\n" + _without_models(world, tmp_path) + model + "[params]\nbootstrap = 0\n")
    done = cli("run", str(config), "--out", str(tmp_path / "out"))
    assert done.code == 0, done.both
    assert not _raw(done.both), repr(done.both[:300])
    assert "<U+001B>" in done.out  # the title is shown, made visible
    for name in ("report.md", "results.tex"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert not _raw(text), (name, [line for line in text.splitlines() if _raw(line)][:3])
        assert "U+001B" in text, name


def test_a_tampered_manifest_title_reaches_no_output_raw(world: World, tmp_path: Path) -> None:
    """P04: `bias report` of a folder whose manifest's title carries escape codes."""
    folder = tmp_path / "received"
    shutil.copytree(world.finished, folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest.setdefault("settings", {})["title"] = f"Report{ESCAPES}{BIDI}"
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    done = cli("report", str(folder), "--format", "md,tex")
    assert done.code == 0, done.both
    assert not _raw(done.both), repr(done.both[:300])
    for name in ("report.md", "results.tex"):
        assert not _raw((folder / name).read_text(encoding="utf-8")), name


@pytest.mark.parametrize(
    "line, said",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"key": "k", "effect_size": 1e308}', "beyond any metric's range"),
        ('{"key": "k", "effect_size": -1e308}', "beyond any metric's range"),
        ('{"key": "k", "p_value": 1e300}', "beyond any metric's range"),
    ],
    ids=["deep", "huge", "huge-negative", "huge-p"],
)
@pytest.mark.parametrize("command", ["report", "robustness", "agreement", "compare"])
def test_a_damaged_results_line_is_skipped_not_a_failure(
    two_methods: Path, tmp_path: Path, line: str, said: str, command: str
) -> None:
    """P01, P01b, P03b, P07: the line is skipped with a warning naming its number; the report of
    the rest is written (exit 0), no "Failed" and no traceback."""
    folder = tmp_path / "received"
    shutil.copytree(two_methods, folder)
    with open(folder / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    number = len((folder / "results.jsonl").read_text(encoding="utf-8").splitlines())
    args = {
        "report": ["report", str(folder), "--format", "md"],
        "robustness": ["report", str(folder), "--robustness"],
        "agreement": ["report", str(folder), "--agreement"],
        "compare": ["compare", str(two_methods), str(folder)],
    }[command]
    done = cli(*args)
    assert done.code == 0, done.both
    assert "Failed" not in done.both and "Traceback" not in done.both, done.both
    assert f"line {number}" in done.err and said in done.err, done.err


def test_embeddings_whose_indices_are_not_each_text_once_are_refused(monkeypatch) -> None:
    """V09: an answer's `index` values pair vectors with texts; a repeated or stray index is
    refused (in arrival order it would give one text another's vector). Indices in another order
    are the answer's own order."""
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def answer_with(indices: list[int]) -> Answer:
        data = [{"object": "embedding", "index": i, "embedding": [float(k), 1.0]} for k, i in enumerate(indices)]
        return Answer(body=json.dumps({"object": "list", "data": data}).encode())

    for indices in ([0, 0], [0, 10**18], [1, 2]):
        with HostileServer(answer_with(indices)) as server:
            embedder = build_embedder(f"openai:m[base_url={server.url},retries=0,cache=false]")
            with pytest.raises(BiasError) as caught:
                embedder.encode(["a", "b"])
        assert "index is not 0 to 1 once each" in caught.value.message, (indices, caught.value.message)
    with HostileServer(answer_with([1, 0])) as server:
        embedder = build_embedder(f"openai:m[base_url={server.url},retries=0,cache=false]")
        vectors = embedder.encode(["a", "b"])
    # the vector sent second says it is for text 0
    assert [list(v) for v in vectors] == [[1.0, 1.0], [0.0, 1.0]]


def test_an_answer_with_an_oversized_header_is_not_called_no_connection(monkeypatch) -> None:
    """V04: a 4 MB header is refused by the HTTP parser; the server did answer, so the message
    says the answer broke HTTP, not that there was no connection."""
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with HostileServer(Answer(headers={"X-Big": "a" * 4_000_000})) as server:
        embedder = build_embedder(f"openai:m[base_url={server.url},retries=0,cache=false]")
        with pytest.raises(BiasError) as caught:
            embedder.encode(["a"])
    assert "breaks HTTP" in caught.value.message and "no connection" not in caught.value.message, caught.value.message


def test_a_value_given_twice_in_a_files_model_names_the_file(world: World, tmp_path: Path) -> None:
    """T03: the brackets and a table key give base_url two values: refused, naming the file."""
    config = write_experiment(
        tmp_path,
        _without_models(world, tmp_path)
        + '[[models]]\nspec = "openai:m[base_url=http://127.0.0.1:9/v1]"\nbase_url = "http://127.0.0.1:8/v1"\n',
    )
    done = cli("run", str(config))
    assert done.code == 2, done.both
    assert f"{config}: base_url is given twice" in done.err, done.err


def test_the_confirmation_a_refusal_suggests_is_quoted_for_the_shell(world: World, tmp_path: Path) -> None:
    """T08: a value with quotes in a file's brackets: the suggested --allow is shell-quoted, so
    that pasted into a shell it confirms the very value the file wrote."""
    import shlex

    config = write_experiment(
        tmp_path,
        _without_models(world, tmp_path) + "[[models]]\nspec = 'openai:m[base_url=\"http://127.0.0.1:9/v1\"]'\n",
    )
    done = cli("run", str(config))
    assert done.code == 2, done.both
    suggested = done.err.split("--allow ", 1)[1].split()[0]
    assert shlex.split(suggested) == ['base_url="http://127.0.0.1:9/v1"'], done.err
