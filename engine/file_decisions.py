"""What an experiment file may ask for but not decide alone: where results go (`out`), Ray
(`executor`, `ray_address`) and money (`max_cost`). Each is taken from the file only within its
bounds, or when the command line confirms it; the command line's own value replaces the file's, and
that is said."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bias.core.errors import BiasError
from bias.engine.option_values import AtLeast
from bias.engine.run_spec import RunSpec
from bias.engine.spending import DEFAULT_MAX_COST

Notice = Callable[[str], None]


def out(file: RunSpec, flags: RunSpec, on_notice: Notice) -> Path | None:
    """The file's `out` is written only inside the file's folder or the working directory, unless
    the command line's --out confirms it; --out replaces it."""
    if flags.out is not None:
        if file.out is not None and Path(file.out).resolve() != Path(flags.out).resolve():
            on_notice(
                f"--out {flags.out} replaces the experiment file's out = "
                f"{file.written.get('out', str(file.out))!r}."
            )
        return flags.out
    if file.out is None:
        return None
    resolved = Path(file.out).resolve()
    inside = [Path(file.origin).resolve().parent, Path.cwd().resolve()]
    if not any(resolved == base or base in resolved.parents for base in inside):
        raise BiasError(
            f"{file.origin}: out = {file.written.get('out', str(file.out))!r} points to "
            f"{resolved}, outside the experiment file's folder and the working directory.",
            f"If that is where results should go, confirm it with --out {resolved} on the command "
            "line.",
        )
    if resolved.is_dir() and not _may_hold_a_run(resolved):
        raise BiasError(
            f"{file.origin}: out = {file.written.get('out', str(file.out))!r} is {resolved}, a "
            "folder that holds other files; a run would write its reports over theirs.",
            f"Name a new or empty folder, or confirm this one with --out {resolved} on the "
            "command line.",
        )
    return file.out


def _may_hold_a_run(folder: Path) -> bool:
    """An empty folder, or the folder of an earlier run: its manifest.json is one bias wrote (any
    file of that name, or a results.jsonl, could be another tool's)."""
    from bias.core.runs.manifest import read_manifest
    from bias.engine.manifest import FORMAT

    if next(folder.iterdir(), None) is None:
        return True
    try:
        data = read_manifest(folder)  # a link or damaged JSON is refused there
    except BiasError:
        return False
    return data is not None and str(data.get("format", "")).startswith(FORMAT.split("/")[0] + "/")


def ray_address(file: RunSpec, flags: RunSpec, on_notice: Notice) -> str | None:
    """The Ray cluster to join. A file may ask for Ray, but joining the cluster it names (which
    could be anyone's: a Ray driver runs what the cluster sends back) needs --ray-address to confirm
    it, as an `out` outside the file's folder needs --out."""
    written, given = file.ray_address, flags.ray_address
    if written is None:
        return given
    if not isinstance(written, str) or not written.strip():
        raise BiasError(f"{file.origin}: ray_address must be auto or HOST:PORT, not {written!r}.")
    if given is None:
        raise BiasError(
            f"{file.origin}: ray_address = {written!r} would join that Ray cluster; an experiment "
            "file alone does not connect to a machine.",
            f"If you trust that cluster, confirm it with --ray-address {written} on the command "
            "line (or remove ray_address to start Ray here).",
        )
    if given != written:
        on_notice(
            f"--ray-address {given} replaces the experiment file's ray_address = {written!r}."
        )
    return given


def executor(file: RunSpec, flags: RunSpec, on_notice: Notice) -> str | None:
    """A file may ask for Ray, but starting it is the command line's decision: a Ray instance opens
    network ports on this machine for its workers and runs the tasks they are sent. --executor ray
    confirms it, and so does --ray-address for a cluster the file names."""
    written = file.executor
    if flags.given("executor"):
        if file.given("executor") and flags.executor != written:
            on_notice(
                f"{flags.where['executor']} {flags.executor} replaces the experiment file's "
                f"executor = {written!r}."
            )
        return flags.executor
    if written == "ray" and flags.ray_address is None:
        raise BiasError(
            f"{file.origin}: executor = 'ray' would start Ray on this machine; an experiment file "
            "alone does not start it.",
            "If you want Ray, confirm it with --executor ray on the command line (or remove "
            "executor to run in this process).",
        )
    return written


def max_cost(file: RunSpec, flags: RunSpec) -> float | None:
    """A file may lower the money a run spends on one model without confirmation, not raise it."""
    if flags.given("max_cost"):
        return flags.max_cost
    written = file.max_cost
    if (
        file.given("max_cost")
        and AtLeast(0, whole=False).fits(written)
        and written > DEFAULT_MAX_COST
    ):
        raise BiasError(
            f"{file.origin}: max_cost = {written!r} would let the run spend more than "
            f"{DEFAULT_MAX_COST:g} US dollar(s) on a model; a file can only lower that limit.",
            f"If that is what you want to spend, confirm it with --max-cost {written} on the "
            "command line.",
        )
    return written
