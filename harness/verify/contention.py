"""host-contention.json (bundle format 6 on): carried exactly from the format that records it, valid
against its schema, every window's summary recomputed from its samples (harness.analysis.contention),
its format_version commands.json's, and each window of a probe step that ran a process."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from harness.analysis import contention
from harness.analysis.timestamps import parse_timestamp
from harness.bundle import layout
from harness.bundle.view import BundleFormatError, BundleView
from harness.verify.check import Check
from harness.verify.content import schema_check
from harness.verify.formats import Format

SCHEMA = "host-contention"


def _spans(document: dict[str, Any]) -> list[tuple[float, float]]:
    spans = []
    for entry in document["steps"]:
        try:
            start = parse_timestamp(entry["started_at"]).timestamp()
        except (TypeError, ValueError):  # null or not a time: schema_check names it
            continue
        spans.append((start, start + contention.summary(entry, document["sampler"])["window_s"]))
    return spans


def _inside(entry: dict[str, Any], spans: list[tuple[float, float]]) -> bool:
    """Whether the step's process started inside a window (a step taken during another step's load)."""
    try:
        started = parse_timestamp(str(entry.get("started_at"))).timestamp()
    except ValueError:
        return False
    return any(a <= started <= b for a, b in spans)


def _against_commands(document: dict[str, Any], commands: dict[str, Any]) -> list[str]:
    """The document against the run record: its format, and one window, in the plan's order, for each
    probe step that ran a process in its place (one taken during another step's load is in that window)."""
    found = []
    if document.get("format_version") != commands.get("format_version"):
        found.append(
            f"format_version {document.get('format_version')!r} but commands.json says "
            f"{commands.get('format_version')!r}"
        )
    ran = [s for s in commands.get("steps", []) if s.get("kind") == "probe" and s.get("argv") is not None]
    windows = [entry["step"] for entry in document["steps"]]
    for step in windows:
        if step not in {s.get("step") for s in ran}:
            found.append(f"a window of step {str(step)[:60]!r}, which ran no probe process in commands.json")
    if contention.not_sampled_reason(document) is None:
        spans = _spans(document)
        for entry in ran:
            if entry.get("step") not in windows and not _inside(entry, spans):
                found.append(f"step {str(entry.get('step'))[:60]!r} ran a probe process but has no window")
    order = [s.get("step") for s in ran if s.get("step") in windows]
    if windows != order and not found:
        found.append("steps: the windows are not in the order commands.json ran their steps")
    return found


def check_contention(view: BundleView, fmt: Format, names: Collection[str]) -> list[Check]:
    """The checks of host-contention.json by the rules of FMT (NAMES: the bundle's members)."""
    held = layout.CONTENTION in names
    if not fmt.contention:
        return (
            [
                Check(
                    "format",
                    layout.CONTENTION,
                    False,
                    f"format {fmt.version} bundles carry no {layout.CONTENTION}, but this one does "
                    "(a newer format relabelled?)",
                )
            ]
            if held
            else []
        )
    if not held:
        return [
            Check(
                "files",
                layout.CONTENTION,
                False,
                f"format {fmt.version} bundles record the host read while each step ran, but this one lacks it",
            )
        ]
    try:
        document = view.contention
    except BundleFormatError as exc:
        return [Check("schema", layout.CONTENTION, False, str(exc))]
    valid = schema_check(layout.CONTENTION, SCHEMA, document)
    if not valid.ok:
        return [valid]
    try:
        problems = contention.discrepancies(document) + _against_commands(document, view.commands)
    except Exception as exc:  # noqa: BLE001 - any failure to recompute is a failed check
        problems = [f"could not recompute: {type(exc).__name__}: {str(exc)[:300]}"]
    return [valid] + (
        [Check("figures", layout.CONTENTION, False, problem) for problem in problems]
        or [Check("figures", layout.CONTENTION, True, "every window's summary recomputed from its samples")]
    )
