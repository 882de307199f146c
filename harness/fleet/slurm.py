"""The few Slurm client calls a fleet needs: sbatch to submit, scontrol to follow a job.

`sacct` is not used: it needs slurmdbd, which many small clusters (and CI) do not run.
`scontrol show job` knows a job until MinJobAge after it ends; after that the run directory's
own records (nodelist, exit codes) are what a collect reads.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

from harness.errors import CheckFailed, EnvironmentProblem, UsageError

ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "RESIZING",
        "STAGE_OUT",
        "SIGNALING",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
    }
)
CLUSTER_HINT = (
    "run on a Slurm login node (sbatch, scontrol on PATH; SLURM_CONF set where the "
    "configuration is not at its default place)"
)


# A Slurm node or partition name as this build takes one, wherever it enters (a nodelist, --node,
# --partition, scontrol's answer): letters, digits, `.`, `_` and `-`, starting with a letter or a digit
# (no `/`, `..`, space, bracket, `|`, quote, `=` or control character: each is a member name, a CSV
# cell, a table cell and a word of an sbatch script or a scontrol argument). At most MAX_NODES names.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_NODES = 100_000
SCONTROL_TIMEOUT_S = 60.0  # a Slurm client that has not answered by then: an environment problem


def node_name(text: str, what: str = "node") -> str:
    """TEXT if it is one Slurm node name as NAME allows, else UsageError (exit 2) saying what it is."""
    if not isinstance(text, str) or not NAME.fullmatch(text):
        raise UsageError(
            f"{what} {text!r} is not one Slurm node name (letters, digits, '.', '_', '-'; no ranges, paths or spaces)"
        )
    return text


def partition_name(text: str) -> str:
    """TEXT if it is a Slurm partition name as NAME allows, else UsageError (exit 2)."""
    if not NAME.fullmatch(text):
        raise UsageError(f"--partition {text!r} is not a Slurm partition name (letters, digits, '.', '_', '-')")
    return text


def node_names(names: list[str], where: str) -> list[str]:
    """NAMES (from WHERE: a job's nodelist, scontrol) each a node name, at most MAX_NODES, none twice."""
    if len(names) > MAX_NODES:
        raise UsageError(f"{where} names {len(names)} nodes, more than the {MAX_NODES} a fleet takes")
    for name in names:
        node_name(name, f"{where}: node")
    if len(set(names)) != len(names):
        raise UsageError(f"{where} names a node twice")
    return names


def available() -> bool:
    """Whether this host has the Slurm client (a collect can run elsewhere, from the run directory alone)."""
    return shutil.which("scontrol") is not None


def _client(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise EnvironmentProblem(f"{name} is not on PATH: no Slurm client here", hint=CLUSTER_HINT)
    return path


def _run(argv: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
    """A Slurm client's answer, its output decoded as UTF-8 (what is not, replaced); EnvironmentProblem
    (exit 4) when it has not answered within TIMEOUT_S (SCONTROL_TIMEOUT_S)."""
    limit = SCONTROL_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done = subprocess.run(argv, capture_output=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(
            f"{Path(argv[0]).name} {' '.join(argv[1:3])} did not answer within {limit:g} s", hint=CLUSTER_HINT
        ) from None
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


def sbatch_path() -> str:
    """sbatch's path; EnvironmentProblem (exit 4) when this host has no Slurm client."""
    return _client("sbatch")


def submit(script: Path, options: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """Submit a batch script (with sbatch OPTIONS before it); its job id and the exact sbatch argv."""
    argv = [_client("sbatch"), "--parsable", *options, str(script)]
    done = _run(argv)
    if done.returncode != 0:
        raise EnvironmentProblem(
            f"sbatch refused the fleet job: {done.stderr.strip() or done.stdout.strip()}", hint=CLUSTER_HINT
        )
    job_id = done.stdout.strip().split(";")[0]  # --parsable prints "id" or "id;cluster"
    if not job_id.isdigit():
        raise EnvironmentProblem(f"sbatch printed {done.stdout.strip()!r}, not a job id")
    return job_id, argv


def job_fields(job_id: str) -> dict[str, str] | None:
    """`scontrol show job -o` as KEY -> value, or None once Slurm no longer knows the job."""
    done = _run([_client("scontrol"), "show", "job", "-o", job_id])
    if done.returncode != 0 or not done.stdout.strip():
        return None
    fields = {}
    for word in done.stdout.split():
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def job_state(job_id: str) -> str | None:
    fields = job_fields(job_id)
    return fields.get("JobState") if fields else None


def hostnames(nodelist: str) -> list[str]:
    """Expand a Slurm node list (n[1-3]) into names."""
    done = _run([_client("scontrol"), "show", "hostnames", nodelist])
    if done.returncode != 0:
        raise EnvironmentProblem(f"scontrol could not expand node list {nodelist!r}: {done.stderr.strip()}")
    return node_names(done.stdout.split(), f"the node list {nodelist[:80]!r}")


def node_state(node: str) -> tuple[str, str | None]:
    """A node's State (IDLE+DRAIN, ...) and Reason as `scontrol show node` prints them (the Reason
    without the ` [user@time]` Slurm appends); UsageError for a node Slurm does not know."""
    done = _run([_client("scontrol"), "show", "node", node_name(node)])
    if done.returncode != 0 or "NodeName=" not in done.stdout:
        raise UsageError(
            f"Slurm knows no node {node!r}: {done.stderr.strip() or done.stdout.strip()}",
            hint="pass --node with the node's Slurm name (SLURMD_NODENAME)",
        )
    return parse_node(done.stdout)


def parse_node(text: str) -> tuple[str, str | None]:
    """(State, Reason) from `scontrol show node NAME`'s output (one field a line for these two)."""
    state, reason = "", None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("State="):
            state = line.split()[0].removeprefix("State=")
        elif line.startswith("Reason="):
            reason = re.sub(r" \[[^\]@]*@[^\]]*\]$", "", line.removeprefix("Reason="))
    return state, reason


def update_node(node: str, state: str, reason: str | None = None) -> None:
    """`scontrol update nodename=NODE state=STATE [reason=REASON]`; EnvironmentProblem when refused."""
    argv = [_client("scontrol"), "update", f"nodename={node_name(node)}", f"state={state}"]
    if reason is not None:
        argv.append(f"reason={reason}")
    done = _run(argv)
    if done.returncode != 0:
        raise EnvironmentProblem(
            f"scontrol refused to set node {node} {state}: {done.stderr.strip() or done.stdout.strip()}",
            hint="updating a node needs root or the SlurmUser (slurmd runs HealthCheckProgram as root)",
        )


def wait(job_id: str, timeout_s: float, poll_s: float = 1.0) -> str | None:
    """Wait until the job leaves the active states; its final state (None if Slurm forgot it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = job_state(job_id)
        if state is None or state.split("+")[0] not in ACTIVE_STATES:
            return state
        if time.monotonic() > deadline:
            raise CheckFailed(
                f"job {job_id} still {state} after {timeout_s:g} s",
                hint=f"collect it later: dossier fleet collect {job_id}",
            )
        time.sleep(poll_s)
