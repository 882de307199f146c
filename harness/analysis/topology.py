"""`nvidia-smi topo -m` parsed into a matrix; the raw text is kept beside it by the caller.

Used by the health probe (per-device links) and the all-reduce probe (links between the GPUs
its ranks use). The format (tab-separated, header underlined with ANSI escapes on a terminal):

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A
    NIC0\tPIX\tSYS\t X
    (blank line)
    Legend: ...  and, where NICs exist, "NIC Legend:" with "NIC0: mlx5_0".

nvidia-smi writes an extra empty cell before "GPU NUMA ID" and NIC rows stop after the device
columns, so cells are matched to columns after dropping surplus empty cells. A matrix pasted
from a terminal has its tabs turned into runs of spaces; a line without tabs is split on runs
of two or more spaces instead ("CPU Affinity" keeps its single space). Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LEGEND_LINE = re.compile(r"^\s*(\S+)\s+=\s+(.*\S)\s*$")
NIC_LEGEND_LINE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
DEVICE_LABEL = re.compile(r"(GPU|NIC)\d+")
SPACE_RUN = re.compile(r"\s{2,}")
# The legend's PCIe path kinds, fastest first as nvidia-smi describes them.
PCIE_KINDS = ("PIX", "PXB", "PHB", "NODE", "SYS")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)


def _split(line: str) -> list[str]:
    """A line's cells, stripped; tab-separated as printed, or space-separated once pasted."""
    cells = line.split("\t") if "\t" in line else SPACE_RUN.split(line.rstrip())
    return [cell.strip() for cell in cells]


def _is_header(cells: list[str]) -> bool:
    # The header names GPU0 as a column after an empty corner cell; a data row starts with its label.
    return len(cells) > 1 and cells[0] == "" and "GPU0" in cells


def parse_topo_matrix(text: str) -> dict[str, Any]:
    """{"columns", "rows": {label: {column: cell}}, "row_order", "legend", "nic_legend"}.

    Raises ValueError when the text has no matrix header (not `nvidia-smi topo -m` output).
    """
    lines = strip_ansi(text).splitlines()
    header_at = next((i for i, line in enumerate(lines) if _is_header(_split(line))), None)
    if header_at is None:
        raise ValueError("no `nvidia-smi topo -m` header row (naming GPU0) in the text")
    columns = [c for c in _split(lines[header_at]) if c]
    rows: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for line in lines[header_at + 1 :]:
        if not line.strip():
            break
        label, *cells = _split(line)
        rows[label] = _match_cells(columns, cells)
        order.append(label)
    legend: dict[str, str] = {}
    nic_legend: dict[str, str] = {}
    for line in lines[header_at + 1 + len(order) :]:
        if m := NIC_LEGEND_LINE.match(line):
            nic_legend[m.group(1)] = m.group(2)
        elif m := LEGEND_LINE.match(line):
            legend[m.group(1)] = m.group(2)
    return {"columns": columns, "rows": rows, "row_order": order, "legend": legend, "nic_legend": nic_legend}


def _match_cells(columns: list[str], cells: list[str]) -> dict[str, str]:
    """Drop surplus empty cells (nvidia-smi's double tab), then pair cells with columns."""
    cells = list(cells)
    while len(cells) > len(columns) and "" in cells:
        cells.remove("")
    while cells and not cells[-1] and len(cells) > len(columns):
        cells.pop()
    return dict(zip(columns, cells, strict=False))


def device_columns(matrix: dict[str, Any]) -> list[str]:
    """The GPUn/NICn columns, in printed order (the affinity columns left out)."""
    return [c for c in matrix["columns"] if DEVICE_LABEL.fullmatch(c)]


def gpu_links(matrix: dict[str, Any], label: str) -> dict[str, str]:
    """The connection from one GPU row to every other GPU/NIC column (its own 'X' left out)."""
    row = matrix["rows"].get(label, {})
    return {col: cell for col, cell in row.items() if DEVICE_LABEL.fullmatch(col) and col != label}


def gpu_pairs(matrix: dict[str, Any], gpu_indices: list[int]) -> dict[str, str]:
    """The link cell between each pair of the given nvidia-smi GPU indices: {"GPU0-GPU1": "NV18"}."""
    pairs = {}
    for pos, a in enumerate(gpu_indices):
        for b in gpu_indices[pos + 1 :]:
            cell = matrix["rows"].get(f"GPU{a}", {}).get(f"GPU{b}")
            if cell is not None:
                pairs[f"GPU{a}-GPU{b}"] = cell
    return pairs


def link_kind(cell: str) -> dict[str, Any]:
    """'NV18' -> {"kind": "nvlink", "links": 18}; 'PHB' -> {"kind": "pcie", "path": "PHB"}."""
    match = re.fullmatch(r"NV(\d+)", cell)
    if match:
        return {"kind": "nvlink", "links": int(match.group(1))}
    if cell in PCIE_KINDS:
        return {"kind": "pcie", "path": cell}
    if cell == "X":
        return {"kind": "self"}
    return {"kind": "unknown", "cell": cell}
