#!/usr/bin/env python3
"""Where `dossier run`'s wall time goes outside its step records (issue 40): one real `dossier run`, in
this process, with each phase of the parent's own work timed from the process's start.

The bundle's commands.json records the steps (started_at .. finished_at); this adds what it cannot: the
CLI's start (interpreter and imports), preparing the run (checkpoint, runner, key), the record itself,
assembling (report, tables, plots left to render, the attestation, the archive), writing, and the last
lines (the bundle verified with the signer's key, the answer line). Each phase wraps the project's own
function, unchanged; nothing is measured differently from a plain `dossier run`, and the bundle it writes is
a real one (the campaign keeps it). Prints one JSON line to stderr at the end, `phases: {...}`, and writes
it to --json.

    python3 bench/dossier_phases.py --json phases.json -- run --output-dir W --name N --runner local ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

T0 = time.monotonic()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def process_age_s() -> float:
    """Seconds since this process started (from /proc: the interpreter's own start included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    start = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("dossier", nargs=argparse.REMAINDER, help="-- then `dossier`'s own arguments")
    args = parser.parse_args()
    argv = args.dossier[1:] if args.dossier[:1] == ["--"] else args.dossier
    before_script = process_age_s() - (time.monotonic() - T0)  # the interpreter's start, before this file ran
    phases: dict[str, list[float]] = {}

    def timed(module, name: str):
        inner = getattr(module, name)

        def wrapper(*a, **k):
            start = time.monotonic() - T0 + before_script
            try:
                return inner(*a, **k)
            finally:
                phases.setdefault(f"{module.__name__}.{name}", []).append(
                    [round(start, 3), round(time.monotonic() - T0 + before_script, 3)]
                )

        setattr(module, name, wrapper)

    import harness.cli as cli

    imported = time.monotonic() - T0 + before_script
    from harness.commands import run as run_command
    from harness.run import assemble, destination, orchestrate

    for module, name in (
        (run_command, "prepare"),
        (run_command, "signing_key_for_run"),
        (run_command.probe, "select_from_args"),
        (orchestrate, "collect"),
        (orchestrate, "run_steps"),
        (destination, "assemble"),
        (destination, "write_atomically"),
        (assemble, "unsigned_files"),
        (assemble, "render_plots"),
        (assemble, "add_tables"),
        (assemble, "render_report"),
        (assemble, "sign_files"),
        (assemble, "archive_bytes"),
        (run_command, "conclude"),
        (run_command, "verify_and_view"),
    ):
        timed(module, name)
    code = cli.main(argv)
    ended = time.monotonic() - T0 + before_script
    result = {
        "interpreter_start_s": round(before_script, 3),
        "cli_imported_s": round(imported, 3),
        "ended_s": round(ended, 3),
        "exit_code": code,
        "phases": phases,
    }
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print("phases: " + json.dumps(result), file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
