"""The plugin interface of importers of community word-set formats (`bias.formats`).

It lives with the data it reads rather than with the other interfaces: what it gives is checked and
built by the house format (`wordsets`), which the base interfaces do not load.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from bias.core.data.wordsets import Problem, build_record, check_record
from bias.core.errors import BiasError


class WordSetFormat(ABC):
    """An importer of a community word-set format (WEAT .txt, SEAT JSON, CrowS-Pairs CSV, ...).

    Registered under the entry-point group `bias.formats` and chosen by file suffix (and, where two
    formats share a suffix, by `sniff`); in a datasets folder of the BIAS Detection Framework
    (`<lang>/<KIND>/<file>`) only the importers whose `folders` name that KIND are asked, so a file
    the framework keeps beside its tests (a vocabulary CSV, a templates.txt) is not mistaken for a
    test. An importer only turns its file into the record the house
    format describes (`kind`, `language`, ..., and the kind's contents); checking and building are
    shared, so an imported file is validated exactly like a TOML one.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    kind: ClassVar[str] = "association"
    folders: ClassVar[
        tuple[str, ...]
    ] = ()  # the framework's KIND folders holding this format (WEAT, SEAT, ...)

    @abstractmethod
    def record(self, path: Any) -> dict[str, Any]:
        """The file as a house-format record; raise BiasError naming the file (and line) if
        unreadable."""

    def sniff(self, path: Any) -> bool:
        """Whether the file looks like this format (asked only when formats share a suffix)."""
        return True

    def load(self, path: Any) -> Any:
        return build_record(self.record(path), Path(path).stem, str(path))

    def validate(self, path: Any) -> list[Any]:
        try:
            return check_record(self.record(path), str(path))
        except BiasError as exc:  # the Problem names the file: the message need not again
            return [Problem(str(path), "", exc.message.removeprefix(f"{path}: "))]
