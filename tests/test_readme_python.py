"""The README's "Use it from Python" block runs as written, on a local word2vec model in place of
`vectors.bin`; its SEAT lines show how a caller passes the template set `inputs()` asks for."""

from __future__ import annotations

import re
from pathlib import Path

from bias.core.interfaces import WORDSET_INPUT
from bias.core.model import OK, Result

ROOT = Path(__file__).resolve().parents[1]


def english_word2vec(folder: Path) -> Path:
    """A small word2vec that knows the words of en/weat6 and of the English SEAT templates."""
    import random

    from fixtures.planted import save_word2vec_binary, train_word2vec

    from bias import registry

    test = registry.load_wordset("en/weat6")
    words = {w for wl in test.sets().values() for w in wl.words}
    words |= set(re.findall(r"[A-Za-z]+", Path(registry.load_wordset("en/seat-templates").meta.path).read_text(encoding="utf-8")))
    rng = random.Random(0)
    vocabulary = sorted(words)
    corpus = [[rng.choice(vocabulary) for _ in range(8)] for _ in range(3000)]
    return save_word2vec_binary(train_word2vec(corpus).wv, folder / "english.bin")


def test_the_python_block_of_the_readme_runs(tmp_path):
    model = english_word2vec(tmp_path)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Python", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert "word2vec:vectors.bin" in block
    namespace: dict = {}
    exec(compile(block.replace("word2vec:vectors.bin", f"word2vec:{model}"), "README.md", "exec"), namespace)

    assert isinstance(namespace["result"], Result) and namespace["result"].metric == "weat"
    request = namespace["seat"].inputs(namespace["test"])["templates"]
    assert request.kind == WORDSET_INPUT and request.name == "en/seat-templates"
    assert namespace["result"].status == OK and namespace["result"].sizes == {"X": 8, "Y": 8, "A": 8, "B": 8}
    seat = namespace["seat_result"]  # SEAT computed with the template set the caller passed
    assert seat.metric == "seat" and seat.status == OK, seat.reason
    assert seat.sizes["X"] > 8  # sentences, several per word
