"""`dossier health-diff IDLE ACTIVE`: what changed under load, and the lab's checks on it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness import paths
from harness.analysis.health.diff import diff
from harness.analysis.verdict import Verdict, answer_line, counted, overall, parse
from harness.errors import CheckFailed, UsageError
from harness.escape import terminal
from harness.schemas import violations


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "health-diff",
        help="compare idle and under-load health.json (clocks, power, reasons, processes)",
        description="Compare an idle health.json with one taken by `dossier health --under-load`: list "
        "every field that changed and check, per device, that the SM clock and the power "
        "draw rose under load, that the clock-event reasons under load are named (power or "
        "thermal cap; a hardware or thermal slowdown fails), and that no process the harness "
        "did not start shares a device. Exits 1 when a check fails.",
    )
    parser.add_argument("idle", type=Path, metavar="IDLE", help="health.json taken idle")
    parser.add_argument("active", type=Path, metavar="ACTIVE", help="health.json taken with --under-load")
    parser.add_argument(
        "--output", "-o", type=Path, default=None, help="write the health-diff JSON here (default: standard output)"
    )
    parser.set_defaults(func=handle)


def load_health(path: Path, role: str) -> dict[str, Any]:
    paths.input_file(path, role)
    try:
        document = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{role} document {path} is not JSON: {exc}") from exc
    found = violations("health", document)
    if found:
        raise UsageError(
            f"{role} document {path} is not a valid health.json: {found[0]}",
            hint="give files written by `dossier health`",
        )
    return document


def handle(args: argparse.Namespace) -> int:
    if args.output is not None:
        paths.output_file(args.output, "--output", inputs=[args.idle, args.active])
    idle, active = load_health(args.idle, "IDLE"), load_health(args.active, "ACTIVE")
    if idle.get("mode") != "idle":
        raise UsageError(f"IDLE {args.idle} was taken with --under-load", hint="pass the idle reading first")
    if active.get("mode") != "under_load":
        raise UsageError(
            f"ACTIVE {args.active} was not taken with --under-load",
            hint="take it with `dossier health --under-load 8 -o health.load.json`",
        )
    result = diff(idle, active)
    problems = violations("health-diff", result)
    if problems:  # a bug here, not the user's: say so plainly
        raise CheckFailed(f"the health-diff document breaks its own schema: {problems[0]}")
    text = json.dumps(result, allow_nan=False, sort_keys=True, indent=1) + "\n"
    line = answer(result)
    print(line, file=sys.stderr, flush=True)
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        paths.write_output(args.output, text, "--output")
        print(f"wrote {args.output}", file=sys.stderr)
    for check in result["checks"]:
        print(
            terminal(f"{check['status']:>14}  {check['name']} [{check['device']}]: {check['evidence']}"),
            file=sys.stderr,
        )
    print(terminal(line), file=sys.stderr)
    return 1 if result["failed"] else 0


def answer(result: dict[str, Any]) -> str:
    """The answer line: the checks' verdict, with what failed and the counts."""
    statuses = [parse(c.get("status")) for c in result["checks"]]
    verdict = Verdict.FAIL if result["failed"] else overall(statuses)
    failed = f"failed: {', '.join(result['failed'])}; " if result["failed"] else ""
    return answer_line(verdict, f"idle against load: {failed}{counted(statuses)}", 1 if result["failed"] else 0)
