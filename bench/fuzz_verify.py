#!/usr/bin/env python3
"""A long fuzz run of `dossier verify` (issues 14 and 28): N mutants of three real bundles, in worker
processes.

Bases, each verifying cleanly before any mutation (built once per run, signed with a key made here):
  - tick: a bundle of the test plan (tests/bundle_support.py collect_test_plan);
  - h200, full: the committed one-GPU H200 dossiers (formats 1 and 4) re-made by this build in its
    own format (tests/h200_remade.py: the same steps, argv, raw output and stderr; report, tables,
    schemas and the run-to-run block as this build writes them), so re-signed mutations reach the
    real schemas, analyses, criteria and report.
Mutations (tests/fuzz_support.py) in the gzip stream, in the decompressed tar and in one member
(half of those re-signed with the right key), and a re-signing layer: one field of one document
edited as a key holder would, re-signed with the real key. Index i takes PLAN[i % 4]. Counts, per
outcome:
  - crash: verify_bundle raised (it must never);
  - internal error: a check raised and verify's last guard caught it (a bug);
  - ACCEPTED CHANGE: verify passed content the key did not sign, or a re-signed change that
    docs/bundle.md's inventory does not explain (UNEXPLAINED): each must be 0;
  - accepted (same content, or a re-signed change the key vouches for, classed by its inventory
    row: a free or raw field, a member no check reads): not failures;
  - refused, by reason (the first failing check, particulars blanked);
  - criterion guarded: a lab criterion's judge raised (harness/judge/lab.py) and the report
    shows it as failed; not a verify crash, listed for the criteria's owner.
Time per input (median, p99, max) and wall time. Deterministic for a given --seed. Each mutant is
written to a folder in memory (/dev/shm where there is one) and the tar, member and resign layers
gzip theirs at level 1 (tests/fuzz_support.py fast_gzip: verify never compares deflate bytes).

    python bench/fuzz_verify.py [--mutants 10000] [--processes 2] [--seed 0] [--json OUT]

With `--target reproduction|acceptance|profile` (issue 37) it fuzzes the signed statements another party
sends instead of bundles: mutants of honest reproduction statements, acceptance attestations and signed
profiles (tests/fuzz_statements.py: the envelope's bytes, the payload's bytes re-signed, one JSON value
re-signed, one value of an attestation's inline profile or verdict, or of the profile), each checked as
`dossier verify-reproduction`, `dossier verify-acceptance` and `dossier accept --profile-key` check it
(tests/fuzz_signed_bases.py says which bases); WRONG ACCEPTANCE and CRASH must each be 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.bundle.read import read_all
from harness.bundle.write import archive_bytes
from harness.judge import engine
from harness.signing.keys import load_private, load_public
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.field_inventory import listed
from tests.fuzz_support import OPS, Mutation, document_schemas, mutant, verdict

H200 = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "h200" / "dossier-h200.tar.gz"
H200_FULL = H200.with_name("dossier-h200-full.tar.gz")
BASES = ("tick", "h200", "full")
# index % 4: which base, and whether the re-signing layer (else a random layer of the first three)
PLAN = (("tick", None), ("h200", None), ("h200", "resign"), ("full", "resign"))
STATE: dict = {}


def install_tick_modules() -> None:
    test_plan.install()


def build_bases(work: Path) -> dict[str, Path]:
    from harness.run.assemble import assemble, unsigned_files
    from tests.bundle_support import collect_test_plan, make_key, resign

    key, public = make_key(work / "keys")
    tick = work / "tick.tar.gz"
    tick.write_bytes(assemble(collect_test_plan(work / "plan"), key))
    from tests.h200_remade import record_of

    made = {"tick": tick}
    for name, source in (("h200", H200), ("full", H200_FULL)):
        files = unsigned_files(record_of(source))  # this build's format: report, tables and schemas included
        resign(files, key)
        made[name] = work / f"{name}.tar.gz"
        made[name].write_bytes(archive_bytes(files))
    for path in made.values():
        result = verify_bundle(path, load_public(public))
        assert result.ok, (path, [c.line() for c in result.failures])
    return {**made, "key": work / "keys" / "dossier.key", "public": public}


def _record_guarded_criteria() -> None:
    original = engine.could_not_judge

    def recording(criterion, exc):
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        STATE["guarded"].append(
            f"{criterion.name}: {type(exc).__name__} in {frame.name} ({Path(frame.filename).name}:{frame.lineno})"
        )
        return original(criterion, exc)  # then judged as the build does

    engine.could_not_judge = recording


def init_worker(paths: dict[str, str]) -> None:
    install_tick_modules()
    _record_guarded_criteria()
    STATE.update(
        key=load_private(Path(paths["key"])),
        public=load_public(Path(paths["public"])),
        bases={name: (read_all(Path(paths[name])), Path(paths[name]).read_bytes()) for name in BASES},
        mutant=Path(paths["mutants"]) / f"mutant-{os.getpid()}.tar.gz",
        guarded=[],
    )


def _memory_folder() -> str | None:
    """A folder in memory (/dev/shm) for the mutant each input is written to, where there is one: a disk
    shared with other work made the write a tenth of each input's time; else the system's temporary folder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def random_mutation(rng: random.Random, layer: str | None) -> Mutation:
    layer = layer or rng.choice(sorted(set(OPS) - {"resign"}))
    return Mutation(
        layer,
        rng.choice(OPS[layer]),
        rng.random(),
        rng.randbytes(rng.randint(1, 12)),
        rng.randrange(64),
        rng.random() < 0.5,
    )


def one(task: tuple[int, int]) -> dict:
    seed, index = task
    rng = random.Random(seed * 1_000_003 + index)
    base, layer = PLAN[index % len(PLAN)]
    files, archive = STATE["bases"][base]
    mutation = random_mutation(rng, layer)
    STATE["mutant"].write_bytes(mutant(files, archive, mutation, STATE["key"]))
    STATE["guarded"].clear()
    start = time.perf_counter()
    try:
        result = verify_bundle(STATE["mutant"], STATE["public"])
        outcome = verdict(files, STATE["mutant"], result, mutation.resigned)
    except Exception as exc:  # noqa: BLE001 - a crash: counted with where it happened
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        outcome = f"CRASH: {type(exc).__name__} in {frame.name} ({Path(frame.filename).name}:{frame.lineno})"
    target = f" ({sorted(files)[mutation.member % len(files)]})" if mutation.layer == "member" else ""
    if mutation.layer == "resign":
        named = document_schemas(files)
        target = f" ({sorted(named)[mutation.member % len(named)]})"
    return {
        "index": index,  # with the seed, the mutant again: random.Random(seed * 1_000_003 + index)
        "base": base,
        "layer": mutation.layer,
        "outcome": outcome,
        "seconds": time.perf_counter() - start,
        "mutation": mutation.describe() + target,
        "guarded": list(STATE["guarded"]),
    }


def _outcome(outcome: str) -> str:
    if outcome.startswith("refused"):
        return "refused"
    if outcome.startswith("accepted: re-signed change"):
        return "accepted: re-signed change (classed below)"
    return outcome if outcome.startswith("accepted") else outcome.split(":")[0]


def classes(results: list[dict]) -> list[str]:
    """Each class of accepted re-signed change, counted, with its inventory row's why."""
    why = {f"{row.kind}: {row.document} `{row.pattern}`": row.why for row in listed()}
    counted = collections.Counter(
        part
        for r in results
        if r["outcome"].startswith("accepted: re-signed change, ")
        for part in r["outcome"].removeprefix("accepted: re-signed change, ").split("; ")
    )
    lines = [
        "| accepted re-signed change: what changed | mutants | why it may (docs/bundle.md) |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {what} | {count} | {why.get(what, '')} |" for what, count in counted.most_common()]
    return lines


def summary(results: list[dict], wall: float, args: argparse.Namespace) -> list[str]:
    outcomes = collections.Counter(_outcome(r["outcome"]) for r in results)
    reasons = collections.Counter(
        r["outcome"].removeprefix("refused: ") for r in results if r["outcome"].startswith("refused")
    )
    bad = [r for r in results if r["outcome"].startswith(("CRASH", "INTERNAL", "ACCEPTED"))]
    guarded = collections.Counter(g for r in results for g in r["guarded"])
    lines = [
        f"verify fuzz: {len(results)} mutants (seed {args.seed}), {args.processes} processes, "
        f"{wall:.0f} s wall, {os.cpu_count()} CPUs",
        "",
        "| outcome | count |",
        "| --- | --- |",
    ]
    lines += [f"| {name} | {count} |" for name, count in sorted(outcomes.items(), key=lambda kv: -kv[1])]
    lines += [
        "",
        "Accepted re-signed changes, by what changed (a mutant changing several fields counts once for each):",
        "",
    ] + classes(results)
    lines += ["", "| base | inputs | median s | p99 s | max s |", "| --- | --- | --- | --- | --- |"]
    for base in BASES:
        times = sorted(r["seconds"] for r in results if r["base"] == base)
        if times:
            lines.append(
                f"| {base} | {len(times)} | {statistics.median(times):.3f} | "
                f"{times[int(0.99 * (len(times) - 1))]:.3f} | {times[-1]:.3f} |"
            )
    lines += ["", "Refusals by reason (first failing check), most frequent first:", ""]
    lines += [f"- {count} x {reason}" for reason, count in reasons.most_common(40)]
    if len(reasons) > 40:
        lines.append(f"- ... and {len(reasons) - 40} rarer reasons")
    lines += ["", f"Crashes, internal errors, accepted unsigned or unexplained changes: {len(bad)}"]
    lines += [f"- {r['outcome']} <- #{r['index']} {r['base']} {r['mutation']}" for r in bad[:50]]
    lines += ["", f"Criteria that raised (guarded: the report shows the criterion failed): {sum(guarded.values())}"]
    lines += [f"- {count} x {what}" for what, count in guarded.most_common()]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write every result as JSON here")
    parser.add_argument("--target", choices=("bundle", *SIGNED_TARGETS), default="bundle", help="what is mutated")
    args = parser.parse_args()
    if args.target != "bundle":
        return fuzz_signed(args)
    install_tick_modules()
    with (
        tempfile.TemporaryDirectory(prefix="fuzz-verify-") as tmp,
        tempfile.TemporaryDirectory(prefix="fuzz-mutants-", dir=_memory_folder()) as mutants,
    ):
        print("building the base bundles...", file=sys.stderr)
        paths = {k: str(v) for k, v in build_bases(Path(tmp)).items()} | {"mutants": mutants}
        start = time.perf_counter()
        results = []
        with multiprocessing.get_context("spawn").Pool(args.processes, init_worker, (paths,)) as pool:
            tasks = [(args.seed, i) for i in range(args.mutants)]
            for i, result in enumerate(pool.imap_unordered(one, tasks, chunksize=16), 1):
                results.append(result)
                if i % 500 == 0 or i == args.mutants:
                    print(f"  {i}/{args.mutants} mutants, {time.perf_counter() - start:.0f} s", file=sys.stderr)
        wall = time.perf_counter() - start
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print("\n".join(summary(results, wall, args)))
    return 1 if any(r["outcome"].startswith(("CRASH", "INTERNAL", "ACCEPTED")) for r in results) else 0


# --- issue 37: the signed statements another party sends ----------------------------------------------

SIGNED_TARGETS = ("reproduction", "acceptance", "profile")


def init_signed(target: str, bases: dict, scratch: str) -> None:
    from tests import fuzz_signed_bases

    if target == "reproduction":
        fuzz_signed_bases.memo()
    STATE["signed"] = [
        fuzz_signed_bases.signed(target, name, base, Path(scratch)) for name, base in sorted(bases.items())
    ]


def one_signed(task: tuple[int, int]) -> dict:
    from tests import fuzz_statements

    seed, index = task
    rng = random.Random(seed * 1_000_003 + index)
    signed = STATE["signed"][index % len(STATE["signed"])]
    layer = fuzz_statements.LAYERS[(index // len(STATE["signed"])) % len(fuzz_statements.LAYERS)]
    mutation = fuzz_statements.mutant(rng, signed, layer)
    start = time.perf_counter()
    try:
        outcome = fuzz_statements.outcome(signed, mutation)
    except Exception as exc:  # noqa: BLE001 - a crash: counted with where it happened
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        outcome = f"CRASH: {type(exc).__name__} in {frame.name} ({Path(frame.filename).name}:{frame.lineno})"
    return {
        "index": index,
        "base": signed.name,
        "layer": layer,
        "outcome": outcome,
        "seconds": time.perf_counter() - start,
        "mutation": mutation.what,
    }


def signed_summary(results: list[dict], wall: float, args: argparse.Namespace) -> list[str]:
    kinds = collections.Counter(
        "refused" if r["outcome"].startswith("refused") else r["outcome"].split(":")[0] for r in results
    )
    accepted = collections.Counter(r["outcome"] for r in results if r["outcome"].startswith("accepted"))
    reasons = collections.Counter(
        r["outcome"].removeprefix("refused: ") for r in results if r["outcome"].startswith("refused")
    )
    bad = [r for r in results if r["outcome"].startswith(("CRASH", "WRONG"))]
    lines = [
        f"{args.target} fuzz: {len(results)} mutants (seed {args.seed}), {args.processes} processes, {wall:.0f} s wall, "
        f"{os.cpu_count()} CPUs",
        "",
        "| outcome | count |",
        "| --- | --- |",
        *[f"| {name} | {count} |" for name, count in kinds.most_common()],
        "",
        "| base | layer | mutants | refused | accepted | median s | max s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for base, layer in sorted({(r["base"], r["layer"]) for r in results}):
        rows = [r for r in results if (r["base"], r["layer"]) == (base, layer)]
        times = sorted(r["seconds"] for r in rows)
        lines.append(
            f"| {base} | {layer} | {len(rows)} | {sum(r['outcome'].startswith('refused') for r in rows)} | "
            f"{sum(r['outcome'].startswith('accepted') for r in rows)} | {statistics.median(times):.3f} | {times[-1]:.3f} |"
        )
    lines += ["", "Accepted, by class:", ""] + [f"- {count} x {what}" for what, count in accepted.most_common()]
    lines += ["", "Refusals by reason (first line, particulars blanked), most frequent first:", ""]
    lines += [f"- {count} x {reason}" for reason, count in reasons.most_common(25)]
    lines += ["", f"Crashes and wrong acceptances: {len(bad)}"]
    lines += [f"- {r['outcome']} <- #{r['index']} {r['base']} {r['layer']} {r['mutation']}" for r in bad[:50]]
    return lines


def fuzz_signed(args: argparse.Namespace) -> int:
    from tests import fuzz_signed_bases

    with (
        tempfile.TemporaryDirectory(prefix="fuzz-signed-") as tmp,
        tempfile.TemporaryDirectory(prefix="fuzz-signed-mutants-", dir=_memory_folder()) as scratch,
    ):
        print(f"building the {args.target} bases...", file=sys.stderr)
        bases = fuzz_signed_bases.build(args.target, Path(tmp))
        start, results = time.perf_counter(), []
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.processes, init_signed, (args.target, bases, scratch)) as pool:
            tasks = [(args.seed, i) for i in range(args.mutants)]
            for i, result in enumerate(pool.imap_unordered(one_signed, tasks, chunksize=16), 1):
                results.append(result)
                if i % 1000 == 0 or i == args.mutants:
                    print(f"  {i}/{args.mutants} mutants, {time.perf_counter() - start:.0f} s", file=sys.stderr)
        wall = time.perf_counter() - start
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print("\n".join(signed_summary(results, wall, args)))
    return 1 if any(r["outcome"].startswith(("CRASH", "WRONG")) for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
