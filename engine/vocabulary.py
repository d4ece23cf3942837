"""The one vocabulary of a run: every option `bias run` takes, by the name an experiment file and
`--param` use, with its command-line flags, its help panel and the rule its value must meet.

The command line's `run` command is generated from this table, the experiment file reader knows its
top-level keys from it, `RunSpec` checks every value against its rule, and docs/run-options.md is
its table (a test holds them equal; with the command line's flags for model options that run code,
which `bias.cli.run_command` adds: the engine names no plugin's option). A new run option is one
row here (and, for an option of the run itself, the `RunSpec` field that carries it); an option a
model loader declares (`to=SHARED`) needs nothing else: it reaches the models whose embedder
declares it.

Nothing here imports more than the standard library and attrs: `bias --help` reads this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from bias.core.models.hf.compute import DEVICES
from bias.engine.option_values import AtLeast, OneOf, Pattern, Rule, Switch, Text

# Where a value goes.
RUN = "run"  # a field of RunSpec
PARAM = "param"  # a metric parameter: --param NAME=VALUE, [params] / [grid] in a file
MODEL = "model"  # a loader option every model must accept (--model-option)
SHARED = "shared"  # a loader option given to the models whose embedder declares it (--device)
WORDSET = "wordset"  # a word set of the run (--pairs, --analogies add to --wordset)
DOOR = "door"  # read by the front door itself: which file, where its folders are, what to print
# What a file may say.
FILE = "file"  # the same name, in a file
# the command line only (a file cannot decide it, see bias.engine.guards)
COMMAND_LINE = "command-line"
PANELS = ("Model", "Data", "Metric", "Statistics", "Output", "Execution")


@attrs.frozen
class Option:
    """One option of a run. `name` is how a file and `--param` write it (a list in the plural);
    `flags` how the command line writes it (repeated for a list); `file` says whether a file may set
    it; `kind` is the command line's type (text, whole, number, switch, path, pair: KEY=VALUE)."""

    name: str
    flags: tuple[str, ...]
    panel: str
    help: str
    kind: str = "text"
    many: bool = False
    to: str = RUN
    file: str = FILE
    rule: Rule | None = None
    in_file: str = ""  # how a file writes it, where that is not `name = VALUE` at the top level
    why_command_line: str = ""  # for COMMAND_LINE options: why a file cannot set it

    @property
    def flag(self) -> str:
        return self.flags[0]

    def file_form(self) -> str:
        if self.file == COMMAND_LINE:
            return "(command line only)"
        if self.in_file:
            return self.in_file
        return f"{self.name} = [...]" if self.many else f"{self.name} = ..."


def _metric(name: str, panel: str, help: str, kind: str = "text") -> Option:
    """A metric parameter the command line also takes as a flag of its own: an alias of
    `--param NAME=VALUE`, repeatable (several values are a grid)."""
    return Option(
        name,
        ("--" + name.replace("_", "-"),),
        panel,
        f"{help} Same as --param {name}=VALUE.",
        kind=kind,
        many=True,
        to=PARAM,
        in_file=f"[params] {name} = ... or [grid] {name} = [...]",
    )


# Why a file cannot switch on a model option that runs code: the command line's own flags for such
# options (bias.cli.run_command) say so, and a spec remembers them to name them in a refusal.
CODE = "lets a model's files run code"
OPTIONS: tuple[Option, ...] = (
    # Model ----------------------------------------------------------------------------------------
    Option(
        "models",
        ("--model", "-m"),
        "Model",
        "Model spec NAME:LOCATION, e.g. word2vec:vectors.bin. Repeatable.",
        many=True,
        in_file="models = [...] or [[models]] tables (spec = ..., name = ..., options)",
    ),
    Option(
        "model_options",
        ("--model-option",),
        "Model",
        "Embedder parameter KEY=VALUE every model takes, e.g. word_pooling=first. Repeatable.",
        kind="pair",
        many=True,
        to=MODEL,
        in_file="KEY = VALUE in a [[models]] table (or the spec's [KEY=VALUE])",
    ),
    Option(
        "device",
        ("--device",),
        "Model",
        "Model device: auto, cpu, cuda, cuda:N, mps.",
        to=SHARED,
        rule=Pattern(DEVICES, "auto, cpu, cuda, cuda:N or mps"),
    ),
    Option(
        "dtype",
        ("--dtype",),
        "Model",
        "Model weights' precision: float32, float16, bfloat16.",
        to=SHARED,
        rule=Text(),
    ),
    Option(
        "batch_size",
        ("--batch-size",),
        "Model",
        "Texts per forward pass.",
        kind="whole",
        to=SHARED,
        rule=AtLeast(1),
    ),
    Option(
        "debias",
        ("--debias",),
        "Model",
        "Debias the model on the fly before measuring: hard, inlp, sent or leace.",
        to=MODEL,
        in_file="debias = ... in a [[models]] table",
    ),
    Option(
        "debias_corpus",
        ("--debias-corpus",),
        "Model",
        "Corpus (one sentence per line) for --debias sent / inlp on sentence encodings.",
        kind="path",
        to=MODEL,
        in_file="debias_corpus = ... in a [[models]] table",
    ),
    Option(
        "debias_lists",
        ("--debias-lists",),
        "Model",
        "Debiasing lists (name such as en/debias-gender, or file).",
        to=MODEL,
        in_file="debias_lists = ... in a [[models]] table",
    ),
    Option(
        "with_original",
        ("--with-original",),
        "Model",
        "With --debias: also measure the original model and print a before/after table (bias tests "
        "and utility such as word-similarity or analogy side by side).",
        kind="switch",
        rule=Switch(),
    ),
    # Data -----------------------------------------------------------------------------------------
    Option(
        "wordsets",
        ("--wordset", "-w"),
        "Data",
        "Word-set name (en/weat1) or file. Repeatable.",
        many=True,
        in_file='wordsets = ["en/weat1", { language = "nl", bias_type = "gender" }, "file.toml"]',
    ),
    Option(
        "pairs",
        ("--pairs",),
        "Data",
        "Sentence-pair set (en/crows-sample) or CrowS-Pairs .csv/.tsv file. Repeatable.",
        many=True,
        to=WORDSET,
    ),
    Option(
        "analogies",
        ("--analogies",),
        "Data",
        "Analogy set (name, or word2vec questions file). Repeatable.",
        many=True,
        to=WORDSET,
    ),
    Option(
        "limit",
        ("--limit",),
        "Data",
        "Smoke run: only the first N items of each list of each test (words of each set, pairs, "
        "texts, questions); recorded in every result.",
        kind="whole",
        rule=AtLeast(1),
    ),
    Option(
        "datasets",
        ("--datasets",),
        "Data",
        "Framework config: the datasets folder (<lang>/<METRIC>/<test>; default ./datasets, else "
        "the one beside or above the config).",
        kind="path",
        to=DOOR,
        file=COMMAND_LINE,
        why_command_line="goes with a BIAS Detection Framework config, which has no place for it",
    ),
    Option(
        "models_dir",
        ("--models-dir", "--models"),
        "Data",
        "Framework config: the models folder (cc.<lang>.300.bin, Hub ids; default ./models, else "
        "the one beside or above the config).",
        kind="path",
        to=DOOR,
        file=COMMAND_LINE,
        why_command_line="goes with a BIAS Detection Framework config, which has no place for it",
    ),
    # Metric ---------------------------------------------------------------------------------------
    Option(
        "metrics",
        ("--metric",),
        "Metric",
        "Metric name (default weat). Repeatable.",
        many=True,
        in_file='metrics = ["weat", { name = "seat", pooling = "mean" }]',
    ),
    Option(
        "params",
        ("--param",),
        "Metric",
        "Any metric parameter NAME=VALUE (`bias run --metric NAME --help` lists them). Repeatable; "
        "several values of one NAME are a grid.",
        kind="pair",
        many=True,
        to=PARAM,
        in_file="[params] NAME = VALUE (one value), [grid] NAME = [...] (every value)",
    ),
    Option(
        "preset",
        ("--preset",),
        "Metric",
        "A peer tool's conventions: bias-framework, bias-bench, sent-bias or wefe "
        "(docs/methods.md); parameters given here win.",
        rule=OneOf("bias.engine.presets:PRESETS"),
    ),
    Option(
        "duplicates",
        ("--duplicates",),
        "Metric",
        "Repeated stimuli of a set: drop (default) or keep, for the metrics that have the choice.",
        rule=OneOf(("drop", "keep")),
    ),
    _metric(
        "level", "Metric", "SEAT/CEAT: sentence or word (the target's vector in its sentence)."
    ),
    _metric(
        "pooling",
        "Metric",
        "Contextual vector: cls, mean, first, last, target-mean, target-first, target-last.",
    ),
    _metric("layer", "Metric", "Hidden layer: -1 (last), N, or mean-last-4."),
    _metric(
        "templates", "Metric", "SEAT/CEAT template set (name such as en/seat-templates, or file)."
    ),
    _metric("corpus", "Metric", "CEAT: text file, one sentence or comment per line.", kind="path"),
    _metric(
        "contexts_per_word",
        "Metric",
        "CEAT: contexts kept per word (reservoir-sampled).",
        kind="whole",
    ),
    _metric(
        "samples",
        "Metric",
        "CEAT: samples of one context a word (10000); bbq and discrimination: replies a prompt.",
        kind="whole",
    ),
    _metric(
        "window", "Metric", "CEAT: keep this many words either side of the target.", kind="whole"
    ),
    _metric(
        "case",
        "Metric",
        "Word lookup: exact (default), lower, fallback (lowercase words not found), or insensitive "
        "(analogy, CEAT).",
    ),
    _metric(
        "lost_threshold",
        "Metric",
        "Refuse a test losing more than this share of a set (default 0.2).",
        kind="number",
    ),
    # Statistics -----------------------------------------------------------------------------------
    Option(
        "seeds",
        ("--seed",),
        "Statistics",
        "Random seed (default 0). Repeatable.",
        kind="whole",
        many=True,
        rule=AtLeast(0),
        in_file="seeds = [...] or seed = N",
    ),
    _metric(
        "permutations",
        "Statistics",
        "Sampled permutations when the exact test is too large (default 100000).",
        kind="whole",
    ),
    _metric(
        "exact_limit",
        "Statistics",
        "Enumerate all partitions up to this many (default 100000; 0 forces sampling).",
        kind="whole",
    ),
    _metric(
        "ddof", "Statistics", "Std convention of the effect size: 1 (default) or 0.", kind="whole"
    ),
    _metric("alternative", "Statistics", "greater (default), less or two-sided."),
    _metric(
        "bootstrap",
        "Statistics",
        "WEAT/SEAT: bootstrap resamples for the effect size's confidence interval (default 2000; "
        "0: none).",
        kind="whole",
    ),
    _metric(
        "ci_level",
        "Statistics",
        "Confidence level of the bootstrap interval (default 0.95).",
        kind="number",
    ),
    _metric("ci_method", "Statistics", "Bootstrap interval: bca (default) or percentile."),
    Option(
        "family",
        ("--family",),
        "Statistics",
        "Multiple-testing family: run (default), model or metric.",
        rule=OneOf(
            "bias.core.statistics:FAMILIES",
            "run: all tests of the run; model / metric: each separately.",
        ),
    ),
    # Output ---------------------------------------------------------------------------------------
    Option(
        "out",
        ("--out", "-o"),
        "Output",
        "Folder for results.jsonl and report.md.",
        kind="path",
        in_file=(
            "out = ... (a new, empty or earlier run's folder inside the file's; "
            "else only with --out)"
        ),
    ),
    Option(
        "resume",
        ("--resume",),
        "Output",
        "Skip experiments already in OUT/results.jsonl.",
        kind="switch",
        rule=Switch(),
    ),
    Option(
        "formats",
        ("--format",),
        "Output",
        "Report files written with --out: all, md, csv, tex, png, svg, html (default md,csv,tex). "
        "Repeatable.",
        many=True,
    ),
    Option(
        "title", ("--title",), "Output", "The title of the report and the manifest.", rule=Text()
    ),
    Option(
        "json", ("--json",), "Output", "Print results as JSON lines.", kind="switch", rule=Switch()
    ),
    Option(
        "wide",
        ("--wide",),
        "Output",
        "Print every column of the results table (model spec, BH p, convention, sizes, status): a "
        "table where it fits, else one block per result; piped, the table unwrapped.",
        kind="switch",
        rule=Switch(),
    ),
    Option(
        "before_after",
        ("--before-after",),
        "Output",
        "Print a before/after table: the last model against the others (as --with-original does).",
        kind="switch",
        rule=Switch(),
    ),
    Option(
        "print_toml",
        ("--print-toml",),
        "Output",
        "Print this run as an experiment file and exit without running (save it, then `bias run "
        "FILE`).",
        kind="switch",
        to=DOOR,
        file=COMMAND_LINE,
        why_command_line="is what a file is printed with",
    ),
    # Execution ------------------------------------------------------------------------------------
    Option(
        "executor",
        ("--executor",),
        "Execution",
        "local (default: in this process) or ray (one Ray actor per model; needs the ray extra of "
        "bias-framework).",
        rule=OneOf(("local", "ray"), "local runs in this process; ray on a Ray cluster."),
        in_file='executor = ... ("ray" only with --executor ray or --ray-address)',
    ),
    Option(
        "ray_address",
        ("--ray-address",),
        "Execution",
        "With --executor ray: join this cluster (auto or HOST:PORT); default: start a local Ray "
        "instance.",
        rule=Text("auto or HOST:PORT"),
        in_file="ray_address = ... (joined only with --ray-address)",
    ),
    Option(
        "fail_fast",
        ("--fail-fast",),
        "Execution",
        "Stop at the first failing experiment.",
        kind="switch",
        rule=Switch(),
    ),
    Option(
        "threads",
        ("--threads",),
        "Execution",
        "CPU threads of torch and BLAS (default: OMP_NUM_THREADS, else every core this process may "
        "use; 1 is often faster on a busy machine). Recorded in each result.",
        kind="whole",
        rule=AtLeast(1),
    ),
    Option(
        "max_cost",
        ("--max-cost",),
        "Execution",
        "Embedding services: stop before sending when a model's estimated cost is above this many "
        "US dollars (default 1).",
        kind="number",
        rule=AtLeast(0, whole=False),
        in_file="max_cost = ... (a file can only lower it)",
    ),
    Option(
        "confirm_cost",
        ("--confirm-cost",),
        "Execution",
        "Embedding services: send even when the estimated cost is above --max-cost.",
        kind="switch",
        file=COMMAND_LINE,
        why_command_line="would spend money past the limit",
    ),
    Option(
        "allow",
        ("--allow",),
        "Execution",
        "Confirm an experiment file's NAME = VALUE that decides where requests, keys or data go "
        "(base_url, key_env, a server's location, a cache or a file outside the file's folder): "
        "the refusal says what to add. Repeatable.",
        many=True,
        file=COMMAND_LINE,
        why_command_line="confirms what a file asks for, so a file cannot give it",
    ),
)
BY_NAME = {o.name: o for o in OPTIONS}
# What a file may write at its top level, besides the tables of experiments.
FILE_KEYS = tuple(o.name for o in OPTIONS if o.file == FILE and o.to in (RUN, SHARED, WORDSET))
FILE_KEYS += ("seed", "description", "params", "grid", "experiments")


def flag_of(name: str, table: Mapping[str, Option] = BY_NAME) -> str:
    """The flag of an option, or `--param NAME=...` for a metric parameter without one."""
    option = table.get(name)
    return option.flag if option is not None else f"--param {name}=..."


def checked(name: str, value: Any, where: str) -> Any:
    """The value, if it meets its option's rule; else the one-line refusal naming where it was given
    (`--limit`, or `exp.toml: limit`)."""
    from bias.core.errors import BiasError

    option = BY_NAME.get(name)
    rule = option.rule if option is not None else None
    if rule is None or rule.fits(value):
        return value
    hint = getattr(rule, "hint", "") or None
    # repr: a file's line break or escape code is shown as `\n`, `\x1b`, not as a line or a colour
    raise BiasError(f"{where} must be {rule.text}, not {value!r}.", hint)
