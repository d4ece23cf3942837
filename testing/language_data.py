"""A language package's data as its grammar checks see it: every word of every association test,
every SEAT sentence rendered for it template by template, and every LPBS sentence for every pair.

Each template is rendered on its own (not through `TemplateSet.render`) so that a check knows which
template a sentence came from: a plural template whose plural form equals the singular still counts
as plural.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import attrs

from bias.core.data import grammar
from bias.core.errors import BiasError
from bias.core.data.wordsets import SET_KEYS, DataPackage, load_toml_wordset, word_list
from bias.core.data.file_reading import read_toml


@attrs.frozen
class Word:
    """One stimulus of an association test with its grammatical features (the template set's
    defaults merged under the word's own)."""

    file: str
    key: str
    word: str
    features: dict[str, str]


@attrs.frozen
class SeatSentence:
    """One SEAT sentence: the word it was built for, the template text it came from, the sentence
    and the character span of the word in it."""

    word: Word
    template: str
    text: str
    span: tuple[int, int]

    @property
    def slot(self) -> str:
        return self.text[self.span[0] : self.span[1]]

    @property
    def plural(self) -> bool:
        """From a plural template, or a group term (which is plural whatever template it is in)."""
        return ":plural}" in self.template or self.word.features.get("class") == "group"


@attrs.frozen
class LpbsSentence:
    """One LPBS template rendered with one (target, attribute) pair; `rendered` is None where the
    template does not fit the pair (its `when` condition)."""

    template: str
    target_key: str
    target: str
    target_features: dict[str, str]
    attribute_key: str
    attribute: str
    attribute_features: dict[str, str]
    rendered: Any


class LanguageData:
    """The data folder of one language package, loaded as `bias` loads it (files are read once)."""

    def __init__(self, language: str, root: Path) -> None:
        self.language = language
        self.root = Path(root)

    @classmethod
    def installed(cls, language: str) -> LanguageData:
        """The data of the package installed under `language` (entry-point group
        `bias.wordsets`)."""
        from bias.registry import entry_points as eps

        for info in eps.entry_points("wordsets"):
            if info.name == language:
                package = eps.load("wordsets", info.name)
                if not isinstance(package, DataPackage):
                    raise BiasError(f"The entry point '{info.value}' is not a DataPackage.")
                return cls(package.language, Path(package.root))
        raise BiasError(
            f"No language package for '{language}' is installed.",
            "Install it (pip install -e PATH).",
        )

    def path(self, stem: str) -> Path:
        return self.root / f"{stem}.toml"

    def stems(self) -> set[str]:
        return {p.stem for p in self.root.glob("*.toml")}

    def has(self, stem: str) -> bool:
        return self.path(stem).is_file()

    def record(self, stem: str) -> dict[str, Any]:
        """A file's parsed TOML, as written (no validation)."""
        return read_toml(self.path(stem))

    def load(self, stem: str) -> Any:
        """A word set built by its kind, named `<language>/<stem>`."""
        return load_toml_wordset(self.path(stem), f"{self.language}/{stem}")

    @functools.cached_property
    def association_files(self) -> list[Path]:
        return [
            p
            for p in sorted(self.root.glob("*.toml"))
            if read_toml(p).get("kind", "association") == "association"
        ]

    @functools.cached_property
    def seat(self) -> Any:
        return self.load("seat-templates")

    @functools.cached_property
    def lpbs(self) -> Any:
        return self.load("lpbs-gender")

    @functools.cached_property
    def words(self) -> list[Word]:
        """Every word of every association test of words (tests of sentences are left out)."""
        defaults = dict(self.seat.defaults) if self.has("seat-templates") else {}
        out = []
        for path in self.association_files:
            data = read_toml(path)
            if data.get("stimuli") == "sentences":
                continue
            for key in SET_KEYS:
                wl = word_list(data["sets"][key], key)
                out.extend(
                    Word(path.name, key, w, {**defaults, **wl.features(w)}) for w in wl.words
                )
        return out

    @functools.cached_property
    def seat_sentences(self) -> list[SeatSentence]:
        seat = self.seat
        out = []
        for w in self.words:
            for template in seat.templates:
                r = grammar.render(
                    template.text, {"word": (w.word, w.features)}, seat.forms, template.when
                )
                if r is not None:
                    out.append(SeatSentence(w, template.text, r.text, r.spans["word"]))
        return out

    @functools.cached_property
    def lpbs_sentences(self) -> list[LpbsSentence]:
        lpbs = self.lpbs
        sets = lpbs.sets()
        out = []
        for template in lpbs.templates:
            for tk in ("X", "Y"):
                for t in sets[tk].words:
                    tf = dict(sets[tk].features(t))
                    for ak in ("A", "B"):
                        for a in sets[ak].words:
                            af = dict(sets[ak].features(a))
                            r = lpbs.render(template, (t, tf), (a, af))
                            out.append(LpbsSentence(template.text, tk, t, tf, ak, a, af, r))
        return out
