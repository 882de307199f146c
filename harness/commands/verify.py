"""`dossier verify BUNDLE --key PUB`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness import paths
from harness.bundle.read import DEFAULT_MAX_TOTAL_BYTES, Limits
from harness.verify import verify_bundle
from harness.errors import UsageError
from harness.signing.keys import load_public


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify", help="check a bundle's signature, hashes, schemas, figures and report",
        description="Verify BUNDLE against a trusted public key from outside the bundle. Reads members "
                    "without extracting (links, devices, absolute or '..' names, duplicates, missing or "
                    "extra files and oversize archives are rejected before any content is read), checks the "
                    "DSSE signature, every sha256, every JSON against its schema, recomputes the headline "
                    "figures from the raw JSON and re-renders report.md. Exit 0 only when every check "
                    "passes; each failure is printed on its own line. A BUNDLE that cannot be read (missing, a "
                    "folder, unreadable, not a gzip file) or a --key that is not a public key is exit 2.")
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--key", type=Path, required=True, help="the signer's public key (PEM)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument("--max-size-mib", type=float, default=DEFAULT_MAX_TOTAL_BYTES / 2**20,
                        help="refuse bundles declaring more content than this (default: %(default)g MiB)")
    parser.add_argument("--all", action="store_true", help="print passing checks too")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.max_size_mib <= 0:
        raise UsageError("--max-size-mib must be positive")
    paths.input_bundle(args.bundle)
    result = verify_bundle(args.bundle, load_public(args.key),
                           Limits(max_total_bytes=int(args.max_size_mib * 2**20)))
    if args.json:
        print(json.dumps(result.to_json(), indent=1, sort_keys=True))
    else:
        for check in result.checks:
            if args.all or not check.ok:
                print(check.line())
        passed = len(result.checks) - len(result.failures)
        if result.ok:
            print(f"verified {args.bundle}: {passed} checks passed (keyid {result.keyid[:16]}...)")
        else:
            print(f"NOT VERIFIED {args.bundle}: {len(result.failures)} check(s) failed, {passed} passed",
                  file=sys.stderr)
    return 0 if result.ok else 1
