"""How every output writes numbers and p-values, models and tests.

Every output (terminal, Markdown, LaTeX, figures, HTML) takes them from here, so they cannot
disagree. What a number is comes from the declaration its result carries (`meta["value"]`, a
`bias.core.values.ValueKind`); how its p-value was computed from the words its result carries
(`convention["p_value"]`, with `convention["p_floor"]` for a test whose p has a floor). A result
without them is shown as a plain value with a bare p."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from bias.core.model import Result
from bias.core.text import shown
from bias.core.values import PLAIN_VALUE, ValueKind


def kind_of(result: Result) -> ValueKind:
    """The kind of a result's number, as its metric declared it (carried in meta["value"]); a plain
    value when the result carries no (well-formed) declaration."""
    return ValueKind.from_declared((result.meta or {}).get("value")) or PLAIN_VALUE


# --- p-values -------------------------------------------------------------------------------------


def p_floor(result: Result) -> float | None:
    """The smallest p the result's test can report (convention["p_floor"], which a sampled
    permutation test writes: (0+1)/(m+1)); a p there is a bound."""
    floor = (result.convention or {}).get("p_floor")
    if isinstance(floor, (int, float)) and not isinstance(floor, bool) and 0.0 < floor <= 1.0:
        return float(floor)
    return None


UNDERFLOW = 1e-300  # below it a p-value is reported as this bound (CEAT gives log10_p beside it)


def at_floor(p: float | None, floor: float | None) -> bool:
    """Whether a sampled test's p is at its floor, (0+1)/(m+1): a bound, not a value."""
    return p is not None and floor is not None and p <= floor * (1 + 1e-9)


def format_p(p: float | None, floor: float | None = None, *, log10_p: float | None = None) -> str:
    """One format everywhere: two significant digits, scientific below 0.001; at a sampled test's
    floor the value is a bound (`<=1.0e-05`); a p that underflows is written from its log10."""
    if p is None:
        return "-"
    if at_floor(p, floor):
        return f"<={floor:.1e}"
    if (
        log10_p is not None
        and math.isfinite(log10_p)
        and p <= UNDERFLOW
        and log10_p < math.log10(UNDERFLOW)
    ):
        # a bound from the exact log10 p, never a number that reads as exact
        return f"<1e{math.ceil(log10_p)}"
    if p == 0.0:
        return f"<{UNDERFLOW:.0e}"
    if p < 1e-3:
        return f"{p:.1e}"
    return f"{p:#.2g}"


def result_p(result: Result) -> str:
    return format_p(result.p_value, p_floor(result), log10_p=(result.figures or {}).get("log10_p"))


ALPHA_MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
MARKS_NOTE = "* p < 0.05, ** p < 0.01, *** p < 0.001"


def significance(p: float | None) -> str:
    if p is None:
        return ""
    for alpha, mark in ALPHA_MARKS:
        if p < alpha:
            return mark
    return ""


# --- models, tests and settings -------------------------------------------------------------------

_GENERIC = {
    "model",
    "models",
    "vectors",
    "embeddings",
    "snapshot",
    "checkpoint",
    "final",
    "main",
    "out",
    "output",
}


def _base_name(spec: str) -> str:
    spec = re.sub(r"\[.*\]$", "", spec)
    _, _, location = spec.partition(":")
    location = location or spec
    if location.startswith("pkg:"):
        location = location[4:]
    parts = [p for p in PurePosixPath(location.replace("\\", "/")).parts if p not in ("/", ".")]
    if not parts:
        return spec
    last = parts[-1]
    stem = last.rsplit(".", 1)[0] if "." in last and not last.startswith(".") else last
    if stem.lower() in _GENERIC and len(parts) > 1:
        stem = f"{parts[-2]}/{stem}"
    return stem


SHORT = 48  # characters of a name in a figure or table; the notes give the whole name


def _cut(name: str) -> str:
    """A name of at most SHORT characters, its start and end kept (a figure's labels cannot wrap:
    a 300-character path took the whole page)."""
    return name if len(name) <= SHORT else f"{name[: SHORT - 16]}…{name[-15:]}"


def short_models(results: Sequence[Result]) -> dict[str, str]:
    """Model label -> a short, distinct name: the `name` given in the experiment file, else the
    file's or folder's base name (with the options in brackets where two would look the same), cut
    to SHORT characters."""
    labels = list(dict.fromkeys(r.model for r in results))
    given = {r.model: r.meta.get("model_name") for r in results if r.meta.get("model_name")}
    out = {label: _cut(given.get(label) or _base_name(label)) for label in labels}
    counts: dict[str, int] = {}
    for name in out.values():
        counts[name] = counts.get(name, 0) + 1
    for label, name in list(out.items()):
        if counts[name] > 1:
            options = re.search(r"\[(.*)\]$", label)
            out[label] = _cut(f"{name}[{options.group(1)}]") if options else name
    # Still the same (two folders with one base name): number them.
    return _numbered(out)


def _numbered(out: dict[str, str]) -> dict[str, str]:
    """`out` with names that two keys share numbered (name#1, ...) until they differ."""
    seen: dict[str, int] = {}
    for label, name in list(out.items()):
        if list(out.values()).count(name) > 1:
            seen[name] = seen.get(name, 0) + 1
            out[label] = f"{name}#{seen[name]}"
    return out


def short_test(name: str) -> str:
    """An installed word set keeps its name (`en/weat6`); a file given by path is shown by its
    stem."""
    parts = name.replace("\\", "/").split("/")
    if len(parts) == 2 and "." not in parts[1] and parts[0]:
        return name
    last = parts[-1]
    return last.rsplit(".", 1)[0] if "." in last else last


def short_tests(results: Sequence[Result]) -> dict[str, str]:
    """Word-set name -> short name, distinct (a path stays whole where two stems would collide),
    cut to SHORT characters (numbered where two cut names would look the same)."""
    names = list(dict.fromkeys(r.wordset for r in results))
    out = {n: short_test(n) for n in names}
    values = list(out.values())
    return _numbered({n: _cut(s if values.count(s) == 1 else n) for n, s in out.items()})


def test_title(result: Result) -> str:
    """The word set's own title ("flowers/insects, pleasant/unpleasant"), recorded with the
    result."""
    return str((result.meta or {}).get("title") or "")


def variant_label(metric: str, settings: str) -> str:
    """A column name for one metric with its varying settings. A setting named `level` (whose value
    is a word) names the variant by its initial, as May et al. name SEAT's: s-SEAT, w-SEAT,
    w-CEAT."""
    parts = [p for p in settings.split(", ") if p]
    name = metric.upper() if len(metric) <= 5 else metric
    level = next(
        (p for p in parts if p.startswith("level=") and p.split("=", 1)[1].isalpha()), None
    )
    if level:
        name = f"{level.split('=', 1)[1][0]}-{name}"
        parts.remove(level)
    return name + (f" {', '.join(parts)}" if parts else "")


def convention_text(result: Result) -> str:
    """How the result's p-value was computed, in the words its metric wrote (convention["p_value"]:
    `PermutationTest.convention()` writes it, for one); "" when it says nothing."""
    text = (result.convention or {}).get("p_value")
    return shown(text) if isinstance(text, str) else ""  # a results file is outside input
