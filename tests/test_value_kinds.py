"""Every metric, first-party or not, names its own number (label, unit, reference value) by class
attributes; its results carry the declaration, so every report labels it without a table of names."""

from types import SimpleNamespace
from typing import ClassVar

import attrs
import pytest

from bias import registry
from bias.core.interfaces import Capability, Metric, value_meta
from bias.core.model import OK, Result, WordSetMeta
from bias.core.reports.tables import build, value_text
from bias.core.reports.values import declared_value, kind_of, kind_of_class
from bias.registry import entry_points as eps


@attrs.define
class Ratio(Metric):
    name: ClassVar[str] = "ratio"
    summary: ClassVar[str] = "a share of words"
    requires: ClassVar[frozenset] = frozenset({Capability.WORD_VECTORS})
    data_kind: ClassVar[str] = "association"
    value_label: ClassVar[str] = "share"
    value_unit: ClassVar[str] = "%"
    value_reference: ClassVar[float] = 50.0
    value_signed: ClassVar[bool] = False
    value_digits: ClassVar[int] = 1

    def compute(self, embedder, data, *, seed=None):
        return self.make_result("m", data, seed, effect_size=61.25)


DATA = SimpleNamespace(name="xx/test", meta=WordSetMeta("xx/test", "association", "xx", "gender"))


def test_declared_attributes_travel_in_the_result_meta():
    assert declared_value(Ratio) == {"label": "share", "name": "", "unit": "%", "reference": 50.0, "signed": False,
                                     "digits": 1, "scale": "", "more_biased": ""}
    result = Ratio().compute(None, DATA)
    assert result.meta["value"] == declared_value(Ratio)
    kind = kind_of(Result.from_json(result.to_json()))  # what a report reads back from results.jsonl
    assert (kind.label, kind.name, kind.unit, kind.reference, kind.signed) == ("share", "share", "%", 50.0, False)
    assert kind.format(61.25) == "61.2" and kind.axis == "share (%); 50% = no bias"


def test_a_metric_that_declares_nothing_is_a_plain_value():
    @attrs.define
    class Bare(Metric):
        name: ClassVar[str] = "bare"
        summary: ClassVar[str] = "nothing declared"
        requires: ClassVar[frozenset] = frozenset()
        data_kind: ClassVar[str] = "association"

        def compute(self, embedder, data, *, seed=None):
            return self.make_result("m", data, seed, effect_size=0.5)

    result = Bare().compute(None, DATA)
    kind = kind_of(result)
    assert (kind.label, kind.name, kind.reference) == ("value", "value as the metric defines it", None)
    assert kind_of(Result(key="k", model="m", wordset="w", metric="weat")).label == "value"  # nothing carried


def test_a_first_party_metric_is_labelled_by_what_its_result_carries_not_by_its_name():
    result = Result(key="k", model="m", wordset="w", metric="weat", effect_size=1.234, meta={"value": {"label": "zzz"}})
    assert kind_of(result).label == "zzz" and value_text(result).startswith("zzz=")
    weat = Result(key="k", model="m", wordset="w", metric="weat", effect_size=1.234, meta=value_meta(eps.load("metrics", "weat")))
    assert value_text(weat) == "d=+1.23"


def test_a_broken_declaration_falls_back_to_a_plain_value():
    result = Result(key="k", model="m", wordset="w", metric="odd", meta={"value": {"label": "x", "digits": "two"}})
    assert kind_of(result).label == "value" and kind_of(result).digits == 2
    ignored = Result(key="k", model="m", wordset="w", metric="odd", meta={"value": {"label": "x", "colour": 1}})
    assert kind_of(ignored).label == "x" and kind_of(ignored).name == "x"  # unknown keys are left out


# What the documentation (docs/methods.md and the papers) says an unbiased model scores, written here.
NO_BIAS = {"weat": "0", "seat": "0", "lpbs": "0", "ceat": "0", "crows": "50%", "aul": "50%", "aula": "50%",
           "sss": "50%", "kls": "50", "jss": "100", "jss-mixture": "100", "ect": "1", "clustering": "0.5", "bbq": "0",
           "stereoset": "50%"}


@pytest.mark.parametrize("name", registry.names("metrics"))
def test_every_registered_metric_declares_its_number_and_its_footer_says_it(name):
    cls = eps.load("metrics", name)
    kind = kind_of_class(cls)
    assert kind.label != "value", f"{name} declares no value label"
    result = Result(key="k", model="m", wordset="xx/t", metric=name, status=OK, effect_size=0.5, meta=value_meta(cls))
    assert kind_of(result) == kind
    note = next(n for n in build([result]).notes() if n.startswith(f"{name}: "))
    assert note.startswith(f"{name}: {kind.label} = {kind.name}")
    if kind.reference is None:
        assert "no bias" not in note
    else:
        assert f"({kind.reference:g}{kind.unit} = no bias" in note
    if name in NO_BIAS:
        assert f"{NO_BIAS[name]} = no bias" in note, note
