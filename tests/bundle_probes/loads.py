"""A probe that says its load is on (contract.loading), then, when $DOSSIER_TEST_MARKER names a file,
keeps it on until a companion has written that file (so a companion provably ran during it)."""

import argparse
import os
import time

from harness.probes.contract import loading, probe_main, progress


def build_parser():
    return argparse.ArgumentParser()


def measure(args):
    progress(0, 1, "loading")
    loading([os.getpid()], "a test load", 30.0)
    marker = os.environ.get("DOSSIER_TEST_MARKER")
    deadline = time.monotonic() + 60
    while marker and not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"sizing": "a test load", "limitations": [], "companion_seen": bool(marker and os.path.exists(marker))}


if __name__ == "__main__":
    raise SystemExit(probe_main("loads", build_parser, measure))
