"""What is not a plain file where a file belongs (the eighth hostile reading of issue 34): a received
run folder whose results.jsonl links to /dev/zero, is a named pipe or a sparse file of gigabytes, a
manifest or per-item table of gigabytes, a results line of more than 16 MB, a listing cache nested
200,000 deep, a named pipe given as a word set or a debiasing corpus. Each is refused naming the
file (or skipped, for a line) without reading it whole, and a pipe never blocks the command.

The pipe cases run the installed command in a child process with a timeout: a regression would
block, and the timeout says so instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bad_input_helpers import World, cli, world  # noqa: F401 (world is a fixture)
from fixtures.decisions import decisions_toml

GIB = 2**30


def received(world: World, tmp_path: Path) -> Path:
    folder = tmp_path / "received"
    shutil.copytree(world.finished, folder)
    return folder


def bias(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("bias")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    return subprocess.run(
        [str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def own_run(world: World, tmp_path: Path) -> tuple[Path, list[str]]:
    """A finished run of the planted word set, and the command that resumes it."""
    folder = tmp_path / "own"
    args = ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--bootstrap", "0", "--permutations", "100", "--out", str(folder)]
    done = cli(*args, cwd=tmp_path)
    assert done.code == 0, done.both
    return folder, [*args, "--resume"]


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes a few kilobytes on disk (as a sparse tar unpacks it)."""
    path.unlink(missing_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)


@pytest.mark.parametrize("command", ["report", "compare"])
def test_Q05_Q08_a_results_file_linked_to_dev_zero_is_refused_unread(
    world: World, tmp_path: Path, command: str
) -> None:
    folder = received(world, tmp_path)
    (folder / "results.jsonl").unlink()
    (folder / "results.jsonl").symlink_to("/dev/zero")
    args = ["report", str(folder)] if command == "report" else ["compare", str(world.finished), str(folder)]
    done = bias(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "results.jsonl is a symbolic link" in done.stderr and "Traceback" not in done.stderr


def test_Q04_a_results_file_that_is_a_named_pipe_does_not_block(world: World, tmp_path: Path) -> None:
    folder = received(world, tmp_path)
    (folder / "results.jsonl").unlink()
    os.mkfifo(folder / "results.jsonl")
    done = bias("report", str(folder), cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "results.jsonl is not a regular results file (a named pipe or a device)" in done.stderr


def test_Q05b_Q05f_a_sparse_results_file_of_gigabytes_is_refused_by_its_size(world: World, tmp_path: Path) -> None:
    folder, resume = own_run(world, tmp_path)
    sparse(folder / "results.jsonl", 3 * GIB)
    for args in (["report", str(folder)], resume):
        done = cli(*args, cwd=tmp_path)
        assert done.code == 2, done.both
        assert "results.jsonl holds 3,221,225,472 bytes, more than a results file may" in done.err, done.err


def test_a_results_line_longer_than_16_mb_is_skipped_and_the_rest_read(world: World, tmp_path: Path) -> None:
    from bias.core.runs.results import MAX_LINE, scan_results

    folder = received(world, tmp_path)
    good = (folder / "results.jsonl").read_text(encoding="utf-8")
    assert good.endswith("\n")
    (folder / "results.jsonl").write_text('{"key": "' + "x" * (MAX_LINE + 10) + '"}\n' + good, encoding="utf-8")
    found = scan_results(folder)
    assert [d.number for d in found.damaged] == [1] and "longer than 16,777,216 bytes" in found.damaged[0].reason
    assert len(found.results) == len(good.splitlines())


def test_a_torn_tail_of_more_than_16_mb_is_refused_not_read_whole(world: World, tmp_path: Path) -> None:
    """Appending to a run cuts a torn last line; one longer than any line a run writes is refused
    (looking for its start would read gigabytes of a sparse file), and a short one is still cut."""
    from bias.core.errors import BiasError
    from bias.core.runs.results import ResultStore, read_results

    folder, _ = own_run(world, tmp_path)
    kept = read_results(folder)[0]
    intact = (folder / "results.jsonl").read_bytes()
    with open(folder / "results.jsonl", "ab") as fh:
        fh.write(b'{"key": "torn')
        fh.truncate(len(intact) + 20 * 2**20)
    with pytest.raises(BiasError, match="without a line break: not a line a run wrote"), ResultStore(folder) as store:
        store.append(kept)
    (folder / "results.jsonl").write_bytes(intact + b'{"key": "torn')
    with ResultStore(folder) as store:
        store.append(kept)
    assert (folder / "results.jsonl").read_bytes().count(b"\n") == 2 and b"torn" not in (folder / "results.jsonl").read_bytes()


def test_Q06b_Q07b_a_sparse_manifest_is_said_and_a_sparse_scores_table_refused_naming_them(world: World, tmp_path: Path) -> None:
    folder = received(world, tmp_path)
    sparse(folder / "manifest.json", 100 * 2**20)
    done = cli("report", str(folder), "--format", "md,html", cwd=tmp_path)
    # the results alone make the report: the manifest is said, not read
    assert done.code == 0, done.both
    assert "manifest.json holds 104,857,600 bytes, more than a manifest may" in done.err, done.both
    assert "more than a manifest may" in (folder / "report.html").read_text(encoding="utf-8")
    folder = received(world, tmp_path / "second")
    table = next(folder.glob("scores-*.csv"))
    sparse(table, 2 * GIB)
    done = cli("report", str(folder), "--format", "png", cwd=tmp_path)
    assert done.code == 2 and f"{table.name} holds 2,147,483,648 bytes" in done.err, done.both


def test_Q50_a_listing_cache_nested_200000_deep_is_read_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bias.registry.listing_cache import cache_file

    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    done = bias("list", "wordsets", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "en/weat6" in done.stdout and "RecursionError" not in done.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["format"]  # rewritten


def test_Q01_Q56_a_named_pipe_as_a_word_set_or_a_debiasing_corpus_does_not_block(world: World, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "ws.toml")
    done = bias("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws.toml", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "ws.toml is not a regular" in done.stderr, done.stderr
    os.mkfifo(tmp_path / "corpus.txt")
    done = bias("run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--metric", "seat", "--debias", "sent", "--debias-corpus", "corpus.txt", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "corpus.txt is not a regular corpus" in done.stderr and "not found" not in done.stderr, done.stderr
    assert "loaded" not in done.stderr  # refused before the model was loaded to be fitted on it
    done = cli("run", "-m", f"hf:{world.bert}", "-w", str(world.wordset), "--metric", "seat", "--debias", "sent", "--debias-corpus", "none.txt", cwd=tmp_path)
    assert done.code == 2 and "Corpus file not found: none.txt" in done.err and "loaded" not in done.err, done.both  # was a failed row, exit 1


def test_J26_J27_nothing_is_written_into_a_pipe_or_device_in_a_run_folder(world: World, tmp_path: Path) -> None:
    """An unpacked archive can put a device node or a named pipe where report.md goes: writing into
    it would write over a disk's sectors or block. A pipe nobody reads, and a pipe that is read (the
    open succeeds: the file's kind is checked), are both refused naming the file."""
    folder = received(world, tmp_path)
    (folder / "report.md").unlink(missing_ok=True)
    os.mkfifo(folder / "report.md")
    done = bias("report", str(folder), "--format", "md", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "report.md is not a regular file (a device or a named pipe)" in done.stderr, done.stderr
    reader = os.open(folder / "report.md", os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = cli("report", str(folder), "--format", "md", cwd=tmp_path)
        assert done.code == 2 and "report.md is not a regular file" in done.err, done.both
        assert os.read(reader, 100) == b"", "the report was written into the pipe"
    finally:
        os.close(reader)


def test_J01_a_file_of_a_million_damaged_lines_lists_a_hundred_and_counts_the_rest(tmp_path: Path) -> None:
    from bias.core.runs.results import scan_results

    (tmp_path / "results.jsonl").write_text("x\n" * 1_000_000, encoding="utf-8")
    found = scan_results(tmp_path)
    assert len(found.damaged) == 101 and found.results == []
    assert [d.number for d in found.damaged[:3]] == [1, 2, 3]
    assert found.damaged[-1].number == 101 and "999,900 more damaged lines" in found.damaged[-1].reason


def test_J05_J06_a_table_of_more_cells_than_a_run_writes_is_refused_naming_it(tmp_path: Path) -> None:
    """Short rows under a wide header: 6,000,000 cells in 6 MB."""
    from bias.core.errors import BiasError
    from bias.core.runs.item_tables import read_scores

    path = tmp_path / "scores-x.csv"
    path.write_text("set,item,s," + ",".join(f"c{i}" for i in range(57)) + "\n" + "X,w,0\n" * 100_000, encoding="utf-8")
    with pytest.raises(BiasError, match="more than 5,000,000 cells") as caught:
        read_scores(path)
    assert str(path) in caught.value.message


def test_J07_J08_a_sparse_word_set_or_a_corpus_line_of_gigabytes_is_refused(world: World, tmp_path: Path) -> None:
    sparse(tmp_path / "ws.toml", 4 * GIB)
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws.toml", cwd=tmp_path)
    assert done.code == 2 and "ws.toml holds 4,294,967,296 bytes, more than a TOML file may" in done.err, done.both
    sparse(tmp_path / "corpus.txt", 4 * GIB)  # one line of NULs
    from bias.core.data.corpus import read_lines
    from bias.core.errors import BiasError

    with pytest.raises(BiasError, match="line 1 is longer than 65,536 bytes"):
        list(read_lines(tmp_path / "corpus.txt"))


@pytest.mark.parametrize("case", ["pipe", "sparse-config", "device"])
def test_J17_a_model_folder_file_that_is_a_pipe_a_device_or_gigabytes_is_refused_naming_it(
    world: World, tmp_path: Path, case: str
) -> None:
    """transformers opens a model folder's files itself: a pipe blocked it, a sparse config.json of
    gigabytes ended in MemoryError (exit 1)."""
    model = tmp_path / "m"
    shutil.copytree(world.bert, model)
    if case == "pipe":
        name = "tokenizer_config.json"
        (model / name).unlink(missing_ok=True)
        os.mkfifo(model / name)
        said = "is not a regular file (a named pipe or a device)"
    elif case == "device":
        name = "special_tokens_map.json"
        (model / name).unlink(missing_ok=True)
        (model / name).symlink_to("/dev/zero")
        said = "is not a regular file (a named pipe or a device)"
    else:
        name = "config.json"
        text = (model / name).read_bytes()
        sparse(model / name, 4 * GIB)
        with open(model / name, "r+b") as fh:
            fh.write(text)
        said = "holds 4,294,967,296 bytes, more than such a file may (4,194,304)"
    done = bias("run", "-m", f"hf:{model}", "-w", str(world.wordset), "--out", "out", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"{model / name}' in the model folder {said}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_J12c_a_named_experiment_file_linked_to_dev_zero_is_not_read_whole(tmp_path: Path) -> None:
    (tmp_path / "cfg.txt").symlink_to("/dev/zero")
    done = bias("run", "cfg.txt", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "cfg.txt is not a regular" in done.stderr and "Traceback" not in done.stderr


def test_J21_an_oversized_figure_says_that_the_report_draws_it_again(world: World, tmp_path: Path) -> None:
    from bias.core.runs.folder import MAX_FIGURE

    folder = received(world, tmp_path)
    sparse(folder / "forest.png", MAX_FIGURE + 1)
    done = bias("report", str(folder), "--format", "html", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "forest.png holds 67,108,865 bytes" in done.stderr, done.stderr
    assert "Remove the folder's .png figures: the report draws them again" in done.stderr


def test_G41_G44_a_special_file_is_refused_before_it_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening some devices is itself an action (a watchdog starts counting) and a node nothing
    drives fails to open with ENODEV or EIO: the kind is checked before any open, for reading and
    for writing. A named pipe and a socket (which, unlike a device node, need no root to make) stand
    in for the node; an open of them fails the test."""
    import socket

    from bias.core.errors import BiasError
    from bias.core.regular_files import open_regular
    from bias.core.runs.folder import open_in_run

    os.mkfifo(tmp_path / "report.md")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "ws.toml"))
    real_open = os.open

    def never_special(path, *args, **kwargs):
        assert Path(path).name not in {"report.md", "ws.toml"}, f"{path} was opened"
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", never_special)
    try:
        with pytest.raises(BiasError, match="ws.toml is not a regular TOML file"):
            open_regular(tmp_path / "ws.toml", what="TOML file")
        with pytest.raises(BiasError, match="report.md is not a regular file"):
            open_in_run(tmp_path, "report.md")
        with pytest.raises(BiasError, match="ws.toml is not a regular file"):
            open_in_run(tmp_path, "ws.toml", "wb")
    finally:
        server.close()


def test_G44_a_socket_as_a_word_set_is_refused_with_exit_2(world: World, tmp_path: Path) -> None:
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "ws.toml"))
    try:
        done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws.toml", cwd=tmp_path)
    finally:
        server.close()
    assert done.code == 2, done.both
    assert "ws.toml is not a regular" in done.err and "Traceback" not in done.both


@pytest.mark.parametrize(
    ("name", "size", "limit"),
    [("tokenizer_config.json", 5 * 2**20, "4,194,304"), ("chat_template.jinja", 2 * 2**20, "1,048,576"), ("vocab.txt", 17 * 2**20, "16,777,216")],
)
def test_G03c_G07_a_model_folders_text_files_are_bounded_by_what_they_take_in_memory(
    world: World, tmp_path: Path, name: str, size: int, limit: str
) -> None:
    """In process: the command's way to this check is the one test_J17 takes."""
    from bias.core.errors import BiasError
    from bias.core.models.hf.loading import check_folder_files

    model = tmp_path / "m"
    shutil.copytree(world.bert, model)
    sparse(model / name, size)
    with pytest.raises(BiasError) as caught:
        check_folder_files(model)
    assert f"{model / name}' in the model folder holds {size:,} bytes, more than such a file may ({limit})" in caught.value.message


def test_G04c_a_vocabulary_without_its_unknown_token_is_refused_at_load(world: World, tmp_path: Path) -> None:
    model = tmp_path / "m"
    shutil.copytree(world.bert, model)
    (model / "tokenizer.json").unlink()
    (model / "vocab.txt").write_text("[CLS]\n[SEP]\n", encoding="utf-8")
    done = bias("run", "-m", f"hf:{model}", "-w", str(world.wordset), "--out", "out", cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"The tokenizer in '{model}' cannot encode text" in done.stdout + done.stderr
    assert "please report" not in done.stdout + done.stderr


def test_G10_a_static_from_encoder_vocabulary_of_gigabytes_is_refused(world: World, tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.core.models.static import from_encoder

    model = tmp_path / "enc"
    shutil.copytree(world.bert, model)
    sparse(model / "vocab.txt", 8 * GIB)
    with pytest.raises(BiasError, match="vocab.txt holds 8,589,934,592 bytes, more than a vocabulary file may"):
        from_encoder._build(model, tmp_path / "out.bin")


def test_G23b_G26_a_word_list_of_millions_of_lines_is_refused_before_it_is_split(world: World, tmp_path: Path) -> None:
    """50 MiB of two-letter lines took 3 GB once split into words."""
    from bias.core.data.file_reading import MAX_TEXT_FILE, read_text
    from bias.core.errors import BiasError

    (tmp_path / "big.txt").write_bytes(b"a,b\n" * 1_000_001)
    with pytest.raises(BiasError, match="big.txt has more than 1,000,000 lines, more than a word-set file may"):
        read_text(tmp_path / "big.txt")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "big.txt", cwd=tmp_path)
    assert done.code == 2 and "big.txt" in done.err and "Traceback" not in done.both, done.both
    sparse(tmp_path / "W1.txt", MAX_TEXT_FILE + 1)
    with pytest.raises(BiasError, match=f"more than a word-set file may \\({MAX_TEXT_FILE:,}\\)"):
        read_text(tmp_path / "W1.txt")


def test_G21_the_refusal_reads_an_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "datasets").mkdir()
    with open(tmp_path / "cfg.txt", "wb") as fh:
        fh.write(b"W1,WEAT,fasttext,en,x\n")
        fh.truncate(8 * GIB)
    done = bias("run", "cfg.txt", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "more than an experiment file may" in done.stderr, done.stderr


def test_J01_damaged_lines_are_counted_on_the_terminal_and_a_million_refuse_the_file(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = received(world, tmp_path)
    with open(folder / "results.jsonl", "ab") as fh:
        fh.write(b"x\n" * 150)
    done = bias("report", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "... and 145 more damaged line(s) skipped." in done.stderr, done.stderr
    from bias.core.errors import BiasError
    from bias.core.runs import results

    monkeypatch.setattr(results, "MAX_DAMAGED", 120)
    with pytest.raises(BiasError, match="more than 120 damaged lines"):
        results.scan_results(folder)


def test_G47_a_manifest_that_is_a_pipe_is_said_and_the_report_built_from_the_results(world: World, tmp_path: Path) -> None:
    folder = received(world, tmp_path)
    (folder / "manifest.json").unlink()
    os.mkfifo(folder / "manifest.json")
    done = bias("report", str(folder), cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "manifest.json is not a regular file" in done.stderr and "built from results.jsonl alone" in done.stderr


def test_B20_B23_every_reader_a_file_reaches_is_bounded(tmp_path: Path) -> None:
    """The eleventh reading's readers that read whole: the FISE traits sniff, a debiasing record,
    a package's review log and list of ambiguous words, a frequency list, a line of megabytes."""
    from bias.core.data import content_checks
    from bias.core.data.file_reading import MAX_TEXT_FILE, read_json, read_text
    from bias.core.errors import BiasError
    from bias.engine.inputs import recorded_source
    from bias.plugins.formats.fise_files import FiseTraitsFormat

    sparse(tmp_path / "big.txt", 8 * GIB)
    assert FiseTraitsFormat().sniff(tmp_path / "big.txt") is False
    sparse(tmp_path / "debias.json", 8 * GIB)
    with pytest.raises(BiasError, match="more than a debiasing record may"):
        recorded_source(tmp_path / "debias.json", "hint")
    sparse(tmp_path / "ambiguous-words.txt", MAX_TEXT_FILE + 1)
    with pytest.raises(BiasError, match="more than a list of ambiguous words may"):
        content_checks.read_ambiguous(tmp_path / "ambiguous-words.txt")
    (tmp_path / "freq.txt").write_text("the 100\n" + "a" * 5000 + " 3\n", encoding="utf-8")
    with pytest.raises(BiasError, match="line 2 is longer than 4,096 characters"):
        content_checks.read_frequencies(tmp_path / "freq.txt")
    (tmp_path / "W1.txt").write_text("X: " + ",".join(["ab"] * 400_000) + "\n", encoding="utf-8")
    with pytest.raises(BiasError, match="W1.txt has a line of more than 1,048,576 bytes, more than a word-set file may hold"):
        read_text(tmp_path / "W1.txt")
    (tmp_path / "one-line.json").write_text('{"X": [' + ",".join(['"ab"'] * 300_000) + "]}", encoding="utf-8")
    assert len(read_json(tmp_path / "one-line.json")["X"]) == 300_000  # a JSON document may be one line


def test_B05_a_csv_header_past_the_field_limit_is_a_bad_header_not_a_crash(world: World, tmp_path: Path) -> None:
    (tmp_path / "wide.csv").write_text("word,set," + "a" * 200_000 + "\nrose,X,y\n", encoding="utf-8")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "wide.csv", cwd=tmp_path)
    assert done.code == 2, done.both
    assert "wide.csv: line 1: unreadable header (field larger than field limit" in done.err, done.both


def test_reading_a_labelled_csv_leaves_the_process_csv_field_limit_as_it_was(tmp_path: Path) -> None:
    """csv has one field limit for the process: the labelled-texts reader raised it for good, and
    a CrowS file read later in the same process was refused in other words."""
    import csv

    from bias.core.data.fise_tests import read_affect
    from bias.core.errors import BiasError
    from bias.plugins.formats.labelled_csv import LabelledCsvFormat

    before = csv.field_size_limit()
    (tmp_path / "texts.csv").write_text("text,label\n" + "long " * 40_000 + ",a\nshort,b\n", encoding="utf-8")
    record = LabelledCsvFormat().record(tmp_path / "texts.csv")
    assert [item["label"] for item in record["items"]] == ["a", "b"]
    assert csv.field_size_limit() == before
    (tmp_path / "long.csv").write_text('text,label\n"' + "a line\n" * 150_000 + '",a\n', encoding="utf-8")
    with pytest.raises(BiasError, match="long.csv: line 2: a field longer than 1,048,576 characters"):
        LabelledCsvFormat().record(tmp_path / "long.csv")  # a 15 MB cell of short lines took 2 GB
    assert csv.field_size_limit() == before
    (tmp_path / "affect.csv").write_text('pos,neg\n"' + "a" * 200_000 + '",b\n', encoding="utf-8")
    with pytest.raises(BiasError, match="affect.csv: not a readable CSV file .field larger than field limit"):
        read_affect(tmp_path / "affect.csv")  # was csv.Error, exit 1, once the limit stays as it was


def test_the_memory_message_names_the_last_data_file_read(tmp_path: Path) -> None:
    from bias.core.errors import recognised
    from bias.core.regular_files import open_regular

    (tmp_path / "ws.toml").write_text("x = 1\n", encoding="utf-8")
    with open_regular(tmp_path / "ws.toml"):
        pass
    said = recognised(MemoryError())
    assert said is not None and f"the last data file read: {tmp_path / 'ws.toml'}" in said.message


def test_HX10_HX12_a_vectors_file_with_a_line_of_gigabytes_is_refused_naming_it(tmp_path: Path) -> None:
    """Rows of text vectors are read line by line; a line of 4 GB (sparse, or 19 MB of gzip) was
    held whole."""
    from bias.core.errors import BiasError
    from bias.core.models.static.word2vec_files import read_glove, read_word2vec

    path = tmp_path / "big.vec"
    with open(path, "wb") as fh:
        fh.write(b"2 3\nrose 0.1 0.2 0.3\n")
        fh.truncate(4 * GIB)
    with pytest.raises(BiasError, match="big.vec has a line of more than 1,048,576 bytes"):
        read_word2vec(path, binary=False)
    glove = tmp_path / "big.txt"
    glove.write_bytes(b"rose 0.1 0.2 0.3\n" + b"x" * (2**20 + 5) + b"\n")
    with pytest.raises(BiasError, match="big.txt has a line of more than 1,048,576 bytes"):
        read_glove(glove)


def test_HX06_HX07_corpora_keep_a_bounded_amount_of_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bias.core.data import corpus
    from bias.core.errors import BiasError
    from bias.core.models.debiasing import counterfactual_sentences as cs

    path = tmp_path / "c.txt"
    path.write_text(("he said so " + "x" * 1000 + "\n") * 50, encoding="utf-8")
    (tmp_path / "long.txt").write_text("he said so " + "x" * 70_000 + "\n", encoding="utf-8")
    with pytest.raises(BiasError, match="line 1 is longer than 65,536 bytes"):
        cs.read_corpus(tmp_path / "long.txt")
    monkeypatch.setattr(cs, "MAX_CORPUS_TEXT", 10_000)
    assert len(cs.read_corpus(path)) == 10  # 1,011 characters a line: the tenth passes 10,000
    monkeypatch.setattr(corpus, "MAX_CONTEXT_TEXT", 20_000)
    with pytest.raises(BiasError, match="hold more than 20,000 characters"):
        corpus.corpus_contexts(path, ["said"], per_word=40, seed=0)


def test_HX05b_HX04_a_set_of_more_than_5000_words_is_refused_and_warnings_are_capped(world: World, tmp_path: Path) -> None:
    from bad_input_helpers import words_toml
    from fixtures.planted import X_WORDS

    words_toml(tmp_path / "big.toml", X=[f"w{i}" for i in range(5_001)])
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "big.toml", cwd=tmp_path)
    assert done.code == 2 and "sets.X.words: more than 5,000 words" in done.err, done.both
    words_toml(tmp_path / "dup.toml", X=[*X_WORDS, *[X_WORDS[0]] * 300])
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "dup.toml", "--permutations", "100", "--bootstrap", "0", cwd=tmp_path)
    assert done.err.count("repeats word 0") == 20 and "... and 280 more warnings" in done.err, done.err[-500:]


def test_a_memory_error_inside_an_experiment_is_said_in_words(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bias.plugins.metrics.weat import Weat

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(Weat, "compute", exhausted)
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--out", "out", cwd=tmp_path)
    assert done.code == 1, done.both
    line = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert line["status"] == "failed" and line["reason"].startswith("Not enough memory for this run")


def test_Q03_Q05_Q07_every_vectors_reader_is_bounded_and_a_load_failure_is_said_in_words(tmp_path: Path) -> None:
    import struct

    from bias.core.errors import BiasError
    from bias.core.models.static.formats import check_text_rows, sniff_format
    from bias.core.models.static.word2vec_files import read_word2vec
    from bias.engine.runner import _reason

    text = tmp_path / "big.txt"
    text.write_bytes(b"2 3\nrose 0.1 0.2 0.3\n" + b"x" * (2**20 + 5) + b"\n")
    with pytest.raises(BiasError, match="big.txt has a line of more than 1,048,576 bytes"):
        check_text_rows(text, sniff_format(text), "word2vec")
    binary = tmp_path / "big.bin"
    with open(binary, "wb") as fh:
        fh.write(b"2 3\nrose " + struct.pack("<3f", 0.1, 0.2, 0.3) + b"\n")
        fh.truncate(64 * 2**20)  # a second "word" of 64 MB of NULs, no space: a few KB on disk
    with pytest.raises(BiasError, match="big.bin has a word of more than 1,048,576 bytes at row 2"):
        read_word2vec(binary, binary=True)
    assert _reason(MemoryError()).startswith("Not enough memory for this run")


def test_Z10_a_headerless_vectors_file_wider_than_any_model_is_refused_from_its_first_row(tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.core.models.static.formats import UNKNOWN, sniff_format
    from bias.core.models.static.word2vec_files import read_glove

    path = tmp_path / "wide.txt"
    path.write_text("rose " + " ".join(["0.1"] * 100_001) + "\nant " + " ".join(["0.2"] * 100_001) + "\n", encoding="utf-8")
    found = sniff_format(path)
    assert found.kind == UNKNOWN and "its first row has 100,001 numbers, which no model has" in found.detail
    with pytest.raises(BiasError, match="its first row has 100,001 numbers"):
        read_glove(path)


def test_Z01_Z02_long_texts_are_cut_to_the_window_chunk_by_chunk(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text's tokens were held uncut until all were tokenized: 2,560 corpus contexts of
    64 KiB took 2.3 GB and aborted the tokenizer. Each chunk is now cut before the next."""
    import tracemalloc

    from bias.core.models.hf import loading, vectors

    loaded = loading.load(str(tiny_bert_dir), device="cpu", head="none", dtype="float32", max_length=None, trust_remote_code=False)
    monkeypatch.setattr(vectors, "CHARACTERS_AT_ONCE", 2**14)
    texts = [f"l{i} " + "a " * 2_000 + "rose" for i in range(80)]  # 160,000 tokens in all
    spans = [(len(t) - 4, len(t)) for t in texts]
    tracemalloc.start()
    try:
        prepared, cut = vectors.prepare(loaded, texts, spans, "mean")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Held uncut, 160,000 tokens' ids, offsets and flags take about 20 MB; a chunk of 16 KiB of
    # characters holds about 8,000 of them.
    assert peak < 8 * 2**20, f"{peak:,} bytes at the peak"
    assert all(p is not None and len(p.inputs["input_ids"]) == loaded.token_limit for p in prepared)
    assert cut == list(range(len(texts)))  # each was cut, and is said to be
    (alone,), _ = vectors.prepare(loaded, texts[-1:], spans[-1:], "mean")
    assert prepared[-1] == alone


def test_a_word_of_more_than_1000_characters_is_refused_naming_its_field(world: World, tmp_path: Path) -> None:
    """A "word" of a million tokens was tokenized for 28 s before the span check refused it."""
    from bad_input_helpers import words_toml
    from fixtures.planted import X_WORDS

    words_toml(tmp_path / "long.toml", X=[*X_WORDS, "rose " * 201])
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "long.toml", cwd=tmp_path)
    assert done.code == 2 and f"sets.X.words[{len(X_WORDS)}]: longer than 1,000 characters" in done.err, done.both
    seat = {
        key: {"category": key, "examples": [f"w{i}" for i in range(8)]} for key in ("targ1", "targ2", "attr1", "attr2")
    }
    seat["attr2"]["examples"] = [f"w{i}" for i in range(5_001)]
    (tmp_path / "big.json").write_text(json.dumps(seat), encoding="utf-8")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "big.json", cwd=tmp_path)
    assert done.code == 2 and "field 'attr2.examples' has more than 5,000 words" in done.err, done.both
    seat["attr2"]["examples"] = ["a", "x" * 1_001]
    (tmp_path / "long.json").write_text(json.dumps(seat), encoding="utf-8")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "long.json", cwd=tmp_path)
    assert done.code == 2 and "field 'attr2.examples[1]' is longer than 1,000 characters" in done.err, done.both


def test_a_refusal_inside_an_experiment_keeps_its_hint(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bias.core.errors import BiasError
    from bias.plugins.metrics.weat import Weat

    def refused(*args, **kwargs):
        raise BiasError("The span covers 900 tokens.", "Give a shorter span, or a model with a longer limit.")

    monkeypatch.setattr(Weat, "compute", refused)
    cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), "--out", "out", cwd=tmp_path)
    line = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert line["status"] == "refused", line
    assert line["reason"] == "The span covers 900 tokens. Give a shorter span, or a model with a longer limit."


def test_a_gzip_vectors_file_that_exhausts_memory_is_the_file_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from bias.core.data.file_reading import read_toml
    from bias.core.errors import BiasError
    from bias.core.models.static import word2vec_files
    from bias.engine.runner import _reason

    path = tmp_path / "huge.bin.gz"
    with gzip.open(path, "wb") as fh:  # a header that claims 10^12 rows of 1,000 numbers (4 PB)
        fh.write(b"1000000000000 1000\nrose " + b"\0" * 4000 + b"\n")
    with pytest.raises(BiasError, match="huge.bin.gz: its header claims 1,000,000,000,000 vectors of 1,000 numbers"):
        word2vec_files.read_word2vec(path, binary=True)  # was a memory failure, exit 1
    (tmp_path / "ws.toml").write_text("", encoding="utf-8")
    read_toml(tmp_path / "ws.toml")  # the word set was the last file named before
    monkeypatch.setattr(word2vec_files, "_check_claim", lambda *args: None)  # memory fails anyway
    with pytest.raises(MemoryError) as exhausted:
        word2vec_files.read_word2vec(path, binary=True)
    assert f"(the last data file read: {path})" in _reason(exhausted.value)


def test_a_two_column_csv_given_as_a_word_set_is_said_to_be_none(world: World, tmp_path: Path) -> None:
    """It reads as a FISE affect file; the refusal called it one, as if the user had meant that."""
    (tmp_path / "ws.csv").write_text("word,set\nrose,X\nant,Y\n", encoding="utf-8")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "ws.csv", cwd=tmp_path)
    assert done.code == 2 and "ws.csv is not a word set: it reads as a FISE affect file." in done.err, done.both
    assert "Write a word set as TOML" in done.err and "--param affect=ws.csv" in done.err


def test_a_named_pipe_as_a_vectors_file_is_refused_when_sniffed(tmp_path: Path) -> None:
    """Sniffing opened the file with open(), which waits for a writer: Ctrl-C could not end it."""
    from bias.core.errors import BiasError
    from bias.core.models.static.formats import sniff_format

    for name in ("vectors.txt", "vectors.bin.gz"):
        os.mkfifo(tmp_path / name)
        with pytest.raises(BiasError, match=f"{name} is not a regular vectors file"):
            sniff_format(tmp_path / name)


def test_a_text_of_megabytes_is_refused_by_the_record_bound_and_by_the_tokenizer_s(tmp_path: Path) -> None:
    """A template of 3.8 MB, a debiasing word or a labelled cell of as much passed every line and
    file bound, and the tokenizer aborted at 2 GB on it."""
    from bias.core.data.wordsets import load_toml_wordset
    from bias.core.errors import BiasError
    from bias.core.models.hf.vectors import check_length

    head = 'kind = "templates"\nlanguage = "en"\nbias_type = "gender"\nsource = "s"\nlicence = "CC0-1.0"\n'
    text = '"""{word} ' + "a a a a\n" * 140_000 + '"""'  # lines within the line bound
    (tmp_path / "t.toml").write_text(head + f"[[templates]]\ntext = {text}\n", encoding="utf-8")
    with pytest.raises(BiasError, match=r"t.toml: templates\[0\].text: longer than 1,048,576 characters"):
        load_toml_wordset(tmp_path / "t.toml")
    lists = 'kind = "debias-lists"\nlanguage = "en"\nbias_type = "gender"\nsource = "s"\nlicence = "CC0-1.0"\n'
    (tmp_path / "d.toml").write_text(lists + 'definitional = [["' + "he" * 501 + '", "she"]]\n', encoding="utf-8")
    with pytest.raises(BiasError, match=r"d.toml: definitional\[0\]\[0\]: longer than 1,000 characters"):
        load_toml_wordset(tmp_path / "d.toml")  # each corpus sentence with "she" took a copy of it
    from bias.core.data import templates

    near = {"kind": "templates", "templates": ["{word} " + "a " * 131_100]}  # under the record bound
    found = [p.message for p in templates.check(near, "t.toml") if p.field == "templates[0].text"]
    assert found == ["longer than 262,144 characters, more than a model takes at once"]
    check_length("a" * 2**18)
    with pytest.raises(BiasError, match="A text to encode has 262,145 characters, more than the 262,144"):
        check_length("a" * (2**18 + 1))  # one call of 1 MiB kept Ctrl-C waiting 2.6-3.6 s


def test_templates_and_the_sentences_they_render_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """250,000 templates of 32 words ran for 174 s to 2.2 GB, then ended as a memory failure."""
    import tomllib

    from bias.core.data import lpbs_tests, templates
    from bias.core.data.wordsets import load_toml_wordset
    from bias.core.errors import BiasError

    data = Path(__file__).resolve().parents[2] / "languages" / "en" / "bias_lang_en" / "data"
    seat = tomllib.loads((data / "seat-templates.toml").read_text(encoding="utf-8"))
    many = {**seat, "templates": [f"{{word}} number {i}." for i in range(1_001)]}
    assert [p.message for p in templates.check(many, "t.toml") if p.field == "templates"] == ["more than 1,000 templates"]
    test = load_toml_wordset(data / "weat6.toml")
    words = sum(len(wl.words) for wl in test.sets().values())
    shipped = load_toml_wordset(data / "seat-templates.toml")
    chars = words * sum(len(t.text) for t in shipped.templates)
    monkeypatch.setattr(templates, "MAX_RENDERED", chars - 1)
    with pytest.raises(BiasError, match=f"would render {chars:,} characters, more than {chars - 1:,}"):
        templates.sentence_sets(test, shipped)
    monkeypatch.setattr(templates, "MAX_SENTENCES", 100)
    with pytest.raises(BiasError, match=f"would render {words * len(shipped.templates):,} sentences, more than 100"):
        templates.sentence_sets(test, shipped)
    lpbs = tomllib.loads((data / "lpbs-gender.toml").read_text(encoding="utf-8"))
    found = [p.message for p in lpbs_tests.check(lpbs, "l.toml") if p.field == "templates"]
    assert len(found) == 1 and found[0].startswith("the templates would render ") and found[0].endswith("more than 100")


def test_long_words_and_cells_are_named_as_their_files_write_them(tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.plugins.formats.crows_csv import CrowsCsvFormat
    from bias.plugins.formats.lpbs_json import LpbsJsonFormat

    lpbs = {
        "targ1": {"singular": ["x" * 1_001]},
        "targ2": {"singular": ["b"]},
        "attr1": ["c"],
        "attr2": ["d"],
        "templates": {"singular": ["TARGET is ATTRIBUTE."]},
    }
    (tmp_path / "l.json").write_text(json.dumps(lpbs), encoding="utf-8")
    with pytest.raises(BiasError, match=r"field 'targ1.singular\[0\]' is longer than 1,000 characters"):
        LpbsJsonFormat().record(tmp_path / "l.json")
    head = "sent_more,sent_less,stereo_antistereo,bias_type\n"
    (tmp_path / "c.csv").write_text(head + 'a,b,stereo,gender\n"open,b,stereo,gender\n' + "x" * 140_000 + "\n", encoding="utf-8")
    with pytest.raises(BiasError, match="c.csv: line 3: a field longer than 131,072 characters") as refused:
        CrowsCsvFormat().record(tmp_path / "c.csv")
    assert "quote left open" in (refused.value.hint or "")


def test_a_decisions_file_reads_each_name_set_once_and_bounds_what_it_fills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 references to one set read its file 3,000 times (minutes); 40 groups of 5,000 names
    filled into a profile of a million characters ran for a quarter of an hour."""
    from fixtures.decisions import decisions_toml

    from bias.core.data import decisions_reading, file_reading
    from bias.core.data.wordsets import load_toml_wordset, validate_toml_file

    many = '[groups.nl]\nlabel = "nl"\nnames = [' + ", ".join(['"names.X"'] * 65) + ']\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n'
    path = decisions_toml(tmp_path, scenarios=2, groups=many)
    assert [p.message for p in validate_toml_file(path) if p.field == "groups.nl.names"] == ["more than 64 sets"]
    reads = []
    monkeypatch.setattr(decisions_reading, "read_toml", lambda p: reads.append(p) or file_reading.read_toml(p))
    again = '[groups.nl]\nlabel = "nl"\nnames = ["names.X", "names.X", "names.X"]\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y", "names.X"]\n'
    validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=again))
    assert [p.name for p in reads] == ["names.toml"]  # X and Y from one file read once
    (tmp_path / "bad.toml").write_text("x = [\n", encoding="utf-8")  # a file that fails is read once too
    reads.clear()
    broken = '[groups.nl]\nlabel = "nl"\nnames = ["bad.X", "bad.Y"]\n[groups.ma]\nlabel = "ma"\nnames = ["bad.A", "names.Y"]\n'
    found = [p.message for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=broken)) if "bad." in p.message]
    assert len(found) == 3 and all("bad.toml: malformed TOML" in m for m in found), found
    assert [p.name for p in reads].count("bad.toml") == 1
    for i in range(17):  # copies (or links) of one file are as many files to read
        shutil.copyfile(tmp_path / "names.toml", tmp_path / f"n{i}.toml")
    refs = ", ".join(f'"n{i}.X"' for i in range(17))
    path = decisions_toml(tmp_path, scenarios=2, groups=f'[groups.nl]\nlabel = "nl"\nnames = [{refs}]\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n')
    found = [p.message for p in validate_toml_file(path) if p.field == "groups.nl.names[16]"]
    assert found == ["'n16.X': more than 16 files of names in all (the references after it are not read)"], found
    refs = ", ".join(f'"n{i % 17}.X"' for i in range(60))  # refused once, not at each reference
    path = decisions_toml(tmp_path, scenarios=2, groups=f'[groups.nl]\nlabel = "nl"\nnames = [{refs}]\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n')
    found = [p.field for p in validate_toml_file(path) if "files of names" in p.message]
    assert found == ["groups.nl.names[16]"], found
    path = decisions_toml(tmp_path, scenarios=2, extra="")
    text = path.read_text(encoding="utf-8")
    start = text.index("De sollicitant")
    path.write_text(text[:start] + "a " * 140_000 + text[start:], encoding="utf-8")
    found = [(p.field, p.message) for p in validate_toml_file(path) if p.severity == "error"]
    assert found == [("scenario s0", "the job, profile and question with an applicant hold more than 262,144 characters")], found
    path = decisions_toml(tmp_path, scenarios=2)
    built = load_toml_wordset(path)
    applicants = sum(len(g.names) + len(g.explicit) for g in built.groups)
    chars = applicants * sum(len(s.profile) + len(s.question) for s in built.scenarios)
    monkeypatch.setattr(decisions_reading, "rendering_problem", lambda count, chars, what: f"{count} and {chars}")
    found = [p.message for p in validate_toml_file(path) if p.field == "scenarios"]
    assert found == [f"{2 * applicants * 2} and {chars}"]  # profile and question, each applicant, each scenario


def test_a_json_file_is_parsed_once_while_the_json_formats_sniff_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each JSON format parsed and checked the file again: 62 s for an 8 MiB file of 2.7M records."""
    from bias.core.data import file_reading
    from bias.registry.resolve import format_for

    seat = {key: {"category": key, "examples": ["a", "b"]} for key in ("targ1", "targ2", "attr1", "attr2")}
    (tmp_path / "t.json").write_text(json.dumps(seat), encoding="utf-8")
    parses = []
    real = file_reading.parse_json
    monkeypatch.setattr(file_reading, "parse_json", lambda text, where: parses.append(where) or real(text, where))
    assert type(format_for(tmp_path / "t.json")).__name__ == "SeatJsonFormat"
    assert len(parses) == 1
    assert file_reading.read_json(tmp_path / "t.json") is not file_reading.read_json(tmp_path / "t.json")


def test_a_number_of_thousands_of_digits_is_bad_input_naming_the_file(world: World, tmp_path: Path) -> None:
    """Python refuses to convert an integer of more than 4,300 digits: the ValueError ended the
    run as a failure of the program (exit 1) naming no file."""
    from bias.core.data.file_reading import read_json, read_toml
    from bias.core.errors import BiasError
    from bias.core.runs.manifest import read_manifest

    (tmp_path / "n.json").write_text('{"targ1": ' + "9" * 5_000 + "}", encoding="utf-8")
    with pytest.raises(BiasError, match="n.json: unreadable JSON: a number of more than 4,300 digits"):
        read_json(tmp_path / "n.json")
    (tmp_path / "n.toml").write_text("x = " + "9" * 5_000 + "\n", encoding="utf-8")
    with pytest.raises(BiasError, match="n.toml: unreadable TOML: a number of more than 4,300 digits"):
        read_toml(tmp_path / "n.toml")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text('{"n": ' + "9" * 5_000 + "}", encoding="utf-8")
    with pytest.raises(BiasError, match="manifest.json is damaged: not readable JSON"):
        read_manifest(tmp_path / "run")
    done = cli("run", "-m", f"word2vec:{world.w2v_bin}", "-w", "n.toml", cwd=tmp_path)
    assert done.code == 2 and "n.toml: unreadable TOML" in done.err, done.both


def test_a_debiasing_record_with_a_number_of_thousands_of_digits_is_bad_input(tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.engine.inputs import recorded_source

    (tmp_path / "debias.json").write_text('{"source_model": ' + "9" * 5_000 + "}", encoding="utf-8")
    with pytest.raises(BiasError, match="debias.json: cannot read the record of the debiasing") as refused:
        recorded_source(tmp_path / "debias.json", "hint")  # was the ValueError: exit 1
    assert "a number of more than 4,300 digits" in refused.value.message and "set_int_max" not in refused.value.message


def test_an_input_output_error_names_the_file_last_opened_as_a_clue(tmp_path: Path) -> None:
    """A link to /proc/self/mem is a regular file of size 0 whose read fails with EIO: it was
    "not a problem with your input", no file named. A read or write that fails so names no file,
    and a failing disk does the same: the message names the last data file opened as a clue and
    stays a failure (exit 1)."""
    for name in ("m.json", "m.toml"):
        (tmp_path / name).symlink_to("/proc/self/mem")
        done = cli("validate", name, cwd=tmp_path)
        assert done.code == 1 and f"(the last data file opened: {name})" in done.err, done.both
        assert "Input/output error reading or writing a file" in done.err and "report it" not in done.both


def test_a_decisions_group_in_words_and_what_a_model_is_given_are_bounded(tmp_path: Path) -> None:
    """A group's `explicit` text had no bound of its own, and the bound on what a model is given at
    once left out the applicant: a 1 MB `explicit` passed validation and was refused only after the
    model had loaded, naming neither field nor scenario."""
    from bias.core.data.wordsets import load_toml_wordset, validate_toml_file

    def errors(path: Path) -> list[tuple[str, str]]:
        return [(p.field, p.message) for p in validate_toml_file(path) if p.severity == "error"]

    long = "x" * 1_001
    groups = f'[groups.nl]\nlabel = "nl"\nexplicit = {{ m = "{long}", f = "een vrouw" }}\n[groups.ma]\nlabel = "ma"\nexplicit = {{ m = "a man", f = "{long}" }}\n'
    found = errors(decisions_toml(tmp_path, scenarios=2, groups=groups))
    assert ("groups.nl.explicit", "a group in words is at most 1,000 characters") in found, found
    assert ("groups.ma.explicit", "a group in words is at most 1,000 characters") in found, found
    path = decisions_toml(tmp_path, scenarios=2, groups=groups.replace(long, "x" * 1_000))
    assert not errors(path)
    first = load_toml_wordset(path).scenarios[0]
    held = len(first.job) + len(first.profile) + len(first.question)
    text = path.read_text(encoding="utf-8")
    start = text.index("De sollicitant")
    room = 2**18 - held - 1_000  # just fits with the longest applicant (1,000 characters)
    path.write_text(text[:start] + "a" * room + text[start:], encoding="utf-8")
    assert not errors(path)
    path.write_text(text[:start] + "a" * (room + 1) + text[start:], encoding="utf-8")
    assert errors(path) == [("scenario s0", "the job, profile and question with an applicant hold more than 262,144 characters")]


def test_a_reference_group_whose_names_are_refused_is_not_also_said_to_have_none(tmp_path: Path) -> None:
    from bias.core.data.wordsets import validate_toml_file

    many = '[groups.nl]\nlabel = "nl"\nnames = [' + ", ".join(['"names.X"'] * 65) + ']\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n'
    found = [(p.field, p.message) for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=many)) if p.severity == "error"]
    assert found == [("groups.nl.names", "more than 64 sets")], found
    none = '[groups.nl]\nlabel = "nl"\nexplicit = "een man"\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n'
    found = [(p.field, p.message) for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=none)) if p.severity == "error"]
    assert found == [("groups.nl", "the reference group has no names, but other groups do")], found


def test_a_language_package_data_folder_validates_without_its_list_of_ambiguous_words(tmp_path: Path) -> None:
    """`bias validate languages/XX/bias_lang_XX/data` took `ambiguous-words.txt` for a word set."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "ambiguous-words.txt").write_text("# words\nbank: a river bank, or money\n", encoding="utf-8")
    shutil.copyfile(Path(__file__).parents[2] / "languages" / "nl" / "bias_lang_nl" / "data" / "weat6.toml", data / "weat6.toml")
    done = cli("validate", "data", cwd=tmp_path)
    assert done.code == 0 and "1 file(s) checked: 0 error(s)" in done.out, done.both


def test_an_lpbs_json_template_over_the_bound_is_named_as_the_file_names_it(tmp_path: Path) -> None:
    words = {"singular": ["he"], "plural": ["men"]}
    data = {"targ1": words, "targ2": {"singular": ["she"], "plural": ["women"]}, "attr1": list("abcdefgh"), "attr2": list("ijklmnop")}
    for size in (300_000, 2_000_000):
        data["templates"] = {"singular": ["TARGET ATTRIBUTE"], "plural": ["TARGET ATTRIBUTE", "TARGET is ATTRIBUTE " + "x" * size]}
        (tmp_path / "l.json").write_text(json.dumps(data), encoding="utf-8")
        done = cli("validate", "l.json", cwd=tmp_path)
        assert done.code == 2 and "field 'templates.plural[1]' is longer than 262,144 characters" in done.out, done.both


def test_a_toml_integer_written_in_hex_past_the_digit_limit_is_bad_input(world: World, tmp_path: Path) -> None:
    """TOML reads 0x... of any length; Python then refuses to write it in decimal, far from the
    file (exit 1, "not a problem with your input")."""
    huge = "0x" + "f" * 4_000  # 4,817 decimal digits
    (tmp_path / "ws.toml").write_text(f'kind = "association"\n[sets.X]\nwords = [{huge}]\n', encoding="utf-8")
    done = cli("validate", "ws.toml", cwd=tmp_path)
    assert done.code == 2 and "error ws.toml: sets.X.words[0]: a number of more than 4,300 digits" in done.out, done.both
    (tmp_path / "e.toml").write_text(f'[params]\npermutations = {huge}\n', encoding="utf-8")
    done = cli("run", "e.toml", "-m", f"word2vec:{world.w2v_bin}", "-w", str(world.wordset), cwd=tmp_path)
    assert done.code == 2 and "e.toml: params.permutations: a number of more than 4,300 digits" in done.err, done.both
    from bias.core.data.file_reading import read_toml

    (tmp_path / "ok.toml").write_text("x = 0x" + "f" * 3_500 + "\n", encoding="utf-8")  # 4,215 digits
    assert read_toml(tmp_path / "ok.toml")["x"] == int("f" * 3_500, 16)


def test_a_malformed_word_set_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("x = [\n", encoding="utf-8")
    done = cli("validate", "bad.toml", cwd=tmp_path)
    assert "error bad.toml: malformed TOML" in done.out and "bad.toml: bad.toml" not in done.out, done.both


def test_a_decisions_file_holds_at_most_8_mib_of_files_of_names(tmp_path: Path) -> None:
    """Sixteen files of 4 MiB (a set and a table of a million entries) held parsed at once: 1.6 GB."""
    from bias.core.data.wordsets import validate_toml_file

    decisions_toml(tmp_path, scenarios=2)
    filler = "\n# " + "x" * 2**20  # 1 MiB of comment each
    names = (tmp_path / "names.toml").read_text(encoding="utf-8")
    refs = []
    for i in range(9):
        (tmp_path / f"n{i}.toml").write_text(names + filler, encoding="utf-8")
        refs.append(f'"n{i}.X"')
    many = f'[groups.nl]\nlabel = "nl"\nnames = [{", ".join(refs)}]\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n'
    found = [(p.field, p.message) for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=many)) if p.severity == "error"]
    assert found == [("groups.nl.names[7]", "'n7.X': more than 8 MiB of files of names in all (the references after it are not read)")], found
    assert not [p for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2)) if p.severity == "error"]


def test_a_decisions_file_of_names_that_is_a_pipe_is_said_to_be_one(tmp_path: Path) -> None:
    from bias.core.data.wordsets import validate_toml_file

    decisions_toml(tmp_path, scenarios=2)
    os.mkfifo(tmp_path / "pipe.toml")
    groups = '[groups.nl]\nlabel = "nl"\nnames = ["pipe.X"]\n[groups.ma]\nlabel = "ma"\nnames = ["names.Y"]\n'
    found = [p.message for p in validate_toml_file(decisions_toml(tmp_path, scenarios=2, groups=groups)) if p.severity == "error"]
    assert len(found) == 1 and "pipe.toml is not a regular TOML file" in found[0], found


def test_a_damaged_manifest_or_model_config_says_a_long_number_as_data(tmp_path: Path) -> None:
    from bias.core.errors import BiasError
    from bias.core.models.hf.load_errors import config_error
    from bias.core.runs.manifest import read_manifest

    (tmp_path / "manifest.json").write_text('{"n": ' + "9" * 5_000 + "}", encoding="utf-8")
    with pytest.raises(BiasError) as refused:
        read_manifest(tmp_path)
    assert "a number of more than 4,300 digits, which no data file has" in refused.value.message
    (tmp_path / "config.json").write_text('{"n": ' + "9" * 5_000 + "}", encoding="utf-8")
    said = config_error(tmp_path, ValueError("x"), remote=False).message
    assert "not valid JSON (a number of more than 4,300 digits" in said and "set_int_max" not in said, said


def test_a_results_line_with_a_long_number_is_skipped_naming_the_folder_and_said_as_data(world: World, tmp_path: Path) -> None:
    """The warning said "results.jsonl line 1" without the folder, and quoted the interpreter's
    advice about its digit limit."""
    folder = received(world, tmp_path)
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    lines.append(lines[0].replace("{", '{"big": ' + "9" * 5_000 + ", ", 1))
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = cli("report", "received", cwd=tmp_path)
    assert done.code == 0, done.both
    said = f"received/results.jsonl line {len(lines)}: not a valid result (a number of more than 4,300 digits, which no data file has): skipped."
    assert said in " ".join(done.err.split()) and "set_int_max" not in done.both, done.both


def test_names_shared_between_groups_are_said_once_a_pair_of_groups(tmp_path: Path) -> None:
    """64 groups drawing on one set said each shared name of each group: 13,104 lines."""
    from bias.core.data.wordsets import validate_toml_file

    groups = "".join(f'[groups.g{i}]\nlabel = "g{i}"\nnames = ["names.X"]\n' for i in range(4))
    text = decisions_toml(tmp_path, scenarios=2, groups=groups).read_text(encoding="utf-8")
    (tmp_path / "hiring.toml").write_text(text.replace('reference = "nl"', 'reference = "g0"'), encoding="utf-8")
    found = [(p.field, p.message) for p in validate_toml_file(tmp_path / "hiring.toml") if p.severity == "error"]
    shared = "'Jan', 'Piet', 'Kees' and 5 more are also names of group 'g0'; a name belongs to one group"
    assert found == [(f"groups.g{i}", shared) for i in (1, 2, 3)], found
    # one line a group, whatever the number of groups it shares names with (64 x 63 / 2 pairs)
    groups = '[groups.g0]\nlabel = "g0"\nnames = ["names.X"]\n[groups.g1]\nlabel = "g1"\nnames = ["names.Y"]\n'
    groups += '[groups.g2]\nlabel = "g2"\nnames = ["names.X", "names.Y"]\n'
    text = decisions_toml(tmp_path, scenarios=2, groups=groups).read_text(encoding="utf-8")
    (tmp_path / "hiring.toml").write_text(text.replace('reference = "nl"', 'reference = "g0"'), encoding="utf-8")
    found = [(p.field, p.message) for p in validate_toml_file(tmp_path / "hiring.toml") if p.severity == "error"]
    assert found == [("groups.g2", "'Jan', 'Piet', 'Kees' and 13 more are also names of groups 'g0', 'g1'; a name belongs to one group")], found


def test_a_debiasing_corpus_whose_reads_fail_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    from bias.core.data.corpus import check_corpus
    from bias.core.errors import BiasError

    (tmp_path / "c.txt").symlink_to("/proc/self/mem")
    with pytest.raises(BiasError, match="c.txt cannot be read"):
        check_corpus(tmp_path / "c.txt")
    (tmp_path / "ok.txt").write_text("a sentence\n", encoding="utf-8")
    check_corpus(tmp_path / "ok.txt")


def test_validate_parses_each_word_set_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The format checks and the content checks each parsed the file (a 4 MiB file of numbers: 24 s),
    and a package's template coverage a third time."""
    from bias.core.data import file_reading, wordsets
    from bias.engine import validate

    reads: list[str] = []
    monkeypatch.setattr(wordsets, "read_toml", lambda p: reads.append(Path(p).name) or file_reading.read_toml(p))
    monkeypatch.setattr(validate, "read_toml", lambda p: reads.append(Path(p).name) or file_reading.read_toml(p))
    package = Path(__file__).parents[2] / "languages" / "nl"
    found, checked = validate.validate_path(package / "bias_lang_nl" / "data" / "weat6.toml")
    assert reads == ["weat6.toml"] and checked == 1 and not wordsets.errors_of(found)
    reads.clear()
    found, checked = validate.validate_path(package)
    toml = [name for name in reads if name != "pyproject.toml"]
    assert len(toml) == len(set(toml)) == checked and "seat-templates.toml" in toml, reads
