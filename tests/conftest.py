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
