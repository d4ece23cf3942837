"""How `--help` shows the options: Typer's defaults adjusted where they mislead."""

from __future__ import annotations

from typing import Any


def flags_shown_as_flags() -> None:
    """Typer's help shows an on/off flag with the type `<bool>`, as if it took a value (`--resume
    <bool>`); a flag takes none, so its type column is left empty."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_shown_as_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return (
            None
            if getattr(self, "is_flag", False) and not getattr(self, "metavar", None)
            else shown(self, ctx)
        )

    display_type_rich.flags_shown_as_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
