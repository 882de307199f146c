"""A committed bundle's run, re-made by this build: the same steps, argv, environment, raw output
and stderr, assembled with this build's rules (report, plots, tables, schemas). Used where a test
or bench needs an H200 bundle in this build's format (the committed ones are format 1)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.bundle.read import read_all
from harness.registry import host_function
from harness.run.orchestrate import step_fields
from harness.run.plan import LAB_PLAN, HostStep
from harness.run.records import COMPLETED, NOT_RUN, RunRecord, StepRecord
from harness.runners.interface import ProbeRun


def record_of(bundle: Path) -> RunRecord:
    """The run recorded in BUNDLE as this build's RunRecord: each step of this build's plan that
    completed there, with its exact argv, environment, stdout and stderr; host steps recomputed."""
    files = read_all(bundle)
    commands, environment = json.loads(files["commands.json"]), json.loads(files["environment.json"])
    entries = {entry["step"]: entry for entry in commands["steps"]}
    documents, steps = {}, []
    for step in LAB_PLAN:
        steps += _step_records(step, entries, files, documents)
        if step.step == "roofline":  # bundles before format 5 timed the other dtypes in steps of their own
            steps += [
                _legacy(step, entries[name], files, documents)
                for name in entries
                if name.startswith("roofline-") and entries[name].get("status") == "completed"
            ]
    return RunRecord(
        steps=tuple(steps),
        runner=commands["runner"],
        tool=commands["tool"],
        host=environment["host"],
        options=commands["options"],
        started_at=commands["started_at"],
        finished_at=commands["finished_at"],
    )


def _legacy(step, entry, files, documents) -> StepRecord:
    """A roofline-DTYPE step of a bundle before format 5, kept as it ran (acceptance still reads it)."""
    legacy = type(step)(
        **{
            **{f: getattr(step, f) for f in step.__dataclass_fields__},
            "step": entry["step"],
            "title": entry.get("title") or step.title,
            "plots": None,
        }
    )
    return _step_records(legacy, {entry["step"]: entry}, files, documents)[0]


def _step_records(step, entries, files, documents) -> list[StepRecord]:
    """STEP as it ran in the bundle (ENTRIES by step name), as this build's StepRecord."""
    entry = entries.get(step.step, {})
    base = step_fields(step)
    if entry.get("status") != "completed":
        return [
            StepRecord(
                **base,
                status=NOT_RUN,
                why=entry.get("why") or "not in this bundle",
            )
        ]
    if isinstance(step, HostStep):
        document = host_function(step.function)(*(documents[need] for need in step.needs))
        return [
            StepRecord(
                **base,
                status=COMPLETED,
                document=json.loads(json.dumps(document)),
            )
        ]
    stdout = files[entry["output"]]
    documents[step.step] = json.loads(stdout)
    run = ProbeRun(
        probe=step.probe,
        argv=tuple(entry["argv"]),
        env=entry["env"],
        runner=entry["runner"],
        image=entry["image"],
        started_at=entry["started_at"],
        finished_at=entry["finished_at"],
        exit_code=entry["exit_code"],
        timed_out=False,
        stdout=stdout,
        stderr=files.get(entry["stderr"], b""),
    )
    return [
        StepRecord(
            **base,
            status=COMPLETED,
            run=run,
            document=documents[step.step],
            inputs=entry.get("inputs") or {},
            checkpoint=entry.get("checkpoint"),
        )
    ]


def remade(bundle: Path) -> RunRecord:
    """BUNDLE's run re-made by this build, with the run-to-run block `dossier run` records for the SKU
    its health step identified (format 5 records it): assemble it for a bundle in this build's format."""
    import dataclasses

    from harness.analysis import repeatability

    record = record_of(bundle)
    documents = {s.step: s.document for s in record.steps if s.document is not None}
    return dataclasses.replace(record, repeatability=repeatability.declaration(repeatability.bundle_sku(documents)))
