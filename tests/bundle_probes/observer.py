"""A probe that records the load it was taken under (--during PIDS) or none, and writes $DOSSIER_TEST_MARKER."""

import argparse
import os

from harness.probes.contract import probe_main


def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--during", type=int, nargs="*", default=None)
    return parser


def measure(args):
    marker = os.environ.get("DOSSIER_TEST_MARKER")
    if marker:
        with open(marker, "w") as handle:
            handle.write("seen")
    return {"sizing": "an observation", "limitations": [], "during": args.during}


if __name__ == "__main__":
    raise SystemExit(probe_main("observer", build_parser, measure))
