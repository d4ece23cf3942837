"""The discrimination metric on models that write their answers (`mode = generate`, a chat API): k
sampled replies per prompt, each read in the word set's language; the log-odds of the parsed
replies in the mixed model, the majority in the selection rates and McNemar's pairs, and the
unparsed rate, each recomputed here from the replies themselves. A planted writer's group effect is
found and a null one is not; `auto` asks a model for log-likelihoods where it gives them; and
`bias run` audits `chat:` against `transformers serve` serving a tiny instruct model whose replies
are drawn from known probabilities."""

from __future__ import annotations

import csv
import json
import math
import warnings

import pytest
from fixtures.decisions import (
    build_deciding_chat,
    decisions_toml,
    planted_for,
    writer_for,
)

from bias.api import GenerationRequest, Sampling
from bias.core.data.wordsets import load_toml_wordset

REF = "C(group, Treatment('nl'))[T.ma]"
# The tiny instruct model's replies: "Yes", "no" or "Ok" (unparsed), drawn with these probabilities
# after a prompt whose length is 0, 1, 2 or 3 modulo 4.
REPLIES = {"Yes": (0.6, 0.3, 0.45, 0.2), "no": (0.3, 0.55, 0.35, 0.7), "Ok": (0.1, 0.15, 0.2, 0.1)}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def discrimination(**params):
    from bias.plugins.metrics.discrimination import Discrimination

    return Discrimination(**params)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_toml_wordset(decisions_toml(tmp_path_factory.mktemp("replies"), scenarios=12))


def counted(replies: list[str], yes: str, no: str) -> tuple[int, int, int]:
    """yes, no and unparsed among the replies, by the reply's first word (case aside)."""
    first = [r.strip().split()[0].strip(".").casefold() if r.strip() else "" for r in replies]
    y, n = first.count(yes), first.count(no)
    return y, n, len(replies) - y - n


def fit(rows: list[dict], gender: bool = True):
    import pandas as pd
    import statsmodels.formula.api as smf

    frame = pd.DataFrame(rows)
    warnings.simplefilter("ignore")  # statsmodels' convergence notes; the metric reports its own
    reference = "nl" if "nl" in set(frame["group"]) else "white"
    formula = f"logit ~ C(group, Treatment('{reference}'))" + (
        " + C(gender, Treatment('m'))" if gender else ""
    )
    return smf.mixedlm(formula, frame, groups=frame["scenario"]).fit(reml=True)


def test_auto_asks_for_log_likelihoods_where_the_model_gives_them(data):
    scored = discrimination().compute(planted_for(data, "names", {"ma": -1.0}), data, seed=0)
    written = discrimination(samples=3).compute(writer_for(data, "names", {}), data, seed=0)
    assert scored.convention["mode"] == "loglik" and written.convention["mode"] == "generate"
    assert "unparsed_rate" not in scored.figures and "unparsed_rate" in written.figures
    # no temperature given: the model's own, greedy by default, so three samples repeat one reply
    assert written.convention["sampling"]["temperature"] == 0
    assert any("one greedy reply repeated" in w for w in written.warnings)


def test_sampled_decisions_equal_a_loop_over_the_replies(data):
    # a third of the replies unparsed: some prompts get no parsed reply of three and drop out
    writer = writer_for(data, "names", {"ma": -1.0}, unparsed_every=3)
    result = discrimination(samples=3, temperature=1.0).compute(writer, data, seed=3)
    assert result.status == "ok", result.reason
    prompts = data.prompts("names")
    assert [r.plain_text() for r, _ in writer.asked] == [p.text for p in prompts]
    assert {(s.samples, s.temperature, s.seed) for _, s in writer.asked} == {(3, 1.0, 3)}
    again = writer.generate(
        [GenerationRequest.of(p.text) for p in prompts], Sampling(3, 1.0, seed=3)
    )
    rows, unparsed = [], {"nl": 0, "ma": 0}
    for p, shown, replies in zip(prompts, result.figures["scores"], again):
        y, n, u = counted(list(replies.texts), "ja", "nee")
        assert (shown["yes"], shown["no"], shown["unparsed"]) == (y, n, u), p.applicant.text
        assert json.loads(shown["all_replies"]) == list(replies.texts)
        unparsed[p.applicant.group] += u
        if y + n:  # a prompt without a parsed reply has no answer
            rows.append(
                {
                    "scenario": p.scenario.id,
                    "group": p.applicant.group,
                    "gender": p.applicant.gender,
                    "applicant": p.applicant.text,
                    "logit": math.log((y + 0.5) / (n + 0.5)),
                    "yes": y > n,
                }
            )
    assert len(rows) < len(prompts) and result.sizes["prompts"] == len(rows)
    total = 3 * len(prompts)
    assert result.figures["unparsed_rate"] == pytest.approx(sum(unparsed.values()) / total)
    by_group = result.figures["unparsed_rates"]["group"]
    assert by_group["ma"] == pytest.approx(unparsed["ma"] / (total / 2))
    breakdown = result.figures["breakdown"]
    assert breakdown["columns"][5] == "unparsed"
    assert breakdown["rows"][1][:1] + breakdown["rows"][1][5:6] == [
        "group ma",
        f"{by_group['ma']:.1%}",
    ]
    model = fit(rows)
    assert result.effect_size == pytest.approx(model.params[REF], abs=1e-6)
    low, high = model.conf_int().loc[REF]
    assert (result.figures["ci_low"], result.figures["ci_high"]) == pytest.approx(
        (low, high), abs=1e-6
    )
    for group in ("nl", "ma"):  # selection by the majority of the parsed replies
        chosen = [r["yes"] for r in rows if r["group"] == group]
        shown = result.figures["selection"]["group"][group]
        assert shown["rate"] == pytest.approx(sum(chosen) / len(chosen))
    # McNemar's discordant pairs: the k-th name of each gender, same scenario, both answered
    by = {(r["scenario"], r["group"], r["applicant"]): r["yes"] for r in rows}
    names = {
        (g, s): [a.text for a in data.groups[i].names if a.gender == s]
        for i, g in enumerate(("nl", "ma"))
        for s in ("m", "f")
    }
    b = c = 0
    for scenario in data.scenarios:
        for sex in ("m", "f"):
            for first, second in zip(names["nl", sex], names["ma", sex]):
                one = by.get((scenario.id, "nl", first))
                two = by.get((scenario.id, "ma", second))
                if one is not None and two is not None:
                    b, c = b + (one and not two), c + (two and not one)
    pair = result.figures["paired"]["ma vs nl"]
    assert (pair["first_only_yes"], pair["second_only_yes"]) == (b, c)
    assert pair["pairs"] == sum(
        (scenario.id, "nl", x) in by and (scenario.id, "ma", y) in by
        for scenario in data.scenarios
        for sex in ("m", "f")
        for x, y in zip(names["nl", sex], names["ma", sex])
    )


def test_a_planted_effect_in_written_replies_is_found_and_a_null_one_is_not(data):
    found = discrimination(samples=10, temperature=1.0).compute(
        writer_for(data, "names", {"ma": -1.5}, noise=0.3), data, seed=0
    )
    assert found.status == "ok" and found.figures["ci_high"] < 0
    calm = discrimination(samples=10, temperature=1.0).compute(
        writer_for(data, "names", {}, noise=0.3), data, seed=0
    )
    assert calm.status == "ok" and calm.figures["ci_low"] < 0 < calm.figures["ci_high"]


def test_replies_that_name_no_answer_are_refused_saying_so(data):
    writer = writer_for(data, "names", {}, unparsed_every=1)  # every reply "Geen idee."
    result = discrimination(samples=2).compute(writer, data, seed=0)
    assert result.status == "refused" and "no reply named an answer" in result.reason
    assert "100.0% of the sampled replies named neither answer" in result.reason
    # the replies are kept, one row a prompt, so the user can read what the model said
    table = result.figures["scores"]
    assert len(table) == len(data.prompts("names"))
    assert all(json.loads(r["all_replies"]) == ["Geen idee.", "Geen idee."] for r in table)
    # ... and no answer is made up for them
    assert all(r["decision"] == "" and r["logit_yes"] is None and r["unparsed"] == 2 for r in table)
    assert result.figures["unparsed_rate"] == 1.0


# -- a real instruct model, here and behind `transformers serve` -----------------------------------


@pytest.fixture(scope="module")
def deciding_chat(tmp_path_factory):
    return build_deciding_chat(tmp_path_factory.mktemp("deciding-chat"), REPLIES)


def test_the_metric_passes_its_contract_writing_its_answers(deciding_chat, tmp_path):
    from bias import testing as bt
    from bias.plugins.embedders.huggingface import HuggingFaceEmbedder
    from bias.plugins.metrics.discrimination import Discrimination

    data = load_toml_wordset(
        decisions_toml(tmp_path, scenarios=3, short=True, answers=("yes", "no"))
    )
    embedder = HuggingFaceEmbedder(location=str(deciding_chat), cache=False)
    params = {"mode": "generate", "samples": 3, "temperature": 1.0, "max_tokens": 5}
    result = Discrimination(**params).compute(embedder, data, seed=0)
    assert result.status == "ok" and 0 < result.figures["unparsed_rate"] < 0.5
    assert "chat template" in result.convention["context"]
    assert bt.check_metric(Discrimination, embedder=embedder, data=data, params=params) > 20
    # by log-likelihood with chat = true the answers are scored inside the assistant's turn
    templated = HuggingFaceEmbedder(location=str(deciding_chat), cache=False, chat="true")
    scored = Discrimination(mode="loglik").compute(templated, data, seed=0)
    assert scored.status == "ok", scored.reason
    assert scored.convention["mode"] == "loglik" and "chat template" in scored.convention["context"]


def test_bias_run_audits_a_chat_server_and_every_figure_is_the_servers_replies(
    deciding_chat, tmp_path, monkeypatch
):
    from bad_input.bad_input_helpers import cli
    from fixtures.tiny_chat import ServedModel

    from bias.core.data.limit import first_items
    from bias.plugins.embedders.chat_service import ChatEmbedder
    from bias.registry.resolve import load_wordset

    monkeypatch.setenv("OPENAI_API_KEY", "not-needed-locally")
    monkeypatch.setenv("BIAS_CACHE_DIR", str(tmp_path / "cache"))
    server = ServedModel(deciding_chat, tmp_path / "serve.log")
    try:
        spec = f"chat:{deciding_chat}[base_url={server.url}]"
        args = ["run", "--model", spec, "--wordset", "en/hiring", "--metric", "discrimination"]
        args += ["--limit", "3", "--param", "samples=4", "--param", "temperature=1.0"]
        args += ["--param", "max_tokens=5"]
        done = cli(*args, "--out", str(tmp_path / "run"))
        assert done.code == 0, done.both
        sent = server.requests()
        result = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
        assert result["status"] == "ok", result.get("reason")
        assert result["convention"]["mode"] == "generate"
        with open(tmp_path / "run" / result["figures"]["scores"], encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert sent == 4 * len(rows) == 4 * 3 * 2 * 3  # 3 scenarios x 2 groups x 3 names, 4 each
        # the same replies again, from the cache the run filled: nothing more is sent
        prompts = first_items(load_wordset("en/hiring"), 3).prompts("names")
        assert [r["applicant"] for r in rows] == [p.applicant.text for p in prompts]
        chat = ChatEmbedder(location=str(deciding_chat), base_url=server.url)
        replies = chat.generate(
            [GenerationRequest.of(p.text) for p in prompts],
            Sampling(4, 1.0, 5, seed=result["seed"]),
        )
        assert server.requests() == sent
        again = cli(*args, "--out", str(tmp_path / "again"))
        assert again.code == 0 and server.requests() == sent
        # a fifth sample per prompt (seed + 4) is the only thing a run with samples=5 sends
        more = [a if a != "samples=4" else "samples=5" for a in args]
        assert cli(*more, "--out", str(tmp_path / "more")).code == 0
        assert server.requests() == sent + len(rows)
    finally:
        server.stop()
    texts = [t for g in replies for t in g.texts]
    assert set(texts) <= set(REPLIES) and len(set(texts)) == 3  # sampled, not greedy
    loop = []
    for p, g in zip(prompts, replies):
        y, n, u = counted(list(g.texts), "yes", "no")
        row = rows[prompts.index(p)]
        assert (int(row["yes"]), int(row["no"]), int(row["unparsed"])) == (y, n, u)
        if y + n:
            loop.append(
                {
                    "scenario": p.scenario.id,
                    "group": p.applicant.group,
                    "logit": math.log((y + 0.5) / (n + 0.5)),
                }
            )
    unparsed = sum(t == "Ok" for t in texts) / len(texts)
    assert result["figures"]["unparsed_rate"] == pytest.approx(unparsed)
    model = fit(loop, gender=False)
    key = "C(group, Treatment('white'))[T.black]"
    assert result["effect_size"] == pytest.approx(model.params[key], abs=1e-6)


# What a model may write in each language: a yes, a no and a reply that names neither, as replies
# are written (capitals, punctuation, bold, the answer after a lead-in, a letter without its accent).
SAYS = {
    "nl": ("Ja, ik zou haar uitnodigen.", "NEE", "Dat kan ik niet beoordelen."),
    "de": ("**Ja**", "Meine Antwort: Nein.", "Das lässt sich so nicht sagen."),
    "en": ("Yes.", "No, I would not.", "It depends on the team."),
    "no": ("Ja.", "NEI", "Det kommer an på."),
    "is": ("Já, það myndi ég gera.", "Nei.", "Það fer eftir aðstæðum."),
    "tr": ("EVET", "HAYIR, davet etmem.", "Bilemiyorum."),
    "it": ("Si, lo inviterei.", "No.", "Non saprei."),
}


@pytest.mark.parametrize("language", sorted(SAYS))
def test_replies_are_read_in_each_packages_language(language):
    from bias.core.data.limit import first_items
    from bias.registry.resolve import load_wordset

    data = first_items(load_wordset(f"{language}/hiring"), 6)
    says = SAYS[language]
    writer = writer_for(data, "names", {}, unparsed_every=4, says=says)
    result = discrimination(samples=3, temperature=1.0).compute(writer, data, seed=1)
    assert result.status == "ok", result.reason
    again = writer.generate(
        [GenerationRequest.of(p.text) for p in data.prompts("names")], Sampling(3, 1.0, seed=1)
    )
    told = [[says.index(t) for t in g.texts] for g in again]  # 0 yes, 1 no, 2 neither
    shown = [(r["yes"], r["no"], r["unparsed"]) for r in result.figures["scores"]]
    assert shown == [(t.count(0), t.count(1), t.count(2)) for t in told]
    every = [t for ts in told for t in ts]
    assert 0 < every.count(2) < len(every)
    assert result.figures["unparsed_rate"] == pytest.approx(every.count(2) / len(every))


def test_the_breakdown_names_the_headline_group_and_how_the_answers_were_got(data):
    found = discrimination(samples=10, temperature=1.0).compute(
        writer_for(data, "names", {"ma": -1.5}, noise=0.3), data, seed=0
    )
    caption = found.figures["breakdown"]["caption"]
    headline = found.convention["value"].split("'")[1]  # "coefficient of group 'ma'"
    assert caption.startswith(f"The value is the coefficient of group '{headline}' against '{data.reference}'")
    assert "10 written replies a prompt at temperature 1 " in caption


def test_a_fit_that_did_not_converge_is_said_as_what_it_means():
    from bias.core.statistics.decisions import MixedModel
    from bias.plugins.metrics.discrimination import _fit_warnings

    said = ("Gradient optimization failed, |grad| = 3.5", "Check mle_retvals")
    failed = _fit_warnings(MixedModel((), 0.0, 1.0, 10, 2, False, "value ~ group", said))
    assert failed == [
        "the mixed model did not converge: its coefficients, intervals and p-values are not to be "
        "trusted (statsmodels: Gradient optimization failed, |grad| = 3.5; Check mle_retvals)"
    ]
    assert _fit_warnings(MixedModel((), 0.0, 1.0, 10, 2, True, "f", ("boundary",))) == [
        "mixed model (statsmodels): boundary"
    ]
    assert _fit_warnings(MixedModel((), 0.0, 1.0, 10, 2, True, "f")) == []
