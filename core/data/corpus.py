"""Contexts of words in a text corpus (one sentence or comment per line), for CEAT.

The file is read once, line by line, whatever its size. Each line that contains a stimulus on word
boundaries is a candidate context of that word; up to `per_word` contexts per word are kept by
reservoir sampling (Vitter's algorithm R) with a seeded generator, so every line containing the word
has the same chance of being kept and the same seed keeps the same lines.

Word boundaries are Unicode-aware: a stimulus matches only where neither neighbour is a word
character (`\\w` in Python's Unicode sense), so "he" is not found in "the" nor "Rose" in "Rosemary",
and "café" or "Ålesund" are handled like ASCII words. The case policy is explicit: `exact` matches
the stimulus as written, `lower` ignores case (case-folded comparison)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import attrs
from bias.core.errors import BiasError
from bias.core.regular_files import open_regular

CASES = ("exact", "lower")
_TOKEN = re.compile(r"\S+")


@attrs.frozen
class Context:
    """One occurrence of a word: the text (a corpus line, or its window) and the word's span in
    it."""

    text: str
    span: tuple[int, int]
    line: int  # 1-based line number in the corpus (0 for contexts not read from a file)


@attrs.frozen
class Contexts:
    """Contexts kept per word (in corpus order), and how many lines contained each word in all."""

    kept: dict[str, tuple[Context, ...]] = attrs.field(hash=False)
    found: dict[str, int] = attrs.field(hash=False)
    lines: int  # non-blank lines read

    def missing(self) -> list[str]:
        return [w for w, n in self.found.items() if n == 0]


def _key(text: str, case: str) -> str:
    return text.casefold() if case == "lower" else text


def pattern(words: Sequence[str], case: str = "exact") -> re.Pattern[str]:
    """One regular expression for all stimuli, on Unicode word boundaries; longest words first so a
    multi-word stimulus ("short-term", "New York") wins over a shorter one at the same position."""
    if case not in CASES:
        raise BiasError(f"case must be one of {', '.join(CASES)}, not {case!r}.")
    alternatives = sorted({w for w in words if w}, key=len, reverse=True)
    if not alternatives:
        raise BiasError("No stimuli to look for in the corpus.")
    body = "|".join(re.escape(w) for w in alternatives)
    flags = re.UNICODE | (re.IGNORECASE if case == "lower" else 0)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", flags)


MAX_LINE_BYTES = 64 * 2**10  # a sentence or a comment (a Reddit comment: at most 10,000 characters)
MAX_CONTEXT_TEXT = 256 * 2**20  # characters of all the contexts kept (CEAT: 10,000 per word)


_HINT = "Give a UTF-8 text file with one sentence per line."


def _opened(path: Path) -> BinaryIO:
    if not path.exists():
        raise BiasError(
            f"Corpus file not found: {path}",
            "Give a UTF-8 text file with one sentence or comment per line.",
        )
    if path.is_dir():
        raise BiasError(f"Corpus {path} is a folder, not a text file.", _HINT)
    return open_regular(path, what="corpus", hint=_HINT)


def check_corpus(path: str | Path) -> None:
    """The corpus file refused as `read_lines` would refuse it (missing, a folder, a pipe) before
    a model is loaded to be fitted on it; its first byte is read, so that a file whose reads fail
    (a link to a process's memory) is refused too."""
    with _opened(Path(path)) as fh:
        try:
            fh.read(1)
        except OSError as exc:
            raise BiasError(
                f"Corpus {path} cannot be read ({exc.strerror or exc}).", _HINT
            ) from None


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, decoded strictly as UTF-8; a bad byte names its
    line."""
    path = Path(path)
    with _opened(path) as fh:
        for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                # a line that long is no sentence; holding it (a sparse file of gigabytes) would
                # take the machine's memory
                raise BiasError(
                    f"Corpus {path}: line {number} is longer than {MAX_LINE_BYTES:,} bytes.", _HINT
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BiasError(
                    f"Corpus {path}: line {number} is not UTF-8 text (byte {exc.start + 1} "
                    f"of the line: {exc.reason}).",
                    "Convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8.",
                ) from exc
            if number == 1:
                line = line.removeprefix("\ufeff")
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line


def window(text: str, span: tuple[int, int], k: int) -> tuple[str, tuple[int, int]]:
    """The text cut to `k` whitespace-separated words either side of the word at `span` (the word's
    own token and punctuation attached to it kept), and the span in the cut text."""
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    first = next(i for i, (a, b) in enumerate(tokens) if b > span[0])
    last = next(i for i in range(len(tokens) - 1, -1, -1) if tokens[i][0] < span[1])
    start = tokens[max(0, first - k)][0]
    end = tokens[min(len(tokens) - 1, last + k)][1]
    return text[start:end], (span[0] - start, span[1] - start)


def find_contexts(
    lines: Iterable[tuple[int, str]],
    words: Sequence[str],
    *,
    per_word: int,
    seed: int | None,
    case: str = "exact",
    window_words: int | None = None,
) -> Contexts:
    """Up to `per_word` contexts of every word from one pass over `lines` (reservoir-sampled,
    seeded).

    A line counts once per word (its first occurrence gives the span). Under `lower` two stimuli
    that differ only in case share their contexts."""
    if per_word < 1:
        raise BiasError(f"contexts_per_word must be a positive whole number, not {per_word!r}.")
    regex = pattern(words, case)
    by_key: dict[str, list[str]] = {}
    for w in dict.fromkeys(words):
        by_key.setdefault(_key(w, case), []).append(w)
    rng = random.Random(seed)
    reservoirs: dict[str, list[Context]] = {k: [] for k in by_key}
    seen = dict.fromkeys(by_key, 0)
    n_lines = held = 0  # held: characters of the contexts kept
    for number, line in lines:
        n_lines += 1
        firsts: dict[str, tuple[int, int]] = {}
        for m in regex.finditer(line):
            firsts.setdefault(_key(m.group(0), case), m.span())
        for key, span in firsts.items():
            # IGNORECASE may match a form whose case-fold differs (rare Unicode cases)
            if key not in seen:
                continue
            seen[key] += 1
            reservoir = reservoirs[key]
            if len(reservoir) < per_word:
                reservoir.append(Context(line, span, number))
                held += len(line)
            else:
                j = rng.randrange(seen[key])
                if j < per_word:
                    held += len(line) - len(reservoir[j].text)
                    reservoir[j] = Context(line, span, number)
            if held > MAX_CONTEXT_TEXT:
                raise BiasError(
                    f"The corpus's contexts kept for the stimuli hold more than "
                    f"{MAX_CONTEXT_TEXT:,} characters (at line {number}); they would not fit in "
                    "memory once encoded.",
                    "Give fewer contexts_per_word, or a corpus of sentences rather than whole "
                    "documents per line.",
                )
    if n_lines == 0:
        raise BiasError(
            "The corpus is empty (no non-blank line).",
            "Give a text file with one sentence or comment per line.",
        )
    kept: dict[str, tuple[Context, ...]] = {}
    found: dict[str, int] = {}
    for key, originals in by_key.items():
        chosen = sorted(reservoirs[key], key=lambda c: c.line)
        if window_words is not None:
            chosen = [Context(*window(c.text, c.span, window_words), c.line) for c in chosen]
        for w in originals:
            kept[w] = tuple(chosen)
            found[w] = seen[key]
    return Contexts(kept, found, n_lines)


def corpus_contexts(
    path: str | Path,
    words: Sequence[str],
    *,
    per_word: int,
    seed: int | None,
    case: str = "exact",
    window_words: int | None = None,
) -> Contexts:
    """`find_contexts` over a UTF-8 file, streamed line by line."""
    return find_contexts(
        read_lines(path), words, per_word=per_word, seed=seed, case=case, window_words=window_words
    )
