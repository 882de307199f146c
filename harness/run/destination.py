"""Where `dossier run`'s bundle goes, and what is kept when it cannot be made or written.

The bundle is OUTPUT_DIR/NAME.tar.gz (`--name`, else dossier-HOST-TIMESTAMP, the host named by its
hostname and first GPU's UUID tail); assembling, signing and writing it happen here, and when any
of that fails every measured result is kept in a recovery folder (harness.recovery) the error names.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import recovery
from harness.analysis.health import figures as health_figures
from harness.bundle import layout
from harness.bundle.write import write_atomically
from harness.errors import DossierError, EnvironmentProblem, UsageError
from harness.run.assemble import assemble, step_files
from harness.run.records import RunRecord
from harness.signing.keys import SigningKey


def bundle_file_name(name: str) -> str:
    """NAME.tar.gz for --name NAME, which must be a plain file name (checked before any probe runs)."""
    if not name or any(c in name for c in "/\\\0") or name.startswith("."):
        raise UsageError(f"--name {name!r} must be a plain file name (no '/', not starting with '.')")
    return name if name.endswith(layout.SUFFIX) else name + layout.SUFFIX


def bundle_path(output_dir: Path, name: str | None, record: RunRecord) -> Path:
    """OUTPUT_DIR/NAME.tar.gz: --name, else dossier-HOST-TIMESTAMP, HOST the hostname and the first
    GPU's UUID tail from the health step (every lent VM is called `vm`: the GPU tells them apart)."""
    if not name:
        health = next((s.document for s in record.steps if s.step == "health" and s.document), None)
        host = health_figures.host_label(record.host.get("hostname"), health)
        stamp = record.started_at[:19].replace("-", "").replace(":", "")
        name = f"dossier-{host}-{stamp}Z"
    return output_dir / bundle_file_name(name)


RECOVERED = """\
{bundle}: the signed bundle, complete: check it with `dossier verify {bundle} --key YOUR.pub`
raw/STEP.json: each completed probe's JSON, exactly as it printed it; derived/: documents computed on the host
logs/: each probe's stderr, and its stdout where it failed (unsigned copies of the bundle's members)"""


def keep_measurements(record: RunRecord, destination: Path | None, bundle: bytes | None, why: str) -> Path:
    """Every measured result of RECORD (and the signed bundle, when it was made) in a recovery folder."""
    files = {destination.name: bundle} if (destination is not None and bundle is not None) else {}
    for step in record.steps:
        files.update(step_files(step))
    what = RECOVERED.format(bundle=destination.name if bundle is not None and destination else "(no bundle)")
    name = destination.name.removesuffix(layout.SUFFIX) if destination is not None else "dossier"
    return recovery.keep(name, files, why, what if bundle is not None else what.split("\n", 1)[1])


def write_or_keep(record: RunRecord, output_dir: Path, name: str | None, key: SigningKey) -> Path:
    """Assemble, sign and write the bundle; if any of that fails, keep what was measured first."""
    destination = bundle = None
    try:
        destination = bundle_path(output_dir, name, record)
        bundle = assemble(record, key)
        return write_atomically(bundle, destination)
    except Exception as exc:  # whatever failed, the measurements are kept (not on Ctrl-C)
        if isinstance(exc, OSError):
            why = exc.strerror or str(exc)
        else:
            why = str(exc) if isinstance(exc, DossierError) else f"{type(exc).__name__}: {exc}"
        folder = keep_measurements(record, destination, bundle, f"writing {destination} failed: {why}")
        if isinstance(exc, (OSError, DossierError)):
            raise EnvironmentProblem(
                f"could not write {destination}: {why}; everything measured is kept in {folder}"
            ) from exc
        print(f"error: everything measured is kept in {folder}", file=sys.stderr)
        raise
