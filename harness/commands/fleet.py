"""`dossier fleet submit` and `dossier fleet collect`: a dossier of every node of a Slurm cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import CheckFailed, UsageError

DEFAULT_OUTPUT = Path("bundles/fleet")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _submit_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit", help="submit a dossier of every node, and an all-reduce across them, through sbatch",
        description="Generate an sbatch script (kept in a new run directory under --output-dir, which "
                    "must be on a filesystem every node shares) that runs `dossier run` once per node "
                    "(one srun task per node, each bundle signed with the fleet key), then one all-reduce "
                    "across the allocation. Prints the job id.")
    p.add_argument("--nodes", type=_positive, required=True, help="how many nodes")
    p.add_argument("--partition", help="Slurm partition (default: the cluster's default)")
    p.add_argument("--gpus-per-node", type=int, default=0, metavar="G",
                   help="GPUs per node: the all-reduce runs G ranks per node over NCCL (default 0: one "
                        "rank per node over gloo, a CPU fleet)")
    p.add_argument("--container-image", metavar="IMG",
                   help="run each step in this image through pyxis/enroot (srun --container-image); "
                        "pyxis must be installed on the cluster and the image must hold the harness")
    p.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT,
                   help=f"shared directory for run directories and the fleet key (default: {DEFAULT_OUTPUT})")
    p.add_argument("--time", type=_positive, default=30, metavar="MIN", help="job time limit in minutes (default 30)")
    p.add_argument("--node-time", type=_positive, metavar="MIN",
                   help="time limit of each node's dossier step; a node past it is reported as timed out")
    p.add_argument("--key", type=Path, help="fleet private key (default: OUTPUT_DIR/keys/dossier.key, made on first use)")
    p.add_argument("--skip", action="append", default=[], metavar="STEP", help="passed to `dossier run --skip`")
    p.add_argument("--run-arg", action="append", default=[], metavar="ARG", help="one more `dossier run` argument")
    p.add_argument("--allreduce-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for the all-reduce probe")
    p.add_argument("--node-env", action="append", default=[], metavar="NODE:NAME=VALUE",
                   help="set a variable for one node's dossier only (e.g. n2:OMP_NUM_THREADS=1)")
    p.add_argument("--node-prefix", action="append", default=[], metavar="NODE:COMMAND",
                   help="run one node's dossier under COMMAND (e.g. 'n2:taskset -c 0', 'n2:numactl -N 0')")
    p.add_argument("--serial", action="store_true",
                   help="run the node dossiers one node at a time (for virtual nodes sharing one host)")
    p.add_argument("--python", help="interpreter with the harness on every node (default: this one; "
                                    "python3 inside a container)")
    p.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                   help="wait up to this long for the job to end before returning")
    p.set_defaults(func=handle_submit)


def _collect_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect", help="verify every node's bundle, compare the nodes, write a signed fleet bundle",
        description="Gather a fleet job's node bundles, give each the checks of `dossier verify` and the judgement "
                    "of `dossier accept` (where a SKU profile applies) in a pool of worker processes, compare "
                    "the nodes of each SKU (median and MAD per metric, outliers, counts that must be zero, "
                    "states unlike the rest), and write OUTPUT_DIR/fleet-JOBID.tar.gz with fleet.md (sick "
                    "nodes first, a distribution plot per headline metric) and fleet.csv (every node). Exit 1 "
                    "when a node failed, a bundle was rejected, a node failed acceptance, the all-reduce "
                    "failed or a node stands apart.")
    p.add_argument("job_id", metavar="JOBID")
    p.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT, help=f"as given to submit (default: {DEFAULT_OUTPUT})")
    p.add_argument("--key", type=Path, required=True, metavar="PUB",
                   help="the trusted public key every node bundle must verify with")
    p.add_argument("--sign-key", type=Path, metavar="PRIV",
                   help="private key for the fleet bundle (default: the key the job's nodes signed with)")
    p.add_argument("--profile", metavar="SKU", help="acceptance profile for every node (default: the SKU health identified)")
    p.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait up to this long for a running job")
    p.add_argument("--workers", type=_positive, metavar="N",
                   help="worker processes checking node bundles (default: the CPUs this process may use)")
    add_allow_format_option(p)
    p.set_defaults(func=handle_collect)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fleet", help="dossiers of every node of a Slurm cluster, compared",
                            description="Fleets on Slurm: `submit` a dossier of every node, then `collect` it.")
    fleet_sub = parser.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    _submit_parser(fleet_sub)
    _collect_parser(fleet_sub)


def handle_submit(args: argparse.Namespace) -> int:
    from harness.fleet import slurm  # imported here: `dossier --help` stays fast
    from harness.fleet.script import parse_node_env, parse_node_prefix
    from harness.fleet.submit import submit

    if args.gpus_per_node < 0:
        raise UsageError(f"--gpus-per-node must be 0 or more, got {args.gpus_per_node}")
    paths.output_dir(args.output_dir, "--output-dir")
    spec_args = dict(nodes=args.nodes, partition=args.partition, gpus_per_node=args.gpus_per_node,
                     container_image=args.container_image, time_min=args.time, node_time_min=args.node_time,
                     skip=tuple(args.skip), run_args=tuple(args.run_arg), allreduce_args=tuple(args.allreduce_arg),
                     node_env=parse_node_env(args.node_env),
                     node_prefix=parse_node_prefix(args.node_prefix), serial=args.serial, python=args.python)
    job_id, run_dir = submit(spec_args, args.output_dir, args.key)
    print(f"submitted fleet job {job_id}; run directory {run_dir}", file=sys.stderr)
    print(job_id)
    if args.wait > 0:
        state = slurm.wait(job_id, args.wait)
        print(f"job {job_id} ended: {state or 'no longer known to Slurm'}", file=sys.stderr)
    return 0


def handle_collect(args: argparse.Namespace) -> int:
    from harness.fleet import package, plots, report, sealing
    from harness.fleet.archive import ChangedMember
    from harness.fleet.collect import collect
    from harness.signing.keys import load_private, load_public

    paths.input_dir(args.output_dir, "--output-dir")
    paths.output_dir(args.output_dir, "--output-dir")  # the fleet bundle is written there
    load_public(args.key)
    if args.sign_key is not None:
        load_private(args.sign_key)
    if args.profile is not None:
        from harness.judge.acceptance.profile import resolve
        resolve(args.profile, None)  # an unknown SKU is refused before a thousand bundles are read
    destination = args.output_dir / f"fleet-{args.job_id}.tar.gz"
    if destination.exists():
        raise UsageError(f"{destination} already exists", hint="move it aside to collect the job again")
    run, document = collect(args.output_dir, args.job_id, args.key, args.profile, args.wait, args.workers,
                            allow_formats=allowed_formats(args))
    key = load_private(args.sign_key or Path(run.submission["spec"]["key"]))
    rendered = plots.render(document)
    by_metric = {m: [f"plots/{m}.png", f"plots/{m}.svg"] for m in plots.headline_metrics(document)
                 if f"plots/{m}.png" in rendered}
    rendered.update({"fleet.md": report.render(document, by_metric).encode(),
                     "fleet.csv": report.csv_text(document).encode()})
    try:
        path = sealing.seal(destination, package.fleet_files(run, document, rendered), package.predicate(document), key)
    except ChangedMember as exc:
        raise CheckFailed(str(exc), hint="collect the job again once nothing writes to its run directory") from exc
    print(path)
    for line in problems(document):
        print(line, file=sys.stderr)
    if problems(document):
        raise CheckFailed(f"fleet {args.job_id}: {len(problems(document))} problem(s); the fleet bundle {path} "
                          "records them (fleet.md: the sick nodes first)")
    return 0


MAX_PRINTED = 40


def problems(document: dict) -> list[str]:
    """One line per sick node (the first MAX_PRINTED, then a count), and the all-reduce."""
    from harness.fleet.report import sick_rows

    rows = sick_rows(document)
    lines = [f"node {r['node']}: {r['problem']}: {r['reason']}" for r in rows[:MAX_PRINTED]]
    if len(rows) > MAX_PRINTED:
        lines.append(f"... and {len(rows) - MAX_PRINTED} more (fleet.md and fleet.csv in the fleet bundle)")
    if document["allreduce"]["status"] != "ok":
        lines.append(f"all-reduce: {document['allreduce']['why']}")
    return lines
