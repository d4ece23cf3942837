"""Start-up time of the command line: `bias --help`, `bias list`, `bias info NAME`.

Run:  python benchmarks/bench_cli_startup.py [--repeats N] [--clock cpu|wall] [--no-bytecode] [--no-listing-cache]

Each command runs N times (default 7) in a fresh process, output piped, COLUMNS=80; the median and
the fastest time are printed beside the target (0.2 s for --help, 0.3 s for list, 0.5 s for info,
warm). `--clock cpu` (the default) times the CPU seconds of the child process (user + system), which
a busy machine changes far less than wall time; `--clock wall` times the wall clock, the figure a
user feels on a quiet machine. The load average is printed with the figures. A bare `python -c pass` is timed too: the interpreter's own start-up, which every
command pays. Figures only, no assertions: they depend on the machine and its load.

Warm means the bytecode cache is there: PYTHONDONTWRITEBYTECODE is dropped from the environment and
one untimed run of each command writes what is missing (an editable install is never compiled at
install time). `--no-bytecode` measures the opposite: an empty PYTHONPYCACHEPREFIX and
PYTHONDONTWRITEBYTECODE=1, so every module, the standard library's included, is compiled at every
start. `--no-listing-cache` gives every run an empty cache folder (BIAS_CACHE_DIR), as on the first
listing after a change of the installed plugins or word sets.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("bias --help", [sys.executable, "-m", "bias.cli.app", "--help"], 0.2),
    ("bias list", [sys.executable, "-m", "bias.cli.app", "list"], 0.3),
    ("bias list metrics", [sys.executable, "-m", "bias.cli.app", "list", "metrics"], 0.5),
    ("bias info weat", [sys.executable, "-m", "bias.cli.app", "info", "weat"], 0.5),
    ("bias info hf", [sys.executable, "-m", "bias.cli.app", "info", "hf"], 0.5),
    ("bias info en/weat6", [sys.executable, "-m", "bias.cli.app", "info", "en/weat6"], 0.5),
]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


CLOCKS = {"cpu": _children_cpu, "wall": time.perf_counter}
clock = _children_cpu  # set from --clock in main()


def timed(argv: list[str], env: dict[str, str], listing_cache: bool = True) -> float:
    with tempfile.TemporaryDirectory() as empty:
        if not listing_cache:
            env = {**env, "BIAS_CACHE_DIR": empty}
        start = clock()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        elapsed = clock() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])} failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="CPU seconds of the command (default) or wall time")
    parser.add_argument("--no-bytecode", action="store_true", help="compile every module at every start")
    parser.add_argument("--no-listing-cache", action="store_true", help="an empty BIAS_CACHE_DIR for every run")
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env.update(COLUMNS="80", HF_HUB_OFFLINE="1")
    with tempfile.TemporaryDirectory() as no_bytecode:
        if args.no_bytecode:
            env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=no_bytecode)
        mode = ("no bytecode cache" if args.no_bytecode else "warm") + f" | {args.clock} seconds"
        print(f"{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()} | load {os.getloadavg()[0]:.2f} | {mode}"
              + (" | no listing cache" if args.no_listing_cache else ""))
        print(f"{'command':<22}{'median s':>10}{'fastest s':>11}{'target s':>10}")
        for label, argv, target in COMMANDS:
            timed(argv, env)  # warm the file-system cache (and write the bytecode and listing caches)
            times = [timed(argv, env, listing_cache=not args.no_listing_cache) for _ in range(args.repeats)]
            shown = f"{target:.1f}" if target else "-"
            print(f"{label:<22}{statistics.median(times):>10.3f}{min(times):>11.3f}{shown:>10}")


if __name__ == "__main__":
    main()
