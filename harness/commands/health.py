"""`dossier health`: the M1T5 health and toolchain probe."""

from __future__ import annotations

import argparse
import sys

from harness.commands._probe import add_common_options, run_probe
from harness.errors import CheckFailed


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "health", help="host, driver, devices, topology and toolchain contracts (health.json)",
        description="Write health.json (lab step M1T5): host, software and per-device facts, each a "
                    "value or {\"unavailable\": reason}, and the toolchain contracts. Exits 1 when a "
                    "contract that should pass on this host fails.")
    add_common_options(parser, default_output="health.json", timeout_s=120)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    outcome = run_probe("health", [], args)
    failed = [c for c in outcome.document.get("contracts", []) if c.get("status") == "fail"]
    for contract in failed:
        print(f"contract failed: {contract['name']}: {contract.get('evidence', '')}\n"
              f"  remedy: {contract.get('remedy', '')}", file=sys.stderr)
    if failed:
        raise CheckFailed(f"{len(failed)} toolchain contract(s) failed: "
                          + ", ".join(c["name"] for c in failed))
    return 0
