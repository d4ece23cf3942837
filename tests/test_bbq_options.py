"""The bbq metric's settings and the way a run goes before any model is asked: each parameter's
bounds, the prompts' placeholders, the price of the bootstrap, the prompt file asked for, what a
model type cannot do, which path (log-likelihood or written replies) a model takes, and the settings
that path would ignore, refused with the reason. The models here are never contacted: a completion
server at a closed address and a chat API only say what they offer.
"""

from __future__ import annotations

import pytest

from bias.core.data.bias_questions import BiasQuestion, BiasQuestions
from bias.core.errors import BadValue, BiasError
from bias.core.interfaces import WORDSET_INPUT
from bias.core.model import WordSetMeta
from bias.core.runs.budget import ELEMENTS_PER_SECOND
from bias.plugins.embedders.chat_service import ChatEmbedder
from bias.plugins.embedders.completion_server import CompletionServer
from bias.plugins.embedders.gensim_vectors import Word2VecEmbedder
from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
from bias.plugins.metrics.bbq import Bbq

CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, nothing is sent


def questions(n: int = 4, language: str = "en") -> BiasQuestions:
    meta = WordSetMeta(name="planted-bbq", kind="bbq", language=language, bias_type="gender")
    items = tuple(
        BiasQuestion(
            id=f"q{i}",
            category="gender",
            context="The man and the woman met.",
            ambiguous=i % 2 == 0,
            question="Who was late?",
            negative=True,
            answers=("the man", "the woman", "unknown"),
            unknown=2,
            stereotyped=0,
            target="the man",
            label=2 if i % 2 == 0 else 0,
        )
        for i in range(n)
    )
    return BiasQuestions(meta, items)


def completions() -> CompletionServer:
    return CompletionServer(location=CLOSED)


# -- parameters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "allowed", "refused"),
    [
        ("samples", (1, 1000, None), (0, 1001)),
        ("temperature", (0.0, 2.0, None), (-0.01, 2.01)),
        ("max_tokens", (1, 32_768, None), (0, 32_769)),
        ("bootstrap", (0, 5), (-1,)),
        ("confidence", (0.5, 0.999), (0.49, 1.0)),
    ],
)
def test_each_parameter_takes_its_documented_range(
    name: str, allowed: tuple, refused: tuple
) -> None:
    for value in allowed:
        assert getattr(Bbq(**{name: value}), name) == value
    for value in refused:
        with pytest.raises(BiasError, match=name):
            Bbq(**{name: value})


def test_prompts_need_their_placeholders_and_no_others() -> None:
    assert Bbq(template="").template == ""  # the word set's own prompt
    assert Bbq(template="Q: {question} C: {context}").template.startswith("Q:")
    assert Bbq(answer_template=" ({answer})").answer_template == " ({answer})"
    with pytest.raises(BiasError) as found:
        Bbq(template="{context} {question} {answer}")
    assert found.value.message.startswith(
        "template must be a text with the placeholders {context}, {question} and no others, "
        "not '{context} {question} {answer}' (plain {name} fields only"
    )
    assert found.value.hint == "Leave it out for the default."
    assert isinstance(found.value, BadValue)  # no model or word set could take it: not a skip
    with pytest.raises(BiasError) as found:
        Bbq(answer_template="{answer} {context}")
    assert found.value.message.startswith(
        "answer_template must be a text with the placeholders {answer} and no others"
    )
    assert found.value.hint == "The default is ' {answer}'."
    for bad in ("{context}", "{question}", "no placeholder", "{context} {question"):
        with pytest.raises(BiasError, match="template must be a text with the placeholders"):
            Bbq(template=bad)
    for bad in ("", "{context}", " {answer} {answer2}"):
        with pytest.raises(BiasError, match="answer_template must be a text with the placeholders"):
            Bbq(answer_template=bad)


def test_the_bias_adjusted_accuracy_is_on_its_own_unsigned_scale() -> None:
    adjusted = Bbq.value.for_params({"headline": "adjusted-accuracy"})
    assert adjusted.signed is False and adjusted.more_biased == "lower"
    ambiguous = Bbq.value.for_params({"headline": "ambiguous"})
    assert ambiguous.scale == "s_AMB" and ambiguous.signed is True


def test_the_bootstrap_is_priced_by_resamples_times_questions() -> None:
    """Each resample weighs every question for a dozen numbers; the weights of at most 4,000,000
    question-resamples are held at once (32 MB of float64)."""
    assert Bbq(bootstrap=0).cost(questions(10)) is None
    assert Bbq().cost(questions(0)) is None
    for resamples, n, held in ((2000, 10, 2000), (2000, 3000, 1333), (3_000_000, 1, 3_000_000)):
        cost = Bbq(bootstrap=resamples).cost(questions(n))
        assert cost.seconds == pytest.approx(resamples * n * 12 / ELEMENTS_PER_SECOND)
        assert cost.memory == min(held, 4_000_000 // n) * n * 8
        assert cost.causes[0][0] == f"--param bootstrap={resamples:,}"


def test_the_prompt_file_is_asked_for_where_answers_are_read_off_the_model() -> None:
    nl = questions(language="nl")
    assert Bbq(mode="loglik").inputs(nl) == {}
    for bbq, optional in (
        (Bbq(), True),  # auto: a log-likelihood model needs none
        (Bbq(mode="generate"), False),
        (Bbq(mode="loglik", preset="lm-eval"), False),
        (Bbq(preset="helm"), False),
    ):
        request = bbq.inputs(nl)["prompts"]
        assert (request.kind, request.name, request.data_kind) == (
            WORDSET_INPUT,
            "nl/bbq-prompts",
            "bbq-prompts",
        )
        assert request.optional is optional, bbq
        assert "--param prompts=FILE" in request.hint
    mine = Bbq(mode="loglik", prompts="mine.toml").inputs(nl)["prompts"]
    assert (mine.name, mine.optional) == ("mine.toml", False)
    assert Bbq(prompts="mine.toml").inputs(nl)["prompts"].optional is False
    assert Bbq().inputs(questions(language=""))["prompts"].name == "en/bbq-prompts"


def test_a_model_type_that_cannot_answer_the_way_asked_is_unfit() -> None:
    assert Bbq(mode="loglik").unfit(HuggingFaceEmbedder) is None
    assert Bbq(mode="generate").unfit(HuggingFaceEmbedder) is None
    assert Bbq(mode="loglik").unfit(CompletionServer) is None
    assert Bbq().unfit(Word2VecEmbedder) is None  # auto: the model, once loaded, decides
    assert Bbq(mode="loglik").unfit(ChatEmbedder) == (
        "bbq with mode=loglik needs answer log-likelihoods, which chat does not give; "
        "use mode=generate"
    )
    assert Bbq(mode="generate").unfit(CompletionServer) == (
        "bbq with mode=generate needs written replies, which completions does not give"
    )
    assert Bbq(mode="generate").unfit(Word2VecEmbedder) == (
        "bbq with mode=generate needs written replies, which word2vec does not give"
    )
    assert "mode=loglik needs" in Bbq(mode="loglik").unfit(Word2VecEmbedder)


# -- the path a run takes -------------------------------------------------------------------------


def test_other_data_is_refused_naming_the_kind() -> None:
    with pytest.raises(BiasError, match="needs questions of kind bbq, not WordSetMeta"):
        Bbq().compute(completions(), questions().meta)


NO_PROMPTS = (
    "no prompt variants for language 'en' (word set en/bbq-prompts): give a bbq-prompts file with "
    "--param prompts=FILE"
)


@pytest.mark.parametrize(
    ("bbq", "model"),
    [
        (Bbq(mode="generate"), "chat"),
        (Bbq(), "chat"),  # auto: a chat API writes its answers
        (Bbq(preset="lm-eval"), "completions"),  # a preset reads answers by its rules
        (Bbq(mode="loglik", preset="euroeval"), "completions"),
    ],
)
def test_answers_read_off_the_model_need_the_prompt_file(bbq: Bbq, model: str) -> None:
    embedder = ChatEmbedder(location=CLOSED) if model == "chat" else completions()
    for inputs in (None, {}, {"prompts": None}):
        result = bbq.compute(embedder, questions(), seed=3, inputs=inputs)
        assert (result.status, result.reason, result.seed) == ("refused", NO_PROMPTS, 3)


@pytest.mark.parametrize("preset", ["helm", "mbbq"])
def test_a_preset_of_written_replies_is_refused_on_the_log_likelihood_path(preset: str) -> None:
    for bbq in (Bbq(mode="loglik", preset=preset), Bbq(preset=preset)):
        result = bbq.compute(completions(), questions(), seed=1)
        assert result.status == "refused"
        assert (
            result.reason == f"preset {preset} reads generated replies: run it with mode=generate"
        )


def test_settings_of_written_replies_are_refused_on_the_log_likelihood_path() -> None:
    bbq = Bbq(
        mode="loglik",
        variant="plain",
        samples=3,
        temperature=0.0,
        max_tokens=10,
        aggregate="majority",
    )
    result = bbq.compute(completions(), questions(), seed=None)
    assert result.status == "refused" and result.seed == 0
    assert result.reason == (
        "variant=plain, samples=3, temperature=0.0, max_tokens=10, aggregate=majority set how "
        "written replies are asked and counted, which only mode=generate (or a preset) uses"
    )
    # auto: a completion server gives log-likelihoods
    result = Bbq(temperature=1.0).compute(completions(), questions(), seed=2)
    assert result.reason.startswith("temperature=1.0 set how written replies")


def test_the_bias_adjusted_accuracy_without_its_preset_is_refused() -> None:
    result = Bbq(headline="adjusted-accuracy").compute(completions(), questions(), seed=None)
    assert (result.status, result.seed) == ("refused", 0)
    assert result.reason == "the bias-adjusted accuracy is EuroEval's: run it with preset=euroeval"
