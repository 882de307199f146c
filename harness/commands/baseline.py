"""`dossier baseline BUNDLE... --out PROFILE.json`: a signed acceptance profile from known-good bundles.

I/O only: every bundle must pass `dossier verify` with --key (as `dossier accept` requires), the
profile is harness.judge.acceptance.baseline.build's, signed by harness.judge.acceptance.signed_profile.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from harness import paths, registry
from harness.analysis.verdict import Verdict, answer_line
from harness.commands.accept import trusted_key, verified_view
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.escape import terminal
from harness.judge.acceptance.baseline.build import build
from harness.judge.acceptance.baseline.inputs import Input
from harness.judge.acceptance.profile import SCHEMA
from harness.judge.acceptance.signed_profile import sign_profile
from harness.schemas import violations
from harness.signing.keys import load_private, public_path_for, signing_key_for_run

SKU_ID = re.compile(r"[a-z0-9][a-z0-9-]*")  # as schemas/acceptance-profile.schema.json's sku_id


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "baseline",
        help="make a signed acceptance profile from a golden unit's or a fleet's bundles",
        description="Verify every BUNDLE (one that fails `dossier verify` is refused), then make an acceptance "
        "profile from them: per figure the median, MAD (scaled by 1.4826), n and the share of bundles "
        "that pass, outliers rejected until none is left, each tolerance at least the figure's "
        "run-to-run noise; the configuration and result digests the bundles agree on; the criteria "
        "every bundle measured are required. Writes it signed (DSSE), naming every bundle by sha256, "
        "for `dossier accept --profile-file`. Bundles of more than one SKU are refused (exit 2); a "
        "criterion no bundle passes stops it (exit 1).",
    )
    parser.add_argument("bundles", type=Path, nargs="+", metavar="BUNDLE", help="the known-good bundles (.tar.gz)")
    parser.add_argument(
        "--key",
        type=Path,
        metavar="PUB",
        help="the bundles' signer's public key (default: the public half of your own key)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="PROFILE.json", help="where the signed profile goes")
    parser.add_argument(
        "--signing-key",
        type=Path,
        metavar="PRIV",
        help="private key that signs the profile (default: $DOSSIER_KEY or the default key, made on first use)",
    )
    parser.add_argument(
        "--sku",
        metavar="NAME",
        help="the SKU id, required when the bundles' GPUs are not in the catalogue (lowercase, "
        "e.g. b200-sxm-180gb); otherwise it must be theirs",
    )
    parser.add_argument(
        "--why",
        metavar="TEXT",
        help="why these bundles are the baseline (a PO, a golden unit's serial), kept in the profile",
    )
    parser.add_argument("--json", action="store_true", help="print the profile document as JSON on stdout")
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def check_paths(args: argparse.Namespace) -> None:
    for bundle in args.bundles:
        paths.input_bundle(bundle)
    for option, path in (("--key", args.key), ("--signing-key", args.signing_key)):
        if path is not None:
            paths.input_file(path, option)
    inputs = [*args.bundles, *(p for p in (args.key, args.signing_key) if p is not None)]
    paths.output_files([("--out", args.out)], inputs)
    if args.sku is not None and not SKU_ID.fullmatch(args.sku):
        raise UsageError(f"--sku {args.sku!r}: lowercase letters, digits and dashes only (e.g. b200-sxm-180gb)")


def _names(bundles: list[Path]) -> list[str]:
    """Each bundle's file name, or its path where two share a name."""
    names = [b.name for b in bundles]
    return [b.name if names.count(b.name) == 1 else str(b) for b in bundles]


def summary(document: dict[str, Any]) -> list[str]:
    lines = [f"{'figure':<32} {'median':>10} {'MAD':>8} {'n':>7} {'tolerance':>9} {'fail below':>10}  pass  noise"]
    for stats in document["baseline"]["figures"].values():
        lines.append(
            f"{stats['criterion']:<32} {stats['median']:>10.6g} {stats['mad']:>8.3g} "
            f"{stats['n_used']:>3}/{stats['n']:<3} {stats['tolerance']:>8.2%} {stats['fail_below']:>10.6g}  "
            f"{stats['pass_share']:>4.0%}  {'measured' if stats['noise']['measured'] else 'stated default'}"
        )
    lines += [f"note: {note}" for note in document["baseline"]["notes"]]
    failing = {n: c for n, c in document["baseline"]["criteria"].items() if c["pass_share"] < 1}
    lines += [
        f"not every input passes {name}: {c['passed']} of {c['judged']} ({'; '.join(c['failed'][:3])})"
        for name, c in failing.items()
    ]
    lines.append(
        f"{len(document['required'])} criteria required (measured on every input); config: "
        + ", ".join(
            f"{k}={v}" for k, v in sorted((document["thresholds"].get("config") or {}).items()) if k != "source"
        )
    )
    return lines


def handle(args: argparse.Namespace) -> int:
    check_paths(args)
    if args.signing_key is not None:
        load_private(args.signing_key)  # a bad signing key is refused before any bundle is read
    key_path, trusted = trusted_key(args.key, lambda text: print(f"baseline: {text}", file=sys.stderr))
    inputs, notes = [], []
    for done, (bundle, name) in enumerate(zip(args.bundles, _names(args.bundles), strict=True), start=1):
        view, ref = verified_view(bundle, key_path, trusted, allowed_formats(args))
        notes += [f"{name}: verify NOT DONE {line}" for line in ref.checks_not_done]
        inputs.append(Input(name, ref.sha256, ref.signer_keyid, view))
        print(f"baseline: verified {done}/{len(args.bundles)} {name} ({ref.checks_passed} checks)", file=sys.stderr)
    document = build(inputs, registry.acceptance_criteria(), registry.known_good_kinds(), args.sku, args.why)
    found = violations(SCHEMA, document)
    if found:  # the builder's own output must be a valid profile: a bug otherwise
        raise RuntimeError(f"the profile made does not match schemas/{SCHEMA}.schema.json: {found[0]}")
    key, note = signing_key_for_run(args.signing_key)
    notes += [note] if note else []
    paths.write_output(args.out, sign_profile(document, [(i.name, i.sha256) for i in inputs], key), "--out")
    answer = answer_line(
        Verdict.PASS,
        f"wrote {args.out}: the {document['sku_id']} profile from {len(inputs)} bundle(s), "
        f"{len(document['required'])} criteria required, signed by keyid {key.keyid[:16]}...",
    )
    print(terminal(answer), file=sys.stderr)
    for line in [*summary(document), *(f"note: {n}" for n in notes)]:
        print(terminal(line), file=sys.stderr)
    print(
        f"judge with: dossier accept BUNDLE --profile-file {args.out} --profile-key "
        f"{public_path_for(key.path)} --key SIGNER.pub",
        file=sys.stderr,
    )
    print(terminal(answer), file=sys.stderr)
    if args.json:
        print(json.dumps(document, indent=1, sort_keys=True, allow_nan=False))
    return 0
