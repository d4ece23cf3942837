"""`bias list` keeps what it read (plugin outlines, word-set headers) in a cache file and reads a
file again as soon as it changes; a damaged cache is ignored and rewritten; nothing is written
outside the cache folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bias import registry
from bias.registry import listing_cache
from test_registry import make_distribution, run_bias

TITLE_OF_WEAT6 = 'title = "Career vs family, male vs female names"'


def _language_xx(root: Path) -> Path:
    """An installed data package `xx` with one word set, xx/gendered (en/weat6 relabelled)."""
    pkg = root / "bias_lang_xx"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\nfrom bias.api import DataPackage\n"
        "PACKAGE = DataPackage(language='xx', root=Path(__file__).parent / 'data')\n"
    )
    text = Path(registry.load_wordset("en/weat6").meta.path).read_text(encoding="utf-8")
    assert TITLE_OF_WEAT6 in text
    path = pkg / "data" / "gendered.toml"
    path.write_text(text.replace('language = "en"', 'language = "xx"').replace(TITLE_OF_WEAT6, 'title = "First title"'), encoding="utf-8")
    make_distribution(root, "bias-lang-xx", {"bias.wordsets": {"xx": "bias_lang_xx:PACKAGE"}})
    return path


def _listed(root: Path, cache: Path, *args: str, **env: str) -> list[dict]:
    proc = run_bias(["list", *args, "--json"], extra_path=root, BIAS_CACHE_DIR=str(cache), **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _cache_file(cache: Path) -> Path:
    found = sorted((cache / "listing").iterdir())
    assert len(found) == 1 and found[0].suffix == ".json", found
    return found[0]


def test_an_edited_word_set_is_read_again_and_an_unchanged_one_comes_from_the_cache(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    path = _language_xx(root)
    assert [r["summary"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == ["First title"]
    stored = json.loads(_cache_file(cache).read_text(encoding="utf-8"))
    assert stored["headers"][str(path)][1]["title"] == "First title"
    # An entry whose file is unchanged is taken as it is: a title planted in the cache is listed.
    stored["headers"][str(path)][1]["title"] = "Planted in the cache"
    _cache_file(cache).write_text(json.dumps(stored), encoding="utf-8")
    assert [r["summary"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == ["Planted in the cache"]
    # The file edited: its new title, not the cached one.
    path.write_text(path.read_text(encoding="utf-8").replace('title = "First title"', 'title = "Second, longer title"'), encoding="utf-8")
    assert [r["summary"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == ["Second, longer title"]
    assert json.loads(_cache_file(cache).read_text(encoding="utf-8"))["headers"][str(path)][1]["title"] == "Second, longer title"


def test_a_language_package_is_remembered_until_its_module_changes(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    _language_xx(root)
    assert [r["name"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == ["xx/gendered"]
    stored = json.loads(_cache_file(cache).read_text(encoding="utf-8"))
    entry = stored["packages"]["bias_lang_xx:PACKAGE"]
    assert (entry["language"], Path(entry["root"])) == ("xx", root / "bias_lang_xx" / "data")
    # While the module is unchanged the package is not imported: a language planted in the cache
    # is the one listed.
    entry["language"] = "yy"
    _cache_file(cache).write_text(json.dumps(stored), encoding="utf-8")
    assert [r["name"] for r in _listed(root, cache, "wordsets", "-l", "yy")] == ["yy/gendered"]
    # The module edited (another folder of word sets): read again.
    other = root / "bias_lang_xx" / "other"
    (root / "bias_lang_xx" / "data").rename(other)
    init = root / "bias_lang_xx" / "__init__.py"
    init.write_text(init.read_text().replace("/ 'data'", "/ 'other'"))
    assert [r["name"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == ["xx/gendered"]
    entry = json.loads(_cache_file(cache).read_text(encoding="utf-8"))["packages"]["bias_lang_xx:PACKAGE"]
    assert (entry["language"], Path(entry["root"])) == ("xx", other)
    # The folder gone: the package is imported again, and lists no word set.
    for file in other.iterdir():
        file.unlink()
    other.rmdir()
    assert [r["name"] for r in _listed(root, cache, "wordsets", "-l", "xx")] == []


def test_an_edited_plugin_and_a_dependency_removed_are_seen(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    module = tmp_path / "bias_cached_embedder.py"
    module.write_text(
        "import bias_cached_dependency\nfrom bias.api import Capability\n\n"
        "class Cached:\n    summary = 'first summary'\n    capabilities = frozenset({Capability.WORD_VECTORS})\n"
    )
    make_distribution(root, "bias-cached", {"bias.embedders": {"cached": "bias_cached_embedder:Cached"}}, module)
    (root / "bias_cached_dependency.py").write_text("")

    def row() -> dict:
        return next(r for r in _listed(root, cache, "embedders") if r["name"] == "cached")

    assert (row()["summary"], row()["status"], row()["kind"]) == ("first summary", "ok", "word vectors")
    listed = root / "bias_cached_embedder.py"
    listed.write_text(listed.read_text().replace("'first summary'", "'second, longer summary'"))
    assert row()["summary"] == "second, longer summary"
    (root / "bias_cached_dependency.py").unlink()
    broken = row()
    assert broken["status"] == "broken" and "bias_cached_dependency" in broken["reason"]


def test_a_damaged_cache_file_is_ignored_and_rewritten(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    _language_xx(root)
    expected = _listed(root, cache)
    assert len(expected) > 150
    file = _cache_file(cache)
    good = json.loads(file.read_text(encoding="utf-8"))
    # Entries with their files' signatures intact but unreadable contents.
    bad_entries = json.loads(json.dumps(good))
    for entry in bad_entries["plugins"].values():
        entry["declared"] = {"summary": 5} if "capabilities" not in (entry["declared"] or {}) else {"summary": "x", "capabilities": {"capabilities": ["NO_SUCH"]}}
    for key in bad_entries["headers"]:
        bad_entries["headers"][key] = ["not a signature", 3]
    assert good["packages"]  # the language packages were remembered
    for key, entry in bad_entries["packages"].items():
        bad_entries["packages"][key] = {**entry, "language": 3, "root": None}
    damaged = [b"\x00\xffnot json", b'{"format": 1, "code": ', b"[1, 2, 3]", json.dumps({**good, "plugins": [], "headers": 7}).encode(),
               json.dumps(bad_entries).encode()]
    for content in damaged:
        file.write_bytes(content)
        assert _listed(root, cache) == expected, content[:40]
        rewritten = json.loads(file.read_text(encoding="utf-8"))
        assert rewritten["format"] == listing_cache.FORMAT and rewritten["headers"] == good["headers"], content[:40]
        assert rewritten["plugins"] == good["plugins"], content[:40]
    assert sorted(p.name for p in (cache / "listing").iterdir()) == [file.name]  # no temporary file left


def test_listing_writes_only_under_the_cache_folder(tmp_path):
    work, home, cache = tmp_path / "work", tmp_path / "home", tmp_path / "cache"
    work.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "BIAS_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "80"}
    env.pop("XDG_CACHE_HOME", None)
    proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "list"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # stevedore keeps its entry-point cache in the user's cache folder, where every program that uses
    # it keeps it: one file in python-entrypoints/, nothing else in the home folder.
    stevedore = [p.relative_to(home).as_posix() for p in sorted(home.rglob("*")) if p.is_file()]
    assert list(work.iterdir()) == [] and len(stevedore) == 1 and stevedore[0].startswith(".cache/python-entrypoints/"), stevedore
    assert [p.relative_to(cache).as_posix() for p in sorted(cache.rglob("*"))] == ["listing", f"listing/{_cache_file(cache).name}"]
    # Without BIAS_CACHE_DIR: the user's cache folder, nothing else in the home folder.
    del env["BIAS_CACHE_DIR"]
    proc = subprocess.run([sys.executable, "-m", "bias.cli.app", "list"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    written = [p.relative_to(home).as_posix() for p in sorted(home.rglob("*")) if p.is_file()]
    written = [w for w in written if w not in stevedore]
    assert len(written) == 1 and written[0].startswith(".cache/bias-framework/listing/listing-"), written
    assert list(work.iterdir()) == []


def test_a_cache_folder_that_cannot_be_written_changes_nothing(tmp_path):
    root, blocker = tmp_path / "site", tmp_path / "a-file"
    _language_xx(root)
    blocker.write_text("the cache folder would have to be below this file")
    expected = _listed(root, tmp_path / "cache")
    assert _listed(root, blocker / "cache") == expected
    assert blocker.read_text() == "the cache folder would have to be below this file"


def test_library_calls_use_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    assert len(registry.list_plugins()) > 150
    assert not (tmp_path / "cache").exists()
