"""`dossier reproduce THEIRS --key THEIR_PUB [--against MINE]`: did their bundle reproduce here?

I/O only: their bundle must pass `dossier verify` (as `dossier accept` requires, harness.commands.accept
.verified_view); their plan comes from harness.run.replay and runs through `dossier run`'s orchestration
(harness.run.orchestrate); the judgement is harness.judge.reproduction.engine's over the registry's
declarations, signed by harness.judge.reproduction.statement, summarised by harness.present.
reproduce_summary. Exit 0 every comparable figure reproduced, 1 one did not (or a bundle fails
verification: refused), 2 bad input, including two bundles with nothing comparable (another SKU).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness import paths, registry
from harness.analysis.tool import tool_text
from harness.analysis.units import value_text
from harness.analysis.verdict import StepStatus, Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.commands.accept import sha256_file, trusted_key, verified_view
from harness.commands.options import add_signing_key
from harness.commands.run import check_destination, terminate_as_interrupt
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.escape import terminal
from harness.judge.acceptance.outcome import BundleRef
from harness.judge.facts import BundleFacts
from harness.judge.reproduction import environment
from harness.judge.reproduction.engine import Judgement, compare
from harness.judge.reproduction.statement import Made, reproduction_statement, signed_envelope
from harness.present.reproduce_summary import Files, render_markdown
from harness.run import policy, provenance
from harness.run.orchestrate import RunOptions, run_dossier
from harness.run.replay import Replay, derive
from harness.runners.select import host_has_nvidia_gpu
from harness.signing.keys import load_private, load_public, public_path_for, signing_key_for_run

SHOWN_FAILED = 20  # figures that did not reproduce listed on the terminal (the summary and --json hold them all)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "reproduce",
        help="re-run a colleague's bundle here (or judge yours against it) and sign whether it reproduced",
        description="Verify THEIRS with --key (a bundle that fails `dossier verify` is refused), then either run "
        "their plan here (their steps and probe arguments from their commands.json, their checkpoint by "
        "sha256, their image digest when they used docker; what this host cannot honour is said before "
        "any probe runs and the figures it affects are not comparable) and write your bundle to "
        "--output-dir, or, with --against, take your existing bundle (offline). Every headline figure of "
        "every probe is judged: reproduced when mine is within its run-to-run tolerance of theirs (the "
        "catalogue's noise model, widened by both bundles' own spreads), counts and exact figures only "
        "when equal, not comparable (with why) otherwise; the differences of environment come first as "
        "the likely why. Writes a signed in-toto statement naming both bundles by sha256 and a Markdown "
        "summary. Exit 0 every comparable figure reproduced, 1 one did not or a bundle fails "
        "verification, 2 bad input: the same file twice, a plan naming a probe this build lacks, MINE "
        "lacking a probe THEIRS ran, or bundles with nothing comparable (another SKU).",
    )
    _add_bundle_options(parser)
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("bundles"),
        help="where your bundle (when their plan runs here), the statement and the summary go (default: bundles)",
    )
    parser.add_argument(
        "--name",
        help="your bundle's file name without .tar.gz, when their plan runs here (default: dossier-HOST-TIMESTAMP)",
    )
    add_signing_key(
        parser,
        "private key that signs your bundle and the statement (default: $DOSSIER_KEY, else "
        "~/.config/rig-dossier/dossier.key, made on first use)",
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help="a local copy of their checkpoint file, when it is not in this host's cache (its "
        "sha256 must be the one their bundle records)",
    )
    _add_output_options(parser)
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def _add_bundle_options(parser: argparse.ArgumentParser) -> None:
    """The bundles judged: THEIRS and the key it verifies with, and MINE (--against) with its key."""
    parser.add_argument("theirs", type=Path, metavar="THEIRS", help="their bundle (.tar.gz)")
    parser.add_argument(
        "--key", type=Path, required=True, metavar="PUB", help="their public key: THEIRS must verify with it"
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="MINE",
        help="judge this bundle of yours against theirs instead of running their plan here (offline)",
    )
    parser.add_argument(
        "--key-mine",
        type=Path,
        metavar="PUB",
        help="the public key MINE verifies with (default: the public half of your own key)",
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    """What is written and printed: the statement, the summary, the judgement as JSON."""
    parser.add_argument(
        "--statement",
        type=Path,
        metavar="F",
        help="where the signed statement goes (default: OUTPUT_DIR/reproduction-THEIRS-vs-MINE.intoto.json)",
    )
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="F.md",
        help="where the Markdown summary goes (default: beside the statement, .md)",
    )
    parser.add_argument("--json", action="store_true", help="print the judgement (the statement's predicate) as JSON")


def check_paths(args: argparse.Namespace) -> None:
    """Every file named is readable and every output writable, before any bundle is verified or probe runs."""
    paths.input_bundle(args.theirs, "THEIRS")
    if args.against is not None:
        paths.input_bundle(args.against, "MINE (--against)")
        if os.path.realpath(args.against) == os.path.realpath(args.theirs):
            raise UsageError(
                f"THEIRS and MINE are the same file ({args.theirs})",
                hint="MINE is your own run of their plan: `dossier reproduce THEIRS` makes one",
            )
    elif args.key_mine is not None:
        raise UsageError("--key-mine is for --against MINE; a bundle made here is verified with your own key")
    for option, path in (
        ("--key", args.key),
        ("--key-mine", args.key_mine),
        ("--signing-key", args.signing_key),
        ("--checkpoint", args.checkpoint),
    ):
        if path is not None:
            paths.input_file(path, option)
    if args.against is None:
        check_destination(args)
    elif args.name:
        raise UsageError("--name names the bundle made here; with --against no bundle is made")
    paths.output_dir(args.output_dir, "--output-dir")
    inputs = [p for p in (args.theirs, args.against, args.key, args.key_mine, args.signing_key, args.checkpoint) if p]
    paths.output_files([("--statement", args.statement), ("--summary", args.summary)], inputs)


def _verified(path: Path, key_path: Path, trusted: Any, allowed: tuple[int, ...] = ()) -> tuple[BundleView, BundleRef]:
    """The bundle's data, only if it verifies with TRUSTED (an older format only when ALLOWED: --allow-format)."""
    return verified_view(path, key_path, trusted, allowed)


def refuse_unjudgeable(theirs: BundleView, mine: BundleView) -> None:
    """Exit 2 for a pair that cannot be judged: a probe THEIRS ran that this build lacks, or that MINE never ran."""
    completed = {
        s.get("probe"): s.get("step")
        for s in theirs.steps
        if s.get("kind") == "probe" and s.get("status") == StepStatus.COMPLETED
    }
    lacking = sorted((p for p in completed if registry.find(p) is None), key=str)
    if lacking:
        raise UsageError(
            f"THEIRS ran the probe(s) {', '.join(map(str, lacking))}, which this build lacks",
            hint="judge it with the build that made it (commands.json tool.git_commit)",
        )
    options = mine.commands.get("options")
    options = options if isinstance(options, dict) else {}
    skipped = set(options.get("skip") or [])
    ran = {s.get("probe") for s in mine.steps if s.get("kind") == "probe" and s.get("step") not in skipped}
    missing = sorted((p for p in completed if p not in ran), key=str)
    if missing:
        raise UsageError(
            f"MINE did not run {', '.join(map(str, missing))}, which THEIRS ran (absent, or left out "
            "with --skip): their figures there cannot be reproduced by it",
            hint="run their plan here: `dossier reproduce THEIRS --key THEIR.pub` (without --against)",
        )


def _stem(name: str) -> str:
    return name.removesuffix(layout.SUFFIX)


def rerun(args: argparse.Namespace, theirs: BundleView, ref: BundleRef) -> tuple[BundleView, BundleRef, Replay]:
    """Their plan run here into a bundle of mine (signed), verified like theirs."""
    identity = environment.identity(BundleFacts(theirs))
    if identity.key[0] == "gpu":
        has_gpu, seen = host_has_nvidia_gpu()
        if not has_gpu:
            raise UsageError(
                f"THEIRS was measured on {identity.text}; this host has no GPU ({seen}): nothing of theirs "
                "that depends on the device could be compared",
                hint="run `dossier reproduce` on a machine with the same GPUs",
            )
    replay = derive(
        theirs,
        f"their bundle {ref.name} (sha256 {ref.sha256})",
        {"checkpoint": args.checkpoint},
        "cuda" if identity.key[0] == "gpu" else None,
    )
    steps = [s.step for s in replay.plan if s.step not in replay.skip]
    print(
        terminal(f"reproduce: their plan, {len(steps)} step(s) here: {', '.join(steps)}; runner: {replay.runner_why}"),
        file=sys.stderr,
    )
    for line in replay.not_run:
        print(f"reproduce: {terminal(line)}", file=sys.stderr)
    for line in replay.said:
        print(f"reproduce: cannot honour: {terminal(line)}", file=sys.stderr)
    key, note = signing_key_for_run(args.signing_key)
    if note:
        print(f"reproduce: {note}", file=sys.stderr)
    options = RunOptions(
        output_dir=args.output_dir,
        name=args.name,
        runner_choice=replay.runner.name,
        skip=replay.skip,
        retest=replay.retest,
    )
    with terminate_as_interrupt():
        path = run_dossier(options, replay.runner, replay.runner_why, key, plan=replay.plan)
    print(f"reproduce: wrote {path} (signed with keyid {key.keyid[:16]}...)", file=sys.stderr)
    mine, mine_ref = _verified(path, key.path, key.public)
    return mine, mine_ref, replay


def _outputs(args: argparse.Namespace, mine_name: str) -> tuple[Path, Path]:
    base = args.output_dir / f"reproduction-{_stem(args.theirs.name)}-vs-{_stem(mine_name)}"
    statement = args.statement or base.with_name(base.name + ".intoto.json")
    summary = args.summary or (
        statement.with_name(statement.name.removesuffix(".intoto.json").removesuffix(".json") + ".md")
    )
    if args.statement is None or args.summary is None:  # defaults made only now: checked now
        paths.output_files([("--statement", statement), ("--summary", summary)], [args.theirs])
    return statement, summary


def _format(view: BundleView) -> Any:
    return view.commands.get("format_version")


SHOWN = {"reproduced": "REPRODUCED", "not_reproduced": "NOT REPRODUCED", "not_comparable": "NOT COMPARABLE"}


def answer(judgement: Judgement) -> str:
    """The answer line, first and last: `verdict: NOT REPRODUCED: why: 3 reproduced, ... (exit 1)`."""
    counts = judgement.counts()
    code = UsageError.exit_code if judgement.result == Verdict.SKIP else judgement.result.exit_code
    return (
        f"verdict: {SHOWN[judgement.word]}: {judgement.why}: deciding {counts['reproduced']} reproduced, "
        f"{counts['not_reproduced']} not reproduced, {counts['not_comparable']} not comparable (exit {code})"
    )


def print_result(judgement: Judgement) -> None:
    shown = SHOWN
    print(answer(judgement))
    failed = judgement.named(Verdict.FAIL)
    for f in failed[:SHOWN_FAILED]:
        print(
            terminal(
                f"FAIL {f.figure}: theirs {value_text('', f.theirs)}, mine {value_text('', f.mine)}: {f.why}"
                + (f" (likely why: {', '.join(f.likely_why)})" if f.likely_why else "")
            )
        )
    if len(failed) > SHOWN_FAILED:
        print(f"     ... and {len(failed) - SHOWN_FAILED} more (the summary lists them all)")
    counts = judgement.counts()
    print(f"rule: {judgement.rule.text}")
    print(
        f"{shown[judgement.word]}: {terminal(judgement.why)} (deciding: {counts['reproduced']} reproduced, "
        f"{counts['not_reproduced']} not reproduced, {counts['not_comparable']} not comparable; "
        f"{counts['informing_moved']} of {counts['informing']} informing figures moved, not deciding)"
    )
    print(answer(judgement))


def _mine(
    args: argparse.Namespace, theirs: BundleView, their_ref: BundleRef
) -> tuple[BundleView, BundleRef, Made, str]:
    """MINE, verified, and how it was made (for the statement, and in words for the summary): given with
    --against (refused when it is THEIRS again, or a pair of one SKU that cannot be judged), else their
    plan run here."""
    if args.against is not None:
        if sha256_file(args.against) == their_ref.sha256:
            raise UsageError(
                f"THEIRS and MINE are the same bundle (sha256 {their_ref.sha256[:16]}...)",
                hint="MINE is your own run of their plan: `dossier reproduce THEIRS` makes one",
            )
        key_path, trusted = trusted_key(args.key_mine)
        mine, mine_ref = _verified(args.against, key_path, trusted, allowed_formats(args))
        if environment.identity(BundleFacts(theirs)).key == environment.identity(BundleFacts(mine)).key:
            refuse_unjudgeable(theirs, mine)  # (of another SKU, nothing is judgeable: the statement says why)
        return mine, mine_ref, Made("against"), "given with --against"
    mine, mine_ref, replay = rerun(args, theirs, their_ref)
    return mine, mine_ref, Made("rerun", replay.to_json()), "made here from their plan"


def handle(args: argparse.Namespace) -> int:
    check_paths(args)
    if args.signing_key is not None:
        load_private(args.signing_key)  # a bad signing key is refused before any bundle is read
    theirs, their_ref = _verified(args.theirs, args.key, load_public(args.key), allowed_formats(args))
    print(f"reproduce: THEIRS {args.theirs} verified ({their_ref.checks_passed} checks)", file=sys.stderr)
    mine, mine_ref, made, mine_made = _mine(args, theirs, their_ref)
    # what was not honoured, from the two bundles alone: what `dossier verify-reproduction` derives again
    unhonoured = policy.unhonoured(theirs, their_ref.sha256, mine)
    judgement = compare(theirs, mine, registry.diff_figures(), registry.diff_fields(), unhonoured)
    tool = provenance.tool_info()
    stmt = reproduction_statement(judgement, their_ref, mine_ref, (_format(theirs), _format(mine)), made, tool)
    statement_path, summary_path = _outputs(args, mine_ref.name)
    key, note = signing_key_for_run(args.signing_key)
    if note:
        print(f"reproduce: {note}", file=sys.stderr)
    paths.write_output(statement_path, signed_envelope(stmt, key), "--statement")
    files = Files(  # named as the reader has them beside the summary, not by this machine's paths
        args.theirs.name,
        (args.against or args.output_dir / mine_ref.name).name,
        statement_path.name,
        public_path_for(key.path).name,
    )
    paths.write_output(
        summary_path,
        render_markdown(
            judgement,
            their_ref,
            mine_ref,
            files,
            mine_made,
            tool_text(tool),
            [*((made.plan or {}).get("not_honoured") or [])],
        ),
        "--summary",
    )
    print(
        f"reproduce: wrote {statement_path} (in-toto statement, signed by keyid {key.keyid[:16]}...) and "
        f"{summary_path}",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps(stmt["predicate"], indent=1, sort_keys=True, allow_nan=False))
    else:
        print_result(judgement)
    if judgement.result == Verdict.SKIP:
        raise UsageError(
            f"not comparable: {judgement.why}",
            hint=f"the statement says so ({statement_path}); reproduce THEIRS on the hardware it names",
        )
    return judgement.result.exit_code
