"""Print the comparison table for bench/transfer_vs_nvbandwidth.sh (standard library only).

Reads OUT/transfer.json (our probe) and OUT/nvbandwidth.json (`nvbandwidth -j`: {"nvbandwidth":
{"testcases": [{"name", "bandwidth_matrix": rows of strings, "N/A" where not measured}]}}; a test
that reports several matrices, the bidirectional peer ones, appends them one after another).
Each of our figures is its plateau (recomputed from the raw per-copy times by
harness.analysis.transfer), and our 512 MiB point, nvbandwidth's default buffer size, beside the
matching nvbandwidth figure. Goal (issue 17): ours / nvbandwidth >= 0.98.

nvbandwidth's matrices (NVIDIA/nvbandwidth testcases_ce.cpp): host tests are one row, one column
per GPU; peer write [a][b] is a copy a -> b run by a; peer read [a][b] is a copy b -> a run by a
(the reader); the bidirectional peer tests stack read1 (or write1), read2 (write2) and total.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

GOAL = 0.98
NVBANDWIDTH_BYTES = 512 * 2**20


def nvbandwidth_matrices(path: Path) -> dict[str, list[list[float | None]]]:
    if not path.exists():
        return {}
    text = path.read_text()
    start = text.find("{")
    if start < 0:
        return {}
    cases = json.loads(text[start:]).get("nvbandwidth", {}).get("testcases", [])
    out = {}
    for case in cases:
        rows = case.get("bandwidth_matrix") or []
        out[case["name"]] = [[None if cell == "N/A" else float(cell) for cell in row] for row in rows]
    return out


def cell(matrices: dict[str, Any], test: str, row: int, col: int, block: int = 0, gpus: int = 1) -> float | None:
    rows = matrices.get(test)
    index = block * gpus + row
    if not rows or index >= len(rows) or col >= len(rows[index]):
        return None
    return rows[index][col]


def our_figures(document: dict[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """series id -> (plateau GB/s, GB/s of the 512 MiB point), from raw per-copy times."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from harness.analysis.transfer.figures import all_series_figures

    figures = all_series_figures(document)
    out = {}
    for sid, fig in figures.items():
        at = next((p["gbps"] for p in fig["points"] if p["bytes"] == NVBANDWIDTH_BYTES), None)
        out[sid] = (fig["plateau"]["gbps"], at)
    groups = {g["id"]: g for g in document["groups"]}
    for gid, group in groups.items():
        plateaus = [out[m][0] for m in group["members"]]
        at = [out[m][1] for m in group["members"]]
        out[gid + " (total)"] = (sum(plateaus) if None not in plateaus else None, sum(at) if None not in at else None)
    return out


def pairs(document: dict[str, Any], gpus: int) -> list[tuple[str, str, int, int, int]]:
    """(our key, nvbandwidth test, row, col, block) for every figure both measure."""
    wanted = []
    for i in range(gpus):
        wanted += [
            (f"gpu{i}/h2d/pinned", "host_to_device_memcpy_ce", 0, i, 0),
            (f"gpu{i}/d2h/pinned", "device_to_host_memcpy_ce", 0, i, 0),
            (f"gpu{i}/bidirectional/h2d/pinned", "host_to_device_bidirectional_memcpy_ce", 0, i, 0),
            (f"gpu{i}/bidirectional/d2h/pinned", "device_to_host_bidirectional_memcpy_ce", 0, i, 0),
            (f"gpu{i}/local", "device_local_copy", 0, i, 0),
            (f"all-gpus/h2d/gpu{i}", "host_to_all_memcpy_ce", 0, i, 0),
            (f"all-gpus/d2h/gpu{i}", "all_to_host_memcpy_ce", 0, i, 0),
        ]
    for a in range(gpus):
        for b in range(gpus):
            if a == b:
                continue
            wanted += [
                (f"peer/write/{a}->{b}", "device_to_device_memcpy_write_ce", a, b, 0),
                (f"peer/read/{b}->{a}", "device_to_device_memcpy_read_ce", a, b, 0),
            ]
            if a < b:
                for mode in ("read", "write"):
                    gid = f"peer/bidirectional-{mode}/{a}<->{b}"
                    test = f"device_to_device_bidirectional_memcpy_{mode}_ce"
                    wanted += [
                        (f"{gid}/{b}->{a}", test, a, b, 0),
                        (f"{gid}/{a}->{b}", test, a, b, 1),
                        (f"{gid} (total)", test, a, b, 2),
                    ]
    return wanted


def ratio(mine: float | None, theirs: float | None) -> str:
    return f"{mine / theirs:.3f}" if mine and theirs else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        document = json.loads((args.out / "transfer.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"our probe's output is missing or not JSON ({exc}): see transfer.stderr")
        return 1
    matrices = nvbandwidth_matrices(args.out / "nvbandwidth.json")
    gpus = len(document["gpus"])
    ours = our_figures(document)
    print(f"## transfer probe vs nvbandwidth, same call, {gpus} GPU(s); goal ours/nvbandwidth >= {GOAL}\n")
    if not matrices:
        print("nvbandwidth produced no results (see nvbandwidth-build.log and run-info.txt)\n")
    print(
        "| ours | nvbandwidth test [row][col] | ours plateau | ours @512 MiB | nvbandwidth | plateau/nvb "
        "| 512MiB/nvb | goal |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    missed = compared = no_plateau = 0
    for key, test, row, col, block in pairs(document, gpus):
        if key not in ours:
            continue
        theirs = cell(matrices, test, row, col, block, gpus if block else 1)
        plateau, at = ours[key]
        verdict = "-" if not theirs else "no plateau" if not plateau else "yes" if plateau / theirs >= GOAL else "NO"
        missed += verdict == "NO"
        compared += verdict in ("yes", "NO")
        no_plateau += verdict == "no plateau"

        def fmt(v):
            return f"{v:.2f}" if v else "-"

        print(
            f"| {key} | {test} [{row}][{col}]{'' if not block else f' block {block}'} | {fmt(plateau)} | "
            f"{fmt(at)} | {fmt(theirs)} | {ratio(plateau, theirs)} | {ratio(at, theirs)} | {verdict} |"
        )
    print(
        f"\n{compared} figure(s) compared: {compared - missed} meet the goal, {missed} under it; "
        f"{no_plateau} without a plateau of ours to compare."
    )
    for check in document["link_checks"] + document["p2p_checks"]:
        print(f"{check.get('gpu', check.get('pair'))}: {check['status']}: {'; '.join(check['reasons'])}")
    for item in document["limitations"]:
        print(f"limitation: {item['what']} ({item['why']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
