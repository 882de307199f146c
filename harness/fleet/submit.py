"""`dossier fleet submit`: write the job into a fresh run directory, submit it, record it.

Nothing is left behind a submission sbatch refuses (no Slurm client, no controller, a bad partition):
sbatch is looked for before anything is written, and when it refuses, the run directory and a fleet
key pair made for this submission are removed again (the job's files must exist before sbatch, as a
job may start the moment it is accepted).

Keys: every node signs its bundle with ONE fleet key, read from the shared filesystem by the
job (the private key never leaves that file, mode 0600, and is never put in a bundle). Without
--signing-key, a key pair is made on first use in OUTPUT_DIR/keys/ (dossier.key, dossier.pub); the
public half is what `dossier fleet collect --key` and anyone checking a node bundle trusts.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.fleet import slurm
from harness.fleet.script import FleetSpec, render_node_script, render_sbatch, submit_command
from harness.signing.keys import PRIVATE_NAME, generate, load_private, public_path_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def fleet_key(output_dir: Path, explicit: Path | None) -> tuple[Path, str | None, list[Path]]:
    """The fleet's private key path, a note when one was just made, and what was made for it (the
    pair, and the keys folder where it was new: removed again if sbatch refuses the job)."""
    if explicit is not None:
        load_private(explicit)  # fail now, not on every node
        return explicit.resolve(), None, []
    path = output_dir / "keys" / PRIVATE_NAME
    if path.exists():
        return path.resolve(), None, []
    made = [] if path.parent.exists() else [path.parent]
    private, public = generate(path.parent)
    return (
        private.resolve(),
        f"made the fleet signing key {private} (mode 0600, stays on the shared "
        f"filesystem); verify node and fleet bundles with {public}",
        [private, public, *made],
    )


def _remove(made: list[Path]) -> None:
    """Undo a submission sbatch refused: files, then folders (emptied), in that order."""
    for path in made:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def new_run_dir(output_dir: Path) -> Path:
    """A fresh directory per submission: fleet-UTCSTAMP (suffixed if two land in one second)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for suffix in ("", *(f"-{i}" for i in range(1, 100))):
        candidate = output_dir / f"fleet-{stamp}{suffix}"
        try:
            candidate.mkdir(parents=True)
            return candidate.resolve()
        except FileExistsError:
            continue
    raise UsageError(f"could not make a fresh run directory under {output_dir}")


def check_path(path: Path) -> None:
    # #SBATCH lines and srun mount lists cannot carry white space or commas in a path
    if any(c.isspace() for c in str(path)) or "," in str(path):
        raise UsageError(f"{path}: the output directory must have no spaces or commas (Slurm options carry it)")


def submit(spec_args: dict[str, Any], output_dir: Path, key: Path | None) -> tuple[str, Path, str | None]:
    """Write fleet.sbatch and node.sh into a new run directory, sbatch it, write submission.json;
    when sbatch refuses, remove what this submission wrote and raise its refusal. Returns the job id,
    the run directory and a note when a fleet key pair was made for it."""
    output_dir = output_dir.resolve()
    check_path(output_dir)
    slurm.sbatch_path()  # no Slurm client: refused before anything is written
    new_root = [] if output_dir.exists() else [output_dir]  # made by this submission: removed with it
    key_path, note, made = fleet_key(output_dir, key)
    made += new_root
    try:
        run_dir = new_run_dir(output_dir)
        made.insert(0, run_dir)
        job_id, spec, sbatch_argv = _write_and_submit(spec_args, run_dir, key_path)
    except BaseException:
        _remove(made)
        raise
    _record(job_id, spec, sbatch_argv, output_dir, run_dir, key_path)
    return job_id, run_dir, note


def _write_and_submit(spec_args: dict[str, Any], run_dir: Path, key_path: Path) -> tuple[str, FleetSpec, list[str]]:
    """The job's files in RUN_DIR, submitted: the job id, the spec it was written from, sbatch's argv."""
    container = spec_args.get("container_image")
    spec = FleetSpec(
        run_dir=run_dir,
        key=key_path,
        python=spec_args.pop("python") or ("python3" if container else sys.executable),
        pythonpath=None if container else str(PROJECT_ROOT),
        **spec_args,
    )
    (run_dir / "node.sh").write_text(render_node_script(spec))
    script = run_dir / "fleet.sbatch"
    script.write_text(render_sbatch(spec))
    for sub in ("logs", "nodes", "allreduce"):
        (run_dir / sub).mkdir()
    job_id, sbatch_argv = slurm.submit(script)
    return job_id, spec, sbatch_argv


def _record(
    job_id: str, spec: FleetSpec, sbatch_argv: list[str], output_dir: Path, run_dir: Path, key_path: Path
) -> None:
    """submission.json: what was submitted, and how to submit it again."""
    submission = {
        "job_id": job_id,
        "argv": submit_command(spec, output_dir),
        "sbatch_argv": sbatch_argv,
        "submitted_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "run_dir": str(run_dir),
        "public_key": str(public_path_for(key_path)),
        "spec": json.loads(json.dumps(dataclasses.asdict(spec), default=str)),
        "submitted_by_uid": os.getuid(),
    }
    (run_dir / "submission.json").write_text(json.dumps(submission, sort_keys=True, indent=1) + "\n")
