"""Experiment files of the BIAS Detection Framework, run unchanged.

Each line is `dataset,metric,embedding,language,modelname` (`#` lines are comments). The data is
`DATASETS/<lang>/<METRIC>/<dataset>.<ext>` (genSEAT names from `genSEAT/`), and the models:

    fasttext       MODELS/cc.<lang>.300.bin (also tried: fastText's code of the language)
    word2vec       MODELS/GoogleNews-vectors-negative300.bin
    glove          MODELS/glove.840B.300d.txt
    bert           the model's [CLS] vector (RoBERTa-style models: <s>) of the word or sentence
    bert_pooling   the mean of the word's sub-tokens (a SEAT sentence: the mean of its tokens)
    bert_first     the word's first sub-token (a SEAT sentence: its first token)
    mBERT          bert-base-multilingual-cased
    (a Hub id is looked up under MODELS first, as the framework does)
    OpenAI_small   text-embedding-3-small through the `openai` embedder (needs OPENAI_API_KEY)
    OpenAI_large   text-embedding-3-large through the `openai` embedder (needs OPENAI_API_KEY)
    mVoyage        voyage-multilingual-2 through the `voyage` embedder (needs VOYAGE_API_KEY)
    (a service line whose key is not in the environment is skipped, saying so; with the preset, the
    framework's truncation of OpenAI vectors to their first 768 components is written as an option)

A line that cannot run (wrong number of fields, unknown metric or embedding, no such dataset or
model file, a name that leads out of the datasets or models folder) is reported with its line number
and left out; the others run. The engine makes one listed experiment of each line that can run
(`bias.engine.framework_file`), so `bias convert` prints what will run, as an experiment file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.data.framework_layout import FOLDER_CODES, language_code
from bias.core.text import shown
from bias.core.data.file_reading import content_lines, read_text

PRESET = "bias-framework"
METRICS = {"WEAT": "weat", "SEAT": "seat", "LPBS": "lpbs", "CROWS": "crows", "FISE": "fise"}
# The folder of each metric's data, and the suffixes its files may have (first is the framework's).
DATA = {
    "WEAT": ("WEAT", (".txt",)),
    "SEAT": ("SEAT", (".jsonl", ".json")),
    "LPBS": ("LPBS", (".jsonl", ".json")),
    "CROWS": ("CROWS", (".csv", ".xlsx")),
    "FISE": ("FISE", (".json",)),
}
STATIC = {
    "fasttext": "cc.{lang}.300.bin",
    "word2vec": "GoogleNews-vectors-negative300.bin",
    "glove": "glove.840B.300d.txt",
}
CONTEXTUAL = {"bert": "cls", "bert_pooling": "mean", "bert_first": "first", "mBERT": "cls"}
MBERT = "google-bert/bert-base-multilingual-cased"
# Embedding services: the model spec and the environment variable that must hold the key.
SERVICES = {
    "OpenAI_small": ("openai:text-embedding-3-small", "OPENAI_API_KEY"),
    "OpenAI_large": ("openai:text-embedding-3-large", "OPENAI_API_KEY"),
    "mVoyage": ("voyage:voyage-multilingual-2", "VOYAGE_API_KEY"),
}
# The framework keeps the first 768 components of OpenAI's vectors (the width of its BERT models).
OPENAI_TRUNCATION = 768


@attrs.frozen
class ConfigLine:
    number: int
    dataset: str
    metric: str
    embedding: str
    language: str
    modelname: str

    @property
    def text(self) -> str:
        return ",".join((self.dataset, self.metric, self.embedding, self.language, self.modelname))


@attrs.frozen
class Planned:
    """One config line as an experiment of the house format."""

    line: ConfigLine
    wordset: str
    metric: str
    model: str
    model_options: dict[str, Any] = attrs.Factory(dict)
    params: dict[str, Any] = attrs.Factory(dict)
    notes: tuple[str, ...] = ()


def is_framework_config(path: Path) -> bool:
    """A framework experiment file: not TOML, and its first content line has four commas."""
    if Path(path).suffix.lower() == ".toml":
        return False
    lines = content_lines(path, 1)  # its first megabyte at most (the file may be /dev/zero)
    if lines is None:
        return False
    if not lines:
        return True
    line = lines[0].strip()
    # TOML's first line is `key = ...`; a framework line may hold '=' only in its model name (the
    # fifth field), where a code option is then refused by name.
    return "," in line and "=" not in ",".join(line.split(",")[:4])


def read_lines(path: Path) -> tuple[list[ConfigLine], list[str]]:
    """The well-formed lines, and a problem for each line that is not
    `dataset,metric,embedding,language,modelname`."""
    text = read_text(path, "experiment file")
    lines, problems = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5:
            problems.append(
                f"{path}: line {number}: {len(fields)} field(s) in {line[:60]!r}; expected "
                "dataset,metric,embedding,language,modelname (skipped)"
            )
            continue
        lines.append(ConfigLine(number, *fields))
    return lines, problems


def _is(path: Path, what: str) -> bool:
    """Whether `path` is a file (or folder); a name the file system cannot hold (too long, say) is
    none."""
    try:
        return path.is_file() if what == "file" else path.is_dir()
    except (OSError, ValueError):
        return False


def _language_folder(datasets: Path, code: str) -> Path:
    """The folder of a language: as written, else under the framework's other name for it (tk/tr,
    ne/nl)."""
    folder = datasets / code
    if _is(folder, "dir"):
        return folder
    others = [k for k, v in FOLDER_CODES.items() if v == code] + (
        [FOLDER_CODES[code]] if code in FOLDER_CODES else []
    )
    for other in others:
        if _is(datasets / other, "dir"):
            return datasets / other
    return folder


def _inside(name: str, what: str, flag: str) -> None:
    """A dataset or model name is a name under its folder: an absolute path or a `..` would read a
    file the config's folders do not hold."""
    parts = name.replace("\\", "/").split("/")
    if (
        Path(name).is_absolute()
        or name.startswith(("/", "\\"))
        or ".." in parts
        or (len(name) > 1 and name[1] == ":")
    ):
        raise BiasError(
            f"{what} '{shown(name, 60)}' leads out of the {flag} folder; give a name under it"
        )


def _dataset(datasets: Path, line: ConfigLine) -> Path:
    _inside(line.dataset, "dataset", "--datasets")
    _inside(line.language, "language", "--datasets")
    metric = line.metric.upper()
    folder_name, suffixes = DATA[metric]
    if metric == "SEAT" and "genSEAT" in line.dataset:
        folder_name = "genSEAT"
    folder = _language_folder(datasets, line.language) / folder_name
    tried = []
    for suffix in suffixes:
        candidate = folder / f"{line.dataset}{suffix}"
        if _is(candidate, "file"):
            return candidate
        tried.append(candidate.name)
    raise BiasError(f"no dataset {line.dataset} in {folder} (looked for {', '.join(tried)})")


def _hub_model(models: Path, name: str) -> str:
    """A Hub id looked up under the models folder first (`MODELS/<id>`, then `MODELS/<last
    part>`)."""
    for candidate in (models / name, models / name.split("/")[-1]):
        if _is(candidate, "dir"):
            return str(candidate)
    return name


def _model(models: Path, line: ConfigLine) -> tuple[str, list[str]]:
    embedding = line.embedding
    if embedding in STATIC:
        iso, _ = language_code(line.language)
        names = [STATIC[embedding].format(lang=line.language)]
        if embedding == "fasttext" and iso != line.language:
            names.append(STATIC[embedding].format(lang=iso))
        for name in names:
            if _is(models / name, "file"):
                return f"{embedding}:{models / name}", []
        raise BiasError(
            f"model file {' or '.join(str(models / n) for n in names)} not found; put it "
            "in the --models folder or give that folder with --models"
        )
    if embedding in SERVICES:
        spec, variable = SERVICES[embedding]
        if not os.environ.get(variable, "").strip():
            raise BiasError(
                f"embedding {embedding} ({spec}) needs an API key in the environment "
                f"variable {variable}, which is not set"
            )
        return spec, []
    if embedding == "mBERT":
        return f"hf:{_hub_model(models, MBERT)}", []
    if embedding in CONTEXTUAL:
        if line.modelname in ("", "None"):
            raise BiasError(f"embedding {embedding} needs a model name (the fifth field)")
        _inside(line.modelname, "model", "--models")
        return f"hf:{_hub_model(models, line.modelname)}", []
    known = ", ".join([*STATIC, *CONTEXTUAL, *SERVICES])
    raise BiasError(f"unknown embedding '{embedding}' (this tool runs {known})")


def plan_line(line: ConfigLine, datasets: Path, models: Path) -> Planned:
    """The experiment of one config line; raises BiasError (a message naming the problem) if it
    cannot run."""
    metric = line.metric.upper()
    if metric not in METRICS:
        raise BiasError(f"unknown metric '{line.metric}' (known: {', '.join(METRICS)})")
    wordset = _dataset(datasets, line)
    model, notes = _model(models, line)
    options: dict[str, Any] = {}
    params: dict[str, Any] = {}
    pooling = CONTEXTUAL.get(line.embedding)
    if pooling and metric == "WEAT":
        # the word alone between [CLS] and [SEP], as the framework encodes it
        options["word_pooling"] = pooling
    elif pooling and metric == "SEAT":
        params["pooling"] = pooling
        if pooling != "cls":
            notes.append(
                f"{line.embedding} on sentences: the framework's word-level variant has no "
                "target position in a SEAT sentence; the sentence's tokens are pooled "
                f"({pooling})"
            )
    elif pooling and metric == "FISE":
        params["encoding"] = "contextual"
    elif line.embedding in SERVICES and metric == "FISE":
        params["encoding"] = "contextual"
    elif line.embedding in SERVICES and metric == "SEAT":
        params["pooling"] = "mean"  # a service gives one vector per sentence, pooled its own way
    elif metric == "SEAT":
        params["pooling"] = "mean"  # a static model's sentence vector: the mean of its word vectors
    return Planned(line, str(wordset), METRICS[metric], model, options, params, tuple(notes))


def plan(path: Path, datasets: Path, models: Path) -> tuple[list[Planned], list[str]]:
    """Every runnable line of a config file, and a problem (with its line number) for each other
    one."""
    datasets, models = Path(datasets), Path(models)
    if not datasets.is_dir():
        raise BiasError(
            f"Datasets folder not found: {datasets}",
            "Give the framework's datasets folder with --datasets.",
        )
    lines, problems = read_lines(path)
    planned = []
    for line in lines:
        try:
            planned.append(plan_line(line, datasets, models))
        except BiasError as exc:
            problems.append(f"{path}: line {line.number}: {exc.message} (skipped)")
    return planned, problems


def refuse_empty(path: Path, planned: list[Planned], problems: list[str], what: str) -> None:
    """A config with no line that can run is refused (after its problems were shown), saying why."""
    if not planned:
        why = (
            f"no line of this file can run ({len(problems)} skipped)"
            if problems
            else "the file holds only comments and blank lines"
        )
        raise BiasError(
            f"{path}: {what}: {why}.",
            "A line is dataset,metric,embedding,language,modelname (# lines are comments).",
        )


def default_folder(config: Path, name: str) -> Path:
    """`--datasets` / `--models` when not given: `./NAME` if it exists, else the `NAME` folder
    beside the config file or above it (the framework keeps its configs under `experiments/` in the
    folder that holds `datasets/` and `models/`), else `./NAME` (whose absence is then reported)."""
    here = Path(name)
    if here.is_dir():
        return here
    for parent in Path(config).resolve().parents:
        if (parent / name).is_dir():
            return parent / name
    return here
