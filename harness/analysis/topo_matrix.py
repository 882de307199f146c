"""A minimal reader of `nvidia-smi topo -m`: the device-to-device link matrix. Stdlib only.

The output is a table whose columns are separated by tabs (or, once pasted, by runs of
spaces), with underline escape codes around the header, device columns (GPU0.., NIC0..,
mlx5_0..) followed by "CPU Affinity", "NUMA Affinity" and "GPU NUMA ID", then a legend.
Only the device-to-device cells are interpreted; the raw text is always kept beside them.
"""

from __future__ import annotations

import re
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SPLIT = re.compile(r"\t|\s{2,}")
TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
# The legend's link kinds, fastest first as nvidia-smi describes them.
PCIE_KINDS = ("PIX", "PXB", "PHB", "NODE", "SYS")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in _SPLIT.split(_ANSI.sub("", line).strip()) if cell.strip()]


def parse(text: str) -> dict[str, Any]:
    """{"devices": [...], "links": {row: {col: kind}}, "affinity": {row: {column: value}}}.

    Raises ValueError when no header row naming GPU0 is found.
    """
    lines = _ANSI.sub("", text).splitlines()
    # The header names GPU0 as a column; every data row has an "X" cell (a device to itself).
    header_index = next((i for i, line in enumerate(lines)
                         if "GPU0" in _cells(line) and "X" not in _cells(line)), None)
    if header_index is None:
        raise ValueError("no `nvidia-smi topo -m` header row (naming GPU0) found")
    header = _cells(lines[header_index])
    devices = [c for c in header if c not in TRAILING_COLUMNS]
    trailing = [c for c in header if c in TRAILING_COLUMNS]
    links: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str]] = {}
    for line in lines[header_index + 1:]:
        cells = _cells(line)
        if not cells or cells[0] not in devices:
            if cells and cells[0].startswith("Legend"):
                break
            continue
        name, values = cells[0], cells[1:]
        links[name] = dict(zip(devices, values[:len(devices)]))
        rest = values[len(devices):]
        if rest:
            affinity[name] = dict(zip(trailing, rest))
    return {"devices": devices, "links": links, "affinity": affinity}


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


def gpu_pairs(parsed: dict[str, Any], gpu_indices: list[int]) -> dict[str, str]:
    """The link cell between each pair of the given nvidia-smi GPU indices: {"GPU0-GPU1": "NV18"}."""
    pairs = {}
    for pos, a in enumerate(gpu_indices):
        for b in gpu_indices[pos + 1:]:
            cell = parsed["links"].get(f"GPU{a}", {}).get(f"GPU{b}")
            if cell is not None:
                pairs[f"GPU{a}-GPU{b}"] = cell
    return pairs
