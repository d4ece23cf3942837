"""`bias info NAME`: what a plugin or word set is, its parameters, what it needs, where it comes
from."""

from __future__ import annotations

import inspect
import re
from typing import Any

from rich.console import Console
from rich.table import Table

from bias.cli.say import cell, say, say_whole
from bias.core.did_you_mean import suggestions
from bias.core.errors import BiasError


# What `bias info` adds to a guarded parameter's description (see README, "Security").
HELP_CHARS = 1000  # a parameter's help, the plugin's own words: longer than a word or path shown
GUARD_NOTES = {
    "code": " [runs code: from the command line only]",
    "route": " [where requests, keys or data go: from a file only with --allow NAME=VALUE]",
    "cost": " [a price: from a file it can only raise the estimate]",
}


def plugin_documentation(name: str) -> list[dict[str, Any]]:
    from bias.core.params import describe_params
    from bias.registry import entry_points as eps
    from bias.registry.catalogue import kind_of, wordset_entries

    found: list[dict[str, Any]] = []
    candidates: list[str] = []
    for group in ("embedders", "metrics", "debiasers"):
        infos = eps.entry_points(group)
        candidates += [i.name for i in infos]
        for info in infos:
            if info.name != name:
                continue
            plugin = eps.load(group, name)
            found.append(
                {
                    "group": group,
                    "name": name,
                    "summary": getattr(plugin, "summary", ""),
                    "doc": inspect.cleandoc(plugin.__doc__ or ""),
                    "kind": kind_of(group, plugin),
                    "parameters": [
                        {
                            "name": p.name,
                            "type": p.type,
                            "default": p.default,
                            "help": p.help,
                            "guard": p.guard,
                        }
                        for p in describe_params(plugin)
                    ],
                    "requires": sorted(c.value for c in getattr(plugin, "requires", ()))
                    + (
                        [" or ".join(sorted(c.value for c in plugin.requires_any))]
                        if getattr(plugin, "requires_any", None)
                        else []
                    ),
                    "capabilities": sorted(c.value for c in getattr(plugin, "capabilities", ())),
                    "data_kind": getattr(plugin, "data_kind", None),
                    "distribution": f"{info.distribution} {info.version}",
                    "entry_point": f"{eps.GROUPS[group]}: {info.name} = {info.value}",
                    **_method_page(group, name, info.distribution),
                }
            )
    entries = wordset_entries()
    candidates += list(entries)
    if name in entries:
        from bias.registry import load_wordset

        entry = entries[name]
        test = load_wordset(name)
        meta = test.meta
        found.append(
            {
                "group": "wordsets",
                "name": name,
                "summary": meta.title,
                "doc": meta.description,
                "kind": meta.kind,
                "language": meta.language,
                "bias_type": meta.bias_type,
                "expected_direction": meta.expected_direction,
                "concept": getattr(meta, "concept", ""),
                "descriptor": getattr(meta, "descriptor", ""),
                "source": meta.source,
                "licence": meta.licence,
                "notes": meta.notes,
                "sets": _contents(test),
                "multi_word_stimuli": static_model_note(test),
                "distribution": f"{entry.distribution} {entry.version}",
                "file": entry.path.name,
            }
        )
    if not found:
        hint = suggestions(name, candidates) or "See `bias list`."
        raise BiasError(f"No plugin or word set named '{name}'.", hint)
    return found


def static_model_note(test: Any) -> str:
    """Which stimuli are phrases, and what a static model does with them (see
    `multi_word_entries`)."""
    from bias.core.association.lookup import LOST_THRESHOLD
    from bias.core.data.content_checks import multi_word_entries, static_loss

    found = multi_word_entries(test)
    if not found:
        return ""
    sets = test.sets()
    parts = [
        f"{key} {static_loss(list(sets[key].words), words, LOST_THRESHOLD)}: {', '.join(words)}"
        for key, words in found.items()
    ]
    return "static models (fastText, word2vec, GloVe) have no vector for a phrase; " + "; ".join(
        parts
    )


def _method_page(group: str, name: str, distribution: str) -> dict[str, str]:
    """Where the framework's own metrics and debiasers are documented (definition, sign,
    conventions)."""
    if distribution != "bias-framework" or group not in ("metrics", "debiasers"):
        return {}
    return {"method": f"docs/methods.md#{name}, in the bias-framework repository"}


def _contents(data: Any) -> dict[str, dict[str, Any]]:
    """What a word set holds, for any kind: the four sets of an association test, or each list-like
    field of the other kinds (templates, pairs, definitional pairs, analogy sections, ...)."""
    import attrs

    if hasattr(data, "sets") and callable(data.sets):
        return {k: {"label": wl.label, "words": list(wl.words)} for k, wl in data.sets().items()}
    out: dict[str, dict[str, Any]] = {}
    if not attrs.has(type(data)):
        return out
    for field in attrs.fields(type(data)):
        value = getattr(data, field.name)
        if field.name == "meta" or not isinstance(value, (list, tuple, dict)) or not value:
            continue
        items = (  # a value named as its key (a forms table) stands for both
            [v if getattr(v, "name", None) == k else (k, v) for k, v in value.items()]
            if isinstance(value, dict)
            else list(value)
        )
        out[field.name] = {
            "label": field.name.replace("_", " "),
            "words": [_short(item) for item in items],
        }
    return out


def _short(item: Any) -> str:
    """One item of a word set in a few words: its text or name; a group of applicants by its key and
    its names; a scenario by its id and decision; a forms table by its name and forms."""
    names = getattr(item, "names", None)
    if isinstance(getattr(item, "key", None), str) and isinstance(names, tuple):
        shown = ", ".join(_short(n) for n in names[:6]) + (", ..." if len(names) > 6 else "")
        return f"{item.key} ({len(names)} names: {shown})"
    if isinstance(getattr(item, "id", None), str) and isinstance(
        getattr(item, "decision", None), str
    ):
        return f"{item.id} ({item.decision})"
    values = getattr(item, "values", None)
    if isinstance(getattr(item, "name", None), str) and isinstance(values, dict):
        return f"{item.name}: " + "/".join(dict.fromkeys(str(v) for v in values.values()))
    for attr in ("text", "name", "word"):
        if isinstance(getattr(item, attr, None), str):
            return getattr(item, attr)
    if hasattr(item, "more") and hasattr(item, "less"):
        return f"{item.more} / {item.less}"
    if isinstance(item, (list, tuple)):
        return " / ".join(_short(i) for i in item)
    return str(item)


def reflow(doc: str) -> str:
    """A docstring's paragraphs as single lines, so the terminal wraps them at its own width instead
    of breaking them again where the source was wrapped; list items and indented lines keep their
    break."""
    paragraphs = []
    for paragraph in doc.split("\n\n"):
        lines = paragraph.split("\n")
        joined = [lines[0]]
        for line in lines[1:]:
            if line.startswith((" ", "\t", "- ", "* ")) or re.match(r"\d+[.)] ", line):
                joined.append(line)
            else:
                joined[-1] = f"{joined[-1]} {line.strip()}"
        paragraphs.append("\n".join(joined))
    return "\n\n".join(paragraphs)


def parameters_table(entry: dict[str, Any], flags: dict[str, str] | None = None) -> Table:
    """A plugin's declared parameters; `flags`: the command line's own flag of a parameter, shown
    beside its name (`bias run --metric NAME --help`)."""
    flags = flags or {}
    table = Table(title="Parameters")
    for column in ("Name", "Type", "Default", "Description"):
        table.add_column(column, overflow="fold")
    for p in entry["parameters"]:
        default = (
            "(required)" if p["default"] is None and p["name"] == "location" else repr(p["default"])
        )
        name = p["name"] + (f" ({flags[p['name']]})" if p["name"] in flags else "")
        table.add_row(
            cell(name),
            cell(p["type"]),
            cell(default),
            cell(p["help"] + GUARD_NOTES.get(p.get("guard"), ""), HELP_CHARS),
        )
    return table


def render(console: Console, entry: dict[str, Any]) -> None:
    say(console, (entry["name"], "bold"), f" ({entry['group'][:-1]}) - {entry['summary']}")
    if entry.get("doc"):
        say_whole(console, reflow(entry["doc"]))  # plain text, whole: "[CLS]" is not markup
    console.print()
    if entry["group"] == "wordsets":
        for key in (
            "kind",
            "language",
            "bias_type",
            "expected_direction",
            "concept",
            "descriptor",
            "source",
            "licence",
            "notes",
            "multi_word_stimuli",
        ):
            if entry.get(key):
                say(console, (f"{key.replace('_', ' ')}:", "bold"), f" {entry[key]}")
        table = Table(title="Sets")
        for column in ("Set", "Label", "Size", "Words"):
            table.add_column(column, overflow="fold")
        for key, s in entry["sets"].items():
            shown = (
                s["words"]
                if len(s["words"]) <= 40
                else [*s["words"][:40], f"... ({len(s['words']) - 40} more)"]
            )
            table.add_row(cell(key), cell(s["label"]), str(len(s["words"])), cell(", ".join(shown)))
        console.print(table)
    else:
        if entry.get("capabilities"):
            say(console, ("capabilities:", "bold"), f" {', '.join(entry['capabilities'])}")
        if entry.get("requires"):
            kind = f"; data kind: {entry['data_kind']}" if entry.get("data_kind") else ""
            say(console, ("requires:", "bold"), f" {', '.join(entry['requires'])}{kind}")
        if entry["parameters"]:
            console.print(parameters_table(entry))
        say(console, ("entry point:", "bold"), f" {entry['entry_point']}")
        if entry.get("method"):
            say(console, ("method:", "bold"), f" {entry['method']}")
    say(console, ("from:", "bold"), f" {entry['distribution']}")
    console.print()
