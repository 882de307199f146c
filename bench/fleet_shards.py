#!/usr/bin/env python3
"""A sharded collect at 10,000 nodes, simulated on one machine: each shard's `fleet collect --shard I/N`
run one after another (on a cluster they run at once, as `--array N` submits them), then `fleet merge`.

The fleet is made from a synthetic fleet bench/fleet_synth.py already wrote (FROM, e.g. 1,000 full
dossiers): node K of the larger fleet is a hard link to node K mod n of FROM, so 10,000 nodes cost
no disk beyond FROM's and every node bundle is a real signed one (the planted sick nodes recur
every n nodes, and are found each time). Prints, for bench/RESULTS.md: each shard's wall and CPU
time, the merge's wall, CPU and peak memory, and the fleet bundle's size per node and where it goes.

    python bench/fleet_shards.py --from /tmp/fleet-bench-full --nodes 10000 --shards 10 --out /tmp/fleet-10k
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fleet_collect import sampled

ROOT = Path(__file__).resolve().parents[1]
JOB = "19000"


def grow(source: Path, out: Path, count: int) -> list[str]:
    """OUT: a run directory of COUNT nodes whose bundles are hard links to SOURCE's (node K -> K mod n)."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source / "keys", out / "keys")
    src, run = source / "fleet-synthetic", out / "fleet-synthetic"
    (run / "nodes").mkdir(parents=True)
    (run / "logs").mkdir()
    (run / "allreduce").mkdir()
    for name in ("fleet.sbatch", "node.sh"):
        shutil.copy(src / name, run / name)
    originals = src.joinpath("nodelist").read_text().split()
    names = [f"n{i + 1:05d}" for i in range(count)]
    for i, name in enumerate(names):
        origin = originals[i % len(originals)]
        (run / "nodes" / name).mkdir()
        bundle = src / "nodes" / origin / f"{origin}.tar.gz"
        if bundle.exists():
            os.link(bundle, run / "nodes" / name / f"{name}.tar.gz")
        shutil.copy(src / "nodes" / origin / "exit_code", run / "nodes" / name / "exit_code")
        log = src / "logs" / f"slurm-{JOB}-{origin}.out"
        if log.exists():
            os.link(log, run / "logs" / f"slurm-{JOB}-{name}.out")
    shutil.copy(src / "logs" / f"batch-{JOB}.out", run / "logs" / f"batch-{JOB}.out")
    (run / "nodelist").write_text("\n".join(names) + "\n")
    submission = json.loads((src / "submission.json").read_text())
    submission.update(run_dir=str(run), argv=["bench/fleet_shards.py", "--nodes", str(count)])
    submission["spec"]["key"] = str(out / "keys" / "dossier.key")
    (run / "submission.json").write_text(json.dumps(submission, indent=1, sort_keys=True) + "\n")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="a fleet bench/fleet_synth.py made")
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fleet-10k"))
    parser.add_argument("--workers", type=int, default=2, help="workers per shard (this machine's CPUs)")
    args = parser.parse_args(argv)
    names = grow(args.source, args.out, args.nodes)
    common = [sys.executable, "-m", "harness", "fleet"]
    where = ["--output-dir", str(args.out), "--key", str(args.out / "keys" / "dossier.pub")]
    print(
        f"| {args.nodes} nodes, {args.shards} shards, {args.workers} workers per shard, "
        f"{len(os.sched_getaffinity(0))} CPUs here, load average {os.getloadavg()[0]:.1f} at the start | |\n|---|---|"
    )
    shard_walls = []
    for index in range(args.shards):
        result = sampled(
            [*common, "collect", JOB, *where, "--shard", f"{index}/{args.shards}", "--workers", str(args.workers)]
        )
        if result["exit_code"] != 0:
            print(result["stderr"][-2000:], file=sys.stderr)
            return 1
        shard_walls.append(result["wall_s"])
        print(
            f"| shard {index}/{args.shards} ({len(names) // args.shards} nodes) | {result['wall_s']:.1f} s wall, "
            f"{result['cpu_s']:.1f} s CPU, {result['peak_tree_rss'] / 2**20:.0f} MiB peak |",
            flush=True,
        )
    merged = sampled([*common, "merge", JOB, *where])
    bundle = args.out / f"fleet-{JOB}.tar.gz"
    size = bundle.stat().st_size
    members: Counter[str] = Counter()
    with tarfile.open(bundle) as tar:
        for member in tar.getmembers():
            members[member.name.split("/")[0] if "/" in member.name else member.name] += member.size
        document = json.load(tar.extractfile("fleet.json"))
    print(
        f"| merge | {merged['wall_s']:.1f} s wall, {merged['cpu_s']:.1f} s CPU, exit code {merged['exit_code']}, "
        f"peak memory of its process tree {merged['peak_tree_rss'] / 2**20:.0f} MiB |"
    )
    print(
        f"| on a cluster (shards at once) | slowest shard {max(shard_walls):.1f} s + merge {merged['wall_s']:.1f} s |"
    )
    print(f"| fleet bundle | {size / 2**30:.2f} GiB, {size / args.nodes / 1024:.1f} KiB per node |")
    print(
        "| where it goes (uncompressed, per node) | "
        + ", ".join(f"{name} {total / args.nodes / 1024:.1f} KiB" for name, total in members.most_common())
        + " |"
    )
    print(f"| answer | {json.dumps(document['summary']['status'])}, {document['summary']['flagged_nodes']} flagged |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
