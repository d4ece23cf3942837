"""The programmatic use shown in the README, on the planted model: registry -> embedder, word set,
metric -> Result."""

from __future__ import annotations

import json

from bias import registry
from bias.core.model import AssociationTest, Result
from bias.core.data.wordsets import DataPackage


def test_readme_programmatic_use(planted_files, planted_test):
    assert any(r.name == "weat" for r in registry.list_plugins("metrics"))
    test = registry.load_wordset("en/weat6")
    assert isinstance(test, AssociationTest) and test.meta.bias_type == "gender" and len(test.X.words) == 8
    assert {r.name for r in registry.wordsets(language="en", bias_type="gender")} >= {"en/weat6"}

    embedder = registry.build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    weat = registry.build_metric("weat", permutations=20_000, ddof=1)
    result = weat.compute(embedder, planted_test, seed=1)
    assert isinstance(result, Result)
    assert result.effect_size > 0.8 and result.p_value < 0.01
    assert result.convention["method"] == "exact" and result.convention["permutations"] == 12870
    assert result.sizes == {"X": 8, "Y": 8, "A": 8, "B": 8} and result.lost == {}
    again = Result.from_json(result.to_json())
    assert again == result
    assert json.loads(result.to_json())["metric"] == "weat"


def test_a_language_package_object_lists_its_files():
    package = registry.get("wordset", "en")
    assert isinstance(package, DataPackage) and package.language == "en"
    weat = [n for n in package.names() if n.startswith("en/weat")]
    assert weat[:2] == ["en/weat1", "en/weat2"] and weat[-1] == "en/weat10"


def test_case_policy_finds_capitalised_stimuli_in_a_lowercase_vocabulary(planted_files, planted_test):
    """Published lists capitalise names; many vocabularies do not. The policy is explicit and recorded."""
    import attrs

    from bias.core.model import WordList

    capitalised = attrs.evolve(planted_test, X=WordList("flowers", tuple(w.capitalize() for w in planted_test.X.words)))
    embedder = registry.build_embedder(f"word2vec:{planted_files.word2vec_bin}")
    exact = registry.build_metric("weat").compute(embedder, capitalised, seed=1)
    assert exact.status == "refused" and "set X" in exact.reason
    reference = registry.build_metric("weat").compute(embedder, planted_test, seed=1)
    for case in ("lower", "fallback"):
        found = registry.build_metric("weat", case=case).compute(embedder, capitalised, seed=1)
        assert found.status == "ok" and found.lost == {} and found.convention["case"] == case
        assert found.effect_size == reference.effect_size and found.p_value == reference.p_value
    mixed = attrs.evolve(capitalised, Y=WordList("insects", ("Zzzunknown",) + planted_test.Y.words[1:]))
    result = registry.build_metric("weat", case="fallback").compute(embedder, mixed, seed=1)
    assert result.lost == {"Y": ["Zzzunknown"]} and result.sizes["X"] == 8


def test_bias_api_is_one_list_of_names_and_imports_numpy_only_when_asked():
    """The import statements of api/__init__.py are its names: every one resolves, the stable names
    are few, and those whose modules need numpy are imported on first use only."""
    import subprocess
    import sys

    import bias.api as api
    import bias.api.association  # noqa: F401  (a sub-module, once imported, is no name of bias.api)

    names = api.__all__
    assert len(names) == len(set(names)) and 60 <= len(names) <= 85  # small: the stable contract (models that write added five)
    assert all(getattr(api, name) is not None for name in names)
    assert {"Metric", "ValueKind", "Measured", "AssociationMetric", "permutation_test"} <= set(names)
    code = "import sys, bias.api; print('numpy' in sys.modules); bias.api.PermutationTest; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr
