#!/usr/bin/env python3
"""How long `dossier fleet collect` takes over a synthetic fleet, and how much memory it holds.

Makes the fleet with bench/fleet_synth.py (node bundles assembled and signed by the harness from
the committed H200 bundle, ~1 % spread per node, one node each: slow HBM, PCIe x8 under load, a
throttling GPU, a bad signature, a missing bundle), then runs the real command as a child process:

    python -m harness fleet collect 19000 --output-dir OUT --key OUT/keys/dossier.pub

and measures its wall time, the CPU time of it and its workers, and the peak memory of its whole
process tree (the sum of every process's RSS, sampled from /proc every 20 ms; and the largest
single process from getrusage). Then it checks the answer: each sick node named with its kind of
problem, no healthy node rejected or flagged. It also times the per-node work alone, in this
process: `check_node` (verify + accept + metrics) on one bundle, the median of 20 after a warm-up.
Prints a Markdown table for bench/RESULTS.md. With --baseline it collects once more with
`--baseline-out OUT/profiles/{sku}.profile.json` (a profile from the healthy nodes: each healthy
node's bundle read twice more, harness/fleet/baseline.py) and sets that run's figures beside.

    python bench/fleet_collect.py [--nodes 1000] [--out /tmp/fleet-bench] [--workers N] [--reuse] [--baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import fleet_synth
from harness.fleet.node import NodeTask, check_node

ROOT = Path(__file__).resolve().parents[1]
JOB = "19000"
PAGE = os.sysconf("SC_PAGE_SIZE")
EXPECTED = {  # sickness -> (status, what must name it)
    "slow-hbm": ("ok", "bandwidth_sustained_gbps"),
    "pcie-x8": ("ok", "pcie_link_width_under_load"),
    "throttling": ("ok", "gemm_best_tflops"),
    "bad-signature": ("rejected", "signature"),
    "missing-bundle": ("failed", "wrote no bundle"),
}


def tree_sample(root: int, cpu_ticks: dict[int, int]) -> int:
    """Bytes resident in ROOT and all its descendants now (from /proc); CPU_TICKS keeps each
    process's latest user + system clock ticks, so that processes gone since still count."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        stats[int(entry)] = fields
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        if pid in stats:
            total += int(stats[pid][21]) * PAGE
            cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), int(stats[pid][11]) + int(stats[pid][12]))
        stack.extend(children.get(pid, []))
    return total


def sampled(argv: list[str]) -> dict:
    """Run ARGV as a child; its wall time, the CPU time of its whole process tree (the pool's workers are
    the forkserver's children, not this process's) and the tree's peak memory, sampled from /proc."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, ticks = [0], {}

    def sample() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], tree_sample(child.pid, ticks))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = child.communicate()
    wall = time.perf_counter() - started
    sampler.join()
    own = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child itself, waited for here
    seconds = (own.ru_utime - before.ru_utime) + (own.ru_stime - before.ru_stime)
    ticks[child.pid] = max(ticks.get(child.pid, 0), round(seconds * os.sysconf("SC_CLK_TCK")))
    return {
        "argv": argv,
        "exit_code": child.returncode,
        "wall_s": wall,
        "stdout": stdout,
        "stderr": stderr,
        "cpu_s": sum(ticks.values()) / os.sysconf("SC_CLK_TCK"),
        "processes": len(ticks),
        "peak_tree_rss": peak[0],
        "max_single_rss": own.ru_maxrss * 1024,
    }


def run_collect(out: Path, workers: int | None, *more: str) -> dict:
    return sampled(
        [
            sys.executable,
            "-m",
            "harness",
            "fleet",
            "collect",
            JOB,
            "--output-dir",
            str(out),
            "--key",
            str(out / "keys" / "dossier.pub"),
            *(["--workers", str(workers)] if workers else []),
            *more,
        ]
    )


def run_with_baseline(out: Path, workers: int | None, nodes: int, plain: dict) -> list[str]:
    """The collect again with --baseline-out: its figures beside the plain collect's (table rows)."""
    (out / f"fleet-{JOB}.tar.gz").unlink(missing_ok=True)
    shutil.rmtree(out / "profiles", ignore_errors=True)
    result = run_collect(out, workers, "--baseline-out", str(out / "profiles" / "{sku}.profile.json"))
    with tarfile.open(out / f"fleet-{JOB}.tar.gz") as tar:
        record = json.load(tar.extractfile("fleet.json"))["baseline"]
    made = (
        ", ".join(
            f"{p['sku']} from {len(p['nodes'])} nodes ({(out / 'profiles' / p['file']).stat().st_size / 2**10:.0f} KiB)"
            for p in record["profiles"]
        )
        or f"none: {record['not_made']}"
    )
    extra = result["wall_s"] - plain["wall_s"]
    return [
        f"| collect with --baseline-out, wall time | {result['wall_s']:.1f} s ({extra:+.1f} s, "
        f"{extra / nodes * 1000:+.1f} ms per node, beside the plain collect's) |",
        f"| collect with --baseline-out, CPU time (from /proc) | {result['cpu_s']:.1f} s ({result['cpu_s'] - plain['cpu_s']:+.1f} s) |",
        f"| collect with --baseline-out, peak memory (sum of RSS; largest process) | "
        f"{result['peak_tree_rss'] / 2**20:.0f} MiB; {result['max_single_rss'] / 2**20:.0f} MiB |",
        f"| profile | {made}; left out {json.dumps(record['left_out_counts'])}; exit code {result['exit_code']} |",
    ]


def check_answer(document: dict, plans: list[fleet_synth.NodePlan]) -> list[str]:
    """What the collect got wrong about the planted sick nodes and the healthy ones."""
    nodes = {n["name"]: n for n in document["nodes"]}
    flagged: dict[str, set[str]] = {}
    for flag in document["flags"]:
        flagged.setdefault(flag["node"], set()).add(flag["metric"])
    wrong = []
    for plan in plans:
        node = nodes[plan.name]
        if plan.sickness is None:
            if node["status"] != "ok" or plan.name in flagged or node["acceptance"]["verdict"] == "fail":
                wrong.append(
                    f"healthy {plan.name}: {node['status']}, flagged {sorted(flagged.get(plan.name, []))}, "
                    f"acceptance {node['acceptance']['verdict']}"
                )
            continue
        status, mark = EXPECTED[plan.sickness]
        named = mark in flagged.get(plan.name, set()) or mark in (node.get("why") or "")
        if node["status"] != status or not named:
            wrong.append(
                f"{plan.sickness} {plan.name}: {node['status']} ({node.get('why')}), "
                f"flagged {sorted(flagged.get(plan.name, []))}"
            )
    return wrong


def per_node_ms(out: Path, node: str, repeats: int = 20) -> float:
    task = NodeTask(
        node, str(out / "fleet-synthetic" / "nodes" / node / f"{node}.tar.gz"), str(out / "keys" / "dossier.pub"), None
    )
    check_node(task)  # warm-up: imports, compiled schemas and templates, the catalogue
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        check_node(task)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fleet-bench"))
    parser.add_argument("--workers", type=int, help="passed to collect (default: its own, the CPUs here)")
    parser.add_argument("--reuse", action="store_true", help="collect an existing synthetic fleet in --out again")
    parser.add_argument(
        "--baseline", action="store_true", help="collect once more with --baseline-out and report what the profile adds"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=fleet_synth.H200_BASE,
        help="the real bundle each node's is made from (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    plans = fleet_synth.fleet_plan(args.nodes)
    if not args.reuse:
        if args.out.exists():
            shutil.rmtree(args.out)
        started = time.perf_counter()
        fleet_synth.make_fleet(
            args.out,
            plans,
            base_path=args.base,
            workers=args.workers or 2,
            say=lambda line: print(line, file=sys.stderr),
        )
        print(f"made {args.nodes} node bundles in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    (args.out / f"fleet-{JOB}.tar.gz").unlink(missing_ok=True)
    result = run_collect(args.out, args.workers)
    bundle = args.out / f"fleet-{JOB}.tar.gz"
    with tarfile.open(bundle) as tar:
        document = json.load(tar.extractfile("fleet.json"))
    wrong = check_answer(document, plans)
    healthy = next(p.name for p in plans if p.sickness is None)
    print(
        f"| nodes | {args.nodes} ({len(os.sched_getaffinity(0))} CPUs here, load average "
        f"{os.getloadavg()[0]:.1f}) |\n|---|---|"
    )
    print(f"| collect wall time | {result['wall_s']:.1f} s ({result['wall_s'] / args.nodes * 1000:.1f} ms per node) |")
    print(
        f"| CPU time, collect and its {result['processes'] - 1} helper processes (from /proc) | "
        f"{result['cpu_s']:.1f} s ({result['cpu_s'] / args.nodes * 1000:.1f} ms per node) |"
    )
    print(f"| peak memory, whole process tree (sum of RSS) | {result['peak_tree_rss'] / 2**20:.0f} MiB |")
    print(f"| largest single process (max RSS) | {result['max_single_rss'] / 2**20:.0f} MiB |")
    print(
        f"| one node's check alone (verify + accept + metrics, in-process, median of 20) | "
        f"{per_node_ms(args.out, healthy):.1f} ms |"
    )
    print(f"| fleet bundle | {bundle.stat().st_size / 2**20:.1f} MiB, exit code {result['exit_code']} |")
    print(
        f"| summary | {json.dumps(document['summary']['status'])}, acceptance "
        f"{json.dumps(document['summary']['acceptance'])}, {document['summary']['flagged_nodes']} flagged |"
    )
    print(
        f"| planted sick nodes found, healthy nodes left alone | {'yes' if not wrong else 'NO: ' + '; '.join(wrong[:5])} |"
    )
    if args.baseline:
        print("\n".join(run_with_baseline(args.out, args.workers, args.nodes, result)))
    print(f"\ncommand: {' '.join(result['argv'])}", file=sys.stderr)
    print("\n".join(result["stderr"].splitlines()[-25:]), file=sys.stderr)
    return 0 if not wrong and result["exit_code"] == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
