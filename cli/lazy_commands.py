"""The `bias` group with commands built only when named: `run` has some fifty options made from the
run's vocabulary, and building them (with the vocabulary's import) was a sixteenth of `bias list`,
which never uses them. `bias --help` and `bias run` build it as before."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from typer.core import TyperGroup

Builder = Callable[[], Any]  # a click command
_LAZY: dict[str, tuple[str, Builder]] = {}  # name: (the command it follows in the help, builder)


def later(name: str, after: str, build: Builder) -> None:
    """Add command `name` to the group, listed after `after`, built by `build` when first named."""
    _LAZY[name] = (after, build)


class LazyGroup(TyperGroup):
    """typer's group whose `commands` builds a command deferred by `later` when it is looked up."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(dict(self.commands), dict(_LAZY))

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names, without building what they name


class _Commands(MutableMapping[str, Any]):
    def __init__(self, built: dict[str, Any], deferred: dict[str, tuple[str, Builder]]) -> None:
        self._built, self._deferred = built, deferred
        self._order = list(built)
        for name, (after, _) in deferred.items():
            at = self._order.index(after) + 1 if after in self._order else len(self._order)
            self._order.insert(at, name)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built and name in self._deferred:
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
