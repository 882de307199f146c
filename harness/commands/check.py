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
from harness.check import npd, scope
from harness.commands.options import MAX_GPUS_PER_NODE, count
from harness.errors import DossierError, EnvironmentProblem, UsageError
from harness.escape import terminal
from harness.fleet import slurm
from harness.probes.contract import real

MODE_TIMEOUT_S = 10.0  # a prolog's reading: well inside any PrologEpilogTimeout an operator sets (docs/check.md)
NPD_TIMEOUT_S = 3.0  # NPD kills a plugin after its timeout, 5 s unless configured: room for the interpreter
MAX_TIMEOUT_S = 600.0


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
    add_slurm_options(parser)
    add_scheduler_options(parser)
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


def add_slurm_options(parser: argparse.ArgumentParser) -> None:
    """--drain, --resume-own, --node: as Slurm's HealthCheckProgram."""
    group = parser.add_argument_group("Slurm (as HealthCheckProgram: `dossier check ... --drain --resume-own`)")
    group.add_argument(
        "--drain",
        action="store_true",
        help="when sick or not judgeable, drain this node with the reason 'dossier check: CHECK: ...'",
    )
    group.add_argument(
        "--resume-own",
        action="store_true",
        help="when healthy, resume this node if it was drained with our reason (never an admin's drain)",
    )
    group.add_argument(
        "--node", metavar="NAME", help="this node's Slurm name (default: $SLURMD_NODENAME, else the short host name)"
    )


def add_scheduler_options(parser: argparse.ArgumentParser) -> None:
    """--mode, --npd, --npd-max-output, --timeout: the check as a scheduler runs it (docs/check.md)."""
    scheduler = parser.add_argument_group("as a scheduler's check (docs/check.md: a Slurm prolog or epilog, NPD)")
    scheduler.add_argument(
        "--mode",
        choices=scope.MODES,
        help="as Slurm's Prolog or Epilog: judge the job's GPUs only (SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES), "
        "within --timeout, and drain this node with the recommended action as the reason when they are sick "
        "or cannot be judged; prolog also fails a GPU any process holds",
    )
    scheduler.add_argument(
        "--npd",
        action="store_true",
        help="as a node-problem-detector custom plugin: exit 0 OK, 1 NonOK, 2 Unknown, one message line on "
        "stdout within --npd-max-output bytes, the NHC lines on stderr",
    )
    scheduler.add_argument(
        "--npd-max-output",
        type=int,
        default=npd.DEFAULT_MAX_OUTPUT,
        metavar="BYTES",
        help=f"NPD's max_output_length: the message is cut to this many bytes (default {npd.DEFAULT_MAX_OUTPUT}, "
        f"NPD's; at most {npd.NPD_READ_LIMIT}, what NPD reads)",
    )
    scheduler.add_argument(
        "--timeout",
        type=real,
        metavar="SECONDS",
        help=f"give up on the reading after SECONDS, which then cannot be judged (default {MODE_TIMEOUT_S:g} with "
        f"--mode, {NPD_TIMEOUT_S:g} with --npd, none otherwise; at most {MAX_TIMEOUT_S:g})",
    )


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

    check_scheduler_options(args)
    if args.prometheus is not None:
        check_path(args.prometheus)
    if args.save_reading is not None:
        paths.output_file(args.save_reading, "--save-reading", [p for p in (args.reading,) if p])
    if (args.drain or args.resume_own) and args.reading is not None:
        raise UsageError("--drain and --resume-own act on this node now: not with --reading")
    if args.drain or args.resume_own:
        if not slurm.available():
            raise EnvironmentProblem(
                "scontrol is not on PATH: --drain and --resume-own need the Slurm client", hint=slurm.CLUSTER_HINT
            )


def check_scheduler_options(args: argparse.Namespace) -> None:
    """--mode, --npd, --timeout: refused before anything is read when they cannot go together."""
    if args.npd and (args.mode or args.drain or args.resume_own or args.json):
        raise UsageError("--npd answers node-problem-detector: not with --mode, --drain, --resume-own or --json")
    if args.mode and args.reading is not None:
        raise UsageError(f"--mode {args.mode} judges this node's job now: not with --reading")
    if not 1 <= args.npd_max_output <= npd.NPD_READ_LIMIT:
        raise UsageError(f"--npd-max-output {args.npd_max_output}: must be 1 to {npd.NPD_READ_LIMIT} bytes")
    if args.timeout is not None and not 0 < args.timeout <= MAX_TIMEOUT_S:
        raise UsageError(f"--timeout {args.timeout:g}: must be above 0 and at most {MAX_TIMEOUT_S:g} s")
    if args.timeout is not None and args.reading is not None:
        raise UsageError("--timeout bounds reading this node: not with --reading")
    if args.mode:
        args.drain = True  # a scheduler's check drains what it finds sick (the action is the reason)


def reading_timeout(args: argparse.Namespace) -> float | None:
    if args.timeout is not None:
        return float(args.timeout)
    return MODE_TIMEOUT_S if args.mode else NPD_TIMEOUT_S if args.npd else None


def take_reading(args: argparse.Namespace) -> dict[str, Any]:
    if args.reading is not None:
        return load_reading(args.reading)
    seconds = reading_timeout(args)
    if seconds is not None:
        from harness.check.bounded import read_within

        return read_within(seconds)
    from harness.probes.check import read

    return read()


def judged(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """(the result document, the reading as read, the findings): the judgement of this node or its job."""
    from harness.check import expectation, result
    from harness.check.judge import judge

    if args.node is not None:
        slurm.node_name(args.node, "--node")  # one node, never a range: before anything is read
    expect = expectation.build(
        args.expect_gpus,
        args.sku,
        args.profile,
        args.profile_file,
        args.min_driver,
        args.since,
        args.no_gpu_processes or args.mode == "prolog",
    )
    check_outputs(args)
    reading = take_reading(args)
    node = node_name(args.node, reading if args.reading is not None else None)
    judged_reading, job = reading, None
    if args.mode:
        job = scope.job_gpus(args.mode, os.environ)
        judged_reading, expect, job = scope.narrowed(reading, expect, job)
    findings = judge(judged_reading, expect)
    document = result.document(node, findings, expect, judged_reading)
    if job is not None:
        document["scope"] = job.to_json()
    return document, reading, findings


def apply_slurm(args: argparse.Namespace, document: dict[str, Any], findings: list[Any]) -> DossierError | None:
    """--drain / --resume-own (and --mode's drain, its reason led by the recommended action); an error
    of scontrol's is returned, to be raised once the findings are printed (a log keeps them)."""
    from harness.analysis.verdict import overall
    from harness.check import drain, result
    from harness.check.advice import recommended

    node, problem = document["node"], result.first_problem(findings)
    reason = drain.reason_for(problem, recommended(document)[0]) if problem is not None else None
    try:
        slurm.node_name(node, "--node" if args.node else "this node's name (give it with --node)")
        done = drain.apply(node, overall(f.verdict for f in findings), problem, args.drain, args.resume_own, reason)
        document["slurm"] = done.to_json()
    except DossierError as exc:
        document["slurm"] = {"node": node, "did": "error", "why": str(exc)}
        return exc
    return None


def handle(args: argparse.Namespace) -> int:
    from harness.check import result

    if args.npd:
        return handle_npd(args)
    document, reading, findings = judged(args)
    refused = apply_slurm(args, document, findings) if args.drain or args.resume_own else None
    write_files(args, document, reading)
    if args.json:
        print(json.dumps(document, indent=1, sort_keys=True, allow_nan=False))
    else:
        answer = result.answer(document["node"], findings, document)
        print(terminal(answer))
        if "scope" in document:
            print(f"scope: {args.mode}: GPUs {document['scope']['gpus']} ({document['scope']['source']})")
        print("\n".join(terminal(line) for line in result.lines(document["node"], findings, document["reading"])))
        if "slurm" in document and refused is None:
            did = document["slurm"]
            print(terminal(f"slurm: {did['node']}: {did['did']}: {did['why']}"))
        if refused is None:
            print(terminal(answer))
    if refused is not None:
        raise refused
    return document["exit_code"]


def handle_npd(args: argparse.Namespace) -> int:
    """node-problem-detector's protocol: every outcome, an error too, is an exit status and a message."""
    from harness.check import result
    from harness.check.advice import recommended

    try:
        document, reading, findings = judged(args)
        write_files(args, document, reading)
    except DossierError as exc:
        print(npd.error_message(str(exc), args.npd_max_output))
        print(exc.diagnostics(), file=sys.stderr)
        return npd.UNKNOWN
    print("\n".join(result.lines(document["node"], findings, document["reading"])), file=sys.stderr)
    print(npd.message(document, recommended(document)[0], args.npd_max_output))
    return npd.status(document["verdict"])


def write_files(args: argparse.Namespace, document: dict[str, Any], reading: dict[str, Any]) -> None:
    if args.save_reading is not None:
        paths.write_output(
            args.save_reading, json.dumps(reading, indent=1, sort_keys=True, allow_nan=False) + "\n", "--save-reading"
        )
    if args.prometheus is not None:
        from harness.export import gauges

        gauges.check(document).write(args.prometheus)
        print(f"check: wrote {args.prometheus}", file=sys.stderr)
