"""A probe that reports what its sandbox lets it do: read a mounted file, write it, write the
output folder, and which network interfaces exist (no traffic is sent)."""

import argparse
import hashlib
import os
from pathlib import Path

from harness.probes.contract import attempt, probe_main


def _write(path):
    with open(path, "a") as handle:
        handle.write("x")
    return True


def measure(args):
    marker = Path(args.output_dir) / "written-inside.txt"
    marker.write_text(f"uid {os.getuid()}\n")
    return {
        "sizing": "nothing to size",
        "limitations": [],
        "read_sha256": attempt(lambda: hashlib.sha256(Path(args.read).read_bytes()).hexdigest()),
        "write_mounted": attempt(_write, args.read),
        "interfaces": sorted(line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]),
        "env_seen": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "HF_"))},
    }


def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--read", required=True)
    parser.add_argument("--output-dir", required=True)
    return parser


raise SystemExit(probe_main("sandbox", build_parser, measure))
