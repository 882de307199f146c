"""`dossier report BUNDLE`: re-render report.md from the bundle's raw JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import paths
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.commands.diff import load_view
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.present.report import render_report
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


def check_format(view: BundleView, path: Path, allowed: tuple[int, ...]) -> None:
    """A bundle whose format this build renders, or one --allow-format allows (said on stderr)."""
    made: Any = view.commands.get("format_version")  # any JSON: an int this build knows where `known`
    known = isinstance(made, int) and not isinstance(made, bool) and made in FORMATS
    if known and renders(made):
        return
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
    print(
        f"report: {path} is a format-{made} bundle, rendered by format {layout.FORMAT_VERSION}'s rules "
        f"(its own report.md follows format {made}'s)",
        file=sys.stderr,
    )


def handle(args: argparse.Namespace) -> int:
    paths.input_bundle(args.bundle)
    if args.output:
        paths.output_file(args.output, "--output", inputs=[args.bundle])
    allowed = allowed_formats(args)
    view = load_view(args.bundle)
    check_format(view, args.bundle, allowed)
    text = render_report(view)
    if args.output:
        paths.write_output(args.output, text, "--output")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
