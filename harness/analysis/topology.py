"""`nvidia-smi topo -m` parsed into a matrix; the raw text is kept beside it by the caller.

The format (tab-separated, header underlined with ANSI escapes on a terminal):

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A
    NIC0\tPIX\tSYS\t X
    (blank line)
    Legend: ...  and, where NICs exist, "NIC Legend:" with "NIC0: mlx5_0".

nvidia-smi writes an extra empty cell before "GPU NUMA ID" and NIC rows stop after the device
columns, so cells are matched to columns after dropping surplus empty cells. Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LEGEND_LINE = re.compile(r"^\s*(\S+)\s+=\s+(.*\S)\s*$")
NIC_LEGEND_LINE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)


def parse_topo_matrix(text: str) -> dict[str, Any]:
    """{"columns", "rows": {label: {column: cell}}, "row_order", "legend", "nic_legend"}.

    Raises ValueError when the text has no matrix header (not `nvidia-smi topo -m` output).
    """
    lines = strip_ansi(text).splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.startswith("\t") and line.strip()), None)
    if header_at is None:
        raise ValueError("no matrix header (a line starting with a tab) in the topo -m text")
    columns = [c.strip() for c in lines[header_at].split("\t") if c.strip()]
    rows: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for line in lines[header_at + 1:]:
        if not line.strip():
            break
        label, *cells = [c.strip() for c in line.split("\t")]
        rows[label] = _match_cells(columns, cells)
        order.append(label)
    legend: dict[str, str] = {}
    nic_legend: dict[str, str] = {}
    for line in lines[header_at + 1 + len(order):]:
        if m := NIC_LEGEND_LINE.match(line):
            nic_legend[m.group(1)] = m.group(2)
        elif m := LEGEND_LINE.match(line):
            legend[m.group(1)] = m.group(2)
    return {"columns": columns, "rows": rows, "row_order": order, "legend": legend,
            "nic_legend": nic_legend}


def _match_cells(columns: list[str], cells: list[str]) -> dict[str, str]:
    """Drop surplus empty cells (nvidia-smi's double tab), then pair cells with columns."""
    cells = list(cells)
    while len(cells) > len(columns) and "" in cells:
        cells.remove("")
    while cells and not cells[-1] and len(cells) > len(columns):
        cells.pop()
    return {column: cell for column, cell in zip(columns, cells)}


def gpu_links(matrix: dict[str, Any], label: str) -> dict[str, str]:
    """The connection from one GPU row to every other GPU/NIC column (its own 'X' left out)."""
    row = matrix["rows"].get(label, {})
    return {col: cell for col, cell in row.items()
            if re.fullmatch(r"(GPU|NIC)\d+", col) and col != label}
