"""`dossier verify-reproduction STATEMENT THEIRS MINE --key PUB`: is this signed reproduction verdict about these
two bundles, and does it say what they say?

Three checks, each failing with exit 1 and one line: the envelope is signed by PUB and is a reproduction
statement naming exactly THEIRS and MINE by sha256 (harness.judge.reproduction.statement.verify); every
figure's verdict follows from its recorded values and tolerance, and the whole from its figures (the
same); and the judgement made again from the two bundles by this build gives the values and verdicts
the statement records. Where this build's catalogue or code differs from the one that signed (the
statement names both), a verdict that differs is printed as a note, not a failure: the noise model may
have changed since; the values must still agree (a value is the bundles' own figure, recomputed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness import paths, registry
from harness.analysis.verdict import Verdict, answer_line
from harness.bundle.read import UnsafeBundle, read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.commands.accept import sha256_file
from harness.errors import CheckFailed, UsageError
from harness.judge.reproduction.engine import Judgement, compare
from harness.judge.reproduction.statement import verify
from harness.run import provenance
from harness.signing import dsse
from harness.signing.keys import keyid, load_public
from harness.signing.statement import StatementError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify-reproduction",
        help="check a signed reproduction statement against its two bundles",
        description="Check that STATEMENT (written by `dossier reproduce`) is signed by the key PUB (DSSE, "
        "Ed25519), is a reproduction statement naming THEIRS and MINE by their sha256, is consistent "
        "(every figure's verdict follows from its values and tolerance, the whole from its figures), "
        "and records the values this build recomputes from the two bundles; then print its verdict. "
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


def _view(path: Path) -> BundleView:
    try:
        return BundleView.from_files(read_all(path), registry.analysis_module)
    except (UnsafeBundle, BundleFormatError) as exc:
        raise UsageError(f"{path} is not a readable dossier bundle: {exc}") from exc


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def recomputed(predicate: dict[str, Any], theirs: Path, mine: Path) -> tuple[list[str], list[str], Judgement]:
    """(values that differ from the bundles', verdicts that differ, this build's judgement) between the statement
    and the judgement made again."""
    again = compare(
        _view(theirs), _view(mine), registry.diff_figures(), registry.diff_fields(), predicate.get("not_honoured") or {}
    )
    now = {f.figure: f.to_json() for f in again.figures}
    values, verdicts = [], []
    for figure in predicate["figures"]:
        other = now.pop(figure.get("figure"), None)
        if other is None:
            values.append(f"{figure.get('figure')}: not a figure this build reads from the bundles")
            continue
        for side in ("theirs", "mine"):
            if not _same(figure.get(side), other[side]):
                values.append(
                    f"{figure['figure']}: {side} {figure.get(side)!r} recorded, {other[side]!r} in the bundle"
                )
        if figure.get("verdict") != other["verdict"]:
            verdicts.append(f"{figure['figure']}: {figure.get('verdict')} recorded, {other['verdict']} now")
    values += [f"{figure}: in the bundles, not in the statement" for figure in now]
    if predicate.get("verdict") != again.word:
        verdicts.insert(0, f"the whole: {predicate.get('verdict')} recorded, {again.word} now")
    return values, verdicts, again


def handle(args: argparse.Namespace) -> int:
    paths.input_file(args.statement, "STATEMENT")
    paths.input_bundle(args.theirs, "THEIRS")
    paths.input_bundle(args.mine, "MINE")
    trusted = load_public(args.key)
    data = args.statement.read_bytes()
    try:
        dsse.parse(data)
    except dsse.EnvelopeError as exc:  # not what it should be, like any unreadable input: exit 2
        raise UsageError(
            f"STATEMENT {args.statement} is not a signed statement: {exc}",
            hint="give the file `dossier reproduce --statement` wrote",
        ) from exc
    try:
        stmt = verify(data, trusted, sha256_file(args.theirs), sha256_file(args.mine))
    except (dsse.EnvelopeError, StatementError) as exc:
        raise CheckFailed(
            f"NOT VERIFIED {args.statement}: {exc}",
            hint="check that --key is the signer's public key and THEIRS and MINE the files judged, in that order",
        ) from exc
    predicate = stmt["predicate"]
    values, verdicts, again = recomputed(predicate, args.theirs, args.mine)
    if values:
        raise CheckFailed(
            f"NOT VERIFIED {args.statement}: it records figures the bundles do not hold: "
            + "; ".join(values[:5])
            + (f" (and {len(values) - 5} more)" if len(values) > 5 else "")
        )
    tool, here = predicate.get("tool") or {}, provenance.tool_info()
    same_build = (
        tool.get("source_sha256") == here.get("source_sha256")
        and (predicate.get("noise_model") or {}).get("catalogue_sha256") == again.model.to_json()["catalogue_sha256"]
    )
    if verdicts and same_build:
        raise CheckFailed(
            f"NOT VERIFIED {args.statement}: this very build judges otherwise: " + "; ".join(verdicts[:5])
        )
    for line in verdicts[:10]:
        print(
            f"note: judged again by this build (another build or catalogue than the signer's): {line}", file=sys.stderr
        )
    counts = predicate.get("counts") or {}
    answer = answer_line(
        Verdict.PASS,
        f"{args.statement.name} verified, about {args.theirs.name} and {args.mine.name}; the verdict it carries: "
        f"{str(predicate.get('verdict')).replace('_', ' ').upper()} ({counts.get('reproduced', 0)} reproduced, "
        f"{counts.get('not_reproduced', 0)} not reproduced, {counts.get('not_comparable', 0)} not comparable)",
    )
    print(answer)
    print(
        f"verified {args.statement}: signed by keyid {keyid(trusted)[:16]}..., about THEIRS {args.theirs} and MINE "
        f"{args.mine}"
    )
    print(
        f"verdict {predicate.get('verdict')} ({predicate.get('result')}): {predicate.get('why')}; "
        f"{counts.get('reproduced', 0)} reproduced, {counts.get('not_reproduced', 0)} not reproduced, "
        f"{counts.get('not_comparable', 0)} not comparable"
    )
    print(answer)
    return 0
