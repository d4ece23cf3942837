"""A metric asked of a model that cannot serve it (a sentence encoder for a hiring audit that needs
log-likelihoods, a folder without its MLM head): refused before or after the model loads, naming
what is missing and the installed metrics that would work with the model."""

from __future__ import annotations

from bias.core.compatibility import missing_capabilities
from bias.core.errors import BiasError
from bias.core.interfaces import Capability, Metric
from bias.registry import entry_points as eps


def refuse_unavailable(metric: Metric, spec: str, have: frozenset[Capability]) -> None:
    """Refuse `metric` on a model that offers only `have`, naming what is missing, the metrics that
    would work with the model, and where the missing scores come from."""
    missing = missing_capabilities(metric, have)
    if not missing:
        return
    fitting = []
    for info in eps.entry_points("metrics"):
        try:
            cls = eps.load("metrics", info.name)
        except BiasError:
            continue
        if not missing_capabilities(cls, have):
            fitting.append(info.name)
    needs = " ".join(missing)  # the hint for what is missing, not for another kind of model
    hint = " ".join(
        said
        for wanted, said in (
            (
                ("masked-lm",),
                "A Hugging Face folder gives masked-LM scores only with its MLM head (a "
                "*ForMaskedLM checkpoint).",
            ),
            (
                ("causal-lm", "generation"),
                "Log-likelihoods of answers come from a causal LM (a *ForCausalLM checkpoint), "
                "written answers from a chat model or a causal LM.",
            ),
        )
        if any(w in needs for w in wanted)
    )
    raise BiasError(
        f"The model {spec} offers no {', '.join(missing)}, which metric '{metric.name}' needs; "
        f"metrics that work with it: {', '.join(sorted(fitting)) or 'none installed'}.",
        hint,
    )
