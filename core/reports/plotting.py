"""What every figure of the reports shares: matplotlib on the Agg backend (imported on first use
only, so the rest of the framework stays fast to import), files that are the same bytes for the
same results, a distinct colour and marker per model, the results that have a value to plot, and
the naming of a figure drawn over several files.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from bias.core.model import OK, Result
from bias.core.reports.tables import Report
from bias.core.runs.folder import open_in_run, remove_in_run
from bias.core.text import BIDI

FORMATS = ("png", "svg")
# A panel's title is placed at the top of its axes (set_title's y): left to matplotlib, it is moved
# above whatever might overlap it by measuring every label of the panel at each draw, a third of the
# time of a page of panels, while nothing is drawn above these panels (the same bytes either way).
TITLE_AT_TOP = 1.0
COLOURS = ("#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c", "#8d6346", "#444444")
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed), imported here on first use."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    # stable element ids: same results, same file
    matplotlib.rcParams["svg.hashsalt"] = "bias-framework"
    # names and titles are text: a `$` in one is drawn as a dollar, never read as mathtext (which
    # fails on a name such as `m$\frac{$`)
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def model_styles(models: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A distinct (colour, marker) pair per model: colours cycle fastest, markers change after every
    full round of colours, so no two models look alike up to 80 models."""
    return {
        m: (COLOURS[i % len(COLOURS)], MARKERS[(i // len(COLOURS)) % len(MARKERS)])
        for i, m in enumerate(models)
    }


def label_cells(ax, grid, text: list[list[str]], ref: float, spread: float) -> None:
    """Each cell's text written on a heat map (none where it is empty), white on the darkest
    colours, those more than 0.6 of the spread away from the reference."""
    for i, row in enumerate(text):
        for j, cell in enumerate(row):
            if cell:
                dark = abs(grid[i, j] - ref) > 0.6 * spread
                ax.text(
                    j,
                    i,
                    cell,
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color="white" if dark else "black",
                )


def plotted(report: Report) -> list[Result]:
    """The results a figure can show: those that ran and have a value."""
    return [r for r in report.results if r.status == OK and r.effect_size is not None]


def save(fig, folder: Path, name: str, formats: tuple[str, ...]) -> list[Path]:
    """The figure as `<name>.<format>` in the run folder, for each format; the paths written."""
    written = []
    # An axis without a label keeps its label's place: matplotlib would otherwise measure every tick
    # label at each draw to move a label that draws nothing (a panel of forty words, twice a draw;
    # a sixth of a report's time, the same bytes either way).
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.label.get_text():
                axis.set_label_coords(0.0, 0.0)
    # SVG first: a layout engine settles on a fresh figure, so an SVG is the same bytes whether or
    # not a PNG is written in the same call.
    for fmt in sorted(formats, key=lambda f: f != "svg"):
        path = folder / f"{name}.{fmt}"
        # No dates or software versions inside the files: the same results give the same bytes.
        metadata = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}
        with open_in_run(folder, path.name, "wb") as fh, warnings.catch_warnings():
            # a name's character the font lacks is drawn as a box; matplotlib's warning would
            # print that character (an escape code, from a file) and its own paths on the terminal
            warnings.filterwarnings("ignore", message=r"(?s)Glyph \d+ .* missing from font")
            # a name too long for the page: the figure is drawn without the layout's spacing
            warnings.filterwarnings("ignore", message="constrained_layout not applied")
            if fmt == "svg":
                # matplotlib copies each label into a comment: a control character from a name
                # would make the file invalid XML (and act on a terminal showing it)
                buffer = io.BytesIO()
                fig.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight", metadata=metadata)
                fh.write(_CONTROL.sub(_shown_byte, buffer.getvalue()))
            else:
                fig.savefig(fh, format=fmt, dpi=110, bbox_inches="tight", metadata=metadata)
        # the layout is settled: the next format reuses it instead of computing it again (a third
        # of the time of a page of many panels)
        fig.set_layout_engine("none")
        written.append(path)
    return written


# C0 controls and DEL, and the bidi controls as UTF-8 (a name's RLO would reorder a text viewer's
# lines of the file)
_CONTROL = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|" + b"|".join(re.escape(ch.encode()) for ch in sorted(BIDI))
)


def _shown_byte(found: re.Match[bytes]) -> bytes:
    return f"U+{ord(found.group().decode()):04X}".encode()


def page_names(name: str, count: int) -> list[str]:
    """File names of a figure drawn over `count` files: words, words-2, words-3, ..."""
    return [name] + [f"{name}-{n}" for n in range(2, count + 1)]


def page_note(names: list[str], page: int, first: int, last: int, total: int, what: str) -> str:
    """What a figure of several files says on each file: which panels it shows and where the rest
    are."""
    if len(names) == 1:
        return ""
    others = f"{names[1]}.png" + (f" to {names[-1]}.png" if len(names) > 2 else "")
    if page == 0:
        return f"{what} {first}-{last} of {total}: the other {total - last} are in {others}"
    return f"{what} {first}-{last} of {total} ({names[0]}.png holds the first, {others} the rest)"


def remove_pages_past(folder: Path, name: str, count: int, formats: tuple[str, ...]) -> None:
    """Pages an earlier, larger report wrote (words-9.png after a run of 90 panels is reported again
    with 60) would be read as part of this one: they go."""
    for fmt in formats:
        page = max(count, 1) + 1
        while remove_in_run(folder, f"{name}-{page}.{fmt}"):
            page += 1
