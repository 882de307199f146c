"""`dossier verify-acceptance ATTESTATION BUNDLE --key PUB`: is this signed verdict about this bundle, and is it
the verdict the bundle gives?

An attestation cannot vouch for itself (docs/accept.md, "Whose files these are"): after the envelope's
signature by PUB and its subject (BUNDLE's sha256), the bundle is judged again by this build against the
profile the attestation carries inline (its sha256 checked), with this build's criteria and catalogue,
and every part of the verdict is compared with what it records: the result, the tests passed, warned and
failed, each criterion's verdict, the profile, the catalogue, and a signer the bundle's envelope names.
Any difference is a failure (exit 1) naming the first few; what is printed is the verdict judged here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness import catalogue, paths, registry
from harness.analysis.verdict import Verdict, answer_line
from harness.bundle import layout
from harness.bundle.read import UnreadableBundle, UnsafeBundle, read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.commands.accept import sha256_file
from harness.commands.options import signed_envelope
from harness.errors import CheckFailed, UsageError
from harness.escape import terminal
from harness.judge.acceptance.outcome import Acceptance, BundleRef, judge
from harness.judge.acceptance.predicate import (
    RESULT_WORDS,
    SIGNER_NAME,
    differences,
    recorded_profile,
    verify_envelope,
)
from harness.signing import dsse
from harness.signing.keys import keyid, load_public
from harness.signing.statement import StatementError

SHOWN = 5  # differences named in the one line of a refusal


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify-acceptance",
        help="check a signed acceptance verdict against its bundle",
        description="Check that ATTESTATION (written by `dossier accept --attestation`) is signed by the key "
        "PUB (DSSE, Ed25519), is an in-toto test-result statement naming BUNDLE's sha256 as its subject, and "
        "records exactly the verdict this build gives when it judges BUNDLE again against the profile the "
        "attestation carries (the result, each criterion, the profile and the catalogue); then print that "
        "verdict. Exit 0 when all of that holds, 1 otherwise (whatever the verdict itself); 2 when ATTESTATION "
        "is not a signed attestation at all (not JSON, not a DSSE envelope).",
    )
    parser.add_argument("attestation", type=Path)
    parser.add_argument("bundle", type=Path)
    parser.add_argument(
        "--key", type=Path, required=True, help="the acceptor's public key (PEM), obtained outside the files"
    )
    parser.set_defaults(func=handle)


def _bundle(path: Path) -> tuple[BundleView, list[str]]:
    """The bundle's data and the keyids its envelope names."""
    try:
        files = read_all(path)
        view = BundleView.from_files(files, registry.analysis_module)
    except UnreadableBundle as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from exc
    except (UnsafeBundle, BundleFormatError) as exc:
        raise CheckFailed(f"NOT VERIFIED: {path} is a damaged bundle: {exc}") from exc
    try:
        signers = [str(k) for k, _ in dsse.signatures(json.loads(files[layout.ATTESTATION]))]
    except (KeyError, ValueError, dsse.EnvelopeError):
        signers = []
    return view, signers


def verified_acceptance(data: bytes, bundle: Path, trusted: Any) -> Acceptance:
    """The acceptance this build makes again when the attestation DATA is signed by TRUSTED, is about BUNDLE
    and records exactly that verdict; CheckFailed (exit 1) naming why otherwise."""
    sha256 = sha256_file(bundle)
    try:
        stmt = verify_envelope(data, trusted, sha256)
        predicate = stmt["predicate"]
        profile = recorded_profile(predicate, registry.known_good_kinds())
    except (dsse.EnvelopeError, StatementError) as exc:
        raise CheckFailed(
            f"NOT VERIFIED: {terminal(exc)}",
            hint="check that --key is the acceptor's public key and BUNDLE the file judged",
        ) from exc
    view, signers = _bundle(bundle)
    recorded_signer = next(
        (
            (d.get("digest") or {}).get("sha256")
            for d in predicate["configuration"]
            if d.get("name") == SIGNER_NAME and isinstance(d.get("digest"), dict)
        ),
        None,
    )
    signer = recorded_signer if recorded_signer in signers else (signers[0] if signers else "")
    acceptance = judge(view, profile, BundleRef(bundle.name, sha256, signer, 0), registry.acceptance_criteria())
    found = differences(predicate, acceptance, catalogue.CATALOGUE_PATH.read_bytes(), signers)
    if found:
        raise CheckFailed(
            "NOT VERIFIED: it is not the verdict this build gives the bundle: "
            + terminal("; ".join(found[:SHOWN]))
            + (f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""),
            hint="an attestation is verified by the rules that made it: judge the bundle again with `dossier accept`",
        )
    return acceptance


def handle(args: argparse.Namespace) -> int:
    paths.input_file(args.attestation, "ATTESTATION")
    paths.input_bundle(args.bundle, "BUNDLE")
    trusted = load_public(args.key)
    data = paths.read_regular(args.attestation, "ATTESTATION")
    signed_envelope(data, args.attestation, "ATTESTATION", "give the file `dossier accept --attestation` wrote")
    try:
        acceptance = verified_acceptance(data, args.bundle, trusted)
    except CheckFailed as exc:
        raise CheckFailed(
            str(exc).replace("NOT VERIFIED:", f"NOT VERIFIED {args.attestation}:", 1), hint=exc.hint
        ) from exc
    answer = terminal(
        answer_line(
            Verdict.PASS,
            f"{args.attestation.name} verified: signed by keyid {keyid(trusted)[:16]}..., about {args.bundle.name}; "
            f"the verdict it carries, as this build gives it: {acceptance.result.shown} ({RESULT_WORDS[acceptance.result]})",
        )
    )
    print(answer)
    print(
        terminal(
            f"verified {args.attestation}: signed by keyid {keyid(trusted)[:16]}..., about {args.bundle}; the "
            f"verdict this build gives it against {acceptance.profile.sku_id}"
        )
    )
    failed = acceptance.named(Verdict.FAIL) + acceptance.named(Verdict.INCOMPLETE)
    print(
        terminal(
            f"result {RESULT_WORDS[acceptance.result]} (verdict {acceptance.result}): passed "
            f"{', '.join(acceptance.named(Verdict.PASS)) or 'none'}; failed or incomplete {', '.join(failed) or 'none'}; "
            f"warned {', '.join(acceptance.named(Verdict.WARN)) or 'none'}"
        )
    )
    print(answer)
    return 0
