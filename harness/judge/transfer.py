"""The report's transfer criterion (beyond lab M1): every GPU's host link carries what
it reports and no NVLink pair refuses peer access. Its evidence lines are each GPU's pinned
figures beside the link's theoretical rate, and its plots (the sweeps and, with two or more GPUs,
the peer heatmap) are the transfer step's. Rules: harness.analysis.transfer.links."""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer import links as rules
from harness.analysis.transfer.view import TransferFigures
from harness.analysis.verdict import Verdict
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts
from harness.judge.lab import prerequisite, result

STEP = "transfer"
TEXT = (
    "Beyond lab M1, transfers: every GPU's host link is trained to its maximum and carries at least "
    f"{rules.DEGRADED_LINK_FRACTION:g} of what it reports; no pair joined by NVLink refuses peer access"
)
FIGURES = (
    ("h2d_pinned_gbps", "host-to-device pinned"),
    ("d2h_pinned_gbps", "device-to-host pinned"),
    ("bidirectional_total_pinned_gbps", "both directions at once, pinned, summed at the largest size"),
    ("device_local_gbps", "device-local copy"),
)


def _gpu_lines(heads: TransferFigures) -> list[str]:
    lines = []
    for gpu, figures in sorted(heads.per_gpu.items()):
        if gpu == "host":
            lines.append(f"Host memory copies on the CPU (not PCIe): {_number(figures.get('host_to_host_gbps'))}.")
            continue
        ceiling = figures.get("pcie_ceiling_gbps")
        parts = []
        for key, words in FIGURES:
            if key in figures:
                value = figures[key]
                share = (
                    f" = {value / ceiling:.3f} of the {ceiling:.4g} GB/s PCIe ceiling"
                    if value is not None
                    and ceiling
                    and key != "device_local_gbps"
                    and not key.startswith("bidirectional_total")
                    else ""
                )
                parts.append(f"{words} {_number(value)}{share}")
        lines.append(f"GPU {gpu}: " + "; ".join(parts) + ".")
    return lines


def _number(value: Any) -> str:
    return "no plateau" if value is None else f"{value:.4g} GB/s"


def judge_transfer(facts: BundleFacts, thresholds: Any = None) -> list[Result]:
    values, early, why = prerequisite(facts, STEP)
    if early:
        return result(STEP, TEXT, early, why, (STEP,))
    heads = TransferFigures.from_headlines(values)
    findings = _gpu_lines(heads)
    findings += [f"GPU {c.gpu} link {c.status}: {' '.join(c.reasons)}." for c in heads.link_checks]
    findings += [f"Pair {c.pair} ({c.cell}) {c.status}: {' '.join(c.reasons)}." for c in heads.p2p_checks]
    if not heads.peer_measured:
        findings.append(f"No peer matrix: {heads.peer_why}.")
    if heads.device != "cuda":
        findings.append("Host memory copies on the CPU: no GPU link to judge.")
        return result(
            STEP,
            TEXT,
            Verdict.SKIP,
            findings,
            (STEP,),
            why="a CPU run copies host memory: there is no GPU link to judge here",
        )
    findings.append("Pageable and both-at-once copies vary from run to run: rely on the pinned ones (transfer table).")
    bad = [c for c in heads.link_checks if c.status in ("degraded", "inconsistent")]
    bad += [c for c in heads.p2p_checks if c.status in ("broken_p2p", "degraded")]
    if bad:
        findings.append(f"{len(bad)} link(s) or pair(s) failed: " + ", ".join(c.name for c in bad) + ".")
        return result(STEP, TEXT, Verdict.FAIL, findings, (STEP,), why="; ".join(f"{c.name} {c.status}" for c in bad))
    if all(c.status == "unknown" for c in heads.link_checks):
        findings.append("NVML gave no link to judge on any GPU.")
        return result(STEP, TEXT, Verdict.INCOMPLETE, findings, (STEP,))
    findings.append("Every link and pair judged is healthy.")
    return result(
        STEP,
        TEXT,
        Verdict.PASS,
        findings,
        (STEP,),
        why=f"{len(heads.link_checks)} GPU link(s) and {len(heads.p2p_checks)} pair(s) judged healthy",
    )


TRANSFER = Criterion(STEP, TEXT, (STEP,), judge_transfer, "Host and peer links (trained and carrying their rate)")
