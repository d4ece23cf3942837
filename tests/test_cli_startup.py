"""Start-up of the command line: values that need no conversion are not sent through typer's pydantic
adapters (importing pydantic costs more than the rest of `bias list`), and every value is converted
or refused exactly as typer's own adapter does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest


def test_list_info_and_help_do_not_import_pydantic():
    code = (
        "import sys\n"
        "from bias.cli.app import main\n"
        "for argv in (['bias', '--help'], ['bias', 'list'], ['bias', 'list', 'metrics', '--language', 'en'], ['bias', 'info', 'weat'], ['bias', 'info', 'en/weat6']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (argv, exc.code)\n"
        "print('PYDANTIC', sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "PYDANTIC []" in proc.stdout


def test_help_imports_no_rich_renderer():
    """`--help` is printed as plain text: neither rich nor typer's rich help (which imports a
    markdown parser) is loaded for it."""
    code = (
        "import sys\n"
        "from bias.cli.app import main\n"
        "for argv in (['bias', '--help'], ['bias', 'run', '--help'], ['bias', 'list', '--help']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (argv, exc.code)\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'markdown_it')"
        " or m == 'typer.rich_utils'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout
    assert "Usage: bias run [OPTIONS]" in proc.stdout and "Execution:" in proc.stdout


def _outcome(runtime, value, param, ctx):
    try:
        return ("value", runtime.coerce(value, param=param, ctx=ctx))
    except Exception as exc:  # the conversion's error, compared by type and message
        return ("error", type(exc).__name__, str(exc))


def test_every_parameter_converts_and_refuses_as_typer_does():
    pytest.importorskip("typer._coercion", reason="this typer converts without pydantic adapters: nothing is deferred")
    import typer.main
    from typer._coercion import build_runtime_param
    from typer._click import Context

    from bias.cli.app import app

    group = typer.main.get_command(app)
    texts = [None, "", "abc", "3", "-1", "1.5", "true", "en/weat6", "some/file.toml"]
    compared = deferred = 0
    for command in group.commands.values():
        ctx = Context(command)
        for param in command.params:
            multiple = param.multiple or param.nargs == -1
            values = [None, (), ("a",), ("3", "x"), "3"] if multiple else texts
            for value in values:
                param._runtime_param = None
                ours = _outcome(param.get_runtime_param(), value, param, ctx)
                deferred += type(param._runtime_param).__name__ == "Deferred"
                theirs = _outcome(build_runtime_param(param.type_descriptor), value, param, ctx)
                assert ours == theirs, (command.name, param.name, value)
                compared += 1
    assert compared > 500 and deferred > 100


def test_name_and_version_from_the_metadata_header_agree_with_importlib_metadata(tmp_path):
    import importlib.metadata

    from bias.registry.entry_points import _name_and_version

    checked = 0
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"] is None:
            continue
        assert _name_and_version(dist) == (dist.metadata["Name"], dist.version), dist.metadata["Name"]
        checked += 1
    assert checked > 20
    # A description that looks like headers, and a distribution whose header lacks the version.
    info = tmp_path / "made_up-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: made-up\nVersion: 1.0\n\nName: not-this\nVersion: 9\n")
    dist = importlib.metadata.PathDistribution(info)
    assert _name_and_version(dist) == ("made-up", "1.0") == (dist.metadata["Name"], dist.version)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: made-up\n\nVersion: 2.0\n")
    assert _name_and_version(dist) == (dist.metadata["Name"], dist.version) == ("made-up", None)


def test_the_short_listing_reads_no_distribution_metadata_nor_the_language_packages():
    """`bias list` shows names and summaries only: the installed distributions' metadata (which
    plugin comes from which), the language packages (and bias.api with them), rich's table and the
    `run` command's options (built from the run's vocabulary) are left unread; `--json` still names
    each plugin's distribution."""
    code = (
        "import sys\n"
        "from bias.cli.app import main\n"
        "sys.argv = ['bias', 'list']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "from bias.registry import entry_points\n"
        "print('READ', dict(entry_points._DISTRIBUTIONS), sorted(m for m in sys.modules if m == 'bias.api' "
        "or m.startswith('bias_lang_') or m in ('rich.table', 'bias.cli.run_command', 'bias.engine.vocabulary')))\n"
    )
    env = {**os.environ, "BIAS_CACHE_DIR": tempfile.mkdtemp()}
    for _ in range(2):  # the first fills the listing cache, the second lists from it
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
    assert "READ {} []" in done.stdout, done.stdout[-300:]
    listed = subprocess.run(
        [sys.executable, "-m", "bias.cli.app", "list", "metrics", "--json"], capture_output=True, text=True, timeout=120, env=env
    )
    assert listed.returncode == 0, listed.stderr
    assert {row["distribution"] for row in json.loads(listed.stdout)} == {"bias-framework"}


def test_the_run_command_is_built_when_named_and_listed_in_its_place() -> None:
    import typer.main
    from typer._click import Context

    from bias.cli.app import app

    group = typer.main.get_command(app)
    ctx = Context(group)
    assert group.list_commands(ctx)[:3] == ["list", "info", "run"]
    assert "run" in group.commands and group.commands._deferred  # named, not yet built
    listed = group.get_help(ctx)
    assert "run       Run experiments: every combination of the repeatable options" in listed
    assert group.commands._deferred  # the help lists it from its help text, unbuilt
    run = group.get_command(ctx, "run")
    assert run.name == "run" and "--metric" in {o for p in run.params for o in p.opts}
    assert not group.commands._deferred and group.get_command(ctx, "run") is run
    assert group.get_command(ctx, "nope") is None
