"""`dossier health`: the M1T5 health and toolchain probe (and health under load)."""

from __future__ import annotations

import argparse
import sys

from harness.analysis.verdict import Verdict
from harness.commands._probe import add_common_options, run_probe
from harness.errors import CheckFailed, UsageError

DEFAULT_TIMEOUT_S = 120.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "health", help="host, driver, devices, topology and toolchain contracts (health.json)",
        description="Write health.json (lab step M1T5): host, software and per-device facts, each a "
                    "value or {\"unavailable\": reason}, and the toolchain contracts. Exits 1 when a "
                    "contract that should pass on this host fails, naming each one. With --under-load, "
                    "the reading is taken halfway through a known load (bf16 GEMM and a device copy "
                    "on every visible device) and the load's NVML samples are kept; compare it with "
                    "an idle health.json using `dossier health-diff`.")
    add_common_options(parser, default_output="health.json", timeout_s=DEFAULT_TIMEOUT_S)
    parser.add_argument("--under-load", type=float, default=None, metavar="SECONDS",
                        help="run the load for this many seconds (e.g. 8) and record health under it")
    parser.add_argument("--sample-interval", type=float, default=0.1, metavar="SECONDS",
                        help="NVML sampling period under load (default: 0.1)")
    parser.add_argument("--torch", action="store_true",
                        help="import torch for its own versions and device list (adds the torch import, "
                             "4-6 s on the H200 image); by default the idle reading takes them from "
                             "torch's version.py, the cuDNN/NCCL libraries and the CUDA driver API")
    parser.set_defaults(func=handle)


def probe_args(args: argparse.Namespace) -> list[str]:
    """The probe's own arguments; the timeout grows with the load so it cannot cut it short."""
    own = ["--torch"] if args.torch else []
    if args.under_load is None:
        return own
    if args.under_load <= 0:
        raise UsageError(f"--under-load must be a positive number of seconds, got {args.under_load:g}")
    args.timeout = max(args.timeout, DEFAULT_TIMEOUT_S + args.under_load)
    return own + ["--under-load", f"{args.under_load:g}", "--sample-interval", f"{args.sample_interval:g}"]


def handle(args: argparse.Namespace) -> int:
    outcome = run_probe("health", probe_args(args), args)
    failed = [c for c in outcome.document.get("contracts", []) if c.get("status") == Verdict.FAIL]
    for contract in failed:
        print(f"contract failed: {contract['name']}: {contract.get('evidence', '')}\n"
              f"  remedy: {contract.get('remedy', '')}", file=sys.stderr)
    if failed:
        raise CheckFailed(f"{len(failed)} toolchain contract(s) failed: "
                          + ", ".join(c["name"] for c in failed),
                          hint=f"each is listed above with its remedy; the full evidence is in {args.output}")
    return 0
