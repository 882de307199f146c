"""The precision table as Markdown, from a precision probe document (host side)."""

from __future__ import annotations

from typing import Any

from harness.analysis.precision import MODEL_QUALITY_CAVEAT, headlines
from harness.judge.evidence import checkpoint_name
from harness.probes.contract import is_unavailable


def _cell(value: Any, spec: str = ".4g") -> str:
    if value is None:
        return "—"
    if is_unavailable(value):
        return f"unavailable ({value['unavailable']})"
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2%}"


def stats_table(tensors: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| role | tensor | dtype | shape | bytes [start, end) | sha256 | min | max | absmax | std | "
        "excess kurtosis | beyond 6σ | absmax/std |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in tensors:
        s = t["stats"]
        lines.append(
            f"| {t['role']} | `{t['name']}` | {t['dtype']} | {'×'.join(map(str, t['shape']))} | "
            f"[{t['byte_range'][0]}, {t['byte_range'][1]}) | `{t['sha256'][:16]}…` | {_cell(s['min'])} | "
            f"{_cell(s['max'])} | {_cell(s['absmax'])} | {_cell(s['std'])} | "
            f"{_cell(s['excess_kurtosis'], '.3f')} | {_pct(s['beyond_6sigma_share'])} | "
            f"{_cell(s['absmax_over_std'], '.2f')} |"
        )
    return lines


def formats_table(tensors: list[dict[str, Any]]) -> list[str]:
    """One table: every tensor, every format."""
    lines = [
        "| role | format | bits (with scales) | SQNR dB | relative RMSE | MSE | max abs error | "
        "saturated | underflowed | rank |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in tensors:
        order = {name: i + 1 for i, name in enumerate(t["ranking"])}
        for row in t["formats"]:
            if "not_applicable" in row:
                lines.append(
                    f"| {t['role']} | {row['format']} | {row['bits']} | n/a: {row['not_applicable']} | | | | | | |"
                )
                continue
            sqnr = "lossless" if row["sqnr_db"] is None and row["mse"] == 0 else _cell(row["sqnr_db"], ".2f")
            lines.append(
                f"| {t['role']} | {row['format']} | {row['bits']} ({row['bits_per_element_with_scales']:.3g}) "
                f"| {sqnr} | {_cell(row['relative_rmse'], '.3e')} | {_cell(row['mse'], '.3e')} | "
                f"{_cell(row['max_abs_error'], '.3e')} | {_pct(row['saturated_share'])} | "
                f"{_pct(row['underflow_share'])} | {order.get(row['format'], '—')} |"
            )
    return lines


def render(document: dict[str, Any]) -> str:
    """Markdown for one precision document; headline figures are recomputed, not copied."""
    head = headlines(document)
    cp = document["checkpoint"]
    lines = [
        f"# Precision of checkpoint tensors (M1T3): {checkpoint_name(cp) or cp['label']}",
        "",
        f"- file: `{_cell(cp.get('file'))}`, sha256 `{_cell(cp['file_sha256'])}`",
        f"- from: {_cell(cp['source'])}; pinned by: {_cell(cp['pinned_by'])}",
        f"- computed on: {document['device']} ({_cell(document.get('device_name'))}), torch "
        f"{document.get('torch_version')}",
        "",
        "## Tensors",
        "",
        *stats_table(document["tensors"]),
        "",
        "## Representation error by format",
        "",
        "SQNR = 10·log10(Σx² / Σ(x−q)²); underflowed = nonzero weights that became zero or "
        "subnormal in the format; saturated = weights beyond the format's range (clamped).",
        "",
        *formats_table(document["tensors"]),
        "",
        "## Rankings (best SQNR first)",
        "",
    ]
    lines += [f"- {role}: {', '.join(order)}" for role, order in head["ranks"].items()]
    lines += ["", "## What the numbers show", ""]
    counts = head["explanations"]
    lines.append("Explanations found: " + ", ".join(f"{kind} {n}" for kind, n in counts.items()) + ".")
    lines.append("")
    lines += [f"- **{e['kind']}**: {e['text']}" for e in document.get("explanations", [])]
    lines += ["", f"> {MODEL_QUALITY_CAVEAT}", ""]
    return "\n".join(lines)
