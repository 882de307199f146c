#!/usr/bin/env python3
"""How fast `dossier verify` hashes a bundle, against `sha256sum` of the same bytes in the same run.

Builds a large synthetic bundle through the real assembly path (a signed RunRecord whose failed
steps kept SIZE MiB of incompressible raw output in logs/), verifies it with the real verifier,
and times, on the same machine and in the same run:
  - verify: `harness.verify.verify_bundle` end to end (two passes over the gzip stream, hashing,
    signature, schemas, report re-render);
  - verify hashing pass: `harness.bundle.read.read_members` alone (decompress + sha256);
  - sha256sum: coreutils over the same member bytes written to files (hashing only);
  - gzip -dc | sha256sum: coreutils decompressing and hashing the archive (same work as one pass).
Throughput is uncompressed member bytes / wall time. Prints a results table (Markdown).

    python bench/verify_speed.py [--size-mib 512] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.bundle.read import Limits, read_all, read_members
from harness.probes.contract import utc_now
from harness.run import provenance
from harness.run.assemble import assemble
from harness.run.records import FAILED, RunRecord, StepRecord
from harness.runners.interface import ProbeRun
from harness.signing.keys import generate, load_private, load_public
from harness.verify import verify_bundle

CHUNK_MIB = 64


def synthetic_record(size_mib: int) -> RunRecord:
    """Failed steps whose stdout/stderr are random bytes: large members verify must hash."""
    steps = []
    for i in range(max(1, size_mib // CHUNK_MIB)):
        now = utc_now()
        run = ProbeRun(
            probe="synthetic",
            argv=("python", "-m", "synthetic", str(i)),
            env={},
            runner="bench",
            image=None,
            started_at=now,
            finished_at=now,
            exit_code=1,
            timed_out=False,
            stdout=os.urandom(CHUNK_MIB * 2**20 // 2),
            stderr=os.urandom(CHUNK_MIB * 2**20 // 2),
        )
        steps.append(
            StepRecord(
                step=f"synthetic-{i}",
                title="synthetic bulk for the verify benchmark",
                lab_step="bench",
                kind="probe",
                status=FAILED,
                schema="common",
                probe="synthetic",
                why="synthetic: benchmark bulk, not a measurement",
                run=run,
            )
        )
    now = utc_now()
    return RunRecord(
        steps=tuple(steps),
        runner={"name": "bench", "why": "bench/verify_speed.py"},
        tool=provenance.tool_info(),
        host=provenance.host_environment(),
        options={"runner": "auto", "skip": []},
        started_at=now,
        finished_at=now,
    )


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def shell(command: str) -> None:
    subprocess.run(["bash", "-c", command], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=512, help="synthetic content size (default 512 MiB)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        work = Path(tmp)
        private, public = generate(work / "keys")
        print(f"building a {args.size_mib} MiB synthetic bundle...", file=sys.stderr)
        bundle = work / "synthetic.tar.gz"
        bundle.write_bytes(assemble(synthetic_record(args.size_mib), load_private(private)))
        files = read_all(bundle, Limits(max_total_bytes=4 * 2**30))
        content = sum(len(v) for v in files.values())
        extracted = work / "extracted"
        for name, data in files.items():
            (extracted / name).parent.mkdir(parents=True, exist_ok=True)
            (extracted / name).write_bytes(data)
        del files
        trusted, limits = load_public(public), Limits(max_total_bytes=4 * 2**30)
        result = verify_bundle(bundle, trusted, limits)
        assert result.ok, [c.line() for c in result.failures]
        names = " ".join(f"'{p}'" for p in sorted(extracted.rglob("*")) if p.is_file())
        shell(f"cat {names} > /dev/null")  # warm the page cache for the coreutils baseline
        cases = {
            "dossier verify (end to end)": lambda: verify_bundle(bundle, trusted, limits),
            "verify hashing pass (read_members)": lambda: read_members(bundle, lambda n: False, limits),
            "sha256sum of the member files": lambda: shell(f"sha256sum {names}"),
            "gzip -dc BUNDLE | sha256sum": lambda: shell(f"gzip -dc '{bundle}' | sha256sum"),
        }
        times = {label: statistics.median(timed(fn) for _ in range(args.repeats)) for label, fn in cases.items()}
        compressed = bundle.stat().st_size
    baseline = times["sha256sum of the member files"]
    print(
        f"\nverify speed: {content / 2**20:.0f} MiB of member content, {compressed / 2**20:.0f} MiB "
        f"compressed, median of {args.repeats}, {os.cpu_count()} CPUs\n"
    )
    print("| what | wall s | MB/s | vs sha256sum |")
    print("| --- | --- | --- | --- |")
    for label, seconds in times.items():
        print(f"| {label} | {seconds:.3f} | {content / seconds / 1e6:.0f} | {baseline / seconds:.2f} |")
    verify_mbps = content / times["dossier verify (end to end)"] / 1e6
    print(
        f"\ntarget: verify hashes at least 300 MB/s: {'met' if verify_mbps >= 300 else 'NOT met'} "
        f"({verify_mbps:.0f} MB/s end to end)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
