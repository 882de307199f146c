"""report.md's host contention section, from the bundle alone: what else the host did while each probe
step ran (host-contention.json), every figure recomputed from its readings (harness.judge.contention)."""

from __future__ import annotations

from typing import Any

from harness.analysis import contention as rules
from harness.bundle import layout
from harness.bundle.view import BundleFormatError, BundleView
from harness.judge import contention
from harness.judge.facts import BundleFacts


def _cost(document: dict[str, Any], figures: dict[str, dict[str, Any]]) -> str:
    spent = sum(e.get("sampler_cpu_s") or 0 for e in document.get("steps") or [] if isinstance(e, dict))
    window = sum(f["window_s"] for f in figures.values())
    share = f" ({spent / window:.2%} of one core)" if window > 0 else ""
    return f"The readings took {spent:.3f} s of CPU over {window:.1f} s of steps{share}."


def lines(view: BundleView) -> list[str]:
    """The section's lines (Markdown); none for a bundle that records no host readings (format 5 and older)."""
    try:
        document = view.contention
    except BundleFormatError:
        return []
    if not isinstance(document, dict):
        return []
    why = rules.not_sampled_reason(document)
    if why is not None:
        return [f"Not sampled: {why}."]
    figures = contention.windows(BundleFacts(view)) or {}
    cpus = (document.get("sampler") or {}).get("cpu_count")
    found = [
        f"Read from /proc as each probe step ran (`{layout.CONTENTION}`, {cpus} CPUs); {rules.BUSY_RULE}. "
        f"{_cost(document, figures)}",
        "",
    ]
    idle = [step for step, f in figures.items() if f["state"] == rules.IDLE]
    if idle:
        most = max(f["others_share"] for f in figures.values() if f["state"] == rules.IDLE)
        found.append(f"- idle: {', '.join(idle)} (other processes at most {most:.0%} of the CPUs)")
    for step, f in figures.items():
        if f["state"] == rules.BUSY:
            found.append(f"- **busy**: {step}: {contention.short(f)}")
        elif f["state"] == rules.UNKNOWN:
            found.append(f"- unknown: {step}: {f['why']}")
    return found
