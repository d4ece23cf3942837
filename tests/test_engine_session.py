"""A session into an output folder without the command line: results, manifest and report files, how
it ended (finished, stopped, interrupted), and the folder's lock."""

from __future__ import annotations

import contextlib
import json

import attrs
import pytest

from test_experiments import GRID, config, write_sets

from bias.core.errors import BiasError
from bias.core.runs.lock import RunLock
from bias.core.runs.manifest import read_manifest
from bias.engine import planning, runner
from bias.engine.assembly import assemble
from bias.engine.front_door import from_options, spec_for_run
from bias.engine.experiment_file import load_config
from bias.engine.session import run_session


@pytest.fixture()
def sets(tmp_path):
    return write_sets(tmp_path)


def _assembly(planted_files, tmp_path, out):
    return assemble(spec_for_run(from_options({"out": out} if out else {}), config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID)))


def test_a_session_writes_results_manifest_and_report_and_says_it_finished(planted_files, tmp_path, sets):
    out = tmp_path / "out"
    seen, events = [], []
    session = run_session(_assembly(planted_files, tmp_path, out), argv=["bias", "run", "exp.toml"], formats=("md", "csv"), on_result=seen.append, on_event=events.append)
    assert session.status == "finished" and session.interrupt_exit_code is None
    assert len(session.results) == 4 and seen == session.results
    assert sum(e.kind == "result" for e in events) == 4
    assert [json.loads(line)["key"] for line in (out / "results.jsonl").read_text().splitlines()] == [r.key for r in session.results]
    assert session.written == [out / "report.md", out / "results.csv"] and all(p.exists() for p in session.written)
    assert not (out / "report.tex").exists()
    assert [r.key for r in session.report.results] == [r.key for r in session.results]
    assert session.this_run() == session.report.results and session.already_finished() == 0
    [record] = read_manifest(out)["sessions"]
    assert (record["status"], record["computed"], record["planned"], record["command"]) == ("finished", 4, 4, ["bias", "run", "exp.toml"])
    RunLock(out).acquire().release()  # the session let the folder go


def test_without_a_folder_nothing_is_written(planted_files, tmp_path, sets):
    options = {"models": [f"word2vec:{planted_files.word2vec_bin}"], "wordsets": [str(sets[0])], "metrics": ["weat"], "permutations": [100]}
    assembly = assemble(spec_for_run(from_options(options)))
    session = run_session(assembly)
    assert session.status == "finished" and [r.status for r in session.results] == ["ok"]
    assert session.report is None and session.written == [] and session.this_run() == session.results


def test_the_lock_is_held_until_the_callers_stack_closes(planted_files, tmp_path, sets):
    out = tmp_path / "out"
    with contextlib.ExitStack() as hold:
        run_session(_assembly(planted_files, tmp_path, out), hold=hold)
        with pytest.raises(BiasError, match="Another bias run is writing"):
            RunLock(out).acquire()
    RunLock(out).acquire().release()


def test_an_interrupted_session_keeps_its_results_and_resumes(planted_files, tmp_path, sets, monkeypatch):
    out = tmp_path / "out"
    real, calls = runner.run_one, []

    def interrupted(p, embedder, **kwargs):
        calls.append(p)
        if len(calls) == 3:
            exc = KeyboardInterrupt()
            exc.exit_code = 143  # what SIGTERM asks for
            raise exc
        return real(p, embedder, **kwargs)

    monkeypatch.setattr(runner, "run_one", interrupted)
    display_closed = []

    @contextlib.contextmanager
    def display():
        yield
        display_closed.append(True)

    session = run_session(_assembly(planted_files, tmp_path, out), display=display())
    assert (session.status, session.interrupt_exit_code, len(session.results)) == ("interrupted", 143, 2)
    assert display_closed == []  # left by the interruption, not by its end
    assert read_manifest(out)["sessions"][-1]["status"] == "interrupted"
    assert (out / "report.md").exists()
    monkeypatch.setattr(runner, "run_one", real)
    resumed = run_session(_assembly(planted_files, tmp_path, out), resume=True)
    assert resumed.status == "finished" and len(resumed.results) == 2 and resumed.already_finished() == 2
    assert len(resumed.this_run()) == 4 and len(resumed.report.results) == 4


def test_fail_fast_stops_at_the_first_failure(planted_files, tmp_path, sets):
    good = _assembly(planted_files, tmp_path, tmp_path / "out")
    missing = load_config(config(tmp_path, f"word2vec:{tmp_path / 'missing.bin'}", GRID, name="missing.toml"))[0]
    # The plan as a model file lost after the checks would leave it: the first experiment fails.
    session = run_session(attrs.evolve(good, plan=planning.plan(missing)), fail_fast=True)
    assert session.status == "stopped" and [r.status for r in session.results] == ["failed"]
    assert read_manifest(tmp_path / "out")["sessions"][-1]["status"] == "stopped"


@pytest.mark.parametrize(("threads", "omp"), [(None, None), (1, None), (None, "1")])
def test_the_cpu_threads_are_set_and_recorded_in_every_result(planted_files, tmp_path, sets, monkeypatch, threads, omp):
    """--threads N (None: OMP_NUM_THREADS when set, else every core the process may use) limits BLAS
    and torch, and each result says how many it ran with."""
    import os

    from threadpoolctl import threadpool_info, threadpool_limits

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)  # set by the run; restored after the test
    if omp is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    given = {"threads": threads} if threads else {}
    spec = spec_for_run(from_options(given), config(tmp_path, f"word2vec:{planted_files.word2vec_bin}", GRID))
    with threadpool_limits(None):  # the limits the run sets are undone after the test
        session = run_session(assemble(spec))
        blas = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
    expected = threads or (int(omp) if omp else len(os.sched_getaffinity(0)))
    assert {r.meta["threads"] for r in session.results} == {expected}
    assert blas == {expected}
