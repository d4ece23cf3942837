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
    assert cli("report", str(tmp_path / "out"), "--format", "html").code == 0
    for name in ("report.md", "results.tex", "report.html"):
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


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "line, said, command",
    [
        *((DEEP, "nested too deeply", c) for c in ("report", "robustness", "agreement", "compare")),
        ('{"key": "k", "effect_size": 1e308}', "beyond any metric's range", "report"),
        ('{"key": "k", "effect_size": 1e308}', "beyond any metric's range", "robustness"),
        ('{"key": "k", "effect_size": -1e308}', "beyond any metric's range", "report"),
        ('{"key": "k", "p_value": 1e300}', "beyond any metric's range", "compare"),
    ],
    ids=lambda v: v[:12] if isinstance(v, str) else str(v),
)
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
        "robustness": ["report", str(folder), "--robustness", "--format", "md,png"],
        "agreement": ["report", str(folder), "--agreement", "--format", "md"],
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


# The fifth reading: voyage's order, fields of the wrong type, CSV cells, figures' warnings ------------


@pytest.mark.parametrize("kind", ["openai", "voyage"])
def test_vectors_are_paired_with_texts_by_their_index(kind: str, monkeypatch) -> None:
    """I14, I12: the voyageai client drops `index` and reads vectors in arrival order; both clients
    pair them by index (shuffled: the answer's own order) and refuse repeated indices."""
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")

    def answer_with(indices: list[int]) -> Answer:
        data = [{"object": "embedding", "index": i, "embedding": [float(k), 1.0]} for k, i in enumerate(indices)]
        usage = {"prompt_tokens": 2, "total_tokens": 2}
        return Answer(body=json.dumps({"object": "list", "data": data, "usage": usage}).encode())

    spec = "{kind}:m[base_url={url},retries=0,cache=false]"
    with HostileServer(answer_with([2, 0, 1])) as server:
        vectors = build_embedder(spec.format(kind=kind, url=server.url)).encode(["a", "b", "c"])
    # the first vector sent is for text 2, the second for text 0, the third for text 1
    assert [list(v) for v in vectors] == [[1.0, 1.0], [2.0, 1.0], [0.0, 1.0]]
    with HostileServer(answer_with([0, 0, 0])) as server:
        with pytest.raises(BiasError) as caught:
            build_embedder(spec.format(kind=kind, url=server.url)).encode(["a", "b", "c"])
    assert "index is not 0 to 2 once each" in caught.value.message, caught.value.message


@pytest.mark.parametrize(
    "change, said",
    [
        ({"figures": [1, 2]}, "figures is not a table"),
        ({"lost": ["x"]}, "lost is not a table"),
        ({"lost": {"X": 5}}, "lost is not a table of word lists"),
        ({"warnings": 3}, "warnings is not a list of text"),
        ({"seed": [1]}, "seed is not a whole number"),
        ({"status": ["ok"]}, "status is not text"),
        ({"convention": "x"}, "convention is not a table"),
        ({"sizes": {"X": "8"}}, "sizes are not whole numbers"),
        ({"figures": {"ci_low": -1e308, "ci_high": 1e308}}, "beyond any metric's range"),
        ({"p_value": 2.0}, "not between 0 and 1"),
        ({"p_value": -0.5}, "not between 0 and 1"),
        ({"figures": {"ci_low": "-1e308", "ci_high": "1e308"}}, "figures.ci_low is not a number"),
        ({"figures": {"ci_high": [1]}}, "figures.ci_high is not a number"),
        ({"figures": {"ci_level": "abc"}}, "figures.ci_level is not a number"),
        ({"figures": {"ci_level": 95}}, "figures.ci_level is not a level between 0 and 1"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_a_received_result_of_the_wrong_shape_is_skipped(
    two_methods: Path, tmp_path: Path, change: dict, said: str
) -> None:
    """D0-D32: a line whose fields have the wrong types or unplottable numbers is skipped as
    damaged, naming its line, in `bias report` (figures drawn) and `bias compare`."""
    folder = tmp_path / "received"
    shutil.copytree(two_methods, folder)
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    if "figures" in change and isinstance(change["figures"], dict):
        change = {"figures": {**first["figures"], **change["figures"]}}
    edited = {**first, **change, "key": "edited"}
    (folder / "results.jsonl").write_text("\n".join([*lines, json.dumps(edited)]) + "\n", encoding="utf-8")
    drawn = "md,png" if "figures" in change else "md"  # figures' numbers matter where drawn
    for args in (["report", str(folder), "--format", drawn], ["compare", str(two_methods), str(folder)]):
        done = cli(*args)
        assert done.code == 0 and "Failed" not in done.both, (args[0], done.both)
        assert f"line {len(lines) + 1}" in done.err and said in done.err, (args[0], done.err)


def test_csv_cells_of_a_received_folder_are_shown_not_run(two_methods: Path, tmp_path: Path) -> None:
    """N05-N12: results.csv, compare.csv and the robustness CSVs write a received folder's text
    with control characters made visible and formulas defused (a leading apostrophe)."""
    folder = tmp_path / "received"
    shutil.copytree(two_methods, folder)
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    tampered = []
    for line in lines:
        result = json.loads(line)
        result["model"] = '=HYPERLINK("http://x.invalid","m")' + ESCAPES
        tampered.append(json.dumps(result))
    (folder / "results.jsonl").write_text("\n".join(tampered) + "\n", encoding="utf-8")
    assert cli("report", str(folder), "--format", "csv").code == 0
    assert cli("report", str(folder), "--robustness", "--format", "csv").code == 0
    assert cli("compare", str(two_methods), str(folder), "--out", str(tmp_path / "cmp")).code == 0
    written = [folder / "results.csv", folder / "robustness.csv", folder / "robustness-specifications.csv"]
    written += list((tmp_path / "cmp").glob("*.csv"))
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not _raw(text), path.name
        assert "=HYPERLINK" not in text.replace("'=HYPERLINK", ""), path.name
    assert "'=HYPERLINK" in (folder / "results.csv").read_text(encoding="utf-8")


def test_a_missing_glyph_is_not_printed_by_matplotlib(world: World, tmp_path: Path) -> None:
    """N05: a name with an escape code drawn into a figure: no warning carries the raw character
    (nor matplotlib's paths) to the terminal."""
    title = json.dumps(f"T{ESCAPES}\u0007")
    config = write_experiment(tmp_path, f"title = {title}\n" + basic_experiment(world, tmp_path) + "[params]\nbootstrap = 0\n")
    done = cli("run", str(config), "--out", str(tmp_path / "out"), "--format", "png,svg")
    assert done.code == 0, done.both
    assert "Glyph" not in done.both and not _raw(done.both), done.err
    import xml.dom.minidom

    drawn = sorted((tmp_path / "out").glob("*.svg"))
    assert drawn
    for svg in drawn:  # M01: matplotlib copies labels into comments; still valid XML, no ESC
        data = svg.read_bytes()
        assert b"\x1b" not in data and b"\x07" not in data, svg.name
        xml.dom.minidom.parseString(data)


def test_a_received_manifests_unknown_family_is_said_naming_it(two_methods: Path, tmp_path: Path) -> None:
    """D27: family = [1] in a received manifest: a warning naming manifest.json, the run family."""
    folder = tmp_path / "received"
    shutil.copytree(two_methods, folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["family"] = [1]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    done = cli("report", str(folder), "--format", "md")
    assert done.code == 0, done.both
    assert "manifest.json: family [1] is not one of run, model, metric" in done.err, done.err


def test_a_line_break_in_a_files_value_stays_inside_the_suggested_confirmation(
    world: World, tmp_path: Path
) -> None:
    """Q04: key_env with a line break: the hint is one line, the break shown."""
    key_env = json.dumps("LAB_KEY\nPWNED")
    config = write_experiment(
        tmp_path,
        _without_models(world, tmp_path) + f'[[models]]\nspec = "openai:m"\nkey_env = {key_env}\n',
    )
    done = cli("run", str(config))
    assert done.code == 2, done.both
    hint = [line for line in done.err.splitlines() if "--allow" in line]
    assert len(hint) == 1 and "<U+000A>PWNED" in hint[0], done.err


# The sixth reading: round trips of defused cells, `$` in names, intervals as text, voyage ---------


@pytest.mark.parametrize("text", ["-rose", "+tulip", "@wasp", "=SUM(A1)", "'tis", "''", "-0.5", "plain", "a\nb", ""])
def test_a_defused_csv_cell_reads_back_as_written(text: str) -> None:
    """C01, C06: the apostrophe that keeps a spreadsheet from running a cell is taken off when bias
    reads its own table back (a word `-rose` is labelled -rose in words.png), and a text that
    itself opens with an apostrophe survives the round trip."""
    from bias.core.text import cell_value, csv_cell

    written = csv_cell(text)
    assert not str(written).startswith(("=", "+", "@")) and (not str(written).startswith("-") or text == "-0.5")
    assert cell_value(written) == text


def test_a_per_item_table_reads_back_its_words_and_refuses_huge_scores(tmp_path: Path) -> None:
    """C01, A02, A03: `read_scores` gives the words as written and refuses s past any range."""
    from bias.core.errors import BiasError
    from bias.core.runs.item_tables import read_scores
    from bias.core.runs.results import _csv_bytes

    path = tmp_path / "scores.csv"
    path.write_bytes(_csv_bytes([{"set": "X", "item": "-rose", "s": 0.5}, {"set": "Y", "item": "=x", "s": -0.25}]))
    assert [(r["item"], float(r["s"])) for r in read_scores(path)] == [("-rose", 0.5), ("=x", -0.25)]
    for bad in ("1e308", "inf", "nan"):
        path.write_text(f"set,item,s\nX,rose,{bad}\n", encoding="utf-8")
        with pytest.raises(BiasError, match="line 2: s = "):
            read_scores(path)
        # Z01-Z04: a header written 's (as csv_cell would defuse it) is checked as s
        path.write_text(f"set,item,'s\nX,rose,{bad}\n", encoding="utf-8")
        with pytest.raises(BiasError, match="line 2: s = "):
            read_scores(path)
    path.write_text("set,item,s,'s\nX,rose,0.5,abc\n", encoding="utf-8")
    with pytest.raises(BiasError, match="names a column twice"):
        read_scores(path)
    path.write_text("item,s\nrose,0.5\n", encoding="utf-8")  # Z05
    with pytest.raises(BiasError, match="without its set and item columns"):
        read_scores(path)


def test_a_header_from_a_received_folder_is_defused() -> None:
    """S13r: a params key of a received result becomes a header of robustness-specifications.csv."""
    from bias.core.reports.cells import records_csv

    header = records_csv([{'=HYPERLINK("x")': 1, "ok": 2}]).splitlines()[0]
    assert header.startswith("\"'=HYPERLINK") and header.endswith(",ok"), header


def test_a_dollar_in_a_name_is_drawn_as_text(world: World, tmp_path: Path) -> None:
    """M08, M15, M13: a model's name with `$` (unbalanced, or TeX that fails) is a label, not
    mathtext: the figures are drawn, exit 0."""
    for name in ("m costs $5 and $6", "m$\\frac{$", "m$" + "{" * 400):
        out = tmp_path / f"out{len(name)}"
        model = f'[[models]]\nspec = "word2vec:{world.w2v_bin}"\nname = {json.dumps(name)}\n'
        config = write_experiment(out.parent, _without_models(world, tmp_path) + model + "[params]\nbootstrap = 0\n", name=f"{out.name}.toml")
        done = cli("run", str(config), "--out", str(out), "--format", "png")
        assert done.code == 0 and "Failed" not in done.both, (name[:20], done.both)
        assert (out / "forest.png").exists()


def test_a_voyage_answer_that_is_not_voyages_is_refused_in_one_line(monkeypatch) -> None:
    """Y11, Y22, Y23: an item without its embedding, a usage that is no object, bytes that are not
    text."""
    from bias.core.errors import BiasError
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    bodies = [
        json.dumps({"data": [{"index": 0}], "usage": {"total_tokens": 1}}).encode(),
        json.dumps({"data": [{"index": 0, "embedding": [1.0]}], "usage": "many"}).encode(),
        b"\xff\xfe\x00binary",
    ]
    for body in bodies:
        for kind in ("voyage", "openai"):
            if kind == "openai" and body.startswith(b"{"):
                continue  # openai reads these: its own refusals, tested elsewhere
            with HostileServer(Answer(body=body)) as server:
                embedder = build_embedder(f"{kind}:m[base_url={server.url},retries=0,cache=false]")
                with pytest.raises(BiasError) as caught:
                    embedder.encode(["a"])
            assert "is not a" in caught.value.message and "answer" in caught.value.message, (kind, body[:20], caught.value.message)


def test_Y04_a_voyage_compatible_answer_without_usage_is_read_and_its_tokens_estimated(
    monkeypatch,
) -> None:
    """A Voyage-compatible server that counts no tokens: its vectors are read, in index order, and
    the tokens are estimated (a text of 9 characters: ceil(9 / 4) = 3 at four characters a token)."""
    from bias.core.models.services import CHARS_PER_TOKEN
    from bias.registry import build_embedder

    from fixtures.hostile_server import Answer, HostileServer

    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [3.0, 4.0]}]
    with HostileServer(Answer(body=json.dumps({"data": data}).encode())) as server:
        embedder = build_embedder(f"voyage:m[base_url={server.url},retries=0,cache=false]")
        rows = embedder.encode(["ninechars", "b"])
    assert [list(r) for r in rows] == [[3.0, 4.0], [0.0, 1.0]]
    expected = -(-9 // CHARS_PER_TOKEN) + 1
    assert embedder.sent()["tokens"] == expected, embedder.sent()


def test_a_malformed_header_echoing_the_key_is_not_printed(world: World, tmp_path: Path, monkeypatch) -> None:
    """Y18: a server's header line without a colon, echoing the key: urllib3 warns with the line's
    text; the command line keeps urllib3's warnings to itself, so the key is not printed."""
    import socket
    import threading

    monkeypatch.setenv("VOYAGE_API_KEY", "pa-fake-victim-key")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                request = conn.recv(65536).decode("latin-1")
                texts = json.loads(request.split("\r\n\r\n", 1)[1] or "{}").get("input") or ["a"]
                data = [{"index": i, "embedding": [float(i % 3), 1.0, float(len(t) % 5)]} for i, t in enumerate(texts)]
                body = json.dumps({"data": data, "usage": {"total_tokens": 1}}).encode()
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "echo pa-fake-victim-key\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                )
                conn.sendall(head.encode() + body)

    threading.Thread(target=serve, daemon=True).start()
    try:
        spec = f"voyage:m[base_url=http://127.0.0.1:{port}/v1,retries=0,cache=false]"
        done = cli("run", "-m", spec, "-w", str(world.wordset), "--bootstrap", "0", "--permutations", "100", "--allow", f"base_url=http://127.0.0.1:{port}/v1", cwd=tmp_path)
    finally:
        listener.close()
    assert "pa-fake-victim-key" not in done.both, done.err[-500:]
    assert "Traceback" not in done.both, done.err[-500:]


def test_a_bidi_control_in_a_name_is_written_out_in_the_svg(world: World, tmp_path: Path) -> None:
    """N01: matplotlib copies each label into a comment of the SVG; a name's RLO is written U+202E
    there as the escape codes are, and the file stays XML."""
    import xml.etree.ElementTree as ET

    name = json.dumps(f"m{BIDI}x\u2066y{ESCAPES}")
    model = f'[[models]]\nspec = "word2vec:{world.w2v_bin}"\nname = {name}\n'
    config = write_experiment(tmp_path, _without_models(world, tmp_path) + model + "[params]\nbootstrap = 0\n")
    done = cli("run", str(config), "--out", str(tmp_path / "out"), "--format", "svg")
    assert done.code == 0, done.both
    svgs = sorted((tmp_path / "out").glob("*.svg"))
    assert svgs
    for svg in svgs:
        text = svg.read_text(encoding="utf-8")
        assert not _raw(text) and "\u2066" not in text, svg.name
        ET.fromstring(text.encode())  # still XML
    assert any("U+202E" in svg.read_text(encoding="utf-8") for svg in svgs)


def test_Z29_a_very_long_name_is_cut_in_figures_and_tables_and_given_whole_in_the_notes(
    world: World, tmp_path: Path
) -> None:
    """A 300-character model name made a forest plot thousands of pixels wide: names are cut to 48
    characters, start and end kept; the notes under the table say which model it is."""
    import matplotlib.image

    long = "model-" + "x" * 280 + "-the-end"
    model = f'[[models]]\nspec = "word2vec:{world.w2v_bin}"\nname = "{long}"\n'
    config = write_experiment(tmp_path, _without_models(world, tmp_path) + model + "[params]\nbootstrap = 0\n")
    out = tmp_path / "out"
    done = cli("run", str(config), "--out", str(out), "--format", "png,md")
    assert done.code == 0 and "Warning" not in done.err, done.both
    height, width = matplotlib.image.imread(out / "forest.png").shape[:2]
    assert width < 1400, (width, height)  # 8.5 inches at 110 dpi, with the labels beside it
    shown = long[:32] + "…" + long[-15:]
    assert len(shown) == 48
    report = (out / "report.md").read_text(encoding="utf-8")
    assert shown in report and f"{shown} = word2vec:{world.w2v_bin}" in report  # the notes say which


def test_names_cut_alike_stay_apart() -> None:
    """Two long names with the same start and end are numbered, as two folders of one base name
    are."""
    from bias.core.model import Result
    from bias.core.reports.values import short_models, short_tests

    left, right = "a" * 40 + "LEFT" + "z" * 40, "a" * 40 + "RIGHT" + "z" * 40
    results = [
        Result(key=side, model=f"word2vec:/m/{side}.bin", wordset=f"/w/{side}.toml", metric="weat")
        for side in (left, right)
    ]
    models, tests = short_models(results), short_tests(results)
    for names in (models, tests):
        values = list(names.values())
        assert len(set(values)) == 2 and all(len(v) <= 50 for v in values), values
        assert values[0].startswith("a" * 32 + "…" + "z" * 15), values


def test_bias_validate_of_a_run_folder_says_what_it_is(world: World) -> None:
    """`bias validate RUNFOLDER` read the run's own files as datasets (19 errors about BBQ and
    CrowS columns); it now says the folder is a run and how to read it."""
    done = cli("validate", str(world.finished))
    assert done.code == 2, done.both
    assert "is a run folder" in done.err and f"bias report {world.finished}" in done.err, done.err
    assert "missing column" not in done.both and len(done.err.strip().splitlines()) == 2
