"""`bias info NAME`: what a plugin or word set is, its parameters, what it needs, where it comes from."""

from __future__ import annotations

import inspect
from typing import Any

from rich.console import Console
from rich.table import Table

from bias.core.errors import BiasError


def describe(name: str) -> list[dict[str, Any]]:
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
                        {"name": p.name, "type": p.type, "default": p.default, "help": p.help} for p in describe_params(plugin)
                    ],
                    "requires": sorted(c.value for c in getattr(plugin, "requires", ())),
                    "capabilities": sorted(c.value for c in getattr(plugin, "capabilities", ())),
                    "data_kind": getattr(plugin, "data_kind", None),
                    "distribution": f"{info.distribution} {info.version}",
                    "entry_point": f"{eps.GROUPS[group]}: {info.name} = {info.value}",
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
                "source": meta.source,
                "licence": meta.licence,
                "notes": meta.notes,
                "sets": {k: {"label": wl.label, "words": list(wl.words)} for k, wl in test.sets().items()},
                "distribution": f"{entry.distribution} {entry.version}",
                "file": entry.path.name,
            }
        )
    if not found:
        hint = eps.suggestions(name, candidates) or "See `bias list`."
        raise BiasError(f"No plugin or word set named '{name}'.", hint)
    return found


def render(console: Console, entry: dict[str, Any]) -> None:
    console.print(f"[bold]{entry['name']}[/bold] ({entry['group'][:-1]}) - {entry['summary']}", highlight=False)
    if entry.get("doc"):
        console.print(entry["doc"], highlight=False)
    console.print()
    if entry["group"] == "wordsets":
        for key in ("kind", "language", "bias_type", "expected_direction", "source", "licence", "notes"):
            if entry.get(key):
                console.print(f"[bold]{key.replace('_', ' ')}:[/bold] {entry[key]}", highlight=False)
        table = Table(title="Sets")
        for column in ("Set", "Label", "Size", "Words"):
            table.add_column(column, overflow="fold")
        for key, s in entry["sets"].items():
            table.add_row(key, s["label"], str(len(s["words"])), ", ".join(s["words"]))
        console.print(table)
    else:
        if entry.get("capabilities"):
            console.print(f"[bold]capabilities:[/bold] {', '.join(entry['capabilities'])}")
        if entry.get("requires"):
            console.print(f"[bold]requires:[/bold] {', '.join(entry['requires'])}; data kind: {entry.get('data_kind')}")
        if entry["parameters"]:
            table = Table(title="Parameters")
            for column in ("Name", "Type", "Default", "Description"):
                table.add_column(column, overflow="fold")
            for p in entry["parameters"]:
                table.add_row(p["name"], p["type"], "(required)" if p["default"] is None and p["name"] == "location" else repr(p["default"]), p["help"])
            console.print(table)
        console.print(f"[bold]entry point:[/bold] {entry['entry_point']}", highlight=False)
    console.print(f"[bold]from:[/bold] {entry['distribution']}", highlight=False)
    console.print()
