"""StereoSet files and contexts at the edges: BLANK glued to a word (scored as bias-bench's
re-tokenised text reads it), a token joining BLANK with the punctuation beside it, a file without
`version`, a file of broken examples, and a smoke run (`--limit`).

Expected numbers come from the loops of test_stereoset.py, written from the published method; the
examples were written for these tests and are under the repository's Apache-2.0 licence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bias.core.data.stereoset import StereoSetExamples
from bias.plugins.metrics.stereoset import StereoSet
from bias.registry.resolve import build_embedder, load_wordset_file
from test_stereoset import (
    EXAMPLES,
    LABELS,
    REL,
    bias_run_stereoset,
    reference_masked,
    stereoset_json,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (tests/conftest.py)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stereoset-data") / "dev.json"
    path.write_text(json.dumps(stereoset_json()), encoding="utf-8")
    return path


def test_a_file_without_version_is_still_read_as_stereoset(tmp_path: Path, data_file: Path) -> None:
    """{"data": {"intrasentence": [...], "intersentence": [...]}} is also an object of one object of two
    lists, the shape of a FISE file: the StereoSet importer must read it, not the FISE one."""
    from test_bbq import cli

    body = stereoset_json()
    del body["version"]
    path = tmp_path / "noversion.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    data = load_wordset_file(path)
    assert isinstance(data, StereoSetExamples)
    assert data.examples == load_wordset_file(data_file).examples
    code, stdout, stderr = cli("validate", str(path))
    assert code == 0 and "0 error(s)" in stdout + stderr, stdout + stderr


def test_checking_a_file_of_broken_examples_stops_after_a_hundred_errors() -> None:
    """A file of 200,000 examples that are all wrong: a bounded list of problems (each example would
    give four), not hundreds of thousands of lines."""
    from bias.core.data.stereoset import check

    body = {
        "kind": "stereoset",
        "language": "en",
        "bias_type": "mixed",
        "source": "s",
        "licence": "l",
        "data": {"intrasentence": [{"id": f"x{i}"} for i in range(200_000)]},
    }
    problems = check(body, "big.json")
    errors = [p for p in problems if p.severity == "error"]
    assert 100 <= len(errors) <= 110
    assert errors[0].field == "data.intrasentence[0] (id 'x0').bias_type"
    assert "checking stopped" in errors[-1].message and "200,000" in errors[-1].message


def test_a_word_at_blank_misread_for_its_spaces_is_said_naming_the_field(tmp_path: Path) -> None:
    """Words are split on plain spaces: a no-break space before BLANK in the context only made every
    template word "was" (each example a tie), a tab or a double space in one sentence read another
    of its words, a tab beside the filling word took in its neighbour. The same odd space in the
    context and every sentence, or one past the word, reads the right word and is not said."""
    from bias.core.data.stereoset import check, template_word

    odd = [
        ("nbsp-ctx", "profession", "nurse", "The nurse was\u00a0BLANK.", "The nurse was gentle.",
         "The nurse was brash.", "The nurse was turnip."),
        ("tab-sent", "profession", "nurse", "The nurse I met was BLANK at work.",
         "The nurse I met was\twarm at work.", "The nurse I met was harsh at work.",
         "The nurse I met was window at work."),
        ("zw-ctx", "profession", "nurse", "The\u200bnurse was BLANK.", "The\u200bnurse was kind.",
         "The\u200bnurse was rude.", "The nurse was lamp."),
        ("double", "profession", "nurse", "The nurse was BLANK.", "The nurse was kind.",
         "The  nurse was rude.", "The nurse was lamp."),
        ("beside", "profession", "nurse", "The nurse was BLANK\ttoday.", "The nurse was kind\ttoday.",
         "The nurse was rude today.", "The nurse was lamp today."),
        # read right: the same tab before BLANK everywhere, odd spaces past the word at BLANK
        ("same", "gender", "man", "The\tman was BLANK.", "The\tman was bold.", "The\tman was shy.",
         "The\tman was lamp."),
        ("after", "gender", "man", "The man was BLANK at\twork.", "The man was bold at\twork.",
         "The man was shy at\u00a0work.", "The man was lamp at work."),
        ("ctx-only", "gender", "man", "The man was BLANK\u00a0today.", "The man was bold today.",
         "The man was shy today.", "The man was lamp today."),
    ]  # fmt: skip
    meta = {"kind": "stereoset", "language": "en", "bias_type": "mixed", "source": "s", "licence": "l"}
    found = [(p.field, p.message) for p in check({**meta, **stereoset_json(odd)}, "odd.json")]
    misread = ("the word read at the place of BLANK is {}, but split at every space the sentence "
               "has {} there: words are split on plain spaces, so a tab, a no-break, zero-width or "
               "double space moves the word read; write single plain spaces")  # fmt: skip
    sentence = "data.intrasentence[{}] (id '{}').sentences[{}].sentence"
    assert found == [
        (sentence.format(0, "nbsp-ctx", 0), misread.format("'was'", "'gentle'")),
        (sentence.format(0, "nbsp-ctx", 1), misread.format("'was'", "'brash'")),
        (sentence.format(0, "nbsp-ctx", 2), misread.format("'was'", "'turnip'")),
        (sentence.format(1, "tab-sent", 0), misread.format("'at'", "'warm'")),
        (sentence.format(2, "zw-ctx", 2), misread.format("'was'", "'lamp'")),
        ("data.intrasentence", "2 more fields where the word at the place of BLANK is read wrong "
         "for their spaces, as above"),
    ]  # fmt: skip
    # the two past the first five, read one example at a time
    for k, expected in (
        (3, [(sentence.format(0, "double", 1), misread.format("'was'", "'rude'"))]),
        (4, [(sentence.format(0, "beside", 0), misread.format("'kind\\ttoday'", "'kind'"))]),
    ):  # fmt: skip
        alone = [(p.field, p.message) for p in check({**meta, **stereoset_json([odd[k]])}, "o.json")]
        assert alone == expected, (odd[k][0], alone)
    assert check({**meta, **stereoset_json(odd[5:])}, "odd.json") == []
    assert [template_word(t, 2) for t in odd[5][4:]] == ["bold", "shy", "lamp"]  # read right
    assert [template_word(t, 3) for t in odd[6][4:]] == ["bold", "shy", "lamp"]
    assert [template_word(t, 3) for t in odd[7][4:]] == ["bold", "shy", "lamp"]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(stereoset_json(odd + EXAMPLES)), encoding="utf-8")
    assert len(load_wordset_file(path).examples) == len(odd) + len(EXAMPLES)  # warnings: still read
    # a no-break space in a sentence that leaves it without a word at BLANK's place: said as the cause
    short = [("short", "gender", "man", "The man was BLANK.", "The man was\u00a0bold.", "The man was shy.",
              "The man was lamp.")]  # fmt: skip
    (error,) = check({**meta, **stereoset_json(short)}, "o.json")
    assert error.severity == "error" and error.message.endswith(
        "its template word is missing (it holds the space character U+00A0; words are split on "
        "single plain spaces)"
    ), error.message
    # a double space in the context moves BLANK's place past the sentences' last word
    double = [("dbl", "gender", "man", "The  man was BLANK.", "The man was bold.", "The man was shy.",
               "The man was lamp.")]  # fmt: skip
    found = check({**meta, **stereoset_json(double)}, "o.json")
    assert len(found) == 3 and all(
        p.message.endswith(
            "its template word is missing (the context holds, before BLANK, a double space; words "
            "are split on single plain spaces)"
        )
        for p in found
    ), [p.message for p in found]


# BLANK glued to the word before it, after it, or both: bias-bench's mask token cuts the text there,
# so the text after the slot is a word of its own and the text before it merges with the decoded pieces.
GLUED = [
    (
        "glued-1",
        "profession",
        "nurse",
        "The nurse is taBLANK.",
        "The nurse is tagentle.",
        "The nurse is tabrash.",
        "The nurse is taturnip.",
    ),
    (
        "glued-2",
        "profession",
        "nurse",
        "The man was unBLANK here.",
        "The man was ungood here.",
        "The man was unbad here.",
        "The man was untulip here.",
    ),
    (
        "glued-3",
        "gender",
        "man",
        "The man was BLANKed here.",
        "The man was gooded here.",
        "The man was nursemaided here.",
        "The man was tuliped here.",
    ),
    (
        "glued-4",
        "gender",
        "man",
        "The man was unBLANKed here.",
        "The man was ungooded here.",
        "The man was unbadded here.",
        "The man was untulipomaniaed here.",
    ),
    (
        "glued-5",
        "gender",
        "woman",
        "BLANKs work here.",
        "Doctors work here.",
        "Nurses work here.",
        "Tulipomanias work here.",
    ),
]


def test_a_blank_glued_to_a_word_is_scored_as_bias_bench_retokenises_it(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    """The tiny WordPiece reads "taBLANK" as t ##ab ##l ##an ##k and "unblank" with a token boundary at
    "bl": cut out of the context's tokens, the slot would keep "un" as a word of its own and "ed" as
    a continuation piece, which bias-bench's re-tokenised text never gives."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    assert tok.tokenize("taBLANK")[:2] == ["t", "##ab"]
    assert tok.tokenize("The man was BLANKed")[-1].startswith("##")
    path = tmp_path / "glued.json"
    path.write_text(json.dumps(stereoset_json(GLUED)), encoding="utf-8")
    result = StereoSet().compute(
        build_embedder(f"hf:{tiny_bert_dir}"), load_wordset_file(path), seed=0
    )
    assert result.ok, result.reason
    expected = reference_masked(tiny_bert_dir, GLUED)
    rows = {r["sentence_id"]: r for r in result.figures["scores"]}
    assert set(rows) == set(expected)
    for sid, (score, pieces) in expected.items():
        assert rows[sid]["score"] == pytest.approx(score, rel=REL), sid
        assert rows[sid]["tokens"] == pieces, sid


def test_a_token_joining_blank_with_the_punctuation_beside_it_is_refused() -> None:
    """A tokenizer that makes one token of "(BL" (a SentencePiece model may) leaves no boundary at the
    slot where bias-bench's mask token would cut the text: refused, naming the example."""
    from bias.core.data.stereoset import StereoExample, StereoSentence, StereoSetExamples
    from bias.core.errors import BiasError
    from bias.core.lm_requests import Tokens
    from bias.core.model import WordSetMeta
    from bias.core.pair_metrics.stereoset_inputs import slot_split

    context = "The man (BLANK) works."
    example = StereoExample(
        "e1", "gender", "man", context, (StereoSentence("s", "x", "stereotype", "x"),)
    )
    data = StereoSetExamples(
        WordSetMeta(name="t", kind="stereoset", language="en", bias_type="mixed", path="t.json"),
        (example,),
    )
    spans = [(0, 3), (4, 7), (8, 11), (11, 14), (14, 15), (16, 22)]  # The man (BL AN K) works.
    tokens = Tokens(
        (101, 1, 2, 3, 4, 5, 6, 102), ((0, 0), *spans, (0, 0)), (True, *[False] * 6, True)
    )
    with pytest.raises(BiasError) as err:
        slot_split(data, example, tokens)
    assert (
        "t.json: data.intrasentence[0] (id 'e1')" in err.value.message
        and "joins BLANK" in err.value.message
    )
    # the same context cut at BLANK: the tokens on each side, the special tokens apart
    clean = Tokens(
        (101, 1, 2, 3, 4, 5, 6, 7, 102),
        ((0, 0), (0, 3), (4, 7), (8, 9), (9, 11), (11, 14), (14, 15), (16, 22), (0, 0)),
        (True, *[False] * 7, True),
    )
    slot = slot_split(data, example, clean)
    assert (slot.head, slot.left, slot.right, slot.tail) == ((101,), (1, 2, 3), (6, 7), (102,))


def test_a_smoke_run_keeps_the_first_examples_whole(
    tiny_bert_dir: Path, data_file: Path, tmp_path: Path
) -> None:
    """`--limit 2` scores the first two examples, each with its three sentences (an example cut to two
    sentences has no unrelated one to compare with)."""
    from bias.core.data.limit import first_items

    data = load_wordset_file(data_file)
    cut = first_items(data, 2)
    assert cut.examples == data.examples[:2] and all(len(e.sentences) == 3 for e in cut.examples)
    out = tmp_path / "smoke"
    code, stdout, stderr = bias_run_stereoset(tiny_bert_dir, data_file, out, "--limit", "2")
    assert code == 0, stdout + stderr
    (line,) = [
        json.loads(t) for t in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert (
        line["status"] == "ok"
        and line["sizes"]["examples"] == 2
        and line["sizes"]["sentences"] == 6
    )
    expected = {k: v for k, (v, _) in reference_masked(tiny_bert_dir, EXAMPLES[:2]).items()}
    counts = {"pro": 0, "related": 0}
    for eid, *_ in EXAMPLES[:2]:
        s, a, u = (expected[f"{eid}-{label}"] for label in LABELS)
        counts["pro"] += s > a
        counts["related"] += (s > u) + (a > u)
    # both examples are about the one term "nurse": SS and LMS are that term's shares
    assert line["effect_size"] == pytest.approx(100 * counts["pro"] / 2)
    assert line["figures"]["lms"] == pytest.approx(100 * counts["related"] / 4)


def test_a_character_beside_blank_glues_it_as_bert_splits_words(tiny_bert_dir: Path) -> None:
    """`joins_word` against the real WordPiece pre-tokenizer: a character glues BLANK to a word exactly
    when "aXb" stays one word (every ASCII symbol, `$ + < = > ^ | ~` included, splits it), and spaces
    never glue."""
    from transformers import AutoTokenizer

    from bias.core.pair_metrics.stereoset_inputs import joins_word

    split = AutoTokenizer.from_pretrained(
        tiny_bert_dir
    ).backend_tokenizer.pre_tokenizer.pre_tokenize_str
    for code in [*range(33, 127), 0xA1, 0xA7, 0xBF, 0xE9, 0x2014, 0x201C, 0x3001, 0x20AC, 0x2603]:
        ch = chr(code)
        assert joins_word(ch) == (len(split(f"a{ch}b")) == 1), repr(ch)
    assert not any(joins_word(ch) for ch in " \t\n\u00a0\u3000")


def test_a_context_that_ends_with_blank_is_scored(tiny_bert_dir: Path, tmp_path: Path) -> None:
    examples = [
        (
            "end-1",
            "gender",
            "man",
            "The man is BLANK",
            "The man is good",
            "The man is bad",
            "The man is tulip",
        ),
        ("end-2", "gender", "man", "BLANK", "Doctor", "Nurse", "Tulip"),
    ]
    path = tmp_path / "end.json"
    path.write_text(json.dumps(stereoset_json(examples)), encoding="utf-8")
    result = StereoSet().compute(
        build_embedder(f"hf:{tiny_bert_dir}"), load_wordset_file(path), seed=0
    )
    assert result.ok, result.reason
    rows = {r["sentence_id"]: r["score"] for r in result.figures["scores"]}
    for sid, (score, _) in reference_masked(tiny_bert_dir, examples).items():
        assert rows[sid] == pytest.approx(score, rel=REL), sid


def test_a_token_joining_blank_with_the_text_after_it_is_refused() -> None:
    """ "(BLANK)" tokenised as ( BL AN K) : no boundary after the slot either."""
    from bias.core.data.stereoset import StereoExample, StereoSentence, StereoSetExamples
    from bias.core.errors import BiasError
    from bias.core.lm_requests import Tokens
    from bias.core.model import WordSetMeta
    from bias.core.pair_metrics.stereoset_inputs import slot_split

    context = "The man (BLANK) works."
    example = StereoExample(
        "e1", "gender", "man", context, (StereoSentence("s", "x", "stereotype", "x"),)
    )
    data = StereoSetExamples(
        WordSetMeta(name="t", kind="stereoset", language="en", bias_type="mixed", path="t.json"),
        (example,),
    )
    spans = [
        (0, 3),
        (4, 7),
        (8, 9),
        (9, 11),
        (11, 13),
        (13, 15),
        (16, 22),
    ]  # The man ( BL AN K) works.
    tokens = Tokens(
        (101, 1, 2, 3, 4, 5, 6, 7, 102), ((0, 0), *spans, (0, 0)), (True, *[False] * 7, True)
    )
    with pytest.raises(BiasError) as err:
        slot_split(data, example, tokens)
    assert "joins BLANK with the text beside it ('BLANK)')" in err.value.message


def test_a_space_before_blank_goes_with_the_slot_without_special_tokens() -> None:
    """ " BLANK works." from a tokenizer that adds no special token: the space token before BLANK
    belongs to the slot, and nothing of the context is left before it."""
    from bias.core.data.stereoset import StereoExample, StereoSentence, StereoSetExamples
    from bias.core.interfaces import Tokens
    from bias.core.model import WordSetMeta
    from bias.core.pair_metrics.stereoset_inputs import slot_split

    context = " BLANK works."
    example = StereoExample("e1", "gender", "man", context, (StereoSentence("s", "x", "stereotype", "x"),))
    data = StereoSetExamples(WordSetMeta(name="t", kind="stereoset", language="en", bias_type="mixed", path="t.json"), (example,))
    spans = ((0, 1), (1, 3), (3, 6), (6, 12), (12, 13))  # Ġ BL ANK Ġworks .
    slot = slot_split(data, example, Tokens((1, 2, 3, 4, 5), spans, (False,) * 5))
    assert (slot.head, slot.left, slot.right, slot.tail) == ((), (), (4, 5), ())
