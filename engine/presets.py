"""Run presets: the conventions of a peer tool in one word, so that its published numbers can be
reproduced on the same inputs.

A preset is a set of metric parameters; each goes to the metrics that declare it (a preset's `ddof`
reaches WEAT, SEAT and LPBS, its `causal_start` CrowS-Pairs and StereoSet), and a parameter the
experiment file gives itself wins. Every result of a run with a preset records the preset's name and
the parameters it set (`convention.run_preset`, `convention.run_preset_params`), and the run's
manifest carries its note. docs/methods.md has the table of conventions: our default, each peer's
choice, the preset that gives it."""

from __future__ import annotations

from typing import Any

PRESET_PARAMS: dict[str, dict[str, Any]] = {
    # The BIAS Detection Framework: numpy's population std, repeated stimuli kept (case-sensitive,
    # as loaded), SEAT sentences on static models as the raw mean of their tokens' vectors,
    # CrowS-Pairs sentences lowercased; LPBS over the i-th singular target pairs, a word's
    # sub-tokens at one mask.
    "bias-framework": {
        "ddof": 0,
        "duplicates": "keep",
        "lowercase": "yes",
        "static_sentence": "word-mean",
        "pairing": "i-th",
        "target_number": "singular",
        "multi_token": "one-mask",
    },
    # bias-bench's causal-LM scores: the first token after BOS alone, the rest from a pass without
    # BOS, the per-token mean (CrowS-Pairs; StereoSet's geometric mean takes the start alone); its
    # masked-LM CrowS-Pairs scores: the modified tokens' mean, rounded; its StereoSet loader's
    # masked inputs.
    "bias-bench": {
        "causal_start": "bos-first-token",
        "likelihood": "mean",
        "masked_score": "bias-bench",
    },
    # sent-bias (SEAT's code): sample std, one-sided, ties counted, exact up to 100,000 partitions,
    # otherwise n_samples = 100,000 of which one is the observed partition: p = (k + 1) / 100,000.
    "sent-bias": {
        "ddof": 1,
        "alternative": "greater",
        "ties": "counted",
        "exact_limit": 100_000,
        "permutations": 99_999,
    },
    # WEFE: population std; vectors as the model gives them (no unit-normalisation before RND); RIPA
    # over the i-th pairs' unit directions.
    "wefe": {"ddof": 0, "normalise": False, "relation": "per-pair"},
}
PRESETS = tuple(PRESET_PARAMS)
PRESET_NOTES = {
    "bias-framework": (
        "Preset bias-framework: effect sizes use the population std (ddof 0) and keep "
        "repeated stimuli (case-sensitive), "
        "SEAT sentences on static models are the raw mean of their tokens' vectors, "
        "CrowS-Pairs sentences are "
        "lowercased, and LPBS sets the i-th singular target of X against the i-th of Y "
        "with a word's sub-tokens read "
        "at one mask (singular templates only), as the BIAS Detection Framework computes "
        "them; p-values are this tool's exact or seeded permutation tests. "
        "The framework's own p-values would differ: they are sampled only (100 "
        "permutations by default), "
        "unseeded, count from 1 (p = (k+1)/m) and so can exceed 1, and test effect sizes "
        "with a strict >."
    ),
    "bias-bench": (
        "Preset bias-bench: causal-LM sentence scores condition only the first token on BOS and"
        " take the others from a pass without BOS, averaged per token, as bias-bench computes "
        "CrowS-Pairs and StereoSet on causal models; on masked LMs CrowS-Pairs scores the "
        "tokens that differ between the sentences (each masked in turn, their mean "
        "log-probability, rounded to 3 decimals), as bias-bench does, instead of Nangia et "
        "al.'s shared tokens, and StereoSet reads each piece in bias-bench's own re-tokenised "
        "text (the word after a space, the decoded pieces before the mask), as its loader "
        "builds it for RoBERTa."
    ),
    "sent-bias": (
        "Preset sent-bias: sample std (ddof 1), one-sided p counting ties, exact up to "
        "100,000 partitions, else "
        "99,999 seeded permutations plus the observed one (p = (k+1)/100,000), as "
        "sent-bias computes SEAT; its "
        "unseeded draws are not reproduced, so a sampled p agrees within its Monte Carlo error."
    ),
    "wefe": (
        "Preset wefe: population std (ddof 0), vectors as the model gives them (RND "
        "without unit-normalisation) and "
        "RIPA averaged over the unit directions of the i-th X and Y words (relation "
        "per-pair; WEFE's score of an "
        "attribute set is the mean RIPA of that set), as WEFE computes them. WEFE's "
        "sampled p-values (drawn with "
        "replacement) and its cosine RND's flipped sign are not reproduced."
    ),
}


def declared_params(metric: str) -> set[str]:
    """The parameter names a metric declares (a preset's parameter goes only to those)."""
    from bias.core.params import describe_params
    from bias.registry.entry_points import load

    return {p.name for p in describe_params(load("metrics", metric))}


def preset_params(metric: str, preset: str | None, duplicates: str | None = None) -> dict[str, Any]:
    """The parameters a preset (and the run's `duplicates` setting) give this metric: only those it
    declares, so that one preset serves every metric of a run."""
    given = dict(PRESET_PARAMS.get(preset, {})) if preset else {}
    if duplicates is not None:
        given["duplicates"] = duplicates
    if not given:
        return {}
    declared = declared_params(metric)
    return {k: v for k, v in given.items() if k in declared}


def preset_notes(preset: str | None) -> list[str]:
    """The note a run with this preset carries into its manifest and reports."""
    return [PRESET_NOTES[preset]] if preset in PRESET_NOTES else []
