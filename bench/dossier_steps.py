#!/usr/bin/env python3
"""Where a `dossier run`'s wall time goes, from its bundles' own records (standard library only).

    python3 bench/dossier_steps.py BUNDLE... [--walls WALLS] [--json OUT.json]

For each bundle: every step's duration (commands.json), the gap before it, its process's start-up ("pre": the
process's start to its document's started_at) and end ("post": the document's finished_at to the process's
end), whether it ran beside another step or was started ahead (its record's inputs and note), the record's
span (started_at to finished_at) and, with WALLS (lines `NAME launched EPOCH ended EPOCH`, as
bench/gpu_dossier_speed.sh writes them), the time before its first step and after its last: the CLI's start,
assembly, signing, verification. Prints one table per quantity, the runs side by side, medians last.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tarfile
from datetime import datetime
from pathlib import Path


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def walls(path: Path | None) -> dict[str, tuple[float, float]]:
    if path is None or not path.exists():
        return {}
    found = re.finditer(r"(\S+) launched ([\d.]+) ended ([\d.]+)", path.read_text())
    return {m.group(1): (float(m.group(2)), float(m.group(3))) for m in found}


def one(bundle: Path, wall: tuple[float, float] | None) -> dict:
    with tarfile.open(bundle) as tar:
        commands = json.load(tar.extractfile("commands.json"))
        names = set(tar.getnames())
        raw = {n: json.load(tar.extractfile(n)) for n in names if n.startswith("raw/") and n.endswith(".json")}
    steps, last_end = [], None
    for entry in commands["steps"]:
        row = {"step": entry["step"], "status": entry["status"], "duration_s": entry.get("duration_s")}
        document = raw.get(f"raw/{entry['step']}.json")
        if entry.get("started_at") and entry.get("finished_at"):
            if document and document.get("started_at") and document.get("finished_at"):
                row["pre_s"] = ts(document["started_at"]) - ts(entry["started_at"])
                row["post_s"] = ts(entry["finished_at"]) - ts(document["finished_at"])
            row["beside"] = bool((entry.get("inputs") or {}).get("ran_beside"))
            row["ahead"] = str(entry.get("note") or "").startswith("started ahead")
            row["during"] = entry["step"] == "health-load"
            if not (row["beside"] or row["during"]):
                row["gap_before_s"] = ts(entry["started_at"]) - last_end if last_end else 0.0
                last_end = ts(entry["finished_at"])
        steps.append(row)
    result = {
        "bundle": bundle.name,
        "record_s": commands["duration_s"],
        "after_last_step_s": ts(commands["finished_at"]) - last_end if last_end else None,
        "steps": steps,
    }
    if wall:
        result.update(
            wall_s=wall[1] - wall[0],
            before_s=ts(commands["started_at"]) - wall[0],
            after_s=wall[1] - ts(commands["finished_at"]),
        )
    return result


def cell(value: float | None) -> str:
    return f"{value:7.2f}" if isinstance(value, (int, float)) else f"{'-':>7}"


def show(runs: list[dict]) -> None:
    order = list(dict.fromkeys(s["step"] for r in runs for s in r["steps"]))
    head = " ".join(f"{r['bundle'].removesuffix('.tar.gz')[:12]:>12}" for r in runs)
    for key, title in (
        ("duration_s", "step wall (s)"),
        ("pre_s", "process start to its document's start (s)"),
        ("post_s", "its document's end to the process's end (s)"),
        ("gap_before_s", "gap before (s)"),
    ):
        print(f"\n{title}\n{'step':<14} {head}   median  how")
        for name in order:
            got = [next((s for s in r["steps"] if s["step"] == name), {}) for r in runs]
            values = [g.get(key) for g in got]
            numbers = [v for v in values if isinstance(v, (int, float))]
            how = {
                "beside" if g.get("beside") else "ahead" if g.get("ahead") else "during" if g.get("during") else ""
                for g in got
            } - {""}
            print(
                f"{name:<14} "
                + " ".join(f"{cell(v):>12}" for v in values)
                + f"  {cell(statistics.median(numbers)) if numbers else cell(None)}  {','.join(sorted(how))}"
            )
    print(f"\n{'whole run':<14} {head}   median")
    for key, title in (
        ("before_s", "before 1st step"),
        ("record_s", "record"),
        ("after_last_step_s", "last step->end"),
        ("after_s", "after record"),
        ("wall_s", "dossier run"),
    ):
        values = [r.get(key) for r in runs]
        numbers = [v for v in values if isinstance(v, (int, float))]
        print(
            f"{title:<14} "
            + " ".join(f"{cell(v):>12}" for v in values)
            + f"  {cell(statistics.median(numbers)) if numbers else cell(None)}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", type=Path, nargs="+")
    parser.add_argument("--walls", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    known = walls(args.walls)
    runs = [one(b, known.get(b.name.removesuffix(".tar.gz"))) for b in args.bundles if b.exists()]
    if not runs:
        print("no bundle found", file=sys.stderr)
        return 1
    show(runs)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
