"""`dossier report BUNDLE`: re-render report.md from the bundle's raw JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import paths
from harness.analysis.verdict import answer_line
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.commands.diff import load_view
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.present.report import render_report
from harness.present.verdict import run_verdict
from harness.verify.formats import FORMATS, renders


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report",
        help="re-render a bundle's report.md from its raw JSON",
        description="Render report.md from BUNDLE's raw JSON, commands.json and environment.json with this "
        "harness's template (nothing is extracted). Prints it, or writes it with --output. "
        "`dossier verify` compares the stored report with this rendering. A bundle of an older "
        "format, whose report rules this build has not got, is refused unless --allow-format allows it "
        "(then rendered by this build's rules, which its own report.md does not follow).",
    )
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--output", "-o", type=Path, help="write the report here instead of stdout")
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def check_format(view: BundleView, path: Path, allowed: tuple[int, ...]) -> str | None:
    """A bundle whose format this build renders (None), or one --allow-format allows (the note that says so)."""
    made: Any = view.commands.get("format_version")  # any JSON: an int this build knows where `known`
    known = isinstance(made, int) and not isinstance(made, bool) and made in FORMATS
    if known and renders(made):
        return None
    if not known:
        raise UsageError(
            f"{path}: commands.json format_version {str(made)[:40]!r} is not a bundle format this "
            f"build knows (1 to {max(FORMATS)})"
        )
    if made not in allowed:
        raise UsageError(
            f"{path} is a format-{made} bundle: this build renders format {layout.FORMAT_VERSION} "
            f"reports only, so the report would not be the bundle's own report.md",
            hint=f"pass --allow-format {made} to render it by format {layout.FORMAT_VERSION}'s rules anyway",
        )
    return (
        f"report: {path} is a format-{made} bundle, rendered by format {layout.FORMAT_VERSION}'s rules "
        f"(its own report.md follows format {made}'s)"
    )


def handle(args: argparse.Namespace) -> int:
    paths.input_bundle(args.bundle)
    if args.output:
        paths.output_file(args.output, "--output", inputs=[args.bundle])
    allowed = allowed_formats(args)
    view = load_view(args.bundle)
    note = check_format(view, args.bundle, allowed)
    text = render_report(view)
    verdict = run_verdict(view)
    where = f"written to {args.output}" if args.output else "printed"
    line = answer_line(
        verdict.overall, f"{args.bundle.name}'s report {where}; the dossier's verdict: {verdict.counts()}", exit_code=0
    )
    print(line, file=sys.stderr, flush=True)
    if note:
        print(note, file=sys.stderr, flush=True)
    if args.output:
        paths.write_output(args.output, text, "--output")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    print(line, file=sys.stderr)
    return 0
