"""`dossier fleet submit` and `dossier fleet collect`: a dossier of every node of a Slurm cluster."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import threading
from pathlib import Path

from harness import paths, registry
from harness.analysis.verdict import Verdict, answer_line
from harness.commands import fleet_collect
from harness.commands.options import MAX_GPUS_PER_NODE, MAX_NODES, MINUTES_IN_A_YEAR, add_signing_key, count
from harness.commands.verify import add_allow_format_option, allowed_formats
from harness.errors import UsageError
from harness.fleet.slurm import partition_name
from harness.probes.contract import real

DEFAULT_OUTPUT = Path("bundles/fleet")


MINUTES = count(1, MINUTES_IN_A_YEAR, "a year")
MAX_WORKERS = 1024  # worker processes on one host: past the cores of any one machine


def _partition(text: str) -> str:
    """--partition: a Slurm partition name, never more words of the sbatch script (harness.fleet.slurm.NAME)."""
    try:
        return partition_name(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--partition {text!r} ")) from None


def _job_id(text: str) -> str:
    """JOBID: a Slurm job id (digits, an array job's `_N`): it names files of the run directory."""
    if not re.fullmatch(r"[0-9]{1,12}(_[0-9]{1,6})?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Slurm job id (digits)")
    return text


def _submit_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        help="submit a dossier of every node, and an all-reduce across them, through sbatch",
        description="Generate an sbatch script (kept in a new run directory under --output-dir, which "
        "must be on a filesystem every node shares) that runs `dossier run` once per node "
        "(one srun task per node, each bundle signed with the fleet key), then one all-reduce "
        "across the allocation. Prints the job id.",
    )
    _add_allocation_options(p)
    add_signing_key(
        p,
        "fleet private key the nodes sign with (default: OUTPUT_DIR/keys/dossier.key, made on first use)",
        old="--key",
    )
    _add_node_options(p)
    p.add_argument(
        "--python", help="interpreter with the harness on every node (default: this one; python3 inside a container)"
    )
    p.add_argument(
        "--wait",
        type=real,
        default=0,
        metavar="SECONDS",
        help="wait up to this long for the job to end before returning",
    )
    p.set_defaults(func=handle_submit)


def _add_allocation_options(p: argparse.ArgumentParser) -> None:
    """submit's job: its nodes, partition, GPUs, image, run directory and time limits."""
    p.add_argument("--nodes", type=count(1, MAX_NODES, "a fleet's nodes"), required=True, help="how many nodes")
    p.add_argument("--partition", type=_partition, help="Slurm partition (default: the cluster's default)")
    p.add_argument(
        "--gpus-per-node",
        type=count(0, MAX_GPUS_PER_NODE, "the GPUs one node can hold"),
        default=0,
        metavar="G",
        help="GPUs per node: the all-reduce runs G ranks per node over NCCL (default 0: one "
        "rank per node over gloo, a CPU fleet)",
    )
    p.add_argument(
        "--container-image",
        metavar="IMG",
        help="run each step in this image through pyxis/enroot (srun --container-image); "
        "pyxis must be installed on the cluster and the image must hold the harness",
    )
    p.add_argument(
        "--output-dir",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"shared directory for run directories and the fleet key (default: {DEFAULT_OUTPUT})",
    )
    p.add_argument("--time", type=MINUTES, default=30, metavar="MIN", help="job time limit in minutes (default 30)")
    p.add_argument(
        "--node-time",
        type=MINUTES,
        metavar="MIN",
        help="time limit of each node's dossier step; a node past it is reported as timed out",
    )


def _add_node_options(p: argparse.ArgumentParser) -> None:
    """What each node's dossier runs with: skipped steps, more arguments, one node's variables or command
    prefix, one node at a time."""
    p.add_argument("--skip", action="append", default=[], metavar="STEP", help="passed to `dossier run --skip`")
    p.add_argument("--run-arg", action="append", default=[], metavar="ARG", help="one more `dossier run` argument")
    p.add_argument(
        "--allreduce-arg", action="append", default=[], metavar="ARG", help="one more argument for the all-reduce probe"
    )
    p.add_argument(
        "--node-env",
        action="append",
        default=[],
        metavar="NODE:NAME=VALUE",
        help="set a variable for one node's dossier only (e.g. n2:OMP_NUM_THREADS=1)",
    )
    p.add_argument(
        "--node-prefix",
        action="append",
        default=[],
        metavar="NODE:COMMAND",
        help="run one node's dossier under COMMAND (e.g. 'n2:taskset -c 0', 'n2:numactl -N 0')",
    )
    p.add_argument(
        "--serial",
        action="store_true",
        help="run the node dossiers one node at a time (for virtual nodes sharing one host)",
    )


def _collect_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="verify every node's bundle, compare the nodes, write a signed fleet bundle",
        description="Gather a fleet job's node bundles, give each the checks of `dossier verify` and the judgement "
        "of `dossier accept` (where a SKU profile applies) in a pool of worker processes, compare "
        "the nodes of each SKU (median and MAD per metric, outliers, counts that must be zero, "
        "states unlike the rest), and write OUTPUT_DIR/fleet-JOBID.tar.gz with fleet.md (sick "
        "nodes first, a distribution plot per headline metric) and fleet.csv (every node). Exit 1 "
        "when a node failed, a bundle was rejected, a node failed acceptance, the all-reduce "
        "failed or a node stands apart.",
    )
    _job_options(p, "the trusted public key every node bundle must verify with")
    add_signing_key(
        p,
        "private key for the fleet bundle, or a shard's partial (default: the key the job's nodes signed with)",
        old="--sign-key",
    )
    p.add_argument(
        "--profile", metavar="SKU", help="acceptance profile for every node (default: the SKU health identified)"
    )
    p.add_argument(
        "--workers",
        type=count(1, MAX_WORKERS, "worker processes on one host"),
        metavar="N",
        help="worker processes checking node bundles (default: the CPUs this process may use)",
    )
    scale = p.add_mutually_exclusive_group()
    scale.add_argument(
        "--shard",
        metavar="I/N",
        help="check only share I of N of the nodes (0 <= I < N) and write a signed partial result "
        "to OUTPUT_DIR/fleet-JOBID.shards/; `dossier fleet merge` joins the N partials",
    )
    scale.add_argument(
        "--array",
        type=count(1, MAX_NODES, "no more shards than nodes"),
        metavar="N",
        help="submit the N shards as a Slurm job array, then the merge as a job that waits for them; "
        "prints both job ids",
    )
    p.add_argument("--partition", type=_partition, metavar="P", help="with --array: the partition its jobs run in")
    add_allow_format_option(p)
    p.set_defaults(func=handle_collect)


def _job_options(p: argparse.ArgumentParser, key_help: str) -> None:
    """What collect and merge both take: the job, where its run is, the trusted key, the wait, the textfile."""
    p.add_argument("job_id", type=_job_id, metavar="JOBID")
    p.add_argument(
        "--output-dir", type=Path, default=DEFAULT_OUTPUT, help=f"as given to submit (default: {DEFAULT_OUTPUT})"
    )
    p.add_argument("--key", type=Path, required=True, metavar="PUB", help=key_help)
    p.add_argument("--wait", type=real, default=0, metavar="SECONDS", help="wait up to this long for a running job")
    p.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE.prom",
        help="write each node's status, acceptance and flags for node_exporter's textfile collector",
    )
    p.add_argument(
        "--baseline-out",
        type=Path,
        metavar="PROFILE.json",
        help="also write a signed acceptance profile (as `dossier baseline` makes) from the healthy nodes "
        "(verified, accepted pass or warn, not flagged); {sku} in the file name: one per SKU",
    )
    p.add_argument(
        "--baseline-sku",
        metavar="NAME",
        help="with --baseline-out: the catalogue SKU to make the profile of (needed when the healthy nodes "
        "are of several SKUs and the file name has no {sku})",
    )


def _merge_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="join the signed partial results of a sharded collect into the fleet bundle",
        description="Check the N partial results `dossier fleet collect JOBID --shard I/N` wrote under "
        "OUTPUT_DIR/fleet-JOBID.shards/ (each signed by the fleet key, of this job and node list, the "
        "shares covering every node once), compare the nodes and write OUTPUT_DIR/fleet-JOBID.tar.gz: "
        "the same fleet bundle an unsharded collect writes. Exit codes as `fleet collect`.",
    )
    _job_options(p, "the trusted public key the partial results (and the node bundles) are signed with")
    add_signing_key(p, "private key for the fleet bundle (default: the key the job's nodes signed with)")
    p.set_defaults(func=handle_merge)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "fleet",
        help="dossiers of every node of a Slurm cluster, compared",
        description="Fleets on Slurm: `submit` a dossier of every node, then `collect` it.",
    )
    fleet_sub = parser.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    _submit_parser(fleet_sub)
    _collect_parser(fleet_sub)
    _merge_parser(fleet_sub)


def handle_submit(args: argparse.Namespace) -> int:
    from harness.fleet import slurm  # imported here: `dossier --help` stays fast
    from harness.fleet.script import parse_node_env, parse_node_prefix
    from harness.fleet.submit import submit

    paths.output_dir(args.output_dir, "--output-dir")
    spec_args = dict(
        nodes=args.nodes,
        partition=args.partition,
        gpus_per_node=args.gpus_per_node,
        container_image=args.container_image,
        time_min=args.time,
        node_time_min=args.node_time,
        skip=tuple(args.skip),
        run_args=tuple(args.run_arg),
        allreduce_args=tuple(args.allreduce_arg),
        node_env=parse_node_env(args.node_env),
        node_prefix=parse_node_prefix(args.node_prefix),
        serial=args.serial,
        python=args.python,
    )
    job_id, run_dir, note = submit(spec_args, args.output_dir, args.signing_key)
    answer = answer_line(Verdict.PASS, f"fleet job {job_id} submitted: {args.nodes} node(s); run directory {run_dir}")
    print(answer, file=sys.stderr, flush=True)
    if note:
        print(note, file=sys.stderr)
    print(job_id, flush=True)
    if args.wait > 0:
        state = slurm.wait(job_id, args.wait)
        print(f"job {job_id} ended: {state or 'no longer known to Slurm'}", file=sys.stderr)
    print(answer, file=sys.stderr)
    return 0


def _check_collect_inputs(args: argparse.Namespace, signing_key: Path | None, writes_bundle: bool = True):
    """Everything a collect or merge reads or writes, refused before any bundle is read; the fleet
    bundle's path (which must not exist yet where this command, or its merge, writes it) and the
    baseline profile asked for (harness.fleet.baseline.Request, or None)."""
    from harness.fleet.baseline import request
    from harness.signing.keys import load_private, load_public

    paths.input_dir(args.output_dir, "--output-dir")
    paths.output_dir(args.output_dir, "--output-dir")  # the fleet bundle is written there
    load_public(args.key)
    if signing_key is not None:
        load_private(signing_key)
    if args.prometheus is not None:
        from harness.export.textfile import check_path

        check_path(args.prometheus)
    destination = args.output_dir / f"fleet-{args.job_id}.tar.gz"
    if writes_bundle and destination.exists():
        raise UsageError(f"{destination} already exists", hint="move it aside to collect the job again")
    baseline = request(
        args.baseline_out, args.baseline_sku, [("the fleet bundle", destination), ("--prometheus", args.prometheus)]
    )
    return destination, baseline


def handle_collect(args: argparse.Namespace) -> int:
    from harness.fleet.collect import collect

    if args.partition and not args.array:
        raise UsageError("--partition goes with --array (the partition its jobs run in)")
    for option, given in (("--prometheus", args.prometheus), ("--baseline-out", args.baseline_out)):
        if args.shard is not None and given is not None:
            raise UsageError(f"{option} goes with the command that writes the fleet bundle: `dossier fleet merge`")
    destination, baseline = _check_collect_inputs(args, args.signing_key, writes_bundle=args.shard is None)
    if args.profile is not None:
        from harness.judge.acceptance.profile import resolve

        resolve(args.profile, None, registry.known_good_kinds())  # an unknown SKU: refused before any bundle is read
    if args.shard is not None:
        return fleet_collect.collect_shard(args)
    if args.array is not None:
        return fleet_collect.collect_array(args)
    importing = _import_plotting_meanwhile()
    run, document = collect(
        args.output_dir,
        args.job_id,
        args.key,
        args.profile,
        args.wait,
        args.workers,
        allow_formats=allowed_formats(args),
    )
    importing.join()
    return fleet_collect.write_fleet_bundle(
        run, document, args.signing_key, destination, args.prometheus, baseline, args.workers
    )


def handle_merge(args: argparse.Namespace) -> int:
    from harness.fleet import shard
    from harness.fleet.collect import assemble, find_run, job_state, nodes_of
    from harness.signing.keys import load_public

    destination, baseline = _check_collect_inputs(args, args.signing_key)
    importing = _import_plotting_meanwhile()
    run = find_run(args.output_dir, args.job_id)
    state = job_state(args.job_id, args.wait)
    results, profile = shard.read(args.output_dir, run, nodes_of(run), load_public(args.key))
    print(
        f"fleet merge: {len(results)} nodes from the shards in {shard.folder(args.output_dir, args.job_id)}"
        + (f" (profile {profile})" if profile else ""),
        file=sys.stderr,
    )
    importing.join()
    return fleet_collect.write_fleet_bundle(
        run, assemble(run, results, state), args.signing_key, destination, args.prometheus, baseline, None
    )


def _import_plotting_meanwhile() -> threading.Thread:
    """Import matplotlib on a thread while the nodes are checked (this process mostly waits on its workers
    then) rather than after them: the plots are drawn last, when nothing else is left to overlap. The
    fleet bundle is written once the thread is done (joined): matplotlib imported on two threads at once
    is found half-made by one of them (a merge of few nodes reached the plots first)."""
    thread = threading.Thread(
        target=_import_quietly, args=("harness.present.plots._figure",), daemon=True, name="import-matplotlib"
    )
    thread.start()
    return thread


def _import_quietly(name: str) -> None:
    """Import NAME ahead of its use; a failure, or the interpreter ending meanwhile (an early error), prints
    nothing here: the plots import it again when they are drawn, and say why they cannot be."""
    try:
        importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - a worker thread never prints a traceback; the real import says why
        return
