"""Judging a probe run: completed (valid document) or failed (why, raw output kept)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.runners.interface import ProbeRun
from harness.schemas import SchemaViolation, violations


@dataclass(frozen=True)
class Completed:
    run: ProbeRun
    document: dict[str, Any]

    ok = True


@dataclass(frozen=True)
class Failed:
    run: ProbeRun
    reason: str
    schema_violations: tuple[SchemaViolation, ...] = ()

    ok = False

    def describe(self) -> str:
        lines = [f"probe {self.run.probe} failed: {self.reason}"]
        lines += [f"  {v}" for v in self.schema_violations[:10]]
        if len(self.schema_violations) > 10:
            lines.append(f"  ... and {len(self.schema_violations) - 10} more violations")
        tail = self.run.stderr_tail(8)
        if tail:
            lines.append("  stderr tail:\n    " + tail.replace("\n", "\n    "))
        return "\n".join(lines)


Outcome = Completed | Failed


def judge(run: ProbeRun, schema: str | None = None) -> Outcome:
    """Completed only for exit code 0 and one JSON document valid against the probe's schema."""
    if run.timed_out:
        return Failed(run, f"timed out ({run.note or 'no note'})")
    if run.exit_code != 0:
        note = f" ({run.note})" if run.note else ""  # e.g. the container was OOM-killed
        return Failed(run, f"exited with code {run.exit_code}{note}")
    text = run.stdout.decode("utf-8", "replace").strip()
    if not text:
        return Failed(run, "printed nothing on stdout (expected one JSON document)")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return Failed(run, f"printed non-JSON on stdout ({exc.msg} at line {exc.lineno} column {exc.colno})")
    found = violations(schema or run.probe, document)
    if found:
        return Failed(
            run,
            f"output does not match schemas/{schema or run.probe}.schema.json "
            f"({len(found)} violation(s), first at {found[0].path or '/'}, "
            f"schema path {found[0].schema_path})",
            tuple(found),
        )
    return Completed(run, document)
