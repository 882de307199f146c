"""`dossier verify BUNDLE --key PUB`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness import paths
from harness.analysis.verdict import Verdict, answer_line
from harness.bundle.read import DEFAULT_MAX_TOTAL_BYTES, Limits
from harness.errors import UsageError
from harness.escape import terminal
from harness.present.verdict import run_verdict
from harness.probes.contract import real
from harness.signing.keys import load_public
from harness.verify import Result, verify_and_view
from harness.verify.formats import FORMATS, oldest_fully_checked


def add_allow_format_option(parser: argparse.ArgumentParser) -> None:
    """--allow-format N, for every command that verifies a bundle first (verify, accept, diff,
    fleet collect) and for report, which renders one."""
    parser.add_argument(
        "--allow-format",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help=f"accept a bundle of format N, older than the oldest this build fully checks "
        f"({oldest_fully_checked()}), verified without the checks its format needs that this "
        f"build cannot do (listed as NOT DONE); repeatable",
    )


def allowed_formats(args: argparse.Namespace) -> tuple[int, ...]:
    """--allow-format's values, each a format this build knows (else exit 2)."""
    for made in args.allow_format:
        if made not in FORMATS:
            raise UsageError(f"--allow-format {made}: no bundle format {made} (this build knows 1 to {max(FORMATS)})")
    return tuple(args.allow_format)


def not_done_lines(result: Result) -> list[str]:
    return [f"NOT DONE {c.check} {c.subject}: {c.detail}" for c in result.not_done]


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify",
        help="check a bundle's signature, hashes, schemas, figures and report",
        description="Verify BUNDLE against a trusted public key from outside the bundle. Reads members "
        "without extracting (links, devices, absolute or '..' names, duplicates, missing or "
        "extra files and oversize archives are rejected before any content is read), checks the "
        "DSSE signature, every sha256, every JSON against its schema, recomputes the headline "
        "figures from the raw JSON and re-renders report.md, by the rules of the bundle's format. "
        f"A format older than the oldest this build fully checks ({oldest_fully_checked()}) fails unless "
        "--allow-format allows it; the checks not done are then listed. Exit 0 only when every check "
        "passes; each failure is printed on its own line. A BUNDLE that cannot be read (missing, a "
        "folder, unreadable, not a gzip file) or a --key that is not a public key is exit 2.",
    )
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--key", type=Path, required=True, help="the signer's public key (PEM)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument(
        "--max-size-mib",
        type=real,
        default=DEFAULT_MAX_TOTAL_BYTES / 2**20,
        help="refuse bundles declaring more content than this (default: %(default)g MiB)",
    )
    parser.add_argument("--all", action="store_true", help="print passing checks too")
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def own_verdict(view) -> str:
    """The dossier's own verdict (its report's, by this build's rules), to say beside the checks:
    a bundle can verify (its figures are what its raw data says) and still have FAILED."""
    verdict = run_verdict(view)
    return f"the dossier's own verdict is {verdict.overall.shown} ({verdict.counts()})"


def answer(args: argparse.Namespace, result: Result, view) -> str:
    """verify's answer line: verified or not, the checks, and the dossier's own verdict beside them."""
    not_done = f", {len(result.not_done)} not done" if result.not_done else ""
    name = args.bundle.name
    if not result.ok:
        failed = len(result.failures)
        return answer_line(
            Verdict.FAIL, f"{name} NOT VERIFIED: {failed} check(s) failed, {result.passed} passed{not_done}"
        )
    said = f"; {own_verdict(view)}" if view is not None else ""
    return answer_line(
        Verdict.PASS,
        f"{name} verified: {result.passed} checks passed{not_done} (keyid {result.keyid[:16]}...){said}",
    )


def handle(args: argparse.Namespace) -> int:
    if args.max_size_mib <= 0:
        raise UsageError("--max-size-mib must be positive")
    paths.input_bundle(args.bundle)
    allowed = allowed_formats(args)
    result, view = verify_and_view(
        args.bundle, load_public(args.key), Limits(max_total_bytes=int(args.max_size_mib * 2**20)), allowed
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=1, sort_keys=True))
        return 0 if result.ok else 1
    line = answer(args, result, view)
    print(terminal(line))
    for check in result.checks:
        if args.all or not check.ok:
            print(terminal(check.line()))
    for done in not_done_lines(result):
        print(terminal(done))
    print(terminal(line))
    return 0 if result.ok else 1
