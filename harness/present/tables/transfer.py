"""The transfer tables as Markdown, from a transfer probe document (host side): each figure per GPU
beside the theoretical rate of the link it crossed, with the ratio explained; the link and P2P
verdicts; the peer matrix (or why there is none); contention and NUMA comparisons.

Every number is recomputed by harness.analysis.transfer from the raw per-copy times.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.transfer.figures import (
    BIDIRECTIONAL_VARIES,
    PAGEABLE_VARIES,
    RELY_ON,
    all_series_figures,
    headlines,
)

ORDER = {"host_to_device": 0, "device_to_host": 1, "device_local": 2, "host_to_host": 3, "device_to_device_peer": 4}
MEMORY = {"pinned": 0, "pageable": 1}
CONCURRENCY = {"alone": 0, "bidirectional": 1, "all_gpus": 2}


def _gbps(value: Any) -> str:
    return "—" if value is None else f"{value:.4g}"


def _ratio(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def _what(series: dict[str, Any]) -> str:
    if series["direction"] == "device_to_device_peer":
        return f"peer {series['peer_mode']} GPU{series['src_gpu']} to GPU{series['dst_gpu']}, {series['concurrency']}"
    words = series["direction"].replace("_", " ")
    memory = "" if series["memory"] in ("device", "host") else f", {series['memory']}"
    numa = "" if series.get("numa_placement", "default") == "default" else f", {series['numa_placement']} NUMA node"
    together = {"alone": "", "bidirectional": ", both directions at once", "all_gpus": ", all GPUs at once"}
    return f"{words}{memory}{together[series['concurrency']]}{numa}"


def series_table(document: dict[str, Any], figures: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| GPU | copy | GB/s | basis | small-copy latency (µs) | link crossed | ceiling GB/s | ratio |",
        "|---|---|---:|---|---:|---|---:|---:|",
    ]
    ordered = sorted(
        document.get("series", []),
        key=lambda s: (
            str(s["gpu"] if s["gpu"] is not None else s.get("src_gpu")),
            ORDER.get(s["direction"], 9),
            s.get("numa_placement", "default") != "default",
            MEMORY.get(s["memory"], 9),
            CONCURRENCY.get(s["concurrency"], 9),
            s["id"],
        ),
    )
    for s in ordered:
        fig = figures[s["id"]]
        link, lat = fig["link"], fig["latency"]
        gpu = (
            "host"
            if s["gpu"] is None and s["direction"] == "host_to_host"
            else (s["gpu"] if s["gpu"] is not None else f"{s['src_gpu']}→{s['dst_gpu']}")
        )
        lines.append(
            f"| {gpu} | {_what(s)} | {_gbps(link['rate_gbps'])} | {link['rate_basis']} | "
            f"{'—' if not lat['measured'] else format(lat['median_us'], '.3g')} | {link['kind']} | "
            f"{_gbps(link['ceiling_gbps'])} | {_ratio(link['ratio'])} |"
        )
    return lines


def explanations(figures: dict[str, dict[str, Any]]) -> list[str]:
    """Each distinct link's theoretical rate, explained once."""
    seen: list[str] = []
    for fig in figures.values():
        text = fig["link"]["explanation"]
        if text not in seen:
            seen.append(text)
    return [f"- {text}" for text in seen]


def peer_lines(heads: dict[str, Any]) -> list[str]:
    peer = heads["peer"]
    if not peer["measured"]:
        return [f"No peer matrix and so no peer heatmap: {peer['why']}."]
    lines = [
        "| pair | write GB/s (source pushes) | read GB/s (destination pulls) | link | ceiling GB/s |",
        "|---|---:|---:|---|---:|",
    ]
    for key in sorted(set(peer["write"]) | set(peer["read"])):
        write, read = peer["write"].get(key) or {}, peer["read"].get(key) or {}
        cell = write or read
        lines.append(
            f"| GPU{key.replace('->', ' → GPU')} | {_gbps(write.get('rate_gbps'))} | "
            f"{_gbps(read.get('rate_gbps'))} | {cell.get('link_kind', '—')} | "
            f"{_gbps(cell.get('ceiling_gbps'))} |"
        )
    for group, entry in sorted(peer["bidirectional"].items()):
        lines.append(f"\nBoth ways at once, {group}: {_gbps(entry['total_gbps'])} GB/s in total.")
    lines.append(f"\n{peer['why']}.")
    return lines


def verdict_lines(heads: dict[str, Any]) -> list[str]:
    lines = [f"- GPU {c['gpu']} link: **{c['status']}**: {' '.join(c['reasons'])}" for c in heads["link_checks"]]
    lines += [f"- {c['pair']} ({c['cell']}): **{c['status']}**: {' '.join(c['reasons'])}" for c in heads["p2p_checks"]]
    for c in heads["comparisons"]:
        what = "all GPUs at once over alone" if c["what"] == "all_gpus_over_alone" else "far NUMA node over near"
        lines.append(
            f"- GPU {c['gpu']} {c['direction'].replace('_', ' ')}, {what}: {_gbps(c['gbps'])} / "
            f"{_gbps(c['baseline_gbps'])} GB/s = {_ratio(c['ratio'])}"
        )
    return lines


def render(document: dict[str, Any]) -> str:
    figures = all_series_figures(document)
    heads = headlines(document)
    where = (
        "host memory copies on the CPU (not PCIe, no GPU link)"
        if document.get("device") == "cpu"
        else f"{heads['gpu_count']} GPU(s)"
    )
    lines = [
        f"# Transfers ({where})",
        "",
        "Each figure is the plateau of its size sweep (never the maximum), else the largest size's rate, "
        "named so; bytes copied once per copy (nvbandwidth's convention); ratio = figure / the ceiling of "
        "the link it crossed, per direction.",
        "",
    ]
    lines += series_table(document, figures) + ["", "Theoretical rates:"] + explanations(figures)
    if document.get("device") == "cuda":
        lines += [
            "",
            "Which figures to rely on:",
            f"- {RELY_ON}.",
            f"- Why pageable copies vary: {PAGEABLE_VARIES}.",
            f"- Why the host-to-device half of both directions at once varies: {BIDIRECTIONAL_VARIES}.",
        ]
    lines += ["", "## Links and peers", ""] + (verdict_lines(heads) or ["- no GPU link to judge"])
    lines += [""] + peer_lines(heads)
    return "\n".join(lines) + "\n"
