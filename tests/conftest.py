"""Shared fixtures. Models trained here are session-scoped: built once for the whole run (also across
pytest-xdist workers, `built_once`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# One BLAS/OpenMP thread in this process and in every command a test starts, set before torch or
# numpy load: the tiny models gain nothing from a second thread, and on a busy shared machine two
# threads wait on each other (a tenfold slowdown was measured). The product itself sets no threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from fixtures.planted import PlantedFiles, association_test, build_planted_files

from bias.core.model import AssociationTest

# Tests never reach the network: a model that is not on disk must fail, not download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build) -> Path:
    """The folder of a session fixture's model, built once for the whole run. Under pytest-xdist the
    workers share the run's temporary root: the first worker to ask builds the folder under a file
    lock and the others wait for it, so a model trained for the tests is trained once, not once per
    worker. `build(folder)` writes the folder; tests read it and never write into it.

    BIAS_TEST_MODELS, when set, names a folder that keeps the models from one run to the next
    (benchmarks/mutation.py runs the same tests hundreds of times, and sets it to a folder named by
    the tests' own source, so that a changed builder gets new models). Unset, as in CI, every
    session builds its own."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    if os.environ.get("BIAS_TEST_MODELS"):
        root = Path(os.environ["BIAS_TEST_MODELS"])
        root.mkdir(parents=True, exist_ok=True)
    folder = root / f"built-{name}"
    with FileLock(str(root / f"built-{name}.lock")):
        if not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            build(folder)
            (folder / ".complete").write_text("", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def planted_files(tmp_path_factory: pytest.TempPathFactory) -> PlantedFiles:
    return build_planted_files(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="session")
def planted_test() -> AssociationTest:
    return association_test()


@pytest.fixture(scope="session")
def planted_mlm(tmp_path_factory: pytest.TempPathFactory):
    """Folder of a tiny BertForMaskedLM trained where flowers go with pleasant words, insects with unpleasant."""
    from fixtures.planted_mlm import build_planted_mlm

    return built_once(tmp_path_factory, "planted-mlm", lambda folder: build_planted_mlm(folder, "planted"))


@pytest.fixture(scope="session")
def control_mlm(tmp_path_factory: pytest.TempPathFactory):
    """The same model trained where targets and attributes co-occur at random."""
    from fixtures.planted_mlm import build_planted_mlm

    return built_once(tmp_path_factory, "control-mlm", lambda folder: build_planted_mlm(folder, "control"))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory):
    """Folder of the tiny uncased BertForMaskedLM (fixtures/tiny_bert.py, seed 0), built once a session
    and the same in every session. Tests read it and never write into it."""
    from fixtures.tiny_bert import build_tiny_bert

    return built_once(tmp_path_factory, "tiny-bert-uncased", lambda folder: build_tiny_bert(folder, lowercase=True))


@pytest.fixture(scope="session")
def tiny_bert_cased_dir(tmp_path_factory: pytest.TempPathFactory):
    """The same tiny BERT, cased (its tokenizer keeps capitals)."""
    from fixtures.tiny_bert import build_tiny_bert

    return built_once(tmp_path_factory, "tiny-bert-cased", lambda folder: build_tiny_bert(folder, lowercase=False))


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory: pytest.TempPathFactory):
    """Folder of the tiny GPT-2 (fixtures/tiny_bert.py `build_tiny_gpt2`, seed 0, its default sizes),
    built once a session. Tests read it and never write into it."""
    from fixtures.tiny_bert import build_tiny_gpt2

    return built_once(tmp_path_factory, "tiny-gpt2", build_tiny_gpt2)


@pytest.fixture(scope="session")
def planted_chat_dir(tmp_path_factory: pytest.TempPathFactory):
    """Folder of a tiny instruct model whose greedy reply to any conversation is "(B)" (fixtures/tiny_chat.py
    `build_planted_chat`: a chat template in its tokenizer config), built once a session."""
    from fixtures.tiny_chat import build_planted_chat

    return built_once(tmp_path_factory, "planted-chat", build_planted_chat)


@pytest.fixture(scope="session")
def chat_server(planted_chat_dir, tmp_path_factory: pytest.TempPathFactory):
    """`transformers serve` (the `serving` extra) serving the planted chat model on 127.0.0.1, one per
    session; stopped at its end."""
    from fixtures.tiny_chat import ServedModel

    server = ServedModel(planted_chat_dir, tmp_path_factory.mktemp("chat-server") / "serve.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests (`pytestmark = pytest.mark.usefixtures("one_torch_thread")`):
    the test machine's two cores are shared, and two threads then wait on each other."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session", autouse=True)
def _encoding_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """Encodings cached by any test (and by `bias` subprocesses, which inherit the variable) go to a
    session folder, never to the user's home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIAS_CACHE_DIR", str(tmp_path_factory.mktemp("bias-cache")))
        yield


# --- a planted gender association for the debiasing tests -----------------------------------------
GENDER_MALE = ("he", "his", "man", "boy", "father", "son", "brother", "king", "husband", "uncle")
GENDER_FEMALE = ("she", "her", "woman", "girl", "mother", "daughter", "sister", "queen", "wife", "aunt")
GENDER_CAREER = ("executive", "management", "professional", "corporation", "salary", "office", "business", "career")
GENDER_FAMILY = ("home", "parents", "children", "family", "cousins", "marriage", "wedding", "relatives")


def gender_corpus(seed: int = 11, sentences: int = 4000, strength: float = 0.9) -> list[list[str]]:
    """One gendered word, two attributes (career with male words, family with female words, with
    probability `strength`) and four fillers per sentence."""
    import random

    from fixtures.planted import FILLER

    rng = random.Random(f"gender-{seed}")
    out = []
    for _ in range(sentences):
        male = rng.random() < 0.5
        own, other = (GENDER_CAREER, GENDER_FAMILY) if male else (GENDER_FAMILY, GENDER_CAREER)
        words = [rng.choice(GENDER_MALE if male else GENDER_FEMALE)]
        words += [rng.choice(own if rng.random() < strength else other) for _ in range(2)]
        words += [rng.choice(FILLER) for _ in range(4)]
        rng.shuffle(words)
        out.append(words)
    return out


@pytest.fixture(scope="session")
def planted_gender(tmp_path_factory: pytest.TempPathFactory):
    """A word2vec binary (seeded, one worker) where male words go with career and female with family."""
    from fixtures.planted import save_word2vec_binary, train_word2vec

    folder = tmp_path_factory.mktemp("planted-gender")
    return save_word2vec_binary(train_word2vec(gender_corpus()).wv, folder / "gender.bin")


# Tests that train a masked LM in the session (the planted and control models, about a minute each on
# two cores) are slow by nature: `pytest -m "not slow"` leaves them out.
# Modules hand these models to their tests as `planted` and `control` (through request.getfixturevalue,
# which the collection cannot see), so those names count as slow too.
SLOW_FIXTURES = {"planted_mlm", "control_mlm", "planted", "control"}
# Tests of ten seconds and more on two cores (several real command runs, or a trained model reached
# through request.getfixturevalue), measured with --durations; the rest of the suite is the fast subset.
SLOW_TESTS = {
    "tests/test_crows.py::test_crows_finds_the_planted_preference",
    "tests/test_crows.py::test_cli_runs_pair_metrics_on_a_crows_csv",
    "tests/test_crows.py::test_a_model_without_an_mlm_head_is_refused_naming_the_metrics_that_work",
    "tests/test_cli_debias.py::test_run_debiases_encoders_on_the_fly_and_refuses_methods_that_do_not_fit",
    "tests/test_cli_debias.py::test_debias_writes_vectors_and_record_that_bias_run_reads",
    "tests/test_cli.py::test_run_planted_model_writes_results_and_resumes",
    "tests/test_cli.py::test_community_formats_are_imported",
    "tests/test_resume_kill.py::test_sigkill_then_resume",
    "tests/test_figures.py::test_every_figure_of_a_large_grid",
    "tests/test_huggingface_embedder.py::test_fingerprint_is_stable_across_processes_and_follows_the_weights",
    "tests/test_cli.py::test_unequal_targets_run_with_an_explanation",
    "tests/test_cli.py::test_bad_options",
    "tests/test_cli.py::test_zero_and_non_finite_vectors_are_refused",
    "tests/test_ray_executor.py::test_joining_says_which_cluster_and_a_wrong_token_is_said_as_such",
    "tests/test_ray_executor.py::test_driver_killed_then_resume_continues_and_ctrl_c_keeps_results",
    "tests/test_experiments.py::test_resume_with_another_batch_size_keeps_what_was_done_also_in_older_folders",
    "tests/test_robustness.py::test_cli_end_to_end_on_a_tiny_run",
    "tests/test_probe.py::test_probe_on_a_tiny_bert_reads_the_label_from_frozen_encodings",
    "tests/test_probe.py::test_compare_gives_the_accuracy_change_and_mcnemar_on_paired_predictions",
    "tests/test_probe.py::test_compare_of_a_run_and_its_hard_debiased_model_on_the_fly",
    "tests/test_probe.py::test_compare_says_when_the_splits_differ",
}


# The unit tier (`pytest -m unit`, seconds in all): modules whose tests call one module's functions in
# this process, with no model, no subprocess and no run folder.
UNIT_MODULES = {
    "tests/test_stats.py", "tests/test_multiple_testing.py", "tests/test_params.py", "tests/test_grammar.py",
    "tests/test_hf_spans.py", "tests/test_lm_pairs.py", "tests/test_value_kinds.py", "tests/test_budget.py",
    "tests/test_layering.py",
}


# Files of a minute and more on two busy cores (--durations), longest first. pytest-xdist hands
# files to its workers in the order of the collection (see pytest_configure); its own order, by the
# number of tests in a file, put the README tour (two tests, 110 s) last, so that one worker ran it
# alone while the other had finished. The two files that train the masked LMs come first, so that
# each worker trains one of them at once.
LONGEST_FILES = (
    "tests/test_crows.py", "tests/test_lpbs.py", "tests/test_readme.py", "tests/test_services.py",
    "tests/test_figures.py", "tests/test_agreement.py", "tests/test_ray_cluster.py", "tests/test_bbq.py",
    "tests/test_ray_executor.py", "tests/bad_input/test_bad_input_received.py", "tests/test_quickstart.py",
    "tests/test_robustness_example.py", "tests/test_discrimination_replies.py",
)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # xdist: keep the order the collection gives
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        elif item.nodeid.split("::")[0] in UNIT_MODULES:
            item.add_marker(pytest.mark.unit)
    # the longest files first, the others by their number of tests (xdist's own order); a file's
    # tests stay together and in their order
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    ordered = sorted(files, key=lambda name: (rank.get(name, len(rank)), -len(files[name])))
    items[:] = [item for name in ordered for item in files[name]]


@pytest.fixture(scope="session")
def big_grid_figures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of the synthetic 100-experiment grid with all its figures drawn (fixtures/big_grid.py
    `write_big_grid_figures`), built once a run: the slowest drawing of the suite, shared by the
    figure and the HTML report tests. Tests read it and never write into it."""
    from fixtures.big_grid import write_big_grid_figures

    return built_once(tmp_path_factory, "big-grid-figures", write_big_grid_figures)
