"""The `dossier` subcommands; each module has `add_parser(subparsers)`.

`dossier NAME` for each probe comes from the registry (harness.commands.probe); the other
commands are listed here. Their order is the order in `--help`.
"""

from __future__ import annotations

import argparse

from harness import registry
from harness.commands import (
    accept,
    baseline,
    check,
    diff,
    evidence,
    fleet,
    health_diff,
    keygen,
    probe,
    report,
    reproduce,
    retest,
    run,
    verify,
    verify_acceptance,
    verify_evidence,
    verify_reproduction,
)

BEFORE_PROBES = [run]
AFTER_PROBES = [
    check,
    health_diff,
    verify,
    diff,
    reproduce,
    verify_reproduction,
    retest,
    report,
    keygen,
    baseline,
    accept,
    verify_acceptance,
    evidence,
    verify_evidence,
    fleet,
]


def add_parsers(sub: argparse._SubParsersAction) -> None:
    for module in BEFORE_PROBES:
        module.add_parser(sub)
    for spec in registry.PROBES:
        probe.add_parser(sub, spec)
    for module in AFTER_PROBES:
        module.add_parser(sub)
