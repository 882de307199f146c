"""What `dossier fleet collect` and `fleet merge` do once the command is checked: a shard's signed
partial, the shards as a Slurm job array, and the fleet bundle written, with its answer line first
and last (harness.analysis.verdict.answer_line)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.analysis.verdict import Verdict, answer_line
from harness.commands.verify import allowed_formats
from harness.errors import CheckFailed
from harness.escape import terminal


def collect_shard(args: argparse.Namespace) -> int:
    from harness.fleet import shard
    from harness.fleet.collect import check_nodes, find_run, job_state, nodes_of
    from harness.signing.keys import load_private

    part = shard.Shard.parse(args.shard)
    run = find_run(args.output_dir, args.job_id)
    job_state(args.job_id, args.wait)
    nodes = nodes_of(run)
    share = part.nodes(nodes)
    results = check_nodes(run, share, args.key, args.profile, args.workers, allow_formats=allowed_formats(args))
    key = load_private(args.signing_key or Path(run.submission["spec"]["key"]))
    path = shard.write(args.output_dir, run, part, shard.envelope(run, part, nodes, results, args.profile, key))
    print(
        f"fleet collect: shard {part.index}/{part.count}: {len(share)} of {len(nodes)} nodes checked "
        f"({sum(r['status'] == 'ok' for r in results)} ok); merge the {part.count} shards with "
        f"`dossier fleet merge {args.job_id}`",
        file=sys.stderr,
    )
    print(path)
    return 0


def collect_array(args: argparse.Namespace) -> int:
    from harness.fleet import array, slurm
    from harness.fleet.collect import find_run
    from harness.fleet.submit import PROJECT_ROOT

    run = find_run(args.output_dir, args.job_id)
    state = slurm.job_state(args.job_id)
    running = state is not None and state.split("+")[0] in slurm.ACTIVE_STATES
    spec = array.ArrayCollect(
        run=run,
        output_dir=args.output_dir.resolve(),
        public_key=args.key.resolve(),
        shards=args.array,
        pythonpath=str(PROJECT_ROOT),
        workers=args.workers,
        profile=args.profile,
        signing_key=args.signing_key.resolve() if args.signing_key else None,
        prometheus=args.prometheus.resolve() if args.prometheus else None,
        baseline_out=args.baseline_out.resolve() if args.baseline_out else None,
        baseline_sku=args.baseline_sku,
        partition=args.partition,
        allow_formats=allowed_formats(args),
    )
    array_id, merge_id = array.submit(spec, after_job=running)
    print(
        f"fleet collect: {args.array} shards as job array {array_id}"
        + (f" (after job {args.job_id} ends)" if running else "")
        + f", then the merge as job {merge_id}; "
        f"logs in {run.path / 'logs'}",
        file=sys.stderr,
    )
    print(merge_id)
    if args.wait <= 0:
        return 0
    final = slurm.wait(merge_id, args.wait)
    fields = slurm.job_fields(merge_id) or {}
    code = int(fields.get("ExitCode", "0:0").split(":")[0]) if final else None
    bundle = args.output_dir / f"fleet-{args.job_id}.tar.gz"
    print(f"merge job {merge_id} ended: {final or 'no longer known to Slurm'}", file=sys.stderr)
    if not bundle.exists():
        raise CheckFailed("the merge wrote no fleet bundle", hint=f"see {run.path / 'logs'}/merge-{merge_id}.out")
    print(bundle)
    return code if code is not None else 0


def write_fleet_bundle(
    run,
    document: dict,
    signing_key: Path | None,
    destination: Path,
    prometheus: Path | None,
    baseline=None,
    workers: int | None = None,
) -> int:
    """Make the baseline profiles asked for (BASELINE: harness.fleet.baseline.Request), render, seal and
    write the fleet bundle (and the profiles, and the textfile), print the problems; exit 1 if any. A
    profile that could not be made is said in the fleet bundle, which is written first, then its error raised."""
    from harness.fleet import package, plots, report, sealing
    from harness.fleet.archive import ChangedMember
    from harness.fleet.pool import default_workers
    from harness.signing.keys import load_private

    key = load_private(signing_key or Path(run.submission["spec"]["key"]))
    outcome = None
    if baseline is not None:
        from harness.fleet import baseline as fleet_baseline

        outcome = fleet_baseline.profiles(document, run, baseline, key, workers or default_workers())
        package.add_baseline(document, outcome.record)
    rendered = plots.render(document)
    by_metric = {
        m: [f"plots/{m}.png", f"plots/{m}.svg"]
        for m in plots.headline_metrics(document)
        if f"plots/{m}.png" in rendered
    }
    rendered.update(
        {"fleet.md": report.render(document, by_metric).encode(), "fleet.csv": report.csv_text(document).encode()}
    )
    rendered.update({made.member: made.data for made in (outcome.made if outcome else [])})
    try:
        path = sealing.seal(destination, package.fleet_files(run, document, rendered), package.predicate(document), key)
    except ChangedMember as exc:
        raise CheckFailed(str(exc), hint="collect the job again once nothing writes to its run directory") from exc
    if prometheus is not None:
        from harness.export import gauges

        gauges.fleet(document).write(prometheus)
        print(f"fleet: wrote {prometheus}", file=sys.stderr)
    line = answer(document, path)
    print(line, file=sys.stderr, flush=True)
    for said in problems(document):
        print(terminal(said), file=sys.stderr)
    print(path, flush=True)
    if outcome is not None:
        fleet_baseline.write(outcome, path)
    if outcome is not None and outcome.error is not None:
        made = f"; {len(outcome.made)} other profile(s) written" if outcome.made else ""
        raise type(outcome.error)(
            f"baseline profile not made: {outcome.error} (the fleet bundle {path} is written; "
            f"fleet.json `baseline` says why{made})",
            hint=outcome.error.hint,
        )
    print(line, file=sys.stderr)
    return 1 if problems(document) else 0


def answer(document: dict, path: Path) -> str:
    """The answer line, first and last: the fleet's verdict, its nodes and problems, its bundle."""
    found = problems(document)
    nodes = len(document.get("nodes") or [])
    said = (
        f"{len(found)} problem(s), the fleet bundle records them (fleet.md: the sick nodes first)"
        if found
        else "no problem"
    )
    return answer_line(
        Verdict.FAIL if found else Verdict.PASS, f"fleet {document['job']['id']}: {nodes} node(s), {said}; {path.name}"
    )


MAX_PRINTED = 40


def problems(document: dict) -> list[str]:
    """One line per sick node (the first MAX_PRINTED, then a count), and the all-reduce."""
    from harness.fleet.report import sick_rows

    rows = sick_rows(document)
    lines = [
        f"node {r['node']}: {r['problem']}: {r['reason']}" + (f" -> {r['action']}" if r["action"] else "")
        for r in rows[:MAX_PRINTED]
    ]
    if len(rows) > MAX_PRINTED:
        lines.append(f"... and {len(rows) - MAX_PRINTED} more (fleet.md and fleet.csv in the fleet bundle)")
    if document["allreduce"]["status"] != "ok":
        lines.append(f"all-reduce: {document['allreduce']['why']}")
    return lines
