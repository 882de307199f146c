"""`dossier verify-evidence EVIDENCE --key PUB [--bundle-key PUB]`: an evidence archive checked (docs/evidence.md)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from harness import paths
from harness.escape import terminal
from harness.signing.keys import load_public


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify-evidence",
        help="check an evidence archive's signature, members, manifest and copies of its bundle",
        description="Verify EVIDENCE (written by `dossier evidence`) against the public key of whoever made it: "
        "its structure, the DSSE signature of an evidence statement, every member's sha256, the manifest "
        "against its schema, every piece's members, the bundle member against the manifest, each copied "
        "raw document against the sha256 the bundle's own statement signs. With --bundle-key, the bundle "
        "inside is verified in full as `dossier verify` does, its signer is the manifest's and its failures "
        "are judged again; without it those checks are listed as NOT DONE. Exit 0 when every check done "
        "passes, 1 otherwise, 2 for a file that is not an archive or a key that is not one.",
    )
    parser.add_argument("evidence", type=Path)
    parser.add_argument("--key", type=Path, required=True, help="the public key of whoever made the archive (PEM)")
    parser.add_argument("--bundle-key", type=Path, metavar="PUB", help="the bundle signer's public key (PEM)")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON on stdout")
    parser.add_argument("--all", action="store_true", help="print passing checks too")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from harness.evidence.check import verify_archive

    paths.input_bundle(args.evidence, "EVIDENCE")
    trusted = load_public(args.key)
    bundle_key = load_public(args.bundle_key) if args.bundle_key is not None else None
    checks, not_done = verify_archive(args.evidence, trusted, bundle_key)
    failures = [c for c in checks if not c.ok]
    if args.json:
        shown = {"ok": not failures, "checks": [asdict(c) for c in checks], "not_done": [asdict(c) for c in not_done]}
        print(json.dumps(shown, indent=1, sort_keys=True))
        return 0 if not failures else 1
    for check in checks:
        if args.all or not check.ok:
            print(terminal(check.line()))
    for check in not_done:
        print(terminal(f"NOT DONE {check.check} {check.subject}: {check.detail}"))
    if failures:
        print(f"NOT VERIFIED {args.evidence}: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    extra = f"; {len(not_done)} not done" if not_done else ""
    print(f"verified {args.evidence}: {len(checks)} checks passed{extra}")
    return 0
