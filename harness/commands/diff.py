"""`dossier diff A B`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from harness import paths, registry
from harness.analysis.verdict import Verdict
from harness.bundle.read import UnreadableBundle, UnsafeBundle, read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.commands.verify import add_allow_format_option, allowed_formats, not_done_lines
from harness.errors import CheckFailed, UsageError
from harness.present.diff import compare
from harness.present.diff_tables import print_comparison
from harness.signing.keys import load_public
from harness.verify import verify_bundle


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "diff",
        help="hardware, software and metric differences between two bundles",
        description="Compare bundle B against bundle A: hardware and software fields side by side, and "
        "each measured figure as the ratio B/A with its tolerance, judged by `dossier reproduce`'s rule "
        "(the figures that decide, then the informing ones apart). With --key (one for both) or "
        "--key-a/--key-b, each bundle is verified first and refused if it fails. Exit 0 reproduced, 1 "
        "not reproduced (or a bundle fails verification), 2 the same file twice or nothing that decides "
        "comparable (another SKU).",
    )
    parser.add_argument("a", type=Path, help="your bundle (the reference)")
    parser.add_argument("b", type=Path, help="the bundle to compare")
    parser.add_argument("--key", type=Path, help="public key that signed both bundles")
    parser.add_argument("--key-a", type=Path, help="public key for A")
    parser.add_argument("--key-b", type=Path, help="public key for B")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def load_view(path: Path) -> BundleView:
    """The bundle's files as data. The same fault is the same exit code in every command: a file
    that is not there, not readable or not gzip is bad input (2, from paths.input_bundle); a bundle
    file that is damaged (truncated, unsafe, a member missing or not JSON) fails a check (1), as
    `dossier verify` and `dossier accept` say of it."""
    paths.input_bundle(path)
    try:
        return BundleView.from_files(read_all(path), registry.analysis_module)
    except UnreadableBundle as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from exc
    except (UnsafeBundle, BundleFormatError) as exc:
        raise CheckFailed(
            f"{path} is a damaged bundle: {exc}", hint=f"`dossier verify {path} --key PUB` lists every check"
        ) from exc


def handle(args: argparse.Namespace) -> int:
    """Exit as `dossier reproduce` does: 0 reproduced, 1 not reproduced, 2 the same file twice or nothing
    that decides comparable (another SKU)."""
    paths.input_bundle(args.a, "bundle A")
    paths.input_bundle(args.b, "bundle B")
    if os.path.realpath(args.a) == os.path.realpath(args.b):
        raise UsageError(
            f"A and B are the same file ({args.a})",
            hint="diff compares two runs: give another bundle as B (`dossier reproduce A` makes one here)",
        )
    allowed = allowed_formats(args)
    notes = []
    for path, key in ((args.a, args.key_a or args.key), (args.b, args.key_b or args.key)):
        if key is not None:
            result = verify_bundle(path, load_public(key), allow_formats=allowed)
            if not result.ok:
                raise CheckFailed(
                    f"{path} fails verification ({len(result.failures)} check(s)); first: {result.failures[0].line()}",
                    hint=f"run `dossier verify {path} --key {key}` for every failure",
                )
            notes += [f"diff: {path}: verify {line}" for line in not_done_lines(result)]
    comparison = compare(load_view(args.a), load_view(args.b))
    if args.json:
        for note in notes:
            print(note, file=sys.stderr)
        print(json.dumps(comparison.to_json(), indent=1, sort_keys=True, allow_nan=False))
    else:
        print_comparison(comparison, str(args.a), str(args.b), sys.stdout, notes)
    judgement = comparison.judgement
    if judgement.result == Verdict.SKIP:
        raise UsageError(f"not comparable: {judgement.why}", hint="compare bundles of the same SKU")
    return judgement.result.exit_code
