#!/usr/bin/env python3
"""Harness overhead of `dossier run`: its wall time against the sum of its probes' own times.

Runs `python -m harness run` (a fresh process, as `make dossier` does) RUNS times with a
throw-away key, reads each bundle's commands.json, and compares the command's wall time with the
sum of the probe processes' durations the runner recorded. Overhead = everything else: the CLI's
start, orchestration, schema validation, plots, report, signing and writing. Prints a results
table (Markdown). Extra arguments go to `dossier run` (e.g. --skip roofline, --runner local).

    python bench/harness_overhead.py [--runs 3] [-- DOSSIER RUN ARGS...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.bundle.read import read_all


def one_run(work: Path, index: int, extra: list[str]) -> dict:
    name = f"overhead-{index}"
    argv = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--output-dir",
        str(work),
        "--name",
        name,
        "--signing-key",
        str(work / "keys" / "dossier.key"),
        *extra,
    ]
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    commands = json.loads(read_all(work / f"{name}.tar.gz")["commands.json"])
    probes = [s for s in commands["steps"] if s.get("duration_s") is not None]
    probe_s = sum(s["duration_s"] for s in probes)
    return {
        "wall_s": wall,
        "probe_s": probe_s,
        "overhead_s": wall - probe_s,
        "steps": ", ".join(f"{s['step']} {s['duration_s']:.1f}" for s in probes),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("extra", nargs="*", help="arguments for `dossier run` (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="overhead-bench-") as tmp:
        work = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "harness", "keygen", "--out", str(work / "keys")],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rows = [one_run(work, i, args.extra) for i in range(args.runs)]
    print(f"\nharness overhead: `dossier run {' '.join(args.extra)}`, {args.runs} runs\n")
    print("| run | wall s | sum of probe processes s | overhead s | overhead % of wall | probe steps (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, r in enumerate(rows, 1):
        print(
            f"| {i} | {r['wall_s']:.2f} | {r['probe_s']:.2f} | {r['overhead_s']:.2f} | "
            f"{100 * r['overhead_s'] / r['wall_s']:.1f} | {r['steps']} |"
        )
    median = statistics.median(100 * r["overhead_s"] / r["wall_s"] for r in rows)
    print(f"\ntarget: overhead under 5% of wall time: {'met' if median < 5 else 'NOT met'} (median {median:.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
