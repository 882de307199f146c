"""`dossier verify-acceptance ATTESTATION BUNDLE --key PUB`: is this signed verdict about this bundle?"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import paths
from harness.analysis.verdict import Verdict, answer_line
from harness.commands.accept import sha256_file
from harness.errors import CheckFailed, UsageError
from harness.judge.acceptance.predicate import recorded_verdict, verify_envelope
from harness.signing import dsse
from harness.signing.keys import keyid, load_public
from harness.signing.statement import StatementError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify-acceptance",
        help="check a signed acceptance verdict against its bundle",
        description="Check that ATTESTATION (written by `dossier accept --attestation`) is signed by the key "
        "PUB (DSSE, Ed25519), is an in-toto test-result statement, and names BUNDLE's sha256 as "
        "its subject; then print the verdict it carries. Exit 0 when all of that holds, 1 otherwise "
        "(whatever the verdict itself); 2 when ATTESTATION is not a signed attestation at all (not JSON, "
        "not a DSSE envelope).",
    )
    parser.add_argument("attestation", type=Path)
    parser.add_argument("bundle", type=Path)
    parser.add_argument(
        "--key", type=Path, required=True, help="the acceptor's public key (PEM), obtained outside the files"
    )
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    paths.input_file(args.attestation, "ATTESTATION")
    paths.input_bundle(args.bundle, "BUNDLE")
    trusted = load_public(args.key)
    data = args.attestation.read_bytes()
    try:
        dsse.parse(data)
    except dsse.EnvelopeError as exc:  # not what it should be, like any unreadable input: exit 2
        raise UsageError(
            f"ATTESTATION {args.attestation} is not a signed attestation: {exc}",
            hint="give the file `dossier accept --attestation` wrote",
        ) from exc
    try:
        stmt = verify_envelope(data, trusted, sha256_file(args.bundle))
    except (dsse.EnvelopeError, StatementError) as exc:
        raise CheckFailed(
            f"NOT VERIFIED {args.attestation}: {exc}",
            hint="check that --key is the acceptor's public key and BUNDLE the file judged",
        ) from exc
    p = stmt["predicate"]
    answer = answer_line(
        Verdict.PASS,
        f"{args.attestation.name} verified: signed by keyid {keyid(trusted)[:16]}..., about {args.bundle.name}; "
        f"the verdict it carries: {recorded_verdict(p).upper()} ({p['result']})",
    )
    print(answer)
    print(f"verified {args.attestation}: signed by keyid {keyid(trusted)[:16]}..., about {args.bundle}")
    print(
        f"result {p['result']} (verdict {recorded_verdict(p)}): passed {', '.join(p.get('passedTests') or []) or 'none'}; "
        f"failed or incomplete {', '.join(p.get('failedTests') or []) or 'none'}; "
        f"warned {', '.join(p.get('warnedTests') or []) or 'none'}"
    )
    print(answer)
    return 0
