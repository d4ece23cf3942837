"""From names and specs to objects: word sets, embedders and metrics, with helpful errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bias.core.errors import BiasError
from bias.core.interfaces import Embedder, Metric, WordSetFormat
from bias.core.params import coerce_params
from bias.core.specs import parse_spec
from bias.core.wordsets import load_toml_wordset
from bias.registry import entry_points as eps
from bias.registry.catalogue import wordset_entries


def looks_like_path(value: str) -> bool:
    return Path(value).suffix.lower() in (".toml", ".txt", ".json", ".csv", ".tsv") or Path(value).exists()


def wordset_names(language: str | None = None) -> list[str]:
    return sorted(wordset_entries(language))


def load_wordset(name_or_path: str) -> Any:
    """A registered word set (`en/weat1`) or a file (house TOML, or any format with an importer)."""
    if looks_like_path(name_or_path):
        return load_wordset_file(Path(name_or_path))
    entries = wordset_entries()
    entry = entries.get(name_or_path)
    if entry is None:
        names = sorted(entries)
        hint = eps.suggestions(name_or_path, names) or (
            "See `bias list wordsets`." if names else "No word sets are installed: install a language package, e.g. bias-lang-en."
        )
        raise BiasError(f"No word set named '{name_or_path}'.", hint)
    return load_toml_wordset(entry.path, entry.name)


def format_for(path: Path) -> WordSetFormat | None:
    """The importer for a file: by suffix, and by content where several formats share the suffix."""
    suffix = path.suffix.lower()
    candidates = []
    for info in eps.entry_points("formats"):
        try:
            cls = eps.load("formats", info.name)
        except BiasError:  # a broken importer must not stop the others
            continue
        if suffix in cls.suffixes:
            candidates.append(cls())
    if len(candidates) > 1 and path.is_file():
        sniffed = [c for c in candidates if c.sniff(path)]
        candidates = sniffed or candidates
    return candidates[0] if candidates else None


def load_wordset_file(path: Path) -> Any:
    if not path.exists():
        raise BiasError(f"Word-set file not found: {path}", "Check the path, or give a registered name such as en/weat1.")
    if path.suffix.lower() == ".toml":
        return load_toml_wordset(path)
    importer = format_for(path)
    if importer is None:
        raise BiasError(
            f"{path}: no importer reads '{path.suffix}' files.",
            "Word sets are TOML (house format) or a community format with an importer (WEAT .txt, SEAT .json, CrowS-Pairs .csv/.tsv, word2vec analogy .txt).",
        )
    return importer.load(path)


def embedder_class(name: str) -> type[Embedder]:
    return eps.load("embedders", name)


def build_embedder(spec: str, **options: Any) -> Embedder:
    """An embedder from `NAME:LOCATION` and options; nothing is loaded until it is first used."""
    parsed = parse_spec(spec)
    cls = embedder_class(parsed.embedder)
    kwargs = coerce_params(cls, options, parsed.embedder)
    return cls(location=parsed.location, **kwargs)


def build_metric(name: str, **params: Any) -> Metric:
    cls = eps.load("metrics", name)
    return cls(**coerce_params(cls, params, name))
