"""A probe that records the threads and priority it was given, and writes $DOSSIER_TEST_MARKER."""

import argparse
import os

from harness.probes.contract import probe_main


def build_parser():
    return argparse.ArgumentParser()


def measure(args):
    marker = os.environ.get("DOSSIER_TEST_MARKER")
    if marker:
        with open(marker, "w") as handle:
            handle.write("seen")
    return {
        "sizing": "host work",
        "limitations": [],
        "threads": os.environ.get("OMP_NUM_THREADS"),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
    }


if __name__ == "__main__":
    raise SystemExit(probe_main("cpu_work", build_parser, measure))
