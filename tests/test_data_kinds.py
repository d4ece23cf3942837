"""Kinds of word-set file are found through the entry-point group `bias.kinds`, so a third party adds
one without editing the framework; bias types are free text, recommended ones pass silently."""

from __future__ import annotations

import sys
import textwrap

import pytest
from test_registry import make_distribution

from bias.core.errors import BiasError
from bias.core.data.kinds import KINDS_GROUP, known_kinds
from bias.core.data.wordsets import check_meta, errors_of, load_toml_wordset, validate_toml_file

FIRST_PARTY = {"association", "templates", "lpbs", "pairs", "debias-lists", "analogies", "fise", "labelled-texts", "similarity-pairs", "bbq", "stereoset", "decisions", "bbq-prompts"}
META = 'language = "en"\nsource = "written for the tests"\nlicence = "CC0-1.0"\n'

GLOSSARY = '''
"""A third-party kind: a glossary of terms, each with a definition."""
import attrs
from bias.core.data.wordsets import Problem, check_meta, meta_of, raise_on_errors


@attrs.frozen
class Glossary:
    meta: object
    terms: dict


def check(data, file):
    problems = check_meta(data, file, ("terms",))
    if not isinstance(data.get("terms"), dict) or not data["terms"]:
        problems.append(Problem(file, "terms", "give a table of term = definition"))
    return problems


def build(data, name, path):
    raise_on_errors(check(data, path), path)
    return Glossary(meta_of(data, path, name), dict(data["terms"]))
'''


@pytest.fixture
def glossary_kind(tmp_path, monkeypatch):
    module = tmp_path / "src" / "glossary_kind.py"
    module.parent.mkdir()
    module.write_text(textwrap.dedent(GLOSSARY), encoding="utf-8")
    root = make_distribution(tmp_path / "site", "bias-glossary", {KINDS_GROUP: {"glossary": "glossary_kind"}}, module)
    monkeypatch.syspath_prepend(str(root))
    yield
    sys.modules.pop("glossary_kind", None)


def test_first_party_kinds_are_registered_through_entry_points():
    assert set(known_kinds()) == FIRST_PARTY


def test_a_third_party_kind_is_checked_and_built(glossary_kind, tmp_path):
    assert "glossary" in known_kinds()
    good = tmp_path / "terms.toml"
    good.write_text(META + 'kind = "glossary"\nbias_type = "gender"\n[terms]\nnurse = "a person who cares for the sick"\n', encoding="utf-8")
    built = load_toml_wordset(good)
    assert type(built).__name__ == "Glossary" and built.terms == {"nurse": "a person who cares for the sick"}
    assert built.meta.kind == "glossary" and built.meta.name == "terms"
    bad = tmp_path / "empty.toml"
    bad.write_text(META + 'kind = "glossary"\nbias_type = "gender"\n', encoding="utf-8")
    assert [p.field for p in errors_of(validate_toml_file(bad))] == ["terms"]


def test_an_unknown_kind_names_the_installed_ones(tmp_path):
    path = tmp_path / "odd.toml"
    path.write_text(META + 'kind = "glossary"\nbias_type = "gender"\n', encoding="utf-8")
    (problem,) = errors_of(validate_toml_file(path))
    assert problem.field == "kind" and "'glossary' is not a word-set kind" in problem.message and "templates" in problem.message
    with pytest.raises(BiasError, match="'glossary' is not a word-set kind"):
        load_toml_wordset(path)


def test_a_broken_kind_is_reported_with_its_distribution(tmp_path, monkeypatch):
    root = make_distribution(tmp_path / "site", "bias-broken-kind", {KINDS_GROUP: {"broken": "no_such_module_here"}})
    monkeypatch.syspath_prepend(str(root))
    path = tmp_path / "b.toml"
    path.write_text(META + 'kind = "broken"\nbias_type = "gender"\n', encoding="utf-8")
    with pytest.raises(BiasError) as err:
        load_toml_wordset(path)
    assert "bias-broken-kind 0.3 is broken" in err.value.message and "ModuleNotFoundError" in err.value.message


def test_bias_types_are_free_text_with_a_recommended_list():
    base = {"kind": "association", "language": "en", "source": "s", "licence": "CC0-1.0"}
    assert check_meta({**base, "bias_type": "gender"}, "f.toml") == []
    (warning,) = check_meta({**base, "bias_type": "caste"}, "f.toml")
    assert warning.severity == "warning" and warning.field == "bias_type"
    assert "'caste' is not a known bias type (recommended: gender, race" in warning.message
    (missing,) = check_meta({**base, "bias_type": ""}, "f.toml")
    assert missing.severity == "error"
