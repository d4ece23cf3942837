"""Reports built from results alone (never from a live run), so they can be regenerated later."""

from __future__ import annotations

from collections.abc import Sequence

from bias.core.model import OK, Result


def format_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def significance(p: float | None) -> str:
    if p is None:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def sizes_text(result: Result) -> str:
    return "/".join(str(result.sizes.get(k, "-")) for k in ("X", "Y", "A", "B")) if result.sizes else "-"


def lost_text(result: Result) -> str:
    n = sum(len(v) for v in result.lost.values())
    return str(n) if n else "0"


def method_text(result: Result) -> str:
    c = result.convention
    if not c:
        return "-"
    seed = f", seed={c.get('seed')}" if c.get("method") == "sampled" else ""
    return f"{c.get('method')} ({c.get('permutations')}), ddof={c.get('ddof')}, {c.get('alternative')}{seed}"


def rows(results: Sequence[Result]) -> list[dict[str, str]]:
    out = []
    for r in results:
        out.append(
            {
                "model": r.model,
                "wordset": r.wordset,
                "metric": r.metric,
                "effect_size": "-" if r.effect_size is None else f"{r.effect_size:+.3f}",
                "p_value": format_p(r.p_value) + significance(r.p_value),
                "convention": method_text(r),
                "sizes": sizes_text(r),
                "lost": lost_text(r),
                "status": r.status if r.status == OK else f"{r.status}: {r.reason}",
            }
        )
    return out


COLUMNS = (
    ("model", "Model"),
    ("wordset", "Test"),
    ("metric", "Metric"),
    ("effect_size", "Effect size"),
    ("p_value", "p"),
    ("convention", "Convention"),
    ("sizes", "X/Y/A/B"),
    ("lost", "Lost"),
    ("status", "Status"),
)


def markdown(results: Sequence[Result], title: str = "Bias report") -> str:
    lines = [f"# {title}", ""]
    ok = [r for r in results if r.status == OK]
    lines.append(f"{len(results)} experiment(s): {len(ok)} ok, {len(results) - len(ok)} refused or failed.")
    lines.append("")
    lines.append("| " + " | ".join(label for _, label in COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in rows(results):
        lines.append("| " + " | ".join(row[key].replace("|", "\\|") for key, _ in COLUMNS) + " |")
    lines += [
        "",
        "Effect size: Cohen's d of the association (positive: X closer to A and Y closer to B). "
        "p: permutation test, one-sided unless stated; * p < 0.05, ** p < 0.01, *** p < 0.001 (not corrected for multiple tests).",
    ]
    lost = [r for r in results if r.lost]
    if lost:
        lines += ["", "## Lost words", ""]
        for r in lost:
            for key, words in r.lost.items():
                lines.append(f"- {r.model} / {r.wordset} / set {key}: {', '.join(words)}")
    warned = [r for r in results if r.warnings]
    if warned:
        lines += ["", "## Warnings", ""]
        for r in warned:
            for w in r.warnings:
                lines.append(f"- {r.wordset}: {w}")
    return "\n".join(lines) + "\n"
