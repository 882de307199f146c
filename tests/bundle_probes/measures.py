"""A probe that reports its first measured second (a progress line with done 1), then, when
$DOSSIER_TEST_MARKER names a file, goes on until a step beside it has written that file."""

import argparse
import os
import time

from harness.probes.contract import probe_main, progress


def build_parser():
    return argparse.ArgumentParser()


def measure(args):
    progress(0, 2, "starting")
    progress(1, 2, "first second measured")
    marker = os.environ.get("DOSSIER_TEST_MARKER")
    deadline = time.monotonic() + 60
    while marker and not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"sizing": "a test measurement", "limitations": [], "beside_seen": bool(marker and os.path.exists(marker))}


if __name__ == "__main__":
    raise SystemExit(probe_main("measures", build_parser, measure))
