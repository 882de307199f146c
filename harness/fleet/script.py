"""The job a fleet submits: an sbatch script and the script every node runs (text only, no I/O).

Layout of a fleet run directory RUN (on a filesystem every node shares):
  fleet.sbatch, node.sh, submission.json   what was submitted (kept, and put in the fleet bundle)
  nodelist                                  the allocation's node names, one a line
  nodes/NODE/NODE.tar.gz, nodes/NODE/exit_code   each node's signed bundle and its exit status
  logs/slurm-JOBID-NODE.out                 each node's output (named by Slurm node name: %N in
                                            an srun file pattern is the host name, which virtual
                                            nodes share)
  logs/batch-JOBID.out                      the batch script's own output
  allreduce/rank-T.out, rank-T.err, exit_code   the multi-node all-reduce step
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import __version__
from harness.errors import UsageError
from harness.fleet import slurm

NODE_LOG = "logs/slurm-{job}-{node}.out"


@dataclass(frozen=True)
class FleetSpec:
    """Everything a fleet job is generated from (recorded in submission.json)."""

    run_dir: Path  # absolute, shared by every node
    nodes: int
    key: Path  # the fleet's private signing key, readable by the job on every node
    python: str  # the interpreter that has the harness, on every node (or in the image)
    partition: str | None = None
    gpus_per_node: int = 0
    container_image: str | None = None
    time_min: int = 30
    node_time_min: int | None = None  # a limit on each node's dossier step
    skip: tuple[str, ...] = ()  # `dossier run --skip STEP` for each
    run_args: tuple[str, ...] = ()  # more `dossier run` arguments
    allreduce_args: tuple[str, ...] = ()  # more all-reduce probe arguments
    node_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # node -> NAME -> value
    node_prefix: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> command prefix
    pythonpath: str | None = None  # where the harness is importable from, outside a container
    serial: bool = False  # one node at a time (virtual nodes sharing one host)

    @property
    def ranks_per_node(self) -> int:
        return max(1, self.gpus_per_node)

    @property
    def backend(self) -> str:
        return "nccl" if self.gpus_per_node > 0 else "gloo"


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _container_flags(spec: FleetSpec) -> list[str]:
    """pyxis's srun flags: the image, and the shared run directory and key at the same paths."""
    if not spec.container_image:
        return []
    mounts = sorted({str(spec.run_dir), str(spec.key.parent)})
    return [
        f"--container-image={_q(spec.container_image)}",
        f"--container-mounts={_q(','.join(f'{m}:{m}' for m in mounts))}",
    ]


def _header(spec: FleetSpec) -> list[str]:
    lines = [
        "#!/bin/bash",
        "#SBATCH --job-name=rig-dossier-fleet",
        f"#SBATCH --nodes={spec.nodes}",
        f"#SBATCH --ntasks-per-node={spec.ranks_per_node}",
        "#SBATCH --exclusive",
        f"#SBATCH --time={spec.time_min}",
        f"#SBATCH --output={spec.run_dir}/logs/batch-%j.out",
    ]
    if spec.partition:
        lines.append(f"#SBATCH --partition={spec.partition}")
    if spec.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={spec.gpus_per_node}")
    return lines


def render_sbatch(spec: FleetSpec) -> str:
    """The batch script: every node's dossier, then one all-reduce across the allocation."""
    run = _q(spec.run_dir)
    gpus = [f"--gpus-per-node={spec.gpus_per_node}"] if spec.gpus_per_node else []
    step_limit = [f"--time={spec.node_time_min}"] if spec.node_time_min else []
    # --ntasks is always explicit: a step otherwise inherits the job's SLURM_NTASKS
    node_srun = " ".join(
        [
            "srun",
            "--ntasks-per-node=1",
            *gpus,
            *step_limit,
            *_container_flags(spec),
            f"--output={run}/logs/step-%j-%n.out",
        ]
    )
    if spec.serial:
        node_step = [
            "# One node at a time (--serial): virtual nodes on one host would otherwise share its cores.",
            f"for node in $(cat {run}/nodelist); do  # not `while read`: srun would eat its stdin",
            f'  {node_srun} --nodes=1 --ntasks=1 --nodelist="$node" bash {run}/node.sh',
            "done",
        ]
    else:
        node_step = [f"{node_srun} --nodes={spec.nodes} --ntasks={spec.nodes} bash {run}/node.sh"]
    probe = [spec.python, "-m", "harness.probes.allreduce", "--launcher", "env", "--backend", spec.backend]
    allreduce = " ".join(
        [
            "srun",
            f"--nodes={spec.nodes}",
            f"--ntasks={spec.nodes * spec.ranks_per_node}",
            f"--ntasks-per-node={spec.ranks_per_node}",
            *gpus,
            *_container_flags(spec),
            f"--output={run}/allreduce/rank-%t.out",
            f"--error={run}/allreduce/rank-%t.err",
            *map(_q, probe),
            '--master-addr "$MASTER_ADDR"',
            *map(_q, spec.allreduce_args),
        ]
    )
    lines = _header(spec) + [
        f"# Generated by `dossier fleet submit` (rig-dossier {__version__}); kept in its run directory.",
        "# No `set -e`: a node that fails must not stop the others, nor the all-reduce.",
        "set -u",
        f"mkdir -p {run}/logs {run}/nodes {run}/allreduce",
        *_pythonpath(spec),
        f'scontrol show hostnames "$SLURM_JOB_NODELIST" > {run}/nodelist',
        "",
        "# 1. Each node's own dossier, one task per node, signed with the fleet key (node.sh).",
        *node_step,
        'echo "node dossiers: srun exit code $?"',
        "",
        "# 2. All-reduce across the allocation. Slurm sets no MASTER_ADDR, MASTER_PORT, RANK or",
        "#    WORLD_SIZE: the probe takes ranks from SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, and the",
        "#    master is the first node, by its NodeAddr (node names need not resolve).",
        'MASTER_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "MASTER_ADDR=$(scontrol show node \"$MASTER_NODE\" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')",
        "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))",
        f'echo "all-reduce: master $MASTER_NODE at $MASTER_ADDR:$MASTER_PORT, {spec.ranks_per_node} rank(s) per node"',
        allreduce,
        f"echo $? > {run}/allreduce/exit_code",
        "exit 0",
        "",
    ]
    return "\n".join(lines)


def _node_cases(spec: FleetSpec) -> list[str]:
    """Per-node hooks: variables to export, and a command to run the node's dossier under."""
    nodes = sorted(set(spec.node_env) | set(spec.node_prefix))
    if not nodes:
        return ["PREFIX=()  # no per-node hook: --node-env / --node-prefix were not given"]
    lines = ["PREFIX=()", 'case "$NODE" in']
    for node in nodes:
        words = [f"export {name}={_q(value)};" for name, value in sorted(spec.node_env.get(node, {}).items())]
        if node in spec.node_prefix:
            words.append(f"PREFIX=({' '.join(map(_q, spec.node_prefix[node]))});")
        lines.append(f"  {_q(node)}) {' '.join(words)} ;;")
    return lines + ["esac"]


def _pythonpath(spec: FleetSpec) -> list[str]:
    """Outside a container the harness may be a source checkout: make it importable on every node."""
    if not spec.pythonpath or spec.container_image:
        return []
    return [f"export PYTHONPATH={_q(spec.pythonpath)}${{PYTHONPATH:+:$PYTHONPATH}}"]


def render_node_script(spec: FleetSpec) -> str:
    """What each node runs: its own `dossier run`, output and exit status kept under its name."""
    run = _q(spec.run_dir)
    rest = [
        "--signing-key",
        str(spec.key),
        "--runner",
        "local",
        *(word for step in spec.skip for word in ("--skip", step)),
        *spec.run_args,
    ]
    command = " ".join(
        [
            '"${PREFIX[@]}"',
            *map(_q, [spec.python, "-m", "harness", "run"]),
            "--output-dir",
            f'{run}/nodes/"$NODE"',
            "--name",
            '"$NODE"',
            *map(_q, rest),
        ]
    )
    lines = [
        "#!/bin/bash",
        f"# One node's dossier, run by srun once per node. Generated by `dossier fleet submit` (rig-dossier {__version__}).",
        "set -u",
        "NODE=${SLURMD_NODENAME:?node.sh runs inside a Slurm job step}",
        f'mkdir -p {run}/nodes/"$NODE" {run}/logs',
        f'rm -f {run}/nodes/"$NODE"/exit_code',
        f'exec > {run}/logs/slurm-"$SLURM_JOB_ID"-"$NODE".out 2>&1',
        'echo "node $NODE (SLURM_NODEID ${SLURM_NODEID:-?}) on host $(hostname), job $SLURM_JOB_ID"',
        "# Per-node hooks (--node-env, recorded in the node's bundle through the allowlist; --node-prefix).",
        *_node_cases(spec),
        *_pythonpath(spec),
        command,
        "code=$?",
        f'echo "$code" > {run}/nodes/"$NODE"/exit_code',
        'echo "dossier run exit code $code"',
        'exit "$code"',
        "",
    ]
    return "\n".join(lines)


def parse_node_env(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """NODE:NAME=VALUE items -> {node: {NAME: VALUE}}."""
    env: dict[str, dict[str, str]] = {}
    for item in items:
        node, sep, assignment = item.partition(":")
        name, eq, value = assignment.partition("=")
        if not (sep and eq and node and name.isidentifier()):
            raise UsageError(f"--node-env {item!r}: expected NODE:NAME=VALUE (e.g. n2:OMP_NUM_THREADS=1)")
        slurm.node_name(node, "--node-env")
        env.setdefault(node, {})[name] = value
    return env


def parse_node_prefix(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """NODE:COMMAND items -> {node: argv}; COMMAND is split like a shell would."""
    prefixes: dict[str, tuple[str, ...]] = {}
    for item in items:
        node, sep, command = item.partition(":")
        words = tuple(shlex.split(command)) if sep else ()
        if not (node and words):
            raise UsageError(f"--node-prefix {item!r}: expected NODE:COMMAND (e.g. 'n2:taskset -c 0')")
        slurm.node_name(node, "--node-prefix")
        prefixes[node] = words
    return prefixes


def submit_command(spec: FleetSpec, output_dir: Path) -> list[str]:
    """The `dossier fleet submit` command line that generates this job again."""
    argv = [
        "dossier",
        "fleet",
        "submit",
        "--nodes",
        str(spec.nodes),
        "--output-dir",
        str(output_dir),
        "--signing-key",
        str(spec.key),
        "--time",
        str(spec.time_min),
    ]
    options = {
        "--partition": spec.partition,
        "--gpus-per-node": spec.gpus_per_node or None,
        "--container-image": spec.container_image,
        "--node-time": spec.node_time_min,
    }
    argv += [word for flag, value in options.items() if value is not None for word in (flag, str(value))]
    repeated = [("--skip", s) for s in spec.skip] + [("--run-arg", a) for a in spec.run_args]
    repeated += [("--allreduce-arg", a) for a in spec.allreduce_args]
    repeated += [
        ("--node-env", f"{node}:{name}={value}")
        for node, env in sorted(spec.node_env.items())
        for name, value in sorted(env.items())
    ]
    repeated += [("--node-prefix", f"{node}:{shlex.join(words)}") for node, words in sorted(spec.node_prefix.items())]
    argv += [f"{flag}={value}" for flag, value in repeated]  # = keeps values starting with - intact
    return argv + (["--serial"] if spec.serial else [])
