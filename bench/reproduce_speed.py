#!/usr/bin/env python3
"""How long `dossier reproduce THEIRS --key K --against MINE --key-mine K2` takes on two full H200 bundles
(issue 23's goal: under 2 s on this project's 2-core VM). Not a unit test: a time depends on the machine.

By default THEIRS is the committed full H200 dossier (tests/fixtures/h200/dossier-h200-full.tar.gz,
format 4, every step including transfer and the 60 s stress) and MINE the same run re-made by this build
(tests/h200_remade.py: this build's format, report, tables and schemas, signed with a key made here), so
both are full bundles of one SKU. Give two bundles and their keys to time a real pair instead:

    python bench/reproduce_speed.py [--repeats 5] [THEIRS THEIR.pub MINE MINE.pub]

Times, median of REPEATS, on the same machine in the same run:
  - command: `python -m harness reproduce ...` as a fresh process (what a user waits for: Python start,
    imports, both bundles verified, the judgement, the statement signed, the summary written);
  - in process: harness.cli.main with the same arguments (the work alone, imports already done);
  - verify x2: harness.verify.verify_bundle of both bundles (the share of the time verification takes);
  - judge: the comparison alone (harness.judge.reproduction.engine.compare on the two views).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import registry
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.judge.reproduction.engine import compare
from harness.run.assemble import assemble
from harness.signing.keys import generate, load_private, load_public
from harness.verify import verify_bundle

FULL = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200-full.tar.gz"
FULL_PUB = FULL.with_suffix("").with_suffix(".pub")


def remade_full(tmp: Path) -> tuple[Path, Path]:
    """The full H200 run re-made by this build, signed with a key made here."""
    from tests.h200_remade import record_of

    private, public = generate(tmp / "key")
    path = tmp / "dossier-h200-full-remade.tar.gz"
    path.write_bytes(assemble(record_of(FULL), load_private(private)))
    return path, public


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pair", nargs="*", metavar="THEIRS THEIR.pub MINE MINE.pub")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.pair and len(args.pair) != 4:
        parser.error("give THEIRS THEIR.pub MINE MINE.pub, or nothing for the committed full H200 bundle")
    return args


def run() -> None:
    args = main_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.pair:
            theirs, their_pub, mine, my_pub = map(Path, args.pair)
        else:
            theirs, their_pub = FULL, FULL_PUB
            mine, my_pub = remade_full(tmp)
        signing, _ = generate(tmp / "judge")
        argv = [
            "reproduce",
            str(theirs),
            "--key",
            str(their_pub),
            "--against",
            str(mine),
            "--key-mine",
            str(my_pub),
            "--output-dir",
            str(tmp / "out"),
            "--signing-key",
            str(signing),
            "--json",
        ]
        quiet = io.StringIO()

        def in_process() -> None:
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                main(argv)

        def command() -> None:
            subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, check=False, capture_output=True)

        views = [BundleView.from_files(read_all(p), registry.analysis_module) for p in (theirs, mine)]
        rows = [
            ("command (fresh process)", median_s(command, args.repeats)),
            ("in process (harness.cli.main)", median_s(in_process, args.repeats)),
            (
                "verify x2",
                median_s(
                    lambda: [verify_bundle(p, load_public(k)) for p, k in ((theirs, their_pub), (mine, my_pub))],
                    args.repeats,
                ),
            ),
            (
                "judge (compare)",
                median_s(lambda: compare(*views, registry.diff_figures(), registry.diff_fields()), args.repeats),
            ),
        ]
        judgement = compare(*views, registry.diff_figures(), registry.diff_fields())
        print(
            f"THEIRS {theirs.name} ({theirs.stat().st_size / 2**10:.0f} KiB), MINE {mine.name} "
            f"({mine.stat().st_size / 2**10:.0f} KiB): {len(judgement.figures)} figures, verdict {judgement.word}"
        )
        print(f"\n| what | median of {args.repeats} (s) |\n| --- | --- |")
        for name, seconds in rows:
            print(f"| {name} | {seconds:.3f} |")
        print(f"\ngoal: the command under 2 s: {'met' if rows[0][1] < 2 else 'NOT met'}")


if __name__ == "__main__":
    run()
