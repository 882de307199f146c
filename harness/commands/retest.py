"""`dossier retest FAILED --key PUB --against GOOD`: after a repair, run again only the steps that failed
and sign whether the failure is resolved (docs/reproduce.md, "After a repair").

I/O only: both bundles must pass `dossier verify`; what failed is FAILED's lab verdict
(harness.present.verdict); the plan is FAILED's own with the other steps left out (harness.run.retest),
run through `dossier run`'s orchestration; the judgement is harness.judge.retest's, on the reproduce rule
(harness.judge.reproduction.engine.compare, restricted to the retested steps' figures). Exit 0 RESOLVED,
1 UNRESOLVED (or a bundle fails verification), 2 bad input: FAILED has nothing that failed, or GOOD was
measured on other hardware.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from harness import paths, registry
from harness.analysis.verdict import Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.commands.accept import verified_view
from harness.commands.options import add_signing_key
from harness.commands.run import check_destination, terminate_as_interrupt
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.judge import retest as judging
from harness.judge.facts import BundleFacts
from harness.judge.reproduction import environment
from harness.judge.reproduction.engine import compare
from harness.judge.reproduction.statement import signed_envelope
from harness.present.verdict import run_verdict
from harness.run import provenance
from harness.run.orchestrate import RunOptions, run_dossier
from harness.run.retest import retest_plan
from harness.signing.keys import load_private, load_public, public_path_for, signing_key_for_run
from harness.signing.statement import StatementError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "retest",
        help="after a repair: run again only the steps a failed bundle failed, and sign RESOLVED or UNRESOLVED",
        description="Verify FAILED (with --key) and GOOD, the node's own earlier good bundle (with --key-good). "
        "Run again only the steps FAILED's verdict failed on (its failed criteria's steps, its failed steps, "
        "and the steps those read), with FAILED's own probe arguments, into a retest bundle in --output-dir; "
        "judge the retested steps' figures against GOOD with the reproduce rule and FAILED's failed criteria "
        "on the retest. RESOLVED when every comparable figure reproduced and no failed criterion fails again; "
        "else UNRESOLVED, naming the figures and criteria, with FAILED's recommended action, escalated one "
        "step for each earlier UNRESOLVED retest of the same FAILED bundle found in --history. Writes a signed "
        "in-toto statement naming the three bundles. Exit 0 RESOLVED, 1 UNRESOLVED or a bundle fails "
        "verification, 2 bad input (FAILED did not fail, GOOD is of other hardware).",
    )
    parser.add_argument("failed", type=Path, metavar="FAILED", help="the bundle whose verdict failed (.tar.gz)")
    parser.add_argument("--key", type=Path, required=True, metavar="PUB", help="the public key FAILED verifies with")
    parser.add_argument(
        "--against", type=Path, required=True, metavar="GOOD", help="the node's own earlier good bundle"
    )
    parser.add_argument(
        "--key-good", type=Path, metavar="PUB", help="the public key GOOD verifies with (default: --key)"
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("bundles"),
        help="where the retest bundle and the statement go (default: bundles)",
    )
    parser.add_argument(
        "--name", help="the retest bundle's file name without .tar.gz (default: dossier-HOST-TIMESTAMP)"
    )
    add_signing_key(
        parser,
        "private key that signs the retest bundle and the statement (default: $DOSSIER_KEY, else "
        "~/.config/rig-dossier/dossier.key, made on first use)",
    )
    parser.add_argument(
        "--statement",
        type=Path,
        metavar="F",
        help="where the signed statement goes (default: beside the retest bundle, NAME.intoto.json)",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="DIR",
        help="where earlier retest statements are (default: OUTPUT_DIR): those of the same FAILED bundle that "
        "said UNRESOLVED, signed with your key, escalate the action",
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help="a local copy of FAILED's checkpoint file, when the precision step is retested and it is not cached",
    )
    parser.add_argument("--json", action="store_true", help="print the statement's predicate as JSON")
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def check_paths(args: argparse.Namespace) -> None:
    """Every file named is readable and every output writable, before any bundle is verified or probe runs."""
    paths.input_bundle(args.failed, "FAILED")
    paths.input_bundle(args.against, "GOOD (--against)")
    for option, path in (
        ("--key", args.key),
        ("--key-good", args.key_good),
        ("--signing-key", args.signing_key),
        ("--checkpoint", args.checkpoint),
    ):
        if path is not None:
            paths.input_file(path, option)
    if args.history is not None and not args.history.is_dir():
        raise UsageError(f"--history {args.history}: not a folder", hint="name the folder earlier statements are in")
    check_destination(args)
    inputs = [p for p in (args.failed, args.against, args.key, args.key_good, args.signing_key) if p]
    paths.output_files([("--statement", args.statement)], inputs)


def to_retest(failed: BundleView) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(FAILED's failed criteria and failed steps, the steps to run again for them)."""
    verdict = run_verdict(failed)
    read = {c.name: c.steps for c in registry.lab_criteria()}
    names, steps = [], []
    for line in verdict.lines:
        if line.verdict != Verdict.FAIL:
            continue
        names.append(line.name)
        result = next((r for r in verdict.results if r.name == line.name), None)
        steps += [*(result.steps if result else ()), *read.get(line.name, (line.name,))]
    return tuple(names), tuple(dict.fromkeys(steps))


def _seconds(view: BundleView) -> float | None:
    """How long the bundle's run took, from its commands.json."""
    try:
        start, end = (
            _dt.datetime.fromisoformat(str(view.commands[k]).replace("Z", "+00:00"))
            for k in ("started_at", "finished_at")
        )
    except (KeyError, ValueError):
        return None
    return round((end - start).total_seconds(), 1)


def _earlier(folder: Path, failed_sha256: str, trusted: Any) -> int:
    """UNRESOLVED retests of FAILED among the statements in FOLDER signed with TRUSTED (others are not ours)."""
    found = []
    for path in sorted(folder.glob("retest-*.intoto.json")):
        try:
            found.append(judging.verify(path.read_bytes(), trusted))
        except (OSError, ValueError, StatementError):
            continue  # not a retest statement of ours: it says nothing about this node's history
    return judging.earlier(found, failed_sha256)


def attempt_name(args: argparse.Namespace) -> str:
    """retest-FAILED-N: the first N whose bundle and statement are not in --output-dir yet."""
    stem = args.failed.name.removesuffix(layout.SUFFIX)
    n = 1
    while any((args.output_dir / f"retest-{stem}-{n}{end}").exists() for end in (layout.SUFFIX, ".intoto.json")):
        n += 1
    return f"retest-{stem}-{n}"


def _statement_path(args: argparse.Namespace, name: str) -> Path:
    if args.statement is not None:
        return args.statement
    path = args.output_dir / f"{name}.intoto.json"
    paths.output_files([("--statement", path)], [args.failed])
    return path


UNKNOWN = ("unknown",)  # the identity of a bundle whose health and bandwidth both failed


def _device(failed: BundleView, good: BundleView) -> str | None:
    """What FAILED ran on (GOOD's, where FAILED's own health and bandwidth did not complete)."""
    key = environment.identity(BundleFacts(failed)).key
    key = environment.identity(BundleFacts(good)).key if key == UNKNOWN else key
    return "cuda" if key[0] == "gpu" else None


def run_again(args: argparse.Namespace, failed: BundleView, good: BundleView, failed_ref: Any, steps: tuple[str, ...]):
    """The retest bundle: FAILED's plan with only STEPS (and what they read) run, signed, verified."""
    origin = f"the failed bundle {failed_ref.name} (sha256 {failed_ref.sha256})"
    replay, run = retest_plan(failed, steps, origin, {"checkpoint": args.checkpoint}, _device(failed, good))
    print(f"retest: {len(run)} step(s) again: {', '.join(run)}; runner: {replay.runner_why}", file=sys.stderr)
    for line in replay.said:
        print(f"retest: cannot honour: {line}", file=sys.stderr)
    key, note = signing_key_for_run(args.signing_key)
    if note:
        print(f"retest: {note}", file=sys.stderr)
    name = args.name or attempt_name(args)
    options = RunOptions(output_dir=args.output_dir, name=name, runner_choice=replay.runner.name, skip=replay.skip)
    with terminate_as_interrupt():
        path = run_dossier(options, replay.runner, replay.runner_why, key, plan=replay.plan)
    view, ref = verified_view(path, key.path, key.public, ())
    print(f"retest: wrote {path} (signed with keyid {key.keyid[:16]}...)", file=sys.stderr)
    return view, ref, run, key


def handle(args: argparse.Namespace) -> int:
    check_paths(args)
    if args.signing_key is not None:
        load_private(args.signing_key)  # a bad signing key is refused before any bundle is read
    failed, failed_ref = verified_view(args.failed, args.key, load_public(args.key), allowed_formats(args))
    good_key = args.key_good or args.key
    good, good_ref = verified_view(args.against, good_key, load_public(good_key), allowed_formats(args))
    theirs, ours = environment.identity(BundleFacts(good)), environment.identity(BundleFacts(failed))
    if ours.key != UNKNOWN and theirs.key != ours.key:  # (FAILED's health may be what failed: unknown)
        raise UsageError(
            f"GOOD was measured on {theirs.text}, FAILED on {ours.text}",
            hint="retest against the same node's own good bundle",
        )
    names, steps = to_retest(failed)
    if not names:
        raise UsageError(f"{args.failed}'s verdict has nothing that failed: there is nothing to retest")
    before = run_verdict(failed).recommendation
    print(f"retest: FAILED failed {', '.join(names)} (action {before.shown()})", file=sys.stderr)
    mine, mine_ref, run, key = run_again(args, failed, good, failed_ref, steps)
    return judge_and_sign(args, (failed, good, mine), (failed_ref, good_ref, mine_ref), names, run, before, key)


def judge_and_sign(args, views, refs, names, run, before, key) -> int:
    failed, good, mine = views
    failed_ref, good_ref, mine_ref = refs
    figures = [(p, a, f) for p, a, f in registry.diff_figures() if _of(f, p, a, run, mine)]
    judgement = compare(good, mine, figures, registry.diff_fields())
    after = [(line.name, line.verdict) for line in run_verdict(mine).lines]
    count = _earlier(args.history or args.output_dir, failed_ref.sha256, key.public)
    retest = judging.Retest(run, names, judging.still_failing(names, after), judgement, before, count)
    stmt = judging.retest_statement(
        retest,
        {judging.FAILED: failed_ref, judging.RETEST: mine_ref, judging.GOOD: good_ref},
        {
            role: v.commands.get("format_version")
            for role, v in zip((judging.FAILED, judging.RETEST, judging.GOOD), (failed, mine, good), strict=True)
        },
        {"failed_run": _seconds(failed), "retest_run": _seconds(mine), "good_run": _seconds(good)},
        provenance.tool_info(),
    )
    path = _statement_path(args, mine_ref.name.removesuffix(layout.SUFFIX))
    paths.write_output(path, signed_envelope(stmt, key), "--statement")
    print(
        f"retest: wrote {path} (in-toto statement, signed by keyid {key.keyid[:16]}...; verify it with "
        f"{public_path_for(key.path)})",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps(stmt["predicate"], indent=1, sort_keys=True, allow_nan=False))
    else:
        print("\n".join(judging.shown(retest)))
    return 0 if retest.resolved else 1


def _of(figure: Any, probe: str, analysis: str | None, steps: tuple[str, ...], view: BundleView) -> bool:
    """Whether a declared figure is one of the retested steps' (the step it reads, or for a figure every step
    of an analysis gives, one of those steps)."""
    if figure.every_step:
        return any(e.get("analysis") == analysis and e.get("step") in steps for e in view.steps)
    return (figure.step or probe) in steps
