"""`dossier run`: every lab step as its own probe process, then one signed bundle (what `make dossier` calls)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path

from harness import paths
from harness.commands import probe
from harness.dossier import RunOptions, bundle_file_name, run_dossier
from harness.errors import UsageError
from harness.signing.keys import signing_key_for_run
from harness.steps import CheckpointRequest, lab_plan, step_ids


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run", help="run every lab step and write a signed bundle (what `make dossier` calls)",
        description="Run the lab's steps in order (health at idle, bandwidth sweep and repeats, roofline, "
                    "precision, all-reduce, health under load, idle/load diff), each as its own probe "
                    "process. A failed step is recorded and the run goes on; a step this build cannot run "
                    "is listed as not run. Writes OUTPUT_DIR/NAME.tar.gz, signed with your key, and "
                    "prints its path. Ctrl-C leaves no bundle behind.")
    parser.add_argument("--output-dir", type=Path, default=Path("bundles"),
                        help="where the bundle goes (default: bundles)")
    parser.add_argument("--name", help="bundle file name without .tar.gz (default: dossier-HOST-TIMESTAMP)")
    parser.add_argument("--key", type=Path, default=None,
                        help="Ed25519 private key to sign with (default: $DOSSIER_KEY, else "
                             "~/.config/rig-dossier/dossier.key, made on first use)")
    probe.add_runner_options(parser)
    checkpoint = parser.add_argument_group("what the precision step measures (as `dossier precision`)")
    checkpoint.add_argument("--checkpoint", metavar="REPO@REVISION|PATH",
                            help="a safetensors checkpoint: a Hub repo pinned to a 40-hex commit, or a local "
                                 "file or folder (default: the all-MiniLM-L6-v2 manifest)")
    checkpoint.add_argument("--tensor", action="append", default=[], metavar="ROLE=NAME",
                            help="a tensor to measure, by role (embedding, attention_projection, "
                                 "mlp_projection); repeat for each")
    checkpoint.add_argument("--file-sha256", metavar="HEX",
                            help="the whole file's sha256, required for a file no manifest pins")
    parser.add_argument("--skip", action="append", default=[], metavar="STEP",
                        help=f"leave a step out (recorded as not run); one of {', '.join(step_ids())}")
    parser.set_defaults(func=handle)


RUNNER_FLAGS = (("--image", "image"), ("--gpus", "gpus"), ("--container-memory", "container_memory"))


def _terminate_as_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def check_destination(args: argparse.Namespace) -> None:
    """--output-dir writable (or creatable), --name a plain file name not taken: before any probe."""
    paths.output_dir(args.output_dir, "--output-dir")
    if args.name:
        destination = args.output_dir / bundle_file_name(args.name)
        if os.path.lexists(destination):
            raise UsageError(f"{destination} already exists", hint="choose another --name")


def resolved_checkpoint(request: CheckpointRequest) -> CheckpointRequest:
    """A checkpoint the user named is hashed, parsed and indexed now, before any probe: input that
    cannot work is refused here (exit 2) rather than recorded as a failed step minutes later. The
    default checkpoint stays a step of the run (fetched in the background; if it is not available
    here, the step is recorded as failed and the run goes on)."""
    if not request.given:
        return request
    from harness.checkpoints import plan  # torch and safetensors only when a checkpoint is named

    resolved = plan(request.checkpoint, list(request.tensors), request.file_sha256)
    print(f"checkpoint {resolved.provenance['label']}: sha256 {resolved.provenance['file_sha256']} "
          f"from {resolved.provenance['source']}", file=sys.stderr)
    return dataclasses.replace(request, resolved=resolved)


def handle(args: argparse.Namespace) -> int:
    unknown = sorted(set(args.skip) - set(step_ids()))
    if unknown:
        raise UsageError(f"--skip {', '.join(unknown)}: no such step", hint=f"steps: {', '.join(step_ids())}")
    check_destination(args)
    request = CheckpointRequest(args.checkpoint, tuple(args.tensor), args.file_sha256)
    if "precision" not in args.skip:
        request = resolved_checkpoint(request)
    runner, why = probe.select_from_args(args)
    key, note = signing_key_for_run(args.key)  # after every refusal: a refused run makes no key
    if note:
        print(note, file=sys.stderr)
    extra = tuple((flag, str(getattr(args, attr))) for flag, attr in RUNNER_FLAGS
                  if getattr(args, attr) is not None)
    extra += tuple(("--checkpoint", c) for c in [args.checkpoint] if c)
    extra += tuple(("--tensor", t) for t in args.tensor)
    extra += tuple(("--file-sha256", h) for h in [args.file_sha256] if h)
    options = RunOptions(output_dir=args.output_dir, name=args.name, runner_choice=args.runner,
                         skip=tuple(args.skip), runner_options=extra)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)  # clean up like Ctrl-C
    try:
        path = run_dossier(options, runner, why, key, plan=lab_plan(request))
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"signed with keyid {key.keyid} ({key.path})", file=sys.stderr)
    print(path)
    return 0
