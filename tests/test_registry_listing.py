"""Listing is cheap: entry points read once, summaries read from source, word sets from their headers.

The fast paths must answer exactly what importing the plugin or parsing the whole file answers, and
must step aside (import, parse) whenever they cannot be sure, so a broken plugin is still reported.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap

from bias import registry
from bias.core.compatibility import describe_needs
from bias.registry import entry_points as eps
from bias.registry import static_summary
from bias.registry.catalogue import read_header
from bias.core.data.file_reading import read_toml
from test_registry import make_distribution, run_bias


def test_listing_imports_no_plugin_module_and_no_numeric_library():
    code = textwrap.dedent(
        """
        import sys
        from bias import registry
        rows = registry.list_plugins()
        assert len(rows) > 100, len(rows)
        packages = ("bias.plugins.embedders", "bias.plugins.metrics", "bias.plugins.debiasers", "bias.plugins.formats")  # empty __init__ files
        heavy = sorted(m for m in sys.modules if (m.startswith("bias.plugins.") and m not in packages) or m.split(".")[0] in ("numpy", "scipy", "torch", "gensim"))
        print(heavy)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_entry_points_are_read_once_per_process(monkeypatch):
    calls = []
    real = importlib.metadata.entry_points

    def counting(*args, **kwargs):
        calls.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    eps.refresh()

    def everything():
        registry.list_plugins()
        registry.list_plugins("metrics")
        registry.get("metric", "weat")
        registry.load_wordset("en/weat6")

    everything()
    # At most stevedore's scan (when its entry-point cache is cold) and one read of the distributions'
    # names, which a listing shows; then nothing more in this process.
    first = len(calls)
    assert 1 <= first <= 2, calls
    everything()
    assert len(calls) == first
    # Finding and loading a plugin by name reads no distribution's metadata: stevedore's cache says.
    eps.refresh()
    calls.clear()
    registry.get("metric", "weat")
    registry.load_wordset("en/weat6")
    assert calls == []


def test_static_summaries_agree_with_the_imported_classes():
    from bias.registry.catalogue import kind_of

    checked = 0
    for group in ("embedders", "metrics", "debiasers"):
        for info in eps.entry_points(group):
            module = info.value.split(":")[0]
            static_summary._TREES.pop(module, None)
            saved = sys.modules.pop(module, None)  # read as if never imported
            try:
                declared = static_summary.describe(info.value)
            finally:
                if saved is not None:
                    sys.modules[module] = saved
            plugin = eps.load(group, info.name)
            assert declared is not None, info.value
            assert declared["summary"] == plugin.summary
            for key in ("capabilities", "requires", "requires_any", "data_kind"):
                if key in declared:
                    assert declared[key] == getattr(plugin, key), (info.value, key)
            if group == "metrics":
                assert describe_needs(type("Declared", (), declared)) == describe_needs(plugin)
            checked += 1
    assert checked >= 25
    rows = {(r.group, r.name): r for r in registry.list_plugins()}
    assert rows[("metrics", "kls")].kind == kind_of("metrics", eps.load("metrics", "kls"))


def test_plugin_whose_dependency_is_missing_is_still_reported_broken(tmp_path, monkeypatch):
    module = tmp_path / "bias_needs_missing.py"
    module.write_text(
        "import bias_dependency_not_installed\n\n"
        "class Shaky:\n    summary = 'looks fine from its source'\n    capabilities = frozenset()\n"
    )
    root = make_distribution(tmp_path / "site", "bias-needs-missing", {"bias.embedders": {"shaky": "bias_needs_missing:Shaky"}}, module)
    monkeypatch.syspath_prepend(str(root))
    row = next(r for r in registry.list_plugins("embedders") if r.name == "shaky")
    assert row.status == "broken" and "bias_dependency_not_installed" in row.reason


def test_needs_declared_on_a_core_base_class_are_read_from_its_source(tmp_path, monkeypatch):
    """A metric deriving from PairMetric or AssociationMetric (the latter through the package that
    re-exports it) inherits their declared needs in the listing too, and listing imports neither."""
    import subprocess
    import sys

    module = tmp_path / "bias_inherits_needs.py"
    module.write_text(
        "from bias.core.association import AssociationMetric\n"
        "from bias.core.pair_metrics.metric import PairMetric\n\n"
        "class Margin(PairMetric):\n    summary = 'pair margin'\n\n"
        "class Gap(AssociationMetric):\n    summary = 'centroid gap'\n"
    )
    probe = (
        "import sys; from bias.registry import static_summary as s\n"
        "m = s.describe('bias_inherits_needs:Margin'); g = s.describe('bias_inherits_needs:Gap')\n"
        "print(sorted(map(str, m['requires_any'])), m['data_kind'], sorted(map(str, g['requires'])), g['data_kind'],\n"
        "      'numpy' in sys.modules, 'bias.core.pair_metrics.metric' in sys.modules, 'bias_inherits_needs' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert out.strip() == "['causal-lm', 'masked-lm'] pairs ['word-vectors'] association False False False"


def test_summary_not_declared_as_a_literal_is_taken_from_the_import(tmp_path, monkeypatch):
    module = tmp_path / "bias_computed_summary.py"
    module.write_text(
        "from bias.core.interfaces import Capability\n\n"
        "class Computed:\n    summary = ' '.join(['built', 'at', 'import'])\n"
        "    capabilities = frozenset({Capability.WORD_VECTORS})\n"
    )
    root = make_distribution(tmp_path / "site", "bias-computed", {"bias.embedders": {"computed": "bias_computed_summary:Computed"}}, module)
    monkeypatch.syspath_prepend(str(root))
    assert static_summary.describe("bias_computed_summary:Computed") is None
    row = next(r for r in registry.list_plugins("embedders") if r.name == "computed")
    assert row.status == "ok" and row.summary == "built at import" and row.kind == "word vectors"


def test_header_of_every_installed_word_set_equals_its_full_parse():
    from bias.registry.catalogue import wordset_entries

    entries = wordset_entries()
    assert len(entries) > 50
    for entry in entries.values():
        full = read_toml(entry.path)
        header = read_header(entry.path)
        assert {k: full[k] for k in header} == header, entry.name
        assert all(full.get(k) == header.get(k) for k in ("kind", "language", "bias_type", "title", "licence"))


def test_header_falls_back_to_the_whole_file_when_the_cut_is_not_clean(tmp_path):
    path = tmp_path / "tricky.toml"
    path.write_text(
        'kind = "association"\nlanguage = "en"\nbias_type = "gender"\nsource = "s"\nlicence = "CC0-1.0"\n'
        'notes = """first line\n[not a table] but text inside a string\n"""\ntitle = "after the string"\n'
        '[sets.X]\nwords = ["a"]\n'
    )
    header = read_header(path)
    assert header["title"] == "after the string" and header["licence"] == "CC0-1.0"
    path.write_text(path.read_text().replace('title = "after the string"\n', "").replace('kind = "association"\n', 'kind = "association"\ntitle = "first"\n'))
    assert read_header(path)["title"] == "first"


def test_bias_list_lists_a_broken_word_set_header(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('kind = "association"\nlanguage = "en"\nbias_type = "gender"\nsource = "s"\nlicence = ""\n[sets.X]\nwords = ["a"]\n')
    from bias.registry.catalogue import _wordset_row

    info = eps.entry_points("wordsets")[0]
    row = _wordset_row("en/bad", path, info)
    assert row.status == "broken" and "licence" in row.reason


def test_bias_list_and_info_from_the_command_line():
    proc = run_bias(["list", "metrics"])
    assert proc.returncode == 0 and "weat" in proc.stdout and "Word Embedding Association Test" in proc.stdout
    proc = run_bias(["info", "en/weat6"])
    assert proc.returncode == 0 and "Career" in proc.stdout


def test_outline_of_every_first_party_plugin_parses_and_keeps_the_declarations():
    """The fast path (parsing the module without its functions) is taken for every plugin we ship,
    and it holds the same class-level declarations as the whole module."""
    import ast
    import importlib.util
    from pathlib import Path

    for group in ("embedders", "metrics", "debiasers"):
        for info in eps.entry_points(group):
            module, _, cls = info.value.partition(":")
            source = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
            outline = ast.parse(static_summary._outline(source))
            whole = ast.parse(source)

            def declarations(tree):
                node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
                return [ast.dump(n) for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))]

            assert declarations(outline) == declarations(whole), info.value
            kept = [n.name for n in ast.walk(outline) if isinstance(n, ast.FunctionDef)]
            assert not kept, info.value  # no function survives the outline


def test_static_kind_of_every_first_party_embedder_is_the_kind_of_the_imported_class():
    """The static reading must describe a plugin as its import would (static vectors included). It
    runs in a fresh process: a module already imported is read from the import instead."""
    import importlib
    import json
    from types import SimpleNamespace

    from bias.registry.catalogue import kind_of

    code = textwrap.dedent(
        """
        import json
        from types import SimpleNamespace
        from bias.registry import entry_points as eps, static_summary
        from bias.registry.catalogue import kind_of
        out = {}
        for info in eps.entry_points("embedders"):
            declared = static_summary.describe(info.value)
            out[info.value] = None if declared is None else kind_of("embedders", SimpleNamespace(**declared))
        print(json.dumps(out))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    static_kinds = json.loads(proc.stdout)
    assert static_kinds and all(v is not None for v in static_kinds.values()), static_kinds
    for value, kind in static_kinds.items():
        module, _, cls = value.partition(":")
        assert kind == kind_of("embedders", getattr(importlib.import_module(module), cls)), value
    assert any(k.startswith("static word vectors") for k in static_kinds.values())

def test_word_sets_are_listed_in_natural_order():
    from bias.core.text import natural_key
    from bias.registry import wordset_names

    assert sorted(["en/weat10", "en/weat2", "en/weat1", "de/weat2"], key=natural_key) == ["de/weat2", "en/weat1", "en/weat2", "en/weat10"]
    names = wordset_names("en")
    assert names.index("en/weat2") < names.index("en/weat9") < names.index("en/weat10")
