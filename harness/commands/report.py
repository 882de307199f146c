"""`dossier report BUNDLE`: re-render report.md from the bundle's raw JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.commands.diff import load_view
from harness.present.report import render_report


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report", help="re-render a bundle's report.md from its raw JSON",
        description="Render report.md from BUNDLE's raw JSON, commands.json and environment.json with this "
                    "harness's template (nothing is extracted). Prints it, or writes it with --output. "
                    "`dossier verify` compares the stored report with this rendering.")
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--output", "-o", type=Path, help="write the report here instead of stdout")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    paths.input_bundle(args.bundle)
    if args.output:
        paths.output_file(args.output, "--output", inputs=[args.bundle])
    text = render_report(load_view(args.bundle))
    if args.output:
        paths.write_output(args.output, text, "--output")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
