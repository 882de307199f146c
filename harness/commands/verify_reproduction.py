"""`dossier verify-reproduction STATEMENT THEIRS MINE --key PUB`: is this signed reproduction verdict about these
two bundles, and is it the judgement they give?

A statement cannot vouch for itself (docs/reproduce.md, "Whose files these are"): after the envelope's
signature by PUB, its subjects (exactly THEIRS and MINE, by sha256) and its consistency with itself (every
figure's verdict follows from its values and tolerance, the whole from its figures:
harness.judge.reproduction.statement.verify), the whole judgement is made again from the two bundles with
this build's rules, as `dossier reproduce` makes it (harness.judge.reproduction.engine.compare, what was
not honoured derived from the bundles alone by harness.run.policy.unhonoured), and compared with what the
statement records: every verdict, value, tolerance, why, count, difference, the noise model (the
catalogue's version and sha256) and what was not honoured, and of each bundle its format and signer.
Any difference is a failure (exit 1) naming the first few, never a note: a statement judged by another
build or catalogue is verified by that build. What is printed is the judgement made here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import paths, registry
from harness.analysis.verdict import Verdict, answer_line
from harness.bundle import layout
from harness.bundle.read import UnreadableBundle, UnsafeBundle, read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.commands.accept import sha256_file
from harness.commands.options import signed_envelope
from harness.errors import CheckFailed, UsageError
from harness.escape import terminal
from harness.judge.reproduction.engine import Judgement, compare
from harness.judge.reproduction.statement import verify
from harness.run import policy
from harness.signing import dsse
from harness.signing.keys import keyid, load_public
from harness.signing.statement import StatementError

SHOWN = 5  # differences named in the one line of a refusal
# Of each bundle's block, what is not derived from the bundle: the file's name where it was judged and the
# count of checks its verify passed there (neither is printed, nor judged).
SIDE_FREE = frozenset({"name", "verify_checks_passed"})


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify-reproduction",
        help="check a signed reproduction statement against its two bundles",
        description="Check that STATEMENT (written by `dossier reproduce`) is signed by the key PUB (DSSE, "
        "Ed25519), is a reproduction statement naming THEIRS and MINE by their sha256, is consistent "
        "(every figure's verdict follows from its values and tolerance, the whole from its figures), "
        "and records exactly the judgement this build makes again from the two bundles (every verdict, "
        "value, tolerance and why, what was not honoured, the noise model); then print that verdict. "
        "Exit 0 when all of that holds, 1 otherwise (whatever the verdict itself).",
    )
    parser.add_argument("statement", type=Path, metavar="STATEMENT")
    parser.add_argument("theirs", type=Path, metavar="THEIRS")
    parser.add_argument("mine", type=Path, metavar="MINE")
    parser.add_argument(
        "--key",
        type=Path,
        required=True,
        metavar="PUB",
        help="the public key of whoever signed the statement, obtained outside the files",
    )
    parser.set_defaults(func=handle)


def _view(path: Path) -> tuple[BundleView, dict[str, bytes]]:
    try:
        files = read_all(path)
        return BundleView.from_files(files, registry.analysis_module), files
    except UnreadableBundle as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from exc
    except (UnsafeBundle, BundleFormatError) as exc:
        raise CheckFailed(f"{path} is a damaged bundle: {exc}") from exc


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True, default=str)


def _short(value: Any) -> str:
    text = canonical(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _figure_differences(recorded: Any, derived: list[dict[str, Any]]) -> list[str]:
    if not isinstance(recorded, list):
        return [f"figures: {_short(recorded)} recorded, not a list of figures"]
    found: list[str] = []
    by_id = {}
    for entry in recorded:
        if not isinstance(entry, dict) or not isinstance(entry.get("figure"), str) or entry["figure"] in by_id:
            found.append(f"figures: {_short(entry)} is not one figure of its own")
            continue
        by_id[entry["figure"]] = entry
    for figure in derived:
        entry = by_id.pop(figure["figure"], None)
        if entry is None:
            found.append(f"{figure['figure']}: in the bundles, not in the statement")
            continue
        for key in sorted(set(figure) | set(entry)):
            if canonical(entry.get(key)) != canonical(figure.get(key)):
                found.append(
                    f"{figure['figure']}: {key} {_short(entry.get(key))} recorded, {_short(figure.get(key))} "
                    "from the bundles"
                )
    found += [f"{name}: not a figure this build reads from the bundles" for name in by_id]
    if [f.get("figure") for f in recorded if isinstance(f, dict)] != [f["figure"] for f in derived] and not found:
        found.append("figures: recorded in another order than the bundles give them")
    return found


def differences(predicate: Mapping[str, Any], derived: Judgement, sides: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What PREDICATE records that the judgement DERIVED from the bundles (and SIDES, each bundle's own facts)
    does not say: one line each, empty when they agree."""
    body = derived.to_json()
    unknown = sorted(set(predicate) - set(body) - {"theirs", "mine", "made", "tool"})
    found = [f"{key}: recorded, not a part of a reproduction statement" for key in unknown]
    found += _figure_differences(predicate.get("figures"), body.pop("figures"))
    for key, value in body.items():
        if canonical(predicate.get(key)) != canonical(value):
            found.append(f"{key}: {_short(predicate.get(key))} recorded, {_short(value)} from the bundles")
    for role, facts in sides.items():
        block = predicate.get(role)
        block = block if isinstance(block, dict) else {}
        found += [
            f"{role}.{key}: recorded, not a part of a bundle's block"
            for key in sorted(set(block) - set(facts) - SIDE_FREE)
        ]
        for key, value in facts.items():
            if canonical(block.get(key)) != canonical(value):
                found.append(f"{role}.{key}: {_short(block.get(key))} recorded, {_short(value)} in the bundle")
    made = predicate.get("made")
    if not isinstance(made, dict) or made.get("mode") not in ("rerun", "against") or set(made) - {"mode", "plan"}:
        found.append(f"made: {_short(made)} recorded, not how a reproduction is made (rerun or against)")
    return found


def _signers(files: Mapping[str, bytes]) -> list[str]:
    """The keyids a bundle's envelope names (hints: the signature itself is `dossier verify`'s)."""
    try:
        return [str(k) for k, _ in dsse.signatures(json.loads(files[layout.ATTESTATION]))]
    except (KeyError, ValueError, TypeError, dsse.EnvelopeError):
        return []


def _side(view: BundleView, files: Mapping[str, bytes], sha256: str, judged: Any, recorded: Any) -> dict[str, Any]:
    """What a bundle says of itself that the statement's block for it records: its sha256, format, the
    GPUs it was measured on, and its signer (one the envelope names; the recorded one when it does)."""
    signers = _signers(files)
    recorded_signer = recorded.get("signer_keyid") if isinstance(recorded, dict) else None
    signer = recorded_signer if recorded_signer in signers else (signers[0] if signers else None)
    return {
        "sha256": sha256,
        "format_version": view.commands.get("format_version"),
        "signer_keyid": signer,
        **judged.to_json(),
    }


def verified_judgement(
    data: bytes, theirs_path: Path, mine_path: Path, trusted: Any
) -> tuple[dict[str, Any], Judgement]:
    """(the statement, the judgement this build makes again) when the statement DATA is signed by TRUSTED,
    names the two bundles and records exactly that judgement; CheckFailed (exit 1) naming why otherwise."""
    sha_theirs, sha_mine = sha256_file(theirs_path), sha256_file(mine_path)
    try:
        stmt = verify(data, trusted, sha_theirs, sha_mine)
    except (dsse.EnvelopeError, StatementError) as exc:
        raise CheckFailed(
            f"NOT VERIFIED: {terminal(exc)}",
            hint="check that --key is the signer's public key and THEIRS and MINE the files judged, in that order",
        ) from exc
    predicate = stmt["predicate"]
    (theirs, their_files), (mine, mine_files) = _view(theirs_path), _view(mine_path)
    unhonoured = policy.unhonoured(theirs, sha_theirs, mine)
    again = compare(theirs, mine, registry.diff_figures(), registry.diff_fields(), unhonoured)
    sides = {
        "theirs": _side(theirs, their_files, sha_theirs, again.theirs, predicate.get("theirs")),
        "mine": _side(mine, mine_files, sha_mine, again.mine, predicate.get("mine")),
    }
    found = differences(predicate, again, sides)
    if found:
        raise CheckFailed(
            "NOT VERIFIED: it is not the judgement this build makes from the two bundles: "
            + terminal("; ".join(found[:SHOWN]))
            + (f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""),
            hint="a statement is verified by the rules that made it: judge the bundles again with "
            "`dossier reproduce THEIRS --against MINE`",
        )
    return stmt, again


def handle(args: argparse.Namespace) -> int:
    paths.input_file(args.statement, "STATEMENT")
    paths.input_bundle(args.theirs, "THEIRS")
    paths.input_bundle(args.mine, "MINE")
    trusted = load_public(args.key)
    data = paths.read_regular(args.statement, "STATEMENT")
    signed_envelope(data, args.statement, "STATEMENT", "give the file `dossier reproduce --statement` wrote")
    try:
        _, again = verified_judgement(data, args.theirs, args.mine, trusted)
    except CheckFailed as exc:
        raise CheckFailed(
            f"{str(exc).replace('NOT VERIFIED:', f'NOT VERIFIED {args.statement}:', 1)}", hint=exc.hint
        ) from exc
    counts = again.counts()
    answer = terminal(
        answer_line(
            Verdict.PASS,
            f"{args.statement.name} verified, about {args.theirs.name} and {args.mine.name}; the verdict it carries, "
            f"as this build judges it again: {again.word.replace('_', ' ').upper()} ({counts['reproduced']} "
            f"reproduced, {counts['not_reproduced']} not reproduced, {counts['not_comparable']} not comparable)",
        )
    )
    print(answer)
    print(
        terminal(
            f"verified {args.statement}: signed by keyid {keyid(trusted)[:16]}..., about THEIRS {args.theirs} and "
            f"MINE {args.mine}; the judgement this build makes again from them"
        )
    )
    print(
        terminal(
            f"verdict {again.word} ({again.result.value}): {again.why}; {counts['reproduced']} reproduced, "
            f"{counts['not_reproduced']} not reproduced, {counts['not_comparable']} not comparable"
        )
    )
    print(answer)
    return 0
