"""Every metric, first-party or not, declares its number as one ValueKind value; its results carry the
declaration, so every report labels it without a table of names. Results written before (flat
`value_*` attributes, WEAT's convention keys) still read right."""

import json
import re
from types import SimpleNamespace
from typing import ClassVar

import attrs
import pytest

from bias import registry
from bias.core.interfaces import Capability, Metric
from bias.core.model import OK, Result, WordSetMeta
from bias.core.reports import load_report
from bias.core.reports.tables import build, value_text
from bias.core.reports.values import kind_of
from bias.core.values import PLAIN_VALUE, ValueKind
from bias.registry import entry_points as eps


@attrs.define
class Ratio(Metric):
    name: ClassVar[str] = "ratio"
    summary: ClassVar[str] = "a share of words"
    requires: ClassVar[frozenset] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = "association"
    value: ClassVar[ValueKind] = ValueKind(
        "share", unit="%", reference=50.0, signed=False, digits=1
    )

    def compute(self, embedder, data, *, seed=None):
        return self.make_result("m", data, seed, effect_size=61.25)


DATA = SimpleNamespace(name="xx/test", meta=WordSetMeta("xx/test", "association", "xx", "gender"))


def test_the_declaration_travels_in_the_result_meta():
    assert Ratio.value.declared() == {
        "label": "share",
        "name": "",
        "unit": "%",
        "reference": 50.0,
        "signed": False,
        "digits": 1,
        "scale": "",
        "more_biased": "",
        "meaning": "",
        "figures": [],
    }
    result = Ratio().compute(None, DATA)
    assert result.meta["value"] == Ratio.value.declared()
    kind = kind_of(
        Result.from_json(result.to_json())
    )  # what a report reads back from results.jsonl
    assert (kind.label, kind.name, kind.unit, kind.reference, kind.signed) == (
        "share",
        "share",
        "%",
        50.0,
        False,
    )
    assert kind.format(61.25) == "61.2" and kind.axis == "share (%); 50% = no bias"


def test_a_wrong_declaration_is_refused_when_the_class_is_written():
    for fields, words in (
        ({"digits": "two"}, "digits = 'two'"),
        ({"reference": "0"}, "reference = '0'"),
        ({"more_biased": "up"}, "more_biased = 'up'"),
        ({"figures": ("pie",)}, "figures = ('pie',)"),
        ({"signed": 1}, "signed = 1"),
    ):
        with pytest.raises(TypeError, match=re.escape(f"ValueKind: {words}")):
            ValueKind("x", **fields)
    with pytest.raises(TypeError, match="label must be non-empty"):
        ValueKind(" ")


def test_parameters_choose_what_the_result_carries():
    kind = ValueKind("score", by_param={"headline": {"b": {"scale": "s_B", "digits": 3}}})
    assert (
        kind.declared({"headline": "a"})["scale"] == ""
        and kind.declared({"headline": "b"})["digits"] == 3
    )
    assert "by_param" not in kind.declared()


def test_a_metric_that_declares_nothing_is_a_plain_value():
    @attrs.define
    class Bare(Metric):
        name: ClassVar[str] = "bare"
        summary: ClassVar[str] = "nothing declared"
        requires: ClassVar[frozenset] = frozenset()
        data_kind: ClassVar[str] = "association"

        def compute(self, embedder, data, *, seed=None):
            return self.make_result("m", data, seed, effect_size=0.5)

    kind = kind_of(Bare().compute(None, DATA))
    assert kind == PLAIN_VALUE and (kind.label, kind.name, kind.reference) == (
        "value",
        "value as the metric defines it",
        None,
    )
    assert (
        kind_of(Result(key="k", model="m", wordset="w", metric="weat")) == PLAIN_VALUE
    )  # nothing carried


def test_the_flat_attributes_of_earlier_versions_still_declare_the_value():
    with pytest.warns(DeprecationWarning, match="value_\\* attributes are deprecated"):

        @attrs.define
        class Old(Metric):
            name: ClassVar[str] = "old"
            summary: ClassVar[str] = "declared the old way"
            requires: ClassVar[frozenset] = frozenset()
            data_kind: ClassVar[str] = "association"
            value_label: ClassVar[str] = "gap"
            value_digits: ClassVar[int] = 3
            value_by_param: ClassVar[dict] = {"mode": {"b": {"value_scale": "gap-b"}}}

            def compute(self, embedder, data, *, seed=None):
                return self.make_result("m", data, seed, effect_size=0.5)

    assert Old.value == ValueKind("gap", digits=3, reference=None)  # the old default: no reference
    assert Old.value.by_param == {"mode": {"b": {"scale": "gap-b"}}}


def test_a_first_party_metric_is_labelled_by_what_its_result_carries_not_by_its_name():
    result = Result(
        key="k",
        model="m",
        wordset="w",
        metric="weat",
        effect_size=1.234,
        meta={"value": {"label": "zzz"}},
    )
    assert kind_of(result).label == "zzz" and value_text(result).startswith("zzz=")
    weat = Result(
        key="k",
        model="m",
        wordset="w",
        metric="weat",
        effect_size=1.234,
        meta={"value": eps.load("metrics", "weat").value.declared()},
    )
    assert value_text(weat) == "d=+1.23"


def test_a_broken_declaration_falls_back_to_a_plain_value():
    result = Result(
        key="k",
        model="m",
        wordset="w",
        metric="odd",
        meta={"value": {"label": "x", "digits": "two"}},
    )
    assert kind_of(result).label == "value" and kind_of(result).digits == 2
    ignored = Result(
        key="k", model="m", wordset="w", metric="odd", meta={"value": {"label": "x", "colour": 1}}
    )
    assert (
        kind_of(ignored).label == "x" and kind_of(ignored).name == "x"
    )  # unknown keys are left out


def test_results_written_before_read_as_they_did(tmp_path):
    """A WEAT result of an earlier version: no meaning or figures in its declaration, and its p-value
    convention as separate keys. Its report says what it said then, and now also what d means."""
    old = Result(
        key="k1",
        model="word2vec:v.bin",
        wordset="en/weat6",
        metric="weat",
        effect_size=1.2,
        p_value=1e-5,
        convention={
            "ddof": 1,
            "alternative": "greater",
            "method": "sampled",
            "permutations": 99_999,
            "seed": 3,
        },
        meta={
            "value": {
                "label": "d",
                "name": "effect size d",
                "unit": "",
                "reference": 0.0,
                "signed": True,
                "digits": 2,
                "scale": "d",
                "more_biased": "",
            }
        },
    )
    third = Result(
        key="k2",
        model="word2vec:v.bin",
        wordset="en/weat6",
        metric="gone",
        effect_size=0.1,
        p_value=0.2,
        convention={"method": "sampled", "permutations": 500},
        meta={"value": {"label": "g"}},
    )
    (tmp_path / "results.jsonl").write_text(
        old.to_json() + "\n" + third.to_json() + "\n", encoding="utf-8"
    )
    report = load_report(tmp_path, declared=registry.value_declaration)
    notes = report.notes()
    assert (
        "p: sampled permutation test (99,999 permutations, seed 3), ddof=1, one-sided (greater)."
        in notes
    )
    assert "d > 0: X closer to A and Y closer to B (Cohen's d of the association s(w))." in notes
    assert any(n.startswith("p <=1.0e-05: the smallest p a sampled test can report") for n in notes)
    # A result that never said its seed is not given one: no words rather than "seed None".
    assert not any("gone" in n and "seed" in n for n in notes), notes
    weat = next(r for r in report.rows() if r["metric"] == "weat")
    assert weat["p_value"] == "<=1.0e-05"


# What the documentation (docs/methods.md and the papers) says an unbiased model scores, written here.
NO_BIAS = {
    "weat": "0",
    "seat": "0",
    "lpbs": "0",
    "ceat": "0",
    "crows": "50%",
    "aul": "50%",
    "aula": "50%",
    "sss": "50%",
    "kls": "50",
    "jss": "100",
    "jss-mixture": "100",
    "ect": "1",
    "clustering": "0.5",
    "bbq": "0",
    "stereoset": "50%",
}


@pytest.mark.parametrize("name", registry.names("metrics"))
def test_every_registered_metric_declares_its_number_and_its_footer_says_it(name):
    cls = eps.load("metrics", name)
    kind = cls.value
    assert isinstance(kind, ValueKind) and kind.label != "value", f"{name} declares no value"
    result = Result(
        key="k",
        model="m",
        wordset="xx/t",
        metric=name,
        status=OK,
        effect_size=0.5,
        meta={"value": kind.declared()},
    )
    shown = kind_of(result)
    assert shown == attrs.evolve(kind, name=kind.title)
    notes = build([result]).notes()
    note = next(n for n in notes if n.startswith(f"{name}: "))
    assert note.startswith(
        f"{name}: {kind.label} = {kind.title}"
        if kind.title != kind.label
        else f"{name}: {kind.label}"
    )
    if kind.reference is None:
        assert "no bias" not in note
    else:
        assert f"({kind.reference:g}{kind.unit} = no bias" in note
    if name in NO_BIAS:
        assert f"{NO_BIAS[name]} = no bias" in note, note
    if kind.meaning:
        assert kind.meaning in notes


def test_a_report_file_names_each_value_in_its_csv(tmp_path):
    result = Result(
        key="k",
        model="m",
        wordset="xx/t",
        metric="ratio",
        effect_size=1.0,
        p_value=0.5,
        convention={"p_value": "a coin flip", "p_floor": 0.25},
    )
    (record,) = build([result]).records()
    assert (record["p_convention"], record["p_floor"]) == ("a coin flip", 0.25)
    assert json.loads(record["convention"]) == {"p_floor": 0.25, "p_value": "a coin flip"}
