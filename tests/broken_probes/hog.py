"""A probe that really allocates memory (64 MiB at a time, every page touched) until killed."""

import argparse

from harness.probes.contract import probe_main, progress


def measure(args):
    held = []
    for i in range(args.max_mib // 64):
        held.append(bytearray(b"\x01" * (64 << 20)))  # written, so the pages are really resident
        progress(i + 1, args.max_mib // 64, "MiB held / 64")
    return {"sizing": f"held {len(held) * 64} MiB", "limitations": []}


def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-mib", type=int, default=4096)
    return parser


raise SystemExit(probe_main("hog", build_parser, measure))
