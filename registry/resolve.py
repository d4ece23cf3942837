"""From names and specs to objects: word sets, embedders and metrics, with helpful errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import attrs

from bias.core.data.debias_lists import DebiasLists, SentenceTemplates
from bias.core.did_you_mean import suggestions
from bias.core.errors import BiasError
from bias.core.data.importers import WordSetFormat
from bias.core.interfaces import Embedder, Metric
from bias.core.params import coerce_params
from bias.core.text import natural_key
from bias.core.specs import DebiasSettings, ModelSpec, parse_spec
from bias.core.data.wordsets import load_toml_wordset
from bias.registry import entry_points as eps
from bias.registry.catalogue import wordset_entries

log = logging.getLogger(__name__)


def looks_like_path(value: str) -> bool:
    return (
        Path(value).suffix.lower() in (".toml", ".txt", ".json", ".jsonl", ".csv", ".tsv", ".xlsx")
        or Path(value).exists()
    )


def wordset_names(language: str | None = None) -> list[str]:
    return sorted(wordset_entries(language), key=natural_key)


def load_wordset(name_or_path: str) -> Any:
    """A registered word set (`en/weat1`) or a file (house TOML, or any format with an importer).
    Debiasing lists come with their language's sentence templates attached (see
    `sentence_templates`)."""
    found = _load_wordset(name_or_path)
    if isinstance(found, DebiasLists):
        return attrs.evolve(found, templates=sentence_templates(found.meta.language or "en"))
    return found


def sentence_templates(language: str) -> SentenceTemplates:
    """The installed `<language>/seat-templates`, for debiasers that fit on sentences; a set that is
    installed but cannot be read is kept as its error (raised only if sentences are needed), so a
    broken file is never mistaken for a language without templates."""
    name = f"{language}/seat-templates"
    if name not in wordset_entries():
        return SentenceTemplates(name)
    try:
        return SentenceTemplates(name, _load_wordset(name))
    except BiasError as exc:
        return SentenceTemplates(name, error=exc)


def _load_wordset(name_or_path: str) -> Any:
    if looks_like_path(name_or_path):
        return load_wordset_file(Path(name_or_path))
    entries = wordset_entries()
    entry = entries.get(name_or_path)
    if entry is None:
        names = sorted(entries)
        hint = suggestions(name_or_path, names) or (
            "See `bias list wordsets`."
            if names
            else "No word sets are installed: install a language package, e.g. bias-lang-en."
        )
        raise BiasError(f"No word set named '{name_or_path}'.", hint)
    return load_toml_wordset(entry.path, entry.name)


def format_for(path: Path, by_folder: bool = True, kind: str | None = None) -> WordSetFormat | None:
    """The importer for a file: by suffix, and by content where several formats share the suffix. In
    a datasets folder of the BIAS Detection Framework (`<lang>/<KIND>/<file>`) only the importers
    that declare that KIND folder are candidates (None: the file is not a test, see `not_a_test`),
    unless `by_folder` is false; with `kind`, only importers of that kind (a `--pairs` file is read
    as pairs, whatever its header)."""
    from bias.core.data.framework_layout import kind_folder

    suffix = path.suffix.lower()
    folder = kind_folder(path) if by_folder else None
    candidates = []
    for info in eps.entry_points("formats"):
        try:
            cls = eps.load("formats", info.name)
        except BiasError as exc:  # a broken importer must not stop the others, nor go unsaid
            log.warning(
                "%s Files in its format cannot be read; `bias list` shows it as broken.",
                exc.message,
            )
            continue
        if (
            suffix in cls.suffixes
            and (folder is None or folder in getattr(cls, "folders", ()))
            and (kind is None or getattr(cls, "kind", None) == kind)
        ):
            candidates.append(cls())
    if len(candidates) > 1 and path.is_file():
        from bias.core.data.file_reading import parsed_once

        with parsed_once():
            sniffed = [c for c in candidates if c.sniff(path)]
        candidates = sniffed or candidates
    return candidates[0] if candidates else None


def not_a_test(path: Path) -> str | None:
    """Why a file of the BIAS Detection Framework's datasets folder is no test, when an importer
    reads its suffix but none reads what its KIND folder holds (a translation vocabulary under
    WEAT/, the sentence frames under SEAT/); None otherwise."""
    from bias.core.data.framework_layout import kind_folder

    kind = kind_folder(path)
    if kind is None or format_for(path) is not None or format_for(path, by_folder=False) is None:
        return None
    return (
        f"not a test file (no importer of {kind}/ tests reads it; the framework keeps it "
        "beside its tests)"
    )


def check_pairs_file(value: str) -> None:
    """A `--pairs` file read by a sentence-pairs importer, so that a file with other columns gets
    the pairs format's message (the columns it needs), not that of an importer of another kind whose
    columns its header happens to share."""
    path = Path(value)
    if not looks_like_path(value) or not path.is_file() or path.suffix.lower() == ".toml":
        return
    importer = format_for(path, kind="pairs")
    if importer is not None:
        importer.load(path)


def load_wordset_file(path: Path) -> Any:
    if not path.exists():
        raise BiasError(
            f"Word-set file not found: {path}",
            "Check the path, or give a registered name such as en/weat1.",
        )
    if path.suffix.lower() == ".toml":
        return load_toml_wordset(path)
    if path.is_dir():
        raise BiasError(
            f"{path} is a folder; a word set is one file.",
            f"Give one of its files ({', '.join(readable_suffixes())}).",
        )
    importer = format_for(path)
    if importer is None and not_a_test(path):
        raise BiasError(
            f"{path}: {not_a_test(path)}.", "Give one of the tests of the folder instead."
        )
    if importer is None:
        what = f"'{path.suffix}' files" if path.suffix else "files without an extension"
        raise BiasError(
            f"{path}: no importer reads {what}.",
            f"Word sets are read from files ending in {', '.join(readable_suffixes())} "
            "(see `bias list formats`).",
        )
    return importer.load(path)


def readable_suffixes() -> list[str]:
    """The file endings a word set can have: .toml and those of every installed importer."""
    found = [".toml"]
    for info in eps.entry_points("formats"):
        try:
            found.extend(s for s in eps.load("formats", info.name).suffixes if s not in found)
        except BiasError:
            continue
    return found


def embedder_class(name: str) -> type[Embedder]:
    return eps.load("embedders", name)


def build_embedder(
    spec: str | ModelSpec, debias: DebiasSettings | None = None, **options: Any
) -> Embedder:
    """An embedder from its spec (`NAME:LOCATION[OPTION=VALUE,...]`, or one parsed already) and
    options; nothing is loaded until it is first used. With `debias`, it is wrapped in a debiaser
    fitted when the model is first loaded."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    cls = embedder_class(parsed.embedder)
    kwargs = coerce_params(cls, {**parsed.options, **options}, parsed.embedder)
    embedder = cls(location=parsed.location, **kwargs)
    return embedder if debias is None else debiased_on_load(embedder, debias)


def debias_lists_for(language: str) -> Any:
    """The debiasing lists `<language>/debias-gender`, or an error naming the packages that have
    some."""
    name = f"{language}/debias-gender"
    if name in wordset_entries():
        return load_wordset(name)
    having = sorted(
        {
            f"{e.language} ({e.distribution})"
            for e in wordset_entries().values()
            if e.name.split("/")[-1].startswith("debias-")
        }
    )
    raise BiasError(
        f"Language '{language}' has no debiasing lists ({name} is not installed).",
        f"Packages with debiasing lists: {', '.join(having) or 'none installed'}; or give "
        "a file with --lists / --debias-lists.",
    )


def fitting_debiasers(embedder: Embedder) -> list[str]:
    """The installed debiasers that can debias this embedder."""
    names = []
    for info in eps.entry_points("debiasers"):
        try:
            cls = eps.load("debiasers", info.name)
        except BiasError:
            continue
        if _unsupported(cls, embedder) is None:
            names.append(info.name)
    return names


def _unsupported(cls: Any, embedder: Embedder) -> str | None:
    return cls.supports(embedder)


def build_debiaser(name: str, embedder: Embedder, **params: Any) -> Any:
    """A debiaser that can handle `embedder`, or an error naming the methods that can."""
    cls = eps.load("debiasers", name)
    reason = _unsupported(cls, embedder)
    if reason:
        raise BiasError(
            f"{reason}.",
            f"Methods that fit {embedder.spec}: "
            f"{', '.join(fitting_debiasers(embedder)) or 'none installed'}.",
        )
    return cls(**coerce_params(cls, params, name))


def debiased_on_load(embedder: Embedder, debias: DebiasSettings) -> Embedder:
    """`embedder` wrapped so that metrics see it debiased; the lists (`lists`, else
    `<language>/debias-gender`; one of the two is needed, never a silent English default) are
    loaded now, the debiaser is fitted at the first load()."""
    params = {"corpus": str(debias.corpus)} if debias.corpus is not None else {}
    if debias.corpus is not None:  # refused now, not after the model has loaded for the fit
        from bias.core.data.corpus import check_corpus

        check_corpus(debias.corpus)
    debiaser = build_debiaser(str(debias.method), embedder, **params)
    debias_lists, debias_language = debias.lists, debias.language
    if not debias_lists and not debias_language:
        raise BiasError(
            f"Debiasing {embedder.spec} needs lists, and no language or lists were given.",
            "Name the lists with --debias-lists (e.g. en/debias-gender, or a file).",
        )
    lists = (
        load_wordset(str(debias_lists)) if debias_lists else debias_lists_for(str(debias_language))
    )
    return debiaser.wrap(embedder, lists)


def build_metric(name: str, **params: Any) -> Metric:
    cls = eps.load("metrics", name)
    return cls(**coerce_params(cls, params, name))
