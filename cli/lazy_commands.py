"""The `bias` group with commands built only when named: `run` has some fifty options made from the
run's vocabulary, and building them (with the vocabulary's import) was a sixteenth of `bias list`,
which never uses them. `bias --help` lists it from its help text alone; `bias run` builds it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from typer.core import TyperCommand, TyperGroup

Builder = Callable[[], Any]  # a click command
# name: (the command it follows in the help, its builder, its help text)
_LAZY: dict[str, tuple[str, Builder, str]] = {}


def later(name: str, after: str, build: Builder, help: str) -> None:
    """Add command `name` to the group, listed after `after` with `help` (the built command's own
    help), built by `build` when first named."""
    _LAZY[name] = (after, build, help)


class LazyGroup(TyperGroup):
    """typer's group whose `commands` builds a command deferred by `later` when it is looked up;
    the group's help lists it from its help text."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(dict(self.commands), dict(_LAZY))

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names, without building what they name

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with self.commands.listing():
            super().format_commands(ctx, formatter)


class _Commands(MutableMapping[str, Any]):
    def __init__(
        self, built: dict[str, Any], deferred: dict[str, tuple[str, Builder, str]]
    ) -> None:
        self._built, self._deferred = built, deferred
        self._listing = False
        self._order = list(built)
        for name, (after, _, _) in deferred.items():
            at = self._order.index(after) + 1 if after in self._order else len(self._order)
            self._order.insert(at, name)

    @contextlib.contextmanager
    def listing(self) -> Iterator[None]:
        """Within it, a command not built yet is a stand-in that holds its name and help only."""
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def __getitem__(self, name: str) -> Any:
        if name not in self._built and name in self._deferred:
            if self._listing:
                return TyperCommand(name=name, help=self._deferred[name][2])
            self._built[name] = self._deferred.pop(name)[1]()
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._deferred.pop(name, None)
        if name not in self._order:
            self._order.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._built and name not in self._deferred:
            raise KeyError(name)
        self._built.pop(name, None)
        self._deferred.pop(name, None)
        self._order.remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._deferred
