"""A third-party metric names its own number (label, unit, reference value) by class attributes; its
results carry the declaration, so every report labels it without a change to the reports."""

from types import SimpleNamespace
from typing import ClassVar

import attrs

from bias.core.interfaces import Capability, Metric
from bias.core.model import Result, WordSetMeta
from bias.core.reports.tables import value_text
from bias.core.reports.values import declared_value, kind_of


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
    assert declared_value(Ratio) == {"label": "share", "unit": "%", "reference": 50.0, "signed": False, "digits": 1}
    result = Ratio().compute(None, DATA)
    assert result.meta["value"] == declared_value(Ratio)
    kind = kind_of(Result.from_json(result.to_json()))  # what a report reads back from results.jsonl
    assert (kind.label, kind.unit, kind.reference, kind.signed) == ("share", "%", 50.0, False)
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

    assert declared_value(Bare) == {}
    result = Bare().compute(None, DATA)
    assert "value" not in result.meta
    assert kind_of(result).label == "value" and kind_of("bare").label == "value"


def test_first_party_metrics_keep_their_table_entry_and_carry_no_declaration():
    result = Result(key="k", model="m", wordset="w", metric="weat", effect_size=1.234, meta={"value": {"label": "zzz"}})
    assert kind_of(result).label == "d" and value_text(result).startswith("d=")


def test_a_broken_declaration_falls_back_to_a_plain_value():
    result = Result(key="k", model="m", wordset="w", metric="odd", meta={"value": {"label": "x", "digits": "two"}})
    assert kind_of(result).label == "value" and kind_of(result).digits == 2
    ignored = Result(key="k", model="m", wordset="w", metric="odd", meta={"value": {"label": "x", "colour": 1}})
    assert kind_of(ignored).label == "x" and kind_of(ignored).name == "x"  # unknown keys are left out
