"""The one way the command line prints text that came from a user or a file (paths, config fields,
word sets, warnings, test names): as text, never read as rich markup, with control and invisible
characters made visible and very long pieces cut.

A message is built from parts: a plain string is user text; a `(text, style)` pair is a label of
ours ("warning", "skipped") drawn in that style. Table cells and progress-bar descriptions, which
rich reads as markup, go through `cell`. No other module of `bias.cli` puts user text on the
terminal itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from bias.core.text import MAX_TEXT, message, shown, visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    Part = Union[str, tuple[str, str], Text]
    Line = Text  # a message built by `line`, for modules that pass messages around

# rich is imported where a message is made, not here: `bias --help` prints none.


def line(*parts: Part, whole: bool = False) -> Text:
    """One message as a rich Text: user text literal, labels styled (a Text built by `line` is
    kept). Long user text is cut, unless `whole` (a list of the files written, which the user needs
    entire)."""
    from rich.text import Text

    shown_as = _visible_lines if whole else message
    return Text.assemble(
        *(part if isinstance(part, (tuple, Text)) else shown_as(part) for part in parts)
    )


def say(console: Console, *parts: Part, whole: bool = False) -> None:
    """Print one message (see `line`) without rich's highlighting, wrapped only by the terminal."""
    console.print(line(*parts, whole=whole), highlight=False, soft_wrap=True)


def _visible_lines(text: str) -> str:
    return "\n".join(visible(part) for part in text.split("\n"))


def whole(text: str) -> Text:
    """A long text kept whole (a plugin's documentation, the notes under a table): literal, each
    line made visible, not cut, wrapped to the console's width."""
    from rich.text import Text

    return Text(_visible_lines(text), overflow="fold")


def say_whole(console: Console, text: str) -> None:
    """Print a text kept whole (see `whole`)."""
    console.print(whole(text), highlight=False)


def warn(console: Console, *parts: Part, label: str = "warning", style: str = "yellow") -> None:
    """A labelled message: `warning <text>`, `note <text>`, `skipped <text>`."""
    say(console, (label, style), " ", *parts)


def cell(text: object, limit: int = MAX_TEXT) -> str:
    """User text inside rich markup (a table cell, a progress-bar description): escaped, made
    visible, cut at `limit` characters."""
    from rich.markup import escape

    return escape(shown(text, limit))


def cell_lines(text: str) -> str:
    """A cell the layout stacks on several lines: each line escaped, the line breaks kept."""
    return "\n".join(cell(part) for part in text.split("\n"))
