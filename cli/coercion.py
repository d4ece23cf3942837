"""Typer's conversion of option values, built only for values that need converting.

Typer 0.29 converts every value of a command's parameters through a pydantic TypeAdapter, built on
first use; building the first one imports pydantic, which costs more than the rest of `bias list`.
Most values need no conversion: an option left out is None (or an empty tuple when repeatable)
whatever its type, and a text option given as text is that text. Those are answered here, exactly as
typer answers them; any other value is converted by typer's own adapter, built then. Typer versions
without this machinery are left as they are.
"""

from __future__ import annotations

from typing import Any


def convert_only_when_needed() -> None:
    """Make each typer parameter build its pydantic adapter on the first value that needs it."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer.core import _TyperParameter
    except ImportError:  # a typer without pydantic conversion: nothing to defer
        return
    built = getattr(_TyperParameter, "get_runtime_param", None)
    if built is None or getattr(built, "deferred", False):
        return

    class Deferred(RuntimeParam):  # type: ignore[misc,valid-type]
        """RuntimeParam.coerce answers None (or () when repeatable) itself; `_coerce_value` sees the
        rest: text for a plain `str` parameter is returned as is (typer's `str(value)` of a str,
        then pydantic's lax str check), anything else goes to the adapter typer builds."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            if (
                self.annotation is str
                and type(value) is str
                and getattr(info, "parser", None) is None
                and getattr(info, "click_type", None) is None
            ):
                return value
            param._runtime_param = build_runtime_param(param.type_descriptor)
            return param._runtime_param._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = Deferred(
                parameter_info=self.type_descriptor.parameter_info,
                annotation=self.type_descriptor.annotation,
            )
        return self._runtime_param

    get_runtime_param.deferred = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
