"""`dossier evidence BUNDLE --key PUB`: a signed evidence archive for a vendor ticket (docs/evidence.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.bundle import layout
from harness.commands.accept import sha256_file
from harness.commands.options import add_signing_key
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import CheckFailed, UsageError
from harness.escape import terminal
from harness.probes.contract import real
from harness.signing.keys import keyid, load_public, signing_key_for_run

MAX_TIMEOUT_S = 3600.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "evidence",
        help="a signed evidence archive of a failed bundle, for a vendor ticket (RMA)",
        description="Verify BUNDLE, then write a signed, deterministic archive for a vendor ticket: the bundle, "
        "its failing figures with their raw data, the GPUs' identity and ECC and row-remap counters as the run "
        "recorded them, what the run ruled out (other processes, host contention where recorded, configuration) "
        "and, taken now when this is the bundle's node, the node reading, each GPU's serial, VBIOS and InfoROM, "
        "the kernel log's XIDs in the run's window, `nvidia-smi -q` and `nvidia-bug-report.sh`, each with a "
        "time bound. A piece that cannot be had is recorded unavailable, with the real cause. Exit 0 written "
        "and verified, 1 BUNDLE does not verify, 2 bad input (a bundle in which nothing failed).",
    )
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--key", type=Path, required=True, help="the bundle signer's public key (PEM)")
    add_signing_key(
        parser,
        "Ed25519 private key to sign the archive with (default: $DOSSIER_KEY, else ~/.config/rig-dossier/dossier.key)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="EVIDENCE.tar.gz",
        help="where the archive goes (default: evidence-NAME.tar.gz beside BUNDLE); never over an existing file",
    )
    parser.add_argument(
        "--reading-timeout",
        type=real,
        default=30.0,
        metavar="S",
        help="the node reading's time bound (default 30 s: a GPU that stopped answering hangs NVML)",
    )
    parser.add_argument("--smi-timeout", type=real, default=60.0, metavar="S", help="nvidia-smi -q's (default 60 s)")
    parser.add_argument(
        "--bug-report-timeout",
        type=real,
        default=300.0,
        metavar="S",
        help="nvidia-bug-report.sh's (default 300 s; it needs root)",
    )
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def destination(args: argparse.Namespace) -> Path:
    if args.output is not None:
        out = args.output
    else:
        out = args.bundle.with_name("evidence-" + args.bundle.name.removesuffix(layout.SUFFIX) + layout.SUFFIX)
    paths.output_file(out, "--output", [args.bundle])
    if out.exists():
        raise UsageError(f"--output {out}: already exists", hint="give another --output, or move it aside")
    return out


def timeouts(args: argparse.Namespace):
    from harness.evidence.live import Timeouts

    for flag, value in (
        ("--reading-timeout", args.reading_timeout),
        ("--smi-timeout", args.smi_timeout),
        ("--bug-report-timeout", args.bug_report_timeout),
    ):
        if not 0 < value <= MAX_TIMEOUT_S:
            raise UsageError(f"{flag} {value:g}: must be above 0 and at most {MAX_TIMEOUT_S:g} s")
    return Timeouts(args.reading_timeout, args.smi_timeout, args.bug_report_timeout)


def handle(args: argparse.Namespace) -> int:
    from harness.evidence import make
    from harness.evidence.check import verify_archive
    from harness.verify import verify_and_view

    paths.input_bundle(args.bundle)
    trusted, allowed, bounds, out = load_public(args.key), allowed_formats(args), timeouts(args), destination(args)
    key, made_key = signing_key_for_run(args.signing_key)
    if made_key:
        print(made_key, file=sys.stderr)
    before = sha256_file(args.bundle)
    result, view = verify_and_view(args.bundle, trusted, allow_formats=allowed)
    if view is None:
        first = result.failures[0]
        raise CheckFailed(
            f"{args.bundle} does not verify ({len(result.failures)} failed): {first.line()}",
            hint="`dossier verify BUNDLE --key PUB` lists every failure",
        )
    made = make(
        args.bundle,
        view,
        keyid(trusted),
        key,
        out,
        bounds,
        before,
        lambda text: print(f"evidence: {terminal(text)}", file=sys.stderr),
    )
    checks, _ = verify_archive(made.path, key.public, None)
    bad = [c for c in checks if not c.ok]
    if bad:
        raise CheckFailed(f"{made.path} was written but does not verify: {bad[0].line()} (a bug: please report it)")
    for name, piece in made.manifest["pieces"].items():
        shown = ", ".join(piece["members"]) if "members" in piece else f"unavailable: {piece['unavailable']}"
        print(terminal(f"  {name}: {shown}"))
    failed = terminal(", ".join(f["name"] for f in made.manifest["failed"]))
    print(f"evidence of {failed} written and verified ({len(checks)} checks), signed with keyid {key.keyid[:16]}...")
    print(made.path)
    return 0
