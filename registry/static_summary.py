"""A plugin's one-line summary and kind read from its source file, without importing it.

`bias list` must answer in a fraction of a second, yet plugin modules import numpy, scipy or torch.
Their class attributes (`summary`, `capabilities`, `requires`, `requires_any`, `data_kind`) are
plain declarations, so they are read from the module's syntax tree instead: string literals,
`frozenset({Capability.X, ...})` and names bound to strings (in the module, or imported from a
module of `bias.core`, directly or through `bias.api`). Attributes declared on a base class are
followed, whether the base is in the same module or imported from a module of `bias.core` (whose
source is found by its path, never imported: core's packages import numpy), so a metric deriving
from `PairMetric` or `AssociationMetric` inherits their needs here as it does in Python. An
embedder's declared capabilities also tell static vectors (Capability.VOCABULARY) from contextual
models.

Anything not that simple answers None, and the caller imports the plugin as before: the static path
is an optimisation, never a second definition. A module whose file or top-level imports cannot be
found is also left to the import, so that a broken plugin is still reported with its real reason.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

ATTRIBUTES = ("summary", "capabilities", "requires", "requires_any", "data_kind")
_UNKNOWN = object()
_TREES: dict[str, ast.Module | None] = {}
# What reading each module depended on, for a cache of descriptions (registry.listing_cache): the
# files read and whether each top-level import checked was found.
_SOURCES: dict[str, tuple[set[str], dict[str, bool]]] = {}
_RECORDING: list[tuple[set[str], dict[str, bool]]] = []


def describe(value: str) -> dict[str, Any] | None:
    """The declared attributes of the class an entry point `module:Class` names, or None when they
    cannot be read without importing it."""
    module_name, _, qualname = value.partition(":")
    if not qualname or "." in qualname or module_name in sys.modules:
        return None  # already imported: the caller reads the real class at no cost
    tree = _tree(module_name.strip())
    if tree is None:
        return None
    found: dict[str, Any] = {}
    if not _collect(tree, qualname.strip(), found, depth=0):
        return None
    if "summary" not in found:
        return None
    return found


def already_imported(value: str) -> bool:
    """Whether the module of entry point `value` is imported already (`describe` then answers
    None)."""
    return value.partition(":")[0] in sys.modules


def describe_with_sources(value: str) -> tuple[dict[str, Any] | None, list[str], dict[str, bool]]:
    """`describe(value)`, with the files its answer was read from and the top-level imports whose
    presence it checked (name: found): the same answer holds while those are unchanged."""
    files: set[str] = set()
    names: dict[str, bool] = {}
    _RECORDING.append((files, names))
    try:
        found = describe(value)
    finally:
        _RECORDING.pop()
    return found, sorted(files), names


def origin(module_name: str) -> str | None:
    """The source file `describe` reads for a module (None when it has none)."""
    if _framework(module_name):
        return _core_source(module_name)
    spec = importlib.util.find_spec(module_name)
    return spec.origin if spec is not None else None


def _tree(module_name: str) -> ast.Module | None:
    if module_name not in _TREES:
        _TREES[module_name] = _read_tree(module_name)
    files, names = _SOURCES.get(module_name, (set(), {}))
    for recording in _RECORDING:
        recording[0].update(files)
        recording[1].update(names)
    return _TREES[module_name]


def _read_tree(module_name: str) -> ast.Module | None:
    files: set[str] = set()
    names: dict[str, bool] = {}
    _SOURCES[module_name] = (files, names)
    try:
        path = origin(module_name)
        if path and path.endswith(".py"):
            files.add(path)
            source = Path(path).read_text(encoding="utf-8")
            try:
                parsed = ast.parse(_outline(source), filename=path)
            except SyntaxError:  # an outline that does not parse: the whole module, slower but sure
                parsed = ast.parse(source, filename=path)
            return parsed if _imports_resolve(parsed, names) else None
    except (ImportError, ValueError, OSError, SyntaxError, UnicodeDecodeError):
        pass
    return None


def _framework(module_name: str) -> bool:
    """A module of `bias.core` or of `bias.api` (which re-exports core's names for plugins)."""
    return module_name.startswith(("bias.core.", "bias.api.")) or module_name == "bias.api"


def _core_source(module_name: str) -> str | None:
    """The file of a `bias.core` or `bias.api` module, by its path below the package: `find_spec`
    would run the `__init__` of every package on the way, and some of those import numpy."""
    import bias.core  # its __init__ is a docstring

    if module_name.split(".")[1] == "api":
        # runs the namespace `bias` only, not api's __init__
        spec = importlib.util.find_spec("bias.api")
        if spec is None or spec.origin is None:
            return None
        root = Path(spec.origin).parent
    else:
        root = Path(bias.core.__path__[0])
    base = root.joinpath(*module_name.split(".")[2:])
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    return str(path) if path.is_file() else None


def _imported(tree: ast.Module) -> list[tuple[str, str, str]]:
    """(module, name, local name) of what `tree` takes from bias.core or bias.api: its top-level
    `from ... import ...`, those under a top-level `if TYPE_CHECKING:` included (the names bias.api
    loads on first use)."""
    out = []
    for node in tree.body:
        inner = (
            node.body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            else [node]
        )
        for statement in inner:
            if (
                isinstance(statement, ast.ImportFrom)
                and statement.level == 0
                and _framework(statement.module or "")
            ):
                out += [
                    (statement.module or "", alias.name, alias.asname or alias.name)
                    for alias in statement.names
                ]
    return out


def _core_class(tree: ast.Module, name: str, depth: int = 0) -> tuple[ast.Module, str] | None:
    """The module tree and name of a class that `tree` imports from `bias.core` as `name`, following
    the re-exports of a package's `__init__` and of bias.api."""
    for module, imported, local in _imported(tree):
        if local != name:
            continue
        found = _tree(module)
        if found is None or depth > 3:
            return None
        if any(isinstance(n, ast.ClassDef) and n.name == imported for n in found.body):
            return found, imported
        return _core_class(found, imported, depth + 1)
    return None


def _outline(source: str) -> str:
    """The module without its functions and methods: top-level imports (those under `if
    TYPE_CHECKING:` too), assignments and classes with their class-level statements. Parsing a large
    plugin module whole costs more than the rest of `bias list`; its declarations are a few lines.
    Top-level statements are told apart by starting at column 0 outside a multi-line string; inside
    a class, a `def` or decorator at the class's indentation starts a method, skipped up to the next
    statement at that indentation."""
    kept: list[str] = []
    in_string = in_method = keep_block = False
    for line in source.splitlines():
        quotes = line.count('"""') + line.count("'''")
        stripped = line.strip()
        if not in_string and line and not line[0].isspace() and line[0] not in ")]}#":
            keep_block = line.startswith(("import ", "from ", "class ", "if TYPE_CHECKING:")) or (
                "=" in line
                and not line.startswith(
                    ("def ", "async def ", "@", "if ", "try", "with ", "for ", "while ")
                )
            )
            in_method = False
        elif (
            not in_string
            and keep_block
            and line.startswith("    ")
            and not line.startswith("     ")
            and stripped
            and stripped[0] not in ")]}#"
        ):
            in_method = stripped.startswith(("def ", "async def ", "@"))
        if keep_block and not in_method:
            kept.append(line)
        if quotes % 2:
            in_string = not in_string
    return "\n".join(kept) + "\n"


def _imports_resolve(tree: ast.Module, checked: dict[str, bool]) -> bool:
    """Whether every top-level absolute import names an installed module (a missing dependency is
    the usual reason a plugin is broken; the import will then say so). Each top-level name looked
    up is noted in `checked` with whether it was found."""
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module != "__future__"
        ):
            names = [node.module]
        for name in names:
            checked[name.split(".")[0]] = found = installed(name.split(".")[0])
            if not found:
                return False
    return True


def installed(name: str) -> bool:
    """Whether a top-level module of that name can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _collect(tree: ast.Module, class_name: str, found: dict[str, Any], depth: int) -> bool:
    """Fill `found` from the class and then its bases (the class's own declarations win)."""
    node = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None
    )
    if node is None or depth > 5:
        return False
    for statement in node.body:
        target, value = _assignment(statement)
        if target in ATTRIBUTES and target not in found:
            evaluated = _evaluate(value, tree)
            if evaluated is _UNKNOWN:
                return False
            found[target] = evaluated
    for base in node.bases:
        if not isinstance(base, ast.Name):
            continue
        if any(isinstance(n, ast.ClassDef) and n.name == base.id for n in tree.body):
            if not _collect(tree, base.id, found, depth + 1):
                return False
        elif (located := _core_class(tree, base.id)) is not None:
            if not _collect(*located, found, depth + 1):
                return False
    return True


def _assignment(statement: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.value is not None
    ):
        return statement.target.id, statement.value
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return statement.targets[0].id, statement.value
    return None, None


def _evaluate(node: ast.expr | None, tree: ast.Module) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "frozenset"
        and not node.keywords
    ):
        if not node.args:
            return frozenset()
        if len(node.args) == 1 and isinstance(node.args[0], (ast.Set, ast.Tuple, ast.List)):
            members = [_capability(element) for element in node.args[0].elts]
            return _UNKNOWN if _UNKNOWN in members else frozenset(members)
    if isinstance(node, ast.Name):
        return _name(node.id, tree)
    return _UNKNOWN


def _capability(node: ast.expr) -> Any:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Capability"
    ):
        from bias.core.capabilities import Capability

        return Capability.__members__.get(node.attr, _UNKNOWN)
    return _UNKNOWN


def _name(name: str, tree: ast.Module, depth: int = 0) -> Any:
    """A module-level string constant, or one imported from a module of bias.core (directly, or
    through the re-exports of bias.api, whose source is read rather than imported)."""
    for node in tree.body:
        target, value = _assignment(node)
        if target == name and isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
    for module, imported, local in _imported(tree):
        if local != name:
            continue
        if module.split(".")[1] == "api":
            found = _tree(module)
            return _UNKNOWN if found is None or depth > 3 else _name(imported, found, depth + 1)
        loaded = importlib.import_module(module)
        for recording in _RECORDING:
            recording[0].add(str(getattr(loaded, "__file__", None) or module))
        value = getattr(loaded, imported, _UNKNOWN)
        return value if isinstance(value, str) else _UNKNOWN
    return _UNKNOWN
