"""Shared fixtures. Models trained here are session-scoped: built once, a few seconds in all."""

from __future__ import annotations

import os

import pytest

from fixtures.planted import PlantedFiles, association_test, build_planted_files

from bias.core.model import AssociationTest

# Tests never reach the network: a model that is not on disk must fail, not download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


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

    return build_planted_mlm(tmp_path_factory.mktemp("planted-mlm"), "planted")


@pytest.fixture(scope="session")
def control_mlm(tmp_path_factory: pytest.TempPathFactory):
    """The same model trained where targets and attributes co-occur at random."""
    from fixtures.planted_mlm import build_planted_mlm

    return build_planted_mlm(tmp_path_factory.mktemp("control-mlm"), "control")


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
