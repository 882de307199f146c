"""`dossier keygen`: an Ed25519 key pair for signing bundles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.analysis.verdict import Verdict, answer_line
from harness.errors import UsageError
from harness.signing.keys import (
    PRIVATE_NAME,
    SigningKey,
    default_key_dir,
    generate,
    load_private,
    load_public,
    public_path_for,
    public_pem,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "keygen",
        help="make an Ed25519 key pair for signing bundles (or show the one there)",
        description="Write DIR/dossier.key (private, mode 0600, never put in a bundle) and DIR/dossier.pub "
        "(give this to whoever verifies your bundles). The keyid printed is the sha256 of "
        "the DER public key. When DIR already holds a pair whose halves match (the one `make "
        "dossier` made on first use, say), it is kept and shown, exit 0; a lone half, halves "
        "that do not match or a private key others can read are refused (exit 2). --force "
        "replaces the pair.",
    )
    parser.add_argument("--out", type=Path, default=None, help=f"directory for the pair (default: {default_key_dir()})")
    parser.add_argument("--force", action="store_true", help="replace an existing pair with a new one")
    parser.set_defaults(func=handle)


def existing_pair(out: Path) -> SigningKey | None:
    """The pair already in OUT when both halves are there and match; None when neither is; UsageError
    for anything else (one half alone, halves of two pairs, a key others can read), never overwritten."""
    private_path = out / PRIVATE_NAME
    public_path = public_path_for(private_path)
    there = [p for p in (private_path, public_path) if p.exists()]
    if not there:
        return None
    if len(there) == 1:
        raise UsageError(
            f"{there[0]} already exists without its other half", hint="pass --force to make a new pair, or choose --out"
        )
    key = load_private(private_path)
    if public_pem(key.public) != public_pem(load_public(public_path)):
        raise UsageError(
            f"{public_path} is not the public half of {private_path}",
            hint="pass --force to make a new pair, or choose --out",
        )
    return key


def handle(args: argparse.Namespace) -> int:
    out = paths.output_dir(args.out or default_key_dir(), "--out")
    key = None if args.force else existing_pair(out)
    if key is None:
        private_path, _ = generate(out, force=args.force)
        key = load_private(private_path)
        made = "made a new key pair"
    else:
        made = "a key pair is already there, kept (--force makes a new one)"
    public_path = public_path_for(key.path)
    answer = answer_line(Verdict.PASS, f"{made}: {key.path} and {public_path.name} (keyid {key.keyid[:16]}...)")
    print(answer, file=sys.stderr, flush=True)
    print(
        f"private key: {key.path} (mode 0600; sign with `dossier run --signing-key {key.path}` "
        f"or DOSSIER_KEY={key.path})",
        file=sys.stderr,
    )
    print(f"public key:  {public_path} (verify with `dossier verify BUNDLE --key {public_path}`)", file=sys.stderr)
    print(f"keyid {key.keyid}", flush=True)
    print(answer, file=sys.stderr)
    return 0
