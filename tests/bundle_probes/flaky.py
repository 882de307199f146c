"""A probe that fails its first --fail-times runs (exit 3, a partial line on stdout), then measures:
the count lives in the --state file, so each run is a fresh process, as a flaky step's retest is."""

import argparse
import sys
from pathlib import Path

from harness.probes.contract import probe_main


def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--fail-times", type=int, default=1)
    return parser


def measure(args):
    state = Path(args.state)
    runs = int(state.read_text()) + 1 if state.exists() else 1
    state.write_text(str(runs))
    if runs <= args.fail_times:
        print('{"partial": ')
        print(f"run {runs}: the link dropped (test)", file=sys.stderr)
        raise SystemExit(3)
    return {"sizing": "nothing measured: a test probe", "limitations": [], "runs": runs}


if __name__ == "__main__":
    raise SystemExit(probe_main("flaky", build_parser, measure))
