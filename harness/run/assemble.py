"""From a RunRecord to the signed bundle's bytes: a pure function of its inputs.

Members: raw/STEP.json (the probe's exact stdout), derived/STEP.json (host-computed documents),
logs/ (stderr of every run, stdout of failed ones), plots/STEP/ (rendered here from the raw
JSON), tables/STEP.md (a probe's table, rendered here from the raw JSON), schemas/ (the schemas
the documents use, so standard validators check them offline), commands.json, environment.json,
host-contention.json (the host read while each probe step ran), report.md, and attestation.intoto.json signing the sha256 of every other member.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness import registry
from harness.analysis import repeatability
from harness.analysis.timestamps import duration_s
from harness.bundle import layout
from harness.bundle.seal import sign_files
from harness.bundle.view import BundleView
from harness.bundle.write import archive_bytes
from harness.present.plotting import render_inline
from harness.present.report import render_report
from harness.present.step_tables import has_table, table_markdown
from harness.run import host_load
from harness.run.records import COMPLETED, FAILED, Attempt, RunRecord, StepRecord
from harness.schemas import referenced, schema_path
from harness.signing.keys import SigningKey

FORMAT_VERSION = layout.FORMAT_VERSION


def json_bytes(value: Any) -> bytes:
    return (json.dumps(value, allow_nan=False, sort_keys=True, indent=1) + "\n").encode()


def render_plots(record: StepRecord, sku_id: str | None = None) -> tuple[dict[str, bytes], str | None]:
    """The step's plots: rendered during the run when they were, else rendered now (SKU_ID: the
    catalogue SKU the run's GPUs were identified as, for a plot that draws its known-good)."""
    if record.status != COMPLETED:
        return {}, None
    if record.plot_files is not None:
        return dict(record.plot_files), record.plot_note
    return render_inline(record.plots, record.step, record.document, sku_id)


def step_files(record: StepRecord) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for attempt in record.attempts:  # earlier failed attempts (dossier run --retest): nothing lost
        files[layout.attempt_stderr_name(record.step, attempt.attempt)] = attempt.run.stderr
        files[layout.attempt_stdout_name(record.step, attempt.attempt)] = attempt.run.stdout
    if record.run is not None:
        files[layout.stderr_name(record.step)] = record.run.stderr
        if record.status == COMPLETED:
            files[layout.raw_name(record.step)] = record.run.stdout
        else:
            files[layout.stdout_name(record.step)] = record.run.stdout
    elif record.kind == "host" and record.document is not None:
        files[layout.derived_name(record.step)] = json_bytes(record.document)
    return files


def step_table_names(record: StepRecord) -> list[str]:
    """tables/STEP.md for a completed probe step whose registry entry has a table (its bytes are
    rendered once the bundle's documents are all there: see add_tables)."""
    if record.status != COMPLETED or record.document is None or not has_table(record.probe):
        return []
    return [layout.table_name(record.step)]


def add_tables(files: dict[str, bytes], records: list[StepRecord]) -> None:
    """Each listed table rendered from the documents as the bundle holds them, the way verify
    renders it again (a table may set its figures beside another step's)."""
    documents = BundleView.from_files(files, registry.analysis_module).documents
    for record in records:
        for name in step_table_names(record):
            files[name] = table_markdown(record.probe, documents[record.step], documents).encode()


def schema_files(entries: list[dict[str, Any]]) -> dict[str, bytes]:
    """schemas/NAME.schema.json for every schema the bundle's documents use (commands.json,
    environment.json, each step's output) and every schema those refer to, as this build has them."""
    used = ["commands", "environment", "host-contention", *(e["schema"] for e in entries if e.get("output"))]
    return {layout.schema_member(name): schema_path(name).read_bytes() for name in referenced(used)}


def attempt_entry(step: str, attempt: Attempt) -> dict[str, Any]:
    """An earlier failed attempt in its step's commands.json entry (`attempts`)."""
    run = attempt.run
    return {
        "attempt": attempt.attempt,
        "status": FAILED,
        "why": attempt.why,
        "argv": list(run.argv),
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "duration_s": duration_s(run.started_at, run.finished_at),
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "note": run.note,
        "schema_violations": list(attempt.schema_violations),
        "stdout": layout.attempt_stdout_name(step, attempt.attempt),
        "stderr": layout.attempt_stderr_name(step, attempt.attempt),
        "stderr_tail": run.stderr_tail(20),
    }


def step_entry(
    record: StepRecord,
    files: Mapping[str, bytes],
    plots: list[str],
    plot_note: str | None,
    tables: list[str] | None = None,
) -> dict[str, Any]:
    """The step's entry in commands.json; every key present, null where it does not apply (and
    `attempts`, a retested step's earlier failed attempts, only where there were some)."""
    run = record.run
    output = None
    if record.status == COMPLETED:
        output = layout.raw_name(record.step) if record.kind == "probe" else layout.derived_name(record.step)
    retested = {"attempts": [attempt_entry(record.step, a) for a in record.attempts]} if record.attempts else {}
    return {
        **retested,
        "step": record.step,
        "title": record.title,
        "lab_step": record.lab_step,
        "kind": record.kind,
        "probe": record.probe,
        "status": record.status,
        "why": record.why,
        "argv": list(run.argv) if run else None,
        "env": dict(run.env) if run else None,
        "runner": run.runner if run else None,
        "image": run.image if run else None,
        "started_at": run.started_at if run else None,
        "finished_at": run.finished_at if run else None,
        "duration_s": duration_s(run.started_at, run.finished_at) if run else None,
        "exit_code": run.exit_code if run else None,
        "timed_out": run.timed_out if run else None,
        "note": run.note if run else None,
        "stdout": (layout.raw_name(record.step) if record.status == COMPLETED else layout.stdout_name(record.step))
        if run
        else None,
        "stderr": layout.stderr_name(record.step) if run else None,
        "stderr_tail": run.stderr_tail(20) if (run and record.status == FAILED) else None,
        "output": output if (output and output in files) else None,
        "schema": record.schema,
        "schema_violations": list(record.schema_violations),
        "analysis": record.analysis,
        "plots": plots,
        "plot_note": plot_note,
        "tables": tables or [],
        "inputs": dict(record.inputs),
        "checkpoint": dict(record.checkpoint) if record.checkpoint else None,
        "needs": list(record.needs),
        "function": record.function,
    }


def commands_document(record: RunRecord, steps: list[dict[str, Any]], schemas: list[str]) -> dict[str, Any]:
    return {
        "format": "rig-dossier/commands",
        "format_version": FORMAT_VERSION,
        "tool": dict(record.tool),
        "runner": dict(record.runner),
        "options": dict(record.options),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "duration_s": duration_s(record.started_at, record.finished_at),
        "schemas": schemas,
        "steps": steps,
        "repeatability": run_to_run(record),
    }


def run_to_run(record: RunRecord) -> dict[str, Any]:
    """The run-to-run block every bundle of this format records (harness.analysis.repeatability): the
    one `dossier run` declared at run time, else (a run re-made from its records) the catalogue's for
    the SKU the record's documents identify."""
    if record.repeatability is not None:
        return dict(record.repeatability)
    documents = {s.step: s.document for s in record.steps if s.status == COMPLETED and s.document is not None}
    return repeatability.declaration(repeatability.bundle_sku(documents))


def environment_document(record: RunRecord) -> dict[str, Any]:
    return {
        "format": "rig-dossier/environment",
        "format_version": FORMAT_VERSION,
        "tool": dict(record.tool),
        "runner": dict(record.runner),
        "host": dict(record.host),
    }


def unsigned_files(record: RunRecord) -> dict[str, bytes]:
    """Every member except the attestation, report.md included."""
    files: dict[str, bytes] = {}
    entries = []
    sku = repeatability.bundle_sku({s.step: s.document for s in record.steps if s.document is not None})
    for step in record.steps:
        own = step_files(step)
        plots, note = render_plots(step, sku)
        files.update(own)
        files.update(plots)
        entries.append(step_entry(step, own, sorted(plots), note, step_table_names(step)))
    schemas = schema_files(entries)
    files.update(schemas)
    files[layout.COMMANDS] = json_bytes(commands_document(record, entries, sorted(schemas)))
    files[layout.ENVIRONMENT] = json_bytes(environment_document(record))
    files[layout.CONTENTION] = json_bytes(record.contention or host_load.not_sampled())
    add_tables(files, list(record.steps))
    files[layout.REPORT] = render_report(BundleView.from_files(files, registry.analysis_module)).encode()
    return files


def assemble(record: RunRecord, key: SigningKey) -> bytes:
    """The bundle's bytes: identical records and key give identical bytes."""
    files = unsigned_files(record)
    files[layout.ATTESTATION] = sign_files(files, key)
    return archive_bytes(files)
