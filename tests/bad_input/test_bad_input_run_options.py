"""Bad values of the run options an experiment file may now write (`limit`, `max_cost`, `formats`, ...,
every option of `bias run` by the same name) and of the flags that replace them: each is refused
with exit 2 in at most two lines naming the file and field, or the flag, before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_input_helpers import (  # noqa: F401 (world is a fixture)
    Case,
    World,
    assert_answered,
    basic_experiment,
    local_wordset,
    case_decorator,
    copy_model,
    world,
    write_experiment,
)

CASES: list[Case] = []
case = case_decorator(CASES)


def _file(world: World, folder: Path, line: str) -> list[str]:
    return ["run", str(write_experiment(folder, basic_experiment(world, folder) + line + "\n"))]


@case("file-limit-zero", names=("exp.toml: limit", "whole number >= 1"))
def _(world, folder):
    return _file(world, folder, "limit = 0")


@case("file-limit-text", names=("exp.toml: limit", "'4'"))
def _(world, folder):
    return _file(world, folder, 'limit = "4"')


@case("file-limit-float", names=("exp.toml: limit", "2.5"))
def _(world, folder):
    return _file(world, folder, "limit = 2.5")


@case("file-limit-bool", names=("exp.toml: limit", "True"))
def _(world, folder):
    return _file(world, folder, "limit = true")


@case("file-max-cost-raised", names=("exp.toml: max_cost", "--max-cost 50"))
def _(world, folder):
    return _file(world, folder, "max_cost = 50")


@case("file-max-cost-negative", names=("exp.toml: max_cost", ">= 0"))
def _(world, folder):
    return _file(world, folder, "max_cost = -1")


@case("file-max-cost-nan", names=("exp.toml: max_cost", "nan"))
def _(world, folder):
    return _file(world, folder, "max_cost = nan")


@case(
    "file-confirm-cost", names=("exp.toml", "confirm_cost", "--confirm-cost", "command line only")
)
def _(world, folder):
    return _file(world, folder, "confirm_cost = true")


@case("file-allow-itself", names=("exp.toml", "allow", "command line only"))
def _(world, folder):
    return _file(world, folder, 'allow = ["base_url=http://10.0.0.1/v1"]')


@case("file-print-toml", names=("exp.toml", "print_toml", "--print-toml"))
def _(world, folder):
    return _file(world, folder, "print_toml = true")


@case("file-datasets-folder", names=("exp.toml", "datasets", "--datasets"))
def _(world, folder):
    return _file(world, folder, 'datasets = "/"')


@case("file-json-yes", names=("exp.toml: json", "true or false"))
def _(world, folder):
    return _file(world, folder, 'json = "yes"')


@case("file-format-pdf", names=("exp.toml: formats", "pdf"))
def _(world, folder):
    return _file(world, folder, 'formats = ["pdf"]')


@case("file-formats-empty", names=("exp.toml", "formats", "non-empty list"))
def _(world, folder):
    return _file(world, folder, "formats = []")


@case("file-batch-size-zero", names=("exp.toml: batch_size", ">= 1"))
def _(world, folder):
    return _file(world, folder, "batch_size = 0")


@case("file-device-number", names=("exp.toml: device", "3"))
def _(world, folder):
    return _file(world, folder, "device = 3")


@case(
    "file-device-line-break",
    names=("exp.toml: device", "'cpu\\nAll good: 0 problems\\x1b[0m'"),
    absent=("\nAll good",),
)
def _(world, folder):
    # a value's line break and escape are shown as written in the file, not as a line of their own
    return _file(world, folder, 'device = "cpu\\nAll good: 0 problems\\u001b[0m"')


@case("file-family-unknown", names=("exp.toml: family", "run, model, metric"))
def _(world, folder):
    return _file(world, folder, 'family = "everything"')


@case("file-executor-unknown", names=("exp.toml: executor", "local, ray"))
def _(world, folder):
    return _file(world, folder, 'executor = "dask"')


@case("file-resume-without-out", names=("exp.toml: resume", "--out"))
def _(world, folder):
    return _file(world, folder, "resume = true")


@case("file-with-original-two-models", names=("exp.toml: with_original", "one model"))
def _(world, folder):
    body = f'with_original = true\nmodels = ["word2vec:{world.w2v_bin}", "word2vec:{world.w2v_txt}"]\nwordsets = ["{local_wordset(world, folder)}"]\n'
    return ["run", str(write_experiment(folder, body))]


@case("file-seed-and-seeds", names=("exp.toml", "seed or seeds"))
def _(world, folder):
    return _file(world, folder, "seed = 1\nseeds = [2]")


@case("file-seed-negative", names=("exp.toml: seed", ">= 0"))
def _(world, folder):
    return _file(world, folder, "seed = -1")


@case("file-pairs-number", names=("exp.toml", "pairs[0]"))
def _(world, folder):
    return _file(world, folder, "pairs = [3]")


@case("file-title-table", names=("exp.toml: title", "text"))
def _(world, folder):
    return _file(world, folder, "title = { a = 1 }")


@case("file-out-number", names=("exp.toml", "out", "folder"))
def _(world, folder):
    return _file(world, folder, "out = 3")


@case("file-param-bad-value", names=("exp.toml: params.permutations", "weat"))
def _(world, folder):
    return _file(world, folder, "[params]\npermutations = 0")


@case("file-metric-param-bad-value", names=("exp.toml: metrics[0].ddof", "ddof"))
def _(world, folder):
    body = f'models = ["word2vec:{world.w2v_bin}"]\nwordsets = ["{local_wordset(world, folder)}"]\nmetrics = [{{ name = "weat", ddof = 5 }}]\n'
    return ["run", str(write_experiment(folder, body))]


@case("flag-param-alias-bad-value", names=("--permutations", "weat"))
def _(world, folder):
    return ["run", str(write_experiment(folder, basic_experiment(world, folder))), "--permutations", "0"]


@case("flag-param-bad-value", names=("--param bootstrap", "bootstrap"))
def _(world, folder):
    return [
        "run",
        str(write_experiment(folder, basic_experiment(world, folder))),
        "--param",
        "bootstrap=-3",
    ]


@case("flag-limit-over-file", names=("--limit", "whole number >= 1"))
def _(world, folder):
    return _file(world, folder, "limit = 4") + ["--limit", "0"]


@case("file-fail-fast-text", names=("exp.toml: fail_fast", "true or false", "'yes'"))
def _(world, folder):
    return _file(world, folder, 'fail_fast = "yes"')


@case("file-wide-number", names=("exp.toml: wide", "true or false"))
def _(world, folder):
    return _file(world, folder, "wide = 1")


@case("file-before-after-text", names=("exp.toml: before_after", "true or false"))
def _(world, folder):
    return _file(world, folder, 'before_after = "no"')


@case("file-resume-text", names=("exp.toml: resume", "true or false"))
def _(world, folder):
    return _file(world, folder, 'resume = "true"')


@case("file-analogies-number", names=("exp.toml", "analogies[0]", "en/analogies"))
def _(world, folder):
    return _file(world, folder, "analogies = [3]")


@case("file-dtype-number", names=("exp.toml: dtype", "text", "16"))
def _(world, folder):
    return _file(world, folder, "dtype = 16")


@case("file-title-blank", names=("exp.toml: title", "text", "''"))
def _(world, folder):
    return _file(world, folder, 'title = ""')


@case("file-description-number", names=("exp.toml: description", "text"))
def _(world, folder):
    return _file(world, folder, "description = 3")


@case("file-preset-unknown", names=("exp.toml: preset", "bias-framework", "wefe2"))
def _(world, folder):
    return _file(world, folder, 'preset = "wefe2"')


@case("file-duplicates-unknown", names=("exp.toml: duplicates", "drop, keep"))
def _(world, folder):
    return _file(world, folder, 'duplicates = "some"')


@case("file-ray-address-blank", names=("exp.toml: ray_address", "HOST:PORT"))
def _(world, folder):
    return _file(world, folder, 'executor = "ray"\nray_address = ""')


@case("file-threads-zero", names=("exp.toml: threads", "whole number >= 1"))
def _(world, folder):
    return _file(world, folder, "threads = 0")


@case("file-threads-more-than-cores", names=("exp.toml: threads", "CPUs of this machine"))
def _(world, folder):
    return _file(world, folder, "threads = 100000")


@case("flag-threads-more-than-cores", names=("--threads", "CPUs of this machine"))
def _(world, folder):
    return ["run", "-m", f"word2vec:{world.w2v_bin}", "-w", str(local_wordset(world, folder)), "--threads", "100000"]


@case("file-device-not-a-device", names=("exp.toml: device", "cuda:N"))
def _(world, folder):
    return _file(world, folder, 'device = "cpu; touch pwned"')


@case("file-executor-ray-unconfirmed", names=("exp.toml", "executor = 'ray'", "--executor ray"))
def _(world, folder):
    return _file(world, folder, 'executor = "ray"')


@case("file-out-over-other-files", names=("exp.toml", "out = '.'", "holds other files", "--out"))
def _(world, folder):
    return _file(world, folder, 'out = "."')


@case("file-model-price-negative", names=("exp.toml: openai:text-embedding-3-small", "price", ">= 0"))
def _(world, folder):
    body = f'wordsets = ["{local_wordset(world, folder)}"]\n[[models]]\nspec = "openai:text-embedding-3-small"\nprice = -1\n'
    return ["run", str(write_experiment(folder, body))]


@case("flag-model-option-device-meta", names=("device = 'meta'", "not a device a model runs on", "cuda:N"))
def _(world, folder):
    model = copy_model(world, folder)
    return ["run", "-m", f"hf:{model}", "-w", str(local_wordset(world, folder)), "--model-option", "device=meta"]


@case("file-model-device-meta", names=("exp.toml: device = 'meta'", "not a device a model runs on"))
def _(world, folder):
    model = copy_model(world, folder)
    body = f'wordsets = ["{local_wordset(world, folder)}"]\n[[models]]\nspec = "hf:{model}"\ndevice = "meta"\n'
    return ["run", str(write_experiment(folder, body))]


@case("flag-metric-with-file", names=("either an experiment file or --model", "--metric"))
def _(world, folder):
    return _file(world, folder, "") + ["--metric", "seat"]


@pytest.mark.parametrize("bad", CASES, ids=lambda c: c.name)
def test_run_option_case(bad: Case, world: World, tmp_path: Path) -> None:
    assert_answered(bad, world, tmp_path / "case")


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
