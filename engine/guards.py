"""What a file may not decide on its own: whether a model's files run code, and where requests, keys
and data go.

An experiment file, a converted BIAS Detection Framework config and the debias.json beside a model
are often someone else's text. The command line is the user's. So:

- an option declared `guard="code"` (it lets a model's files run code) is refused when a file sets
  it to anything but its default, however it is written (a table key, inside a spec's brackets,
  `TRUE`, `1`, `on`): the command line switches it on;
- an option declared `guard="route"` (where requests, keys or data go: a server's URL, the variable
  holding a key, a folder written to), and the LOCATION of an embedder whose location is a network
  address, is taken from a file only when the command line confirms that value with
  `--allow NAME=VALUE`;
- a file the options name to be read (a corpus, templates, debiasing lists) outside the experiment
  file's folder needs the same confirmation;
- an option declared `guard="cost"` from a file can only raise a cost estimate (see
  `bias.engine.spending`).

The rules are read from the plugins' declarations (`bias.core.params.param(..., guard=...)`,
`Embedder.location_is_address`), never from a list of names here, so a third party's embedder is
held to them as the first-party ones are. Every refusal names the file, the option and what to add
to the command line (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from bias.core.errors import BiasError
from bias.core.params import coerce_params, describe_params
from bias.core.specs import ModelSpec, parse_spec, split_debias

CODE, ROUTE, COST = "code", "route", "cost"
LOCATION = "location"  # the name --allow confirms a network LOCATION under
WORDSET = "wordset"  # the name --allow confirms a word-set file outside the file's folder under
# Options naming a file to read; in an experiment file they are read against the file's folder, and
# one outside it needs --allow. (Their values go into a run as data, never as code.)
PATH_OPTIONS = ("corpus", "templates", "prompts", "debias_corpus", "debias_lists", "cache_dir")
ALWAYS_FILES = ("corpus", "debias_corpus", "cache_dir")  # never the name of an installed word set


@attrs.frozen
class Allowed:
    """What the command line confirmed with `--allow NAME=VALUE` (repeatable): a file's route option
    NAME is taken only with one of the values confirmed for it."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, given: Sequence[str]) -> Allowed:
        pairs = []
        for text in given:
            name, sep, value = str(text).partition("=")
            name = name.strip().lower().replace("-", "_")
            name = WORDSET if name == "wordsets" else name  # the grid form's field name
            if not sep or not name or not value.strip():
                raise BiasError(
                    f"--allow {text!r} is not NAME=VALUE.",
                    "For example --allow base_url=http://127.0.0.1:8000/v1 or "
                    "--allow key_env=MY_KEY "
                    "(the refusal says what to add).",
                )
            pairs.append((name, value.strip()))
        return cls(tuple(pairs))

    def confirms(self, name: str, value: Any) -> bool:
        return any(n == name and same_value(name, v, str(value)) for n, v in self.pairs)


def same_value(name: str, given: str, written: str) -> bool:
    """Whether the command line's value confirms the file's, compared as what the option is: a file
    or folder option as the same path however written (links resolved), a URL as the same scheme,
    host, port and path (a final slash aside), and anything else (a key's variable name) as the
    same text. A name is never compared as a path: a link named like one variable in the working
    folder must not confirm another."""
    if given == written:
        return True
    if name in PATH_OPTIONS or name == WORDSET:
        try:
            mine, theirs = Path(given).expanduser().resolve(), Path(written).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            return False
        # A folder confirms the word sets in it (a converted config's datasets, saved elsewhere).
        return mine == theirs or (name == WORDSET and mine.is_dir() and mine in theirs.parents)
    if "://" in given and "://" in written:
        return same_url(given, written)
    return False


_PORTS = {"http": 80, "https": 443}


def same_url(given: str, written: str) -> bool:
    """Two URLs that reach the same place with the same credentials: compared parsed (scheme and
    host case, a default port, a final slash aside); text a parser could read two ways (spaces,
    control characters, backslashes) only as the same text."""
    from urllib.parse import urlsplit

    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in given + written):
        return False

    def key(url: str) -> tuple[Any, ...]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        return (
            scheme,
            parts.username,
            parts.password,
            (parts.hostname or "").lower(),
            parts.port or _PORTS.get(scheme),
            parts.path.rstrip("/"),
            parts.query,
            parts.fragment,
        )

    try:
        return key(given) == key(written)
    except ValueError:  # an unclosed IPv6 bracket, a port that is no number
        return False


def allow_hint(name: str, value: Any) -> str:
    """The confirmation to type, quoted for a shell where the value needs it (quotes, spaces, `&`):
    copied as printed, it confirms the very value the file wrote."""
    import shlex

    from bias.core.text import visible

    shown = resolved(value) if name in PATH_OPTIONS or name == WORDSET else str(value)
    # a line break or escape code the file put in the value is shown, not acted on
    return f"--allow {visible(shlex.quote(f'{name}={shown}'))}"


def resolved(value: Any) -> str:
    try:
        return str(Path(str(value)).expanduser().resolve())
    except (OSError, RuntimeError, ValueError):
        return str(value)


def code_flag(name: str, flags: Mapping[str, str]) -> str:
    """How the command line switches a code option on: the front end's own flag for it, else the
    generic --model-option."""
    return flags.get(name) or f"--model-option {name}=true"


def refuse_code(
    origin: str, where: str, name: str, flags: Mapping[str, str], written: str = ""
) -> BiasError:
    """The refusal of a code option `name` (as the file wrote it: `written`) that a file sets."""
    written = written or name
    return BiasError(
        f"{origin}: {where} sets {written}, which lets a model's files run code; "
        "a file cannot switch that on.",
        f"If you trust the file and its models, remove {written} from it and give "
        f"{code_flag(name, flags)} on the command line.",
    )


@attrs.frozen
class Need:
    """A route a file gave that the command line has not confirmed: where, which option, value."""

    origin: str
    where: str
    name: str
    value: str
    what: str


def refuse_routes(needs: Sequence[Need]) -> BiasError:
    """One refusal for every route a file gave unconfirmed, with each --allow that confirms one."""
    first = needs[0]
    more = f" (and {len(needs) - 1} more, each named by an --allow below)" if len(needs) > 1 else ""
    flags = " ".join(dict.fromkeys(allow_hint(n.name, n.value) for n in needs))
    return BiasError(
        f"{first.origin}: {first.where} sets {first.name} = "
        f"{first.value!r}{_host_of(first.value)}, "
        f"which {first.what}; "
        f"a file alone does not decide that{more}.",
        f"If you trust {'it' if len(needs) == 1 else 'them'}, confirm on the command line with "
        f"{flags} "
        f"(or remove {'it' if len(needs) == 1 else 'them'} from the file).",
    )


ROUTE_WHAT = "decides where requests, keys or data go"


def _host_of(value: str) -> str:
    """For a URL whose first-read host is not its host (`http://a:1@b:2/v1` goes to b): where it
    goes, said beside it."""
    from urllib.parse import urlsplit

    if "://" not in value or "@" not in value:
        return ""
    try:
        parts = urlsplit(value)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f" (a user name and password, then the host {host}{f':{port}' if port else ''})"


def check_model(
    spec: ModelSpec,
    origin: str,
    allowed: Allowed,
    flags: Mapping[str, str],
    *,
    where: str = "",
    folder: Path | None = None,
    needs: list[Need],
) -> None:
    """Refuse a code option a file gave one model, and add to `needs` every route it gave that the
    command line has not confirmed (see the module's rules). `spec.options` are the options as the
    file wrote them, debiasing settings included."""
    from bias.registry.resolve import embedder_class

    where = where or f"model {spec}"
    written, debias = split_debias(spec.options)
    own = {
        str(k).replace("-", "_"): v for k, v in written.items()
    }  # as the embedder's parameters read them
    cls = embedder_class(spec.embedder)
    declared = {p.name: p for p in describe_params(cls)}
    guarded = {k: v for k, v in own.items() if k in declared and declared[k].guard in (CODE, ROUTE)}
    try:  # an unknown name, or a table where text belongs: said with the file that wrote it
        values = coerce_params(cls, guarded, spec.embedder) if guarded else {}
        rest = coerce_params(cls, {k: v for k, v in own.items() if k not in guarded}, spec.embedder)
    except BiasError as exc:
        raise BiasError(f"{origin}: {where}: {exc.message}", exc.hint) from None
    for name, value in values.items():
        info = declared[name]
        if value == info.default or (value in ("", None) and info.default in ("", None)):
            continue  # the default routes nowhere new and runs nothing
        if info.guard == CODE:
            raise refuse_code(origin, where, name, flags)
        if name in PATH_OPTIONS:
            continue  # a folder: the path rule below decides
        if not allowed.confirms(name, value):
            needs.append(Need(origin, where, name, str(value), ROUTE_WHAT))
    if getattr(cls, "location_is_address", False) and not allowed.confirms(LOCATION, spec.location):
        what = "is the network address its requests and any key go to"
        needs.append(Need(origin, where, LOCATION, spec.location, what))
    paths = {k: v for k, v in own.items() if k in PATH_OPTIONS and k in declared}
    if debias is not None:
        paths.update({k: v for k, v in debias.as_options().items() if k in PATH_OPTIONS})
    # A folder declared as a route (where a cache is written) needs --allow wherever it is.
    routes = {
        name for name, info in declared.items() if info.guard == ROUTE and name in PATH_OPTIONS
    }
    check_paths(paths, origin, where, allowed, folder, needs, always=routes)
    try:  # a value out of its bounds (retries = 1000000), said with the file and the model
        cls(location=spec.location, **values, **rest)
    except BiasError as exc:
        raise BiasError(f"{origin}: {where}: {exc.message}", exc.hint) from None


def check_paths(
    options: Mapping[str, Any],
    origin: str,
    where: str,
    allowed: Allowed,
    folder: Path | None,
    needs: list[Need],
    always: Iterable[str] = (),
) -> None:
    """A file named by a file's options is read where the file's folder holds it; elsewhere (an
    absolute path, `..`, a link leading out) only with --allow NAME=PATH."""
    always = set(always)
    for name, value in options.items():
        if name not in PATH_OPTIONS or not isinstance(value, str) or not value.strip():
            continue
        if not names_a_file(name, value):
            continue
        if name not in always and folder is not None and inside(value, folder):
            continue
        if not allowed.confirms(name, value):
            what = (
                "decides where data is written"
                if name in always
                else "reads a file outside the experiment file's folder"
            )
            needs.append(Need(origin, where, name, resolved(value), what))


def names_a_file(name: str, value: str) -> bool:
    """Whether an option's value is read as a file (the registry reads a path before a name)."""
    from bias.registry.resolve import looks_like_path

    return name in ALWAYS_FILES or Path(value).expanduser().is_absolute() or looks_like_path(value)


def inside(value: str, folder: Path) -> bool:
    try:
        path, base = Path(value).expanduser().resolve(), folder.resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return path == base or base in path.parents


def check_metric_params(
    metric: str,
    params: Mapping[str, Any],
    origin: str,
    allowed: Allowed,
    flags: Mapping[str, str],
    folder: Path | None,
    needs: list[Need],
) -> None:
    """The same rules for a metric's parameters from a file: its code and route options, and the
    files it reads."""
    from bias.registry import entry_points as eps

    declared = {p.name: p for p in describe_params(eps.load("metrics", metric))}
    where = f"metric {metric}"
    for name, value in params.items():
        info = declared.get(name.replace("-", "_"))
        if info is None or info.guard not in (CODE, ROUTE) or value == info.default:
            continue
        if info.guard == CODE:
            raise refuse_code(origin, where, info.name, flags)
        if info.name not in PATH_OPTIONS and not allowed.confirms(info.name, value):
            needs.append(Need(origin, where, info.name, str(value), ROUTE_WHAT))
    paths = {k.replace("-", "_"): v for k, v in params.items()}
    check_paths(paths, origin, where, allowed, folder, needs)


def check_wordset(
    wordset: str,
    origin: str,
    allowed: Allowed,
    folders: Sequence[Path],
    needs: list[Need],
) -> None:
    """A word-set file a file names is read, and its words sent to the file's models, only from the
    file's folder (or a folder the command line gave, such as --datasets); from elsewhere with
    --allow wordset=PATH. An installed name such as en/weat1 is no file."""
    if not isinstance(wordset, str) or not wordset.strip() or not names_a_file(WORDSET, wordset):
        return
    if any(inside(wordset, f) for f in folders) or allowed.confirms(WORDSET, wordset):
        return
    what = "reads a file outside the experiment file's folder"
    needs.append(Need(origin, "wordsets", WORDSET, resolved(wordset), what))


def check_file_experiments(
    experiments: Sequence[Any],
    allowed: Allowed,
    flags: Mapping[str, str],
    data_folders: Sequence[Path] = (),
) -> None:
    """Every model, word-set file and metric of experiments read from a file (`ModelConfig.origin`),
    before any is built: a code option is refused at once; the routes and files left unconfirmed are
    refused together, the refusal naming every --allow that would confirm them. `data_folders`:
    folders the command line chose that word sets may be read from (a framework config's
    datasets)."""
    seen: set[tuple[str, str]] = set()
    needs: list[Need] = []
    for e in experiments:
        model = e.model
        if not model.origin:
            continue
        folder = Path(model.origin).parent
        key = (model.label(), model.origin)
        if key not in seen:
            seen.add(key)
            options = model.written_options()
            written = ModelSpec(model.parsed.embedder, model.parsed.location, options)
            where = f"model {model.spec}"
            check_model(
                written, model.origin, allowed, flags, where=where, folder=folder, needs=needs
            )
        if (WORDSET, e.wordset) not in seen:
            seen.add((WORDSET, e.wordset))
            check_wordset(e.wordset, model.origin, allowed, [folder, *data_folders], needs)
        metric_key = (f"{e.metric}:{sorted(map(str, e.params.items()))}", model.origin)
        if metric_key not in seen:
            seen.add(metric_key)
            check_metric_params(e.metric, e.params, model.origin, allowed, flags, folder, needs)
    if needs:
        raise refuse_routes(needs)


def check_spec_from_file(
    spec: str, origin: str, allowed: Allowed, flags: Mapping[str, str], what: str
) -> None:
    """A model spec written in a file for another purpose (a metric's `original` model, the
    `source_model` of a debias.json): the same rules as the file's own models."""
    needs: list[Need] = []
    check_model(
        parse_spec(spec),
        origin,
        allowed,
        flags,
        where=what,
        folder=Path(origin).parent,
        needs=needs,
    )
    if needs:
        raise refuse_routes(needs)


def code_option_names() -> dict[str, str]:
    """Every option an installed plugin declares with guard="code", by its name as a file could
    write it (lowercase, `-` or `_`): to refuse such a key anywhere in an experiment file."""
    from bias.registry import entry_points as eps

    names: dict[str, str] = {}
    for group in ("embedders", "metrics", "debiasers"):
        for info in eps.entry_points(group):
            try:
                cls = eps.load(group, info.name)
            except BiasError:  # a broken plugin is reported where it is used
                continue
            for p in describe_params(cls):
                if p.guard == CODE:
                    names[p.name] = p.name
    return names
