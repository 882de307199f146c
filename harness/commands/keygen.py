"""`dossier keygen`: an Ed25519 key pair for signing bundles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.signing.keys import default_key_dir, generate, load_private


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "keygen", help="make an Ed25519 key pair for signing bundles",
        description="Write DIR/dossier.key (private, mode 0600, never put in a bundle) and DIR/dossier.pub "
                    "(give this to whoever verifies your bundles). The keyid printed is the sha256 of "
                    "the DER public key.")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"directory for the pair (default: {default_key_dir()})")
    parser.add_argument("--force", action="store_true", help="replace an existing pair")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    out = paths.output_dir(args.out or default_key_dir(), "--out")
    private_path, public_path = generate(out, force=args.force)
    key = load_private(private_path)
    print(f"private key: {private_path} (mode 0600; sign with `dossier run --key {private_path}` "
          f"or DOSSIER_KEY={private_path})", file=sys.stderr)
    print(f"public key:  {public_path} (verify with `dossier verify BUNDLE --key {public_path}`)",
          file=sys.stderr)
    print(f"keyid {key.keyid}")
    return 0
