"""Text from the command line becomes the type a plugin's field declares, however the annotation is
spelt: `Optional[int]`, `int | None`, with and without `from __future__ import annotations` (which
turns every annotation into a string)."""

import sys
import textwrap
import types
from typing import Optional

import attrs
import pytest

from bias.core.errors import BiasError
from bias.core.params import coerce_params, param, resolved_types

FIELDS = '''
    count: {int_type} = param(None, "a whole number or none")
    share: float = param(0.5, "a fraction")
    flag: bool = param(False, "on or off")
    layer: str | int | None = param(None, "a name or a number")
    name: str = param("x", "text")
'''


def plugin_class(monkeypatch, int_type: str, future: bool) -> type:
    """A plugin class defined in a module of its own, as a third party would write it."""
    head = "from __future__ import annotations\n" if future else ""
    source = head + textwrap.dedent(f"""
        from typing import Optional
        import attrs
        from bias.core.params import param

        @attrs.define
        class Plugin:
        """) + FIELDS.format(int_type=int_type)
    module = types.ModuleType(f"third_party_plugin_{int_type.replace(' ', '').replace('|', '_').replace('[', '_')[:20]}_{future}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, module.__name__, "exec", dont_inherit=True), module.__dict__)
    return module.Plugin


SPELLINGS = [
    pytest.param("Optional[int]", False, id="Optional-plain"),
    pytest.param("Optional[int]", True, id="Optional-future"),
    pytest.param("int | None", False, id="pipe-plain"),
    pytest.param("int | None", True, id="pipe-future"),
]


@pytest.mark.parametrize(("int_type", "future"), SPELLINGS)
def test_every_spelling_converts_the_same(monkeypatch, int_type, future):
    cls = plugin_class(monkeypatch, int_type, future)
    got = coerce_params(cls, {"count": "12", "share": "0.25", "flag": "yes", "layer": "-2", "name": "7"}, "demo")
    assert got == {"count": 12, "share": 0.25, "flag": True, "layer": "-2", "name": "7"}
    assert type(got["count"]) is int and type(got["share"]) is float
    assert coerce_params(cls, {"count": "None"}, "demo") == {"count": None}
    assert coerce_params(cls, {"count": "null", "layer": "none"}, "demo") == {"count": None, "layer": None}


@pytest.mark.parametrize(("int_type", "future"), SPELLINGS)
def test_a_bad_number_names_the_parameter_and_type(monkeypatch, int_type, future):
    cls = plugin_class(monkeypatch, int_type, future)
    with pytest.raises(BiasError) as err:
        coerce_params(cls, {"count": "twelve"}, "demo")
    assert err.value.message == "Parameter 'count' of 'demo' expects an integer or None, got 'twelve'."
    with pytest.raises(BiasError, match="expects true or false"):
        coerce_params(cls, {"flag": "maybe"}, "demo")


def test_a_plain_int_refuses_none():
    @attrs.define
    class Plain:
        n: int = param(3, "a number")

    with pytest.raises(BiasError, match="expects an integer, got 'none'"):
        coerce_params(Plain, {"n": "none"}, "plain")
    assert coerce_params(Plain, {"n": 4}, "plain") == {"n": 4}  # values that are not text are left alone


def test_union_alternatives_are_tried_in_the_order_written():
    @attrs.define
    class Either:
        a: int | str = param(0, "a number, else a name")
        b: Optional[float] = param(None, "a fraction")

    assert coerce_params(Either, {"a": "5", "b": "1e-3"}, "e") == {"a": 5, "b": 0.001}
    assert coerce_params(Either, {"a": "mean-last-4"}, "e") == {"a": "mean-last-4"}


def test_unresolvable_annotations_keep_what_can_be_read(monkeypatch):
    """A name imported only for type checking cannot be resolved; the other fields still convert."""
    source = textwrap.dedent("""
        from __future__ import annotations
        import attrs
        from bias.core.params import param

        @attrs.define
        class Odd:
            n: int = param(1, "a number")
            thing: NotImportedHere = param(None, "a type nobody can resolve")
        """)
    module = types.ModuleType("third_party_odd_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, module.__name__, "exec", dont_inherit=True), module.__dict__)
    assert resolved_types(module.Odd) == {"n": int}
    assert coerce_params(module.Odd, {"n": "7", "thing": "7"}, "odd") == {"n": 7, "thing": "7"}


def test_unknown_option_lists_the_parameters():
    @attrs.define
    class One:
        only: int = param(1, "the one parameter")

    with pytest.raises(BiasError) as err:
        coerce_params(One, {"other": "1"}, "one")
    assert "has no parameter 'other'" in err.value.message and "only" in err.value.hint


def test_a_parameter_set_for_the_other_kind_of_model_is_said():
    from bias.core.params import for_one_kind, not_used

    @attrs.define
    class Scores:
        plain: str = param("a", "both kinds")
        masked_way: str = param("pll", "masked LMs", only_for="masked")
        causal_way: str = param("bos", "causal LMs", only_for="causal")

    assert for_one_kind(Scores()) and not for_one_kind(object())
    changed = Scores(plain="b", masked_way="mean", causal_way="first")
    assert not_used(changed, "causal", ["plain"]) == []  # not set, or read by both kinds
    assert not_used(changed, "causal", ["plain", "masked_way", "causal_way"]) == [
        "masked_way = mean applies to masked language models only; this model is causal, so it "
        "was not used"
    ]
    assert not_used(changed, "masked", ["masked_way", "causal_way"]) == [
        "causal_way = first applies to causal language models only; this model is masked, so it "
        "was not used"
    ]
    # set to its default is set too: the user asked for it, and it was not used either
    assert len(not_used(Scores(), "causal", ["masked_way"])) == 1
    with pytest.raises(ValueError, match="only_for must be one of masked, causal"):
        param(1, "x", only_for="static")


def test_a_misspelt_parameter_is_refused_with_the_closest_names():
    from bias.core.errors import BiasError
    from bias.core.params import coerce_params
    from bias.registry.resolve import embedder_class

    with pytest.raises(BiasError) as err:
        coerce_params(embedder_class("chat"), {"basse_url": "http://127.0.0.1:9/v1"}, "chat")
    assert err.value.message == "Plugin 'chat' has no parameter 'basse_url'. Did you mean 'base_url'?"
    with pytest.raises(BiasError) as err:  # nothing close: no guess
        coerce_params(embedder_class("chat"), {"zzzzzz": "1"}, "chat")
    assert err.value.message == "Plugin 'chat' has no parameter 'zzzzzz'."
