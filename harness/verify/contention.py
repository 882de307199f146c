"""host-contention.json (bundle format 6 on): carried exactly from the format that records it, valid
against its schema, every window's summary recomputed from its samples (harness.analysis.contention),
its format_version commands.json's, and each window of a probe step that ran a process."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from harness.analysis import contention
from harness.bundle import layout
from harness.bundle.view import BundleFormatError, BundleView
from harness.verify.check import Check
from harness.verify.content import schema_check
from harness.verify.formats import Format

SCHEMA = "host-contention"


def _against_commands(document: dict[str, Any], commands: dict[str, Any]) -> list[str]:
    found = []
    if document.get("format_version") != commands.get("format_version"):
        found.append(
            f"format_version {document.get('format_version')!r} but commands.json says "
            f"{commands.get('format_version')!r}"
        )
    ran = {s.get("step") for s in commands.get("steps", []) if s.get("kind") == "probe" and s.get("argv") is not None}
    for entry in document["steps"]:
        if entry["step"] not in ran:
            found.append(f"a window of step {str(entry['step'])[:60]!r}, which ran no probe process in commands.json")
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
