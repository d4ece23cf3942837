"""`bias validate`: problems of word-set files and packages, the sentences a test renders
(--render), and what a model would lose of each word-level test (--model)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bias.cli.say import say
from bias.core.errors import USAGE, BiasError
from bias.core.text import visible


def execute(
    paths: list[Path],
    frequencies: Path | None,
    render: list[str],
    model: str | None,
    console: Console,
) -> int:
    """The exit status: 2 when an error was found, else 0."""
    from bias.cli.render import problems
    from bias.engine.validate import attributed, severity_counts, validate_path, validate_paths

    if render:
        from bias.engine.rendering import rendered_lines

        for name in render:
            # plain print: one sentence a line, never wrapped or cut by the console, the same when
            # piped (control and invisible characters made visible, as everywhere user text is
            # printed)
            print("\n".join(visible(text) for text in rendered_lines(name)), flush=True)
        if not paths:
            return 0
    if not paths:
        raise BiasError(
            "Nothing to validate: no path given.",
            "Give word-set files or folders (with --model, the tests to check), or "
            "--render TEST (e.g. nl/religion); see `bias validate --help`.",
        )
    if len(paths) == 1 and (paths[0].is_file() or (paths[0] / "pyproject.toml").exists()):
        found, checked = validate_path(paths[0], frequencies)
        per_file = None
    else:
        found, checked, per_file = validate_paths(paths, frequencies)
    if model is not None:
        from bias.engine.model_losses import model_losses

        losses = model_losses(model, paths)
        found = [*found, *losses]
        if per_file is not None:
            per_file = attributed(per_file, losses)
    problems(console, found)
    if per_file is not None:
        for file, errors_, warnings_ in per_file:
            status = (
                ("error", "red") if errors_ else ("ok", "yellow") if warnings_ else ("ok", "green")
            )
            say(console, status, f" {file}: {errors_} error(s), {warnings_} warning(s)")
    errors, warnings = severity_counts(found)
    colour = "red" if errors else "green"
    say(console, (f"{checked} file(s) checked: {errors} error(s), {warnings} warning(s).", colour))
    return USAGE if errors else 0
