"""The word2vec and GloVe readers give gensim's numbers, row for row, on the layouts and edge cases of
real files, and a run on such a file never imports gensim."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bias.core.models.static.word2vec_files import read_glove, read_word2vec

# "the" twice: gensim keeps the first
WORDS = ["the", "café", "naïve", "rose", "the", "Straße", "x"]


def _rows(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(len(WORDS), 5)).astype(np.float32)


def _binary(path: Path, words: list[bytes], rows: np.ndarray, newline: bool = True) -> Path:
    body = b"".join(
        w + b" " + r.tobytes() + (b"\n" if newline else b"") for w, r in zip(words, rows)
    )
    path.write_bytes(f"{len(words)} {rows.shape[1]}\n".encode() + body)
    return path


def _text(path: Path, rows: np.ndarray, header: bool = True) -> Path:
    lines = [f"{w} " + " ".join(f"{v:.6f}" for v in r) for w, r in zip(WORDS, rows)]
    path.write_text(
        (f"{len(WORDS)} {rows.shape[1]}\n" if header else "") + "\n".join(lines) + "\n",
        encoding="utf-8",
    )
    return path


def _same_as_gensim(ours, path: Path, **kwargs) -> None:
    from gensim.models import KeyedVectors

    theirs = KeyedVectors.load_word2vec_format(str(path), **kwargs)
    # gensim leaves a None in index_to_key for each repeated word it dropped; the words and rows kept
    # are the same
    kept = [w for w in theirs.index_to_key if w is not None]
    assert ours.index_to_key == kept
    assert ours.key_to_index == dict(theirs.key_to_index)
    assert ours.vectors.dtype == np.float32
    # the same float32 values, bit for bit
    assert np.array_equal(ours.vectors, theirs.vectors[: len(kept)])


@pytest.mark.parametrize("newline", [True, False])
@pytest.mark.parametrize("limit", [None, 3])
def test_binary_rows_equal_gensims(tmp_path: Path, newline: bool, limit: int | None) -> None:
    path = _binary(tmp_path / "v.bin", [w.encode() for w in WORDS], _rows(), newline)
    _same_as_gensim(read_word2vec(path, binary=True, limit=limit), path, binary=True, limit=limit)


def test_binary_word_cut_mid_character_follows_unicode_errors(tmp_path: Path) -> None:
    words = [w.encode() for w in WORDS]
    words[1] = "café".encode()[:-1]  # word2vec.c may cut a word inside a UTF-8 sequence
    path = _binary(tmp_path / "cut.bin", words, _rows(1))
    with pytest.raises(UnicodeDecodeError):
        read_word2vec(path, binary=True)
    _same_as_gensim(
        read_word2vec(path, binary=True, unicode_errors="replace"),
        path,
        binary=True,
        unicode_errors="replace",
    )


@pytest.mark.parametrize("limit", [None, 4])
def test_text_and_gzip_rows_equal_gensims(tmp_path: Path, limit: int | None) -> None:
    path = _text(tmp_path / "v.txt", _rows(2))
    _same_as_gensim(read_word2vec(path, binary=False, limit=limit), path, limit=limit)
    packed = tmp_path / "v.txt.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    _same_as_gensim(read_word2vec(packed, binary=False, limit=limit), packed, limit=limit)


def test_glove_rows_equal_gensims(tmp_path: Path) -> None:
    path = _text(tmp_path / "glove.txt", _rows(3), header=False)
    _same_as_gensim(read_glove(path), path, no_header=True)
    _same_as_gensim(read_glove(path, limit=2), path, no_header=True, limit=2)


def test_a_header_promising_more_rows_than_the_file_holds_is_an_error(tmp_path: Path) -> None:
    path = _binary(tmp_path / "short.bin", [w.encode() for w in WORDS], _rows())
    data = path.read_bytes()
    path.write_bytes(data.replace(f"{len(WORDS)} 5".encode(), f"{len(WORDS) + 2} 5".encode(), 1))
    with pytest.raises(EOFError):
        read_word2vec(path, binary=True)
    text = _text(tmp_path / "short.txt", _rows())
    text.write_text(
        text.read_text(encoding="utf-8").replace(f"{len(WORDS)} 5", f"{len(WORDS) + 1} 5", 1),
        encoding="utf-8",
    )
    with pytest.raises(EOFError):
        read_word2vec(text, binary=False)


def test_a_word2vec_run_never_imports_gensim(tmp_path: Path) -> None:
    """Importing gensim costs more CPU than a small WEAT run; the word2vec and GloVe loaders read
    their files without it."""
    binary = _binary(tmp_path / "v.bin", [w.encode() for w in WORDS], _rows())
    glove = _text(tmp_path / "g.txt", _rows(), header=False)
    code = (
        "import sys\n"
        "from bias.plugins.embedders.gensim_vectors import GloveEmbedder, Word2VecEmbedder\n"
        f"assert Word2VecEmbedder({str(binary)!r}).word_vectors(['rose']).words == ('rose',)\n"
        f"assert GloveEmbedder({str(glove)!r}).word_vectors(['rose']).words == ('rose',)\n"
        "print('gensim' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
