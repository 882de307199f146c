"""A probe that writes to file descriptor 1 behind Python's back while measuring."""

import argparse
import os

from harness.probes.contract import probe_main


def measure(args):
    os.write(1, b"NCCL INFO a library talking on stdout\n")
    print("and a print() too")
    return {"sizing": "nothing to size", "limitations": [], "value": 1}


raise SystemExit(probe_main("noisy", argparse.ArgumentParser, measure))
