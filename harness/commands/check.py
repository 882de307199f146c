"""`dossier check`: a node's health in about a second, torch-free, for Slurm's HealthCheckProgram, a
prolog or an NHC check (docs/check.md). I/O only: the reading is harness/probes/check/'s,
the judgement harness/check/'s."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from harness import paths
from harness.commands.options import MAX_GPUS_PER_NODE, count
from harness.errors import DossierError, EnvironmentProblem, UsageError
from harness.probes.contract import real


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check",
        help="a quick node check (NVML and the kernel's files, about a second): for Slurm's HealthCheckProgram",
        description="Read this node through NVML and the kernel's files (no torch, no GPU work) and judge it: the "
        "GPUs expected (count, SKU), fatal XIDs in the kernel log, row remaps, uncorrectable ECC, "
        "retired pages, the PCIe link's width and generation, NVLink, hardware slowdowns, persistence "
        "mode, the driver. Prints one line per check that did not pass (NHC's form), then the node's "
        "line. What cannot be read is never passed. Exit 0 healthy, 1 sick, 5 cannot judge, 2 bad usage.",
    )
    expect = parser.add_argument_group("what this node should have (at least one)")
    expect.add_argument(
        "--expect-gpus",
        type=count(0, MAX_GPUS_PER_NODE, "the GPUs one node can hold"),
        metavar="N",
        help="the number of GPUs (0 for a node without GPUs; default: every NVIDIA GPU the PCI bus lists)",
    )
    expect.add_argument("--sku", metavar="NAME", help="every GPU is this catalogue SKU (e.g. h200-sxm-141gb)")
    expect.add_argument(
        "--profile", metavar="SKU", help="an acceptance profile: its SKU, and its PCIe width and generation minimums"
    )
    expect.add_argument(
        "--profile-file",
        type=Path,
        metavar="F",
        help="your own profile file for --profile (as `dossier accept` takes it)",
    )
    expect.add_argument("--min-driver", metavar="VERSION", help="the lowest NVIDIA driver accepted (e.g. 550.54.15)")
    expect.add_argument(
        "--since",
        type=real,
        metavar="SECONDS",
        help="XIDs count only when the kernel logged them in the last SECONDS (default: since boot)",
    )
    expect.add_argument(
        "--no-gpu-processes",
        action="store_true",
        help="fail a GPU that any process holds (for a prolog: a job's GPUs must be free)",
    )
    slurm = parser.add_argument_group("Slurm (as HealthCheckProgram: `dossier check ... --drain --resume-own`)")
    slurm.add_argument(
        "--drain",
        action="store_true",
        help="when sick or not judgeable, drain this node with the reason 'dossier check: CHECK: ...'",
    )
    slurm.add_argument(
        "--resume-own",
        action="store_true",
        help="when healthy, resume this node if it was drained with our reason (never an admin's drain)",
    )
    slurm.add_argument(
        "--node", metavar="NAME", help="this node's Slurm name (default: $SLURMD_NODENAME, else the short host name)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (schemas/check.schema.json)")
    parser.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE.prom",
        help="write the verdicts and GPU facts for node_exporter's textfile collector (atomically)",
    )
    parser.add_argument(
        "--save-reading", type=Path, metavar="F", help="keep the reading judged (JSON), to judge it again"
    )
    parser.add_argument(
        "--reading",
        type=Path,
        metavar="F",
        help="judge a saved reading (--save-reading, schemas/check-reading.schema.json) instead of this node",
    )
    parser.set_defaults(func=handle)


def node_name(explicit: str | None, reading: dict[str, Any] | None) -> str:
    if explicit:
        return explicit
    if reading is not None and isinstance(reading.get("hostname"), str):
        return reading["hostname"].split(".")[0]
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def load_reading(path: Path) -> dict[str, Any]:
    """A saved reading, schema-checked: bad input is one line and exit 2."""
    from harness.schemas import violations

    paths.input_file(path, "--reading")
    try:
        reading = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"--reading {path}: not a JSON reading ({exc})") from exc
    found = violations("check-reading", reading)
    if found:
        raise UsageError(
            f"--reading {path}: not a node reading (schemas/check-reading.schema.json): {found[0]}",
            hint="write one with `dossier check ... --save-reading F`",
        )
    return reading


def check_outputs(args: argparse.Namespace) -> None:
    from harness.export.textfile import check_path

    if args.prometheus is not None:
        check_path(args.prometheus)
    if args.save_reading is not None:
        paths.output_file(args.save_reading, "--save-reading", [p for p in (args.reading,) if p])
    if (args.drain or args.resume_own) and args.reading is not None:
        raise UsageError("--drain and --resume-own act on this node now: not with --reading")
    if args.drain or args.resume_own:
        from harness.fleet import slurm

        if not slurm.available():
            raise EnvironmentProblem(
                "scontrol is not on PATH: --drain and --resume-own need the Slurm client", hint=slurm.CLUSTER_HINT
            )


def handle(args: argparse.Namespace) -> int:
    from harness.check import expectation, result
    from harness.check.judge import judge, overall

    expect = expectation.build(
        args.expect_gpus, args.sku, args.profile, args.profile_file, args.min_driver, args.since, args.no_gpu_processes
    )
    check_outputs(args)
    if args.reading is not None:
        reading = load_reading(args.reading)
    else:
        from harness.probes.check import read

        reading = read()
    node = node_name(args.node, reading if args.reading is not None else None)
    findings = judge(reading, expect)
    document = result.document(node, findings, expect, reading)
    refused = None
    if args.drain or args.resume_own:
        from harness.check import drain

        try:
            action = drain.apply(
                node, overall(f.verdict for f in findings), result.first_problem(findings), args.drain, args.resume_own
            )
            document["slurm"] = action.to_json()
        except DossierError as exc:  # the findings are printed first: a HealthCheckProgram's log keeps them
            refused = exc
            document["slurm"] = {"node": node, "did": "error", "why": str(exc)}
    write_files(args, document, reading)
    if args.json:
        print(json.dumps(document, indent=1, sort_keys=True, allow_nan=False))
    else:
        print(result.answer(node, findings))
        print("\n".join(result.lines(node, findings)))
        if "slurm" in document and refused is None:
            print(f"slurm: {document['slurm']['node']}: {document['slurm']['did']}: {document['slurm']['why']}")
        if refused is None:
            print(result.answer(node, findings))
    if refused is not None:
        raise refused
    return document["exit_code"]


def write_files(args: argparse.Namespace, document: dict[str, Any], reading: dict[str, Any]) -> None:
    if args.save_reading is not None:
        paths.write_output(
            args.save_reading, json.dumps(reading, indent=1, sort_keys=True, allow_nan=False) + "\n", "--save-reading"
        )
    if args.prometheus is not None:
        from harness.export import gauges

        gauges.check(document).write(args.prometheus)
        print(f"check: wrote {args.prometheus}", file=sys.stderr)
