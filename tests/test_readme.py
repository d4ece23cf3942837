"""The README and docs/*.md run as written: every `bias` command of their shell blocks, in order, in a
copy of the repository's examples/ and languages/, on the models the install brings (the MiniLM of the
`demo` extra and the static vectors built from it) and the files shipped in examples/.

A command that cannot run as written says why with a comment on its line, and is then run here on a
local stand-in (printed with its reason) so that the command itself still works:
- `# Hub`: a masked or causal LM from the Hugging Face Hub, which pip does not install: a tiny BERT or
  GPT-2 built in the test takes its place;
- `# framework` (and every command of docs/coming-from-bias-detection-framework.md): the files of a
  BIAS Detection Framework checkout: a checkout of that layout, built small, is the working folder.
Commands that only run elsewhere are skipped with their reason printed (the whole quickstart and the
robustness example, which have their own tests; a Ray cluster). The set-up commands (`pip`, `python`) are run by CI itself.

The first command of each subcommand (`bias run`, `bias list`, `bias report`, ...) runs as the user
runs it, the installed `bias` script in a fresh process; the ones after it run through the same
entry point in this process (fixtures/in_process.py), which spares a start of Python, torch and
transformers per command (about ten CPU seconds for each command that loads a model).
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.in_process import cli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

HUB = {"hf:bert-base-uncased": "bert", "hf:gpt2": "gpt2"}
# Commands run elsewhere, with the reason printed when the test passes them by (`@` marks the end of
# the command: `bias run examples/quickstart.toml --limit 4` runs here).
ELSEWHERE = {
    "bias run examples/quickstart.toml@": "the full quickstart (100,000 permutations) is run by tests/test_quickstart.py",
    "bias run examples/robustness.toml@": "its 24 specifications are run by tests/test_robustness_example.py",
    "bias report examples/runs/robustness": "reads the run above (tests/test_robustness_example.py draws it)",
    "bias run examples/agreement.toml@": "its 54 experiments on three layers of MiniLM are run by tests/test_agreement.py",
    "bias report examples/runs/agreement": "reads the run above (tests/test_agreement.py prints its table)",
    "--executor ray": "starts a Ray instance (tests/test_ray_executor.py runs the executor)",
    "--ray-address auto": "joins a running Ray cluster",
}


def code_blocks(text: str, language: str = "bash|sh") -> list[str]:
    return re.findall(rf"```(?:{language})\n(.*?)```", text, flags=re.S)


def commands(block: str) -> list[tuple[str, str]]:
    """The `bias` commands of a shell block, continuations joined, each with its line's comment."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        command, _, comment = line.partition(" #")
        command = command.strip()
        if command.startswith("bias "):
            out.append((re.sub(r"\s+", " ", command), comment.strip()))
    return out


def documented() -> list[tuple[str, str, str]]:
    """(file, command, comment) for every `bias` command of the README and docs/*.md, in order."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in code_blocks(path.read_text(encoding="utf-8")):
            found += [(path.name, c, comment) for c, comment in commands(block)]
    return found


def corpus(vocabulary: list[str], seed: int, sentences: int = 2000) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(vocabulary) for _ in range(12)] for _ in range(sentences)]


def build_framework_checkout(home: Path) -> None:
    """The layout of a BIAS Detection Framework checkout: datasets/, fastText models in models/,
    config files, built small (fixtures/framework_data)."""
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    from fixtures.framework_data import all_words, build_datasets

    build_datasets(home / "datasets")
    fise = home / "datasets" / "it" / "FISE"
    axes = json.loads((fise / "FISE_T1.json").read_text(encoding="utf-8"))  # the docs name its axes gender and race
    (fise / "FISE_IT1.json").write_text(json.dumps({"gender": axes["gender"], "race": axes["class"]}), encoding="utf-8")
    (home / "models").mkdir()
    model = FastText(corpus(all_words(), 4), vector_size=16, window=5, min_count=1, workers=1, seed=1, epochs=3, bucket=20000)
    for code in ("de", "en", "it"):
        save_facebook_model(model, str(home / "models" / f"cc.{code}.300.bin"))
    config = "###\n# dataset,metric,embedding,language,modelname\n###\n"
    (home / "experimentConfig.txt").write_text(config + "T1,WEAT,fasttext,de,None\nT1,WEAT,fasttext,en,None\nSEAT_T1,SEAT,fasttext,en,None\n", encoding="utf-8")
    (home / "experiments" / "experiments-DE").mkdir(parents=True)
    (home / "experiments" / "experiments-DE" / "experimentConfigGermanWEATfasttext.txt").write_text(
        config + "T1,WEAT,fasttext,de,None\nT2,WEAT,fasttext,de,None\n", encoding="utf-8")


def test_every_documented_command_runs(tmp_path, capsys, monkeypatch):
    from fixtures.tiny_bert import build_tiny_bert, build_tiny_gpt2

    home = tmp_path / "repository"
    home.mkdir()
    shutil.copytree(ROOT / "examples", home / "examples", ignore=shutil.ignore_patterns("runs", "thirdparty", "__pycache__"))
    (home / "languages").symlink_to(ROOT / "languages")
    framework = tmp_path / "framework"
    framework.mkdir()
    build_framework_checkout(framework)
    stand_ins = tmp_path / "stand-ins"
    build_tiny_bert(stand_ins / "bert")
    build_tiny_gpt2(stand_ins / "gpt2", positions=1024)  # the BBQ questions and hiring prompts are read whole
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "100", "PYTHONWARNINGS": "ignore", "BIAS_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.setenv("BIAS_CACHE_DIR", env["BIAS_CACHE_DIR"])  # the commands run in this process share the cache
    script = Path(sys.executable).with_name("bias")  # the script the install put beside this Python
    assert script.is_file(), f"{script}: the `bias` script of the install is missing"
    fresh: list[str] = []  # subcommands whose first command ran in a fresh process
    in_process = 0

    as_written, stood_in, passed_by = [], [], []
    for file, command, comment in documented():
        elsewhere = next((why for key, why in ELSEWHERE.items() if key in command + "@"), None)
        if elsewhere:
            passed_by.append(f"{file}: {command}  [skipped: {elsewhere}]")
            continue
        args, cwd = shlex.split(command), home
        if "Hub" in re.findall(r"\w+", comment):
            args = [f"hf:{stand_ins / HUB[a]}" if a in HUB else a for a in args]
            stood_in.append(f"{file}: {command}  [a tiny local model for the Hub model]")
        elif "framework" in comment.split(";")[0].split() or file == "coming-from-bias-detection-framework.md":
            cwd = framework
            stood_in.append(f"{file}: {command}  [in a small BIAS Detection Framework checkout]")
        else:
            as_written.append(f"{file}: {command}")
        if args[1] not in fresh:  # the first of its subcommand: the installed script, a fresh process
            fresh.append(args[1])
            proc = subprocess.run([str(script), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            done = cli(*args[1:], cwd=cwd)
            code, out, err = done.code, done.out, done.err
            in_process += 1
        assert code == 0, f"{file}: {command}\n{out[-3000:]}\n{err[-1500:]}"
        if "--pooling cls" in command and "--level word" in command:
            # the grid drops cls at word level with its reason instead of refusing the command
            assert "skipped" in err + out and "does not fit level word" in err + out
    assert {"run", "list", "info", "debias", "compare", "report", "validate", "convert"} <= set(fresh), fresh
    with capsys.disabled():
        print(f"\n{len(as_written)} documented commands ran as written; {len(stood_in)} on a stand-in, {len(passed_by)} passed by;")
        print(f"{len(fresh)} in a fresh process ({', '.join(fresh)}), {in_process} in this one:")
        for line in stood_in + passed_by:
            print("  " + line)
    readme = [c for c in as_written if c.startswith("README.md")]
    assert len(readme) >= 28, "\n".join(readme)
    assert len([c for c in passed_by if c.startswith("README.md")]) == 5
    assert (home / "runs" / "2026-en" / "report.html").exists() and (home / "runs" / "after" / "compare.md").exists()
    assert (home / "runs" / "2026-en" / "results.tex").exists() and (home / "runs" / "2026-en" / "forest.png").exists()
    assert (home / "debiased" / "vectors.bin").exists()


def test_the_readme_experiment_file_is_the_shipped_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    toml = code_blocks(readme, "toml")
    assert toml == [(ROOT / "examples" / "experiments.toml").read_text(encoding="utf-8")]
