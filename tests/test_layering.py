"""The layers point one way. Every import of every product module is read from its source, including
imports inside functions (the usual way a cycle is hidden), and checked against the layer rules that
docs/architecture.md describes:

    cli -> engine -> registry -> core;  plugins -> api -> core;  testing -> engine, registry, core

A plugin never imports another plugin module (not even a sibling): shared code belongs in core. The
first-party plugins, the language packages and the third-party example import the framework through
`bias.api` only, as any third party does (their tests may use `bias.testing` too).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The layers each layer may import from (besides itself, except plugins: see below).
ALLOWED = {
    "core": {"core"},
    "registry": {"registry", "core"},
    "engine": {"engine", "registry", "core"},
    "plugins": {"api"},
    "api": {"api", "core"},
    "testing": {"testing", "engine", "registry", "core"},
    "cli": {"cli", "engine", "registry", "core"},
}
MAX_LINES = 500


def _package_dirs() -> dict[str, Path]:
    """bias.<layer> -> its folder, read from pyproject so a new top-level package cannot escape the check."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name.removeprefix("bias."): ROOT / folder for name, folder in mapping.items() if name.count(".") == 1}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for layer, folder in _package_dirs().items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.append((".".join(("bias", layer, *parts)), path))
    return out


def imported_modules(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every `bias.` import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name in ("bias", "bias.plugins"):  # `from bias import registry` imports a module
                found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names]
            if name != "bias":
                found.append((node.lineno, name))
    return [(line, name) for line, name in found if name.startswith("bias.")]


def violations() -> list[str]:
    problems = []
    for module, path in _modules():
        layer = module.split(".")[1]
        for line, target in imported_modules(module, path):
            to = target.split(".")[1]
            if to not in ALLOWED[layer]:
                problems.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {target} ({to})")
            elif layer == "plugins" and to == "plugins":
                problems.append(f"{path.relative_to(ROOT)}:{line} imports another plugin module {target}")
    return problems


# Code outside the product that is written as a third party's: only bias.api (and bias.testing in tests).
OUTSIDE = ("languages", "examples/thirdparty")


def outside_violations() -> list[str]:
    problems = []
    for base in OUTSIDE:
        for path in sorted((ROOT / base).rglob("*.py")):
            allowed = {"api", "testing"} if "tests" in path.relative_to(ROOT).parts else {"api"}
            for line, target in imported_modules("outside.module", path):
                if target.split(".")[1] not in allowed:
                    problems.append(f"{path.relative_to(ROOT)}:{line} imports {target}; use bias.api")
    return problems


def test_language_packages_and_the_third_party_example_import_bias_api_only(tmp_path: Path) -> None:
    assert len(list((ROOT / "languages").rglob("bias_lang_*/__init__.py"))) >= 7  # the walk found them
    problems = outside_violations()
    assert not problems, "\n".join(problems)
    planted = tmp_path / "bad.py"
    planted.write_text("from bias.core.data.wordsets import DataPackage\n")
    assert [name for _, name in imported_modules("outside.module", planted)] == ["bias.core.data.wordsets"]


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "import os\nfrom bias.core import stats\n\ndef f():\n    from bias.registry.resolve import x\n"
        "    from . import sibling\n    from ..metrics import weat\n    from bias import engine\n"
    )
    found = [name for _, name in imported_modules("bias.plugins.embedders.mod", source)]
    assert found == ["bias.core", "bias.registry.resolve", "bias.plugins.embedders", "bias.plugins.metrics", "bias.engine"]


def test_layers_point_one_way() -> None:
    assert len(_modules()) > 80  # the walk found the product
    problems = violations()
    assert not problems, "imports against the layering (see docs/architecture.md):\n" + "\n".join(problems)


@pytest.mark.parametrize("module,path", _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_module_over_500_lines(module: str, path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by job (see docs/architecture.md)"


# Inside core, the sub-packages by concern (docs/architecture.md, "The core, by concern"); `base` is the
# modules at the top of core/ (interfaces, data model, parameters, errors, specs, text).
CORE_ALLOWED = {
    # Only inside functions or for type checking (see below): `Cost` in annotations, and the default of
    # `Embedder.choice_log_probs`, which scores choices through `models/choices.py`.
    "base": {"base", "models", "runs"},
    "statistics": {"base"},
    "framework": {"base", "data"},
    "data": {"base"},
    "association": {"base", "data", "statistics", "runs"},
    "pair_metrics": {"base", "data"},
    "models": {"base", "data", "runs"},
    "runs": {"base", "statistics"},
    "reports": {"base", "statistics", "runs"},
    "bbq": {"base", "data", "statistics"},
    "decisions": {"base", "data", "statistics"},
}


def _core_part(module: str) -> str | None:
    """The core sub-package a module belongs to ('base' for the modules at the top of core/)."""
    parts = module.split(".")
    if parts[:2] != ["bias", "core"] or len(parts) < 3:
        return None
    return parts[2] if (ROOT / "core" / parts[2]).is_dir() else "base"


def _module_level_imports(path: Path) -> list[tuple[int, str]]:
    """Imports that run when the module loads: not inside a function, nor under `if TYPE_CHECKING`."""
    found = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom) and node.module:
                found.append((node.lineno, node.module))
            elif isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                visit(handler.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def test_core_sub_packages_point_one_way() -> None:
    problems = []
    for module, path in _modules():
        source = _core_part(module)
        if source is None:
            continue
        for line, target in imported_modules(module, path):
            to = _core_part(target)
            if to is not None and to != source and to not in CORE_ALLOWED[source]:
                problems.append(f"{path.relative_to(ROOT)}:{line}: core/{source} imports {target}")
        if source == "base":
            for line, target in _module_level_imports(path):
                to = _core_part(target)
                if to not in (None, "base"):
                    problems.append(f"{path.relative_to(ROOT)}:{line}: a base module of core imports {target} when it loads")
    assert not problems, "\n".join(problems)


def test_every_core_sub_package_has_a_rule() -> None:
    folders = {p.name for p in (ROOT / "core").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(CORE_ALLOWED), f"core sub-packages without a rule in CORE_ALLOWED: {sorted(folders - set(CORE_ALLOWED))}"
