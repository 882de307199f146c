"""report.md and the table members (tables/STEP.md) against what this build renders from the
bundle's raw JSON, by the rules of the bundle's format: only the format this build writes can be
re-rendered (harness.verify.formats says which checks an older one misses)."""

from __future__ import annotations

from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.present.report import render_report
from harness.present.step_tables import has_table, table_markdown
from harness.verify.check import Check
from harness.verify.formats import Format, renders


def _first_difference(expected: str, stored: bytes) -> str:
    """The stored report's first line that differs from the re-rendered one (a linear scan: no
    diff algorithm whose time could grow with the square of a hostile report's length)."""
    stored_lines = stored.decode("utf-8", "replace").splitlines()
    for mine, theirs in zip(expected.splitlines(), stored_lines, strict=False):
        if mine != theirs:
            return theirs.strip()
    return "(lines removed)" if len(stored_lines) < len(expected.splitlines()) else "(lines added at the end)"


def check_report(view: BundleView, fmt: Format) -> list[Check]:
    """report.md re-rendered by FMT's rules; none where this build has not got them (a check not
    done, listed by harness.verify.formats.not_done)."""
    stored = view.files.get(layout.REPORT)
    if stored is None:
        return [Check("report", layout.REPORT, False, "report.md is missing")]
    if not renders(fmt.version):
        return []
    return [_rendered_report(view, stored)]


def _rendered_report(view: BundleView, stored: bytes) -> Check:
    tool = view.commands["tool"].get("version")
    try:
        expected = render_report(view)
        rendered = expected.encode()  # a lone surrogate in a document cannot be UTF-8: a failure, not a raise
    except Exception as exc:  # noqa: BLE001 - a document this build cannot render is a failed check
        return Check(
            "report",
            layout.REPORT,
            False,
            f"could not be re-rendered from the raw JSON: {type(exc).__name__}: {str(exc)[:300]}",
        )
    if stored == rendered:
        return Check("report", layout.REPORT, True, "identical to the report re-rendered from the raw JSON")
    return Check(
        "report",
        layout.REPORT,
        False,
        f"differs from the report re-rendered from the raw JSON "
        f"(bundle made by rig-dossier {tool}); first differing line: {_first_difference(expected, stored)[:200]}",
    )


def _rendered_table(probe: object, document: object, documents: dict) -> bytes | None:
    try:
        return table_markdown(probe, document, documents).encode()  # a lone surrogate cannot be UTF-8: no match
    except UnicodeEncodeError:
        return None


def check_tables(view: BundleView, fmt: Format) -> list[Check]:
    """Each table member a step lists, rendered again from the step's document, and every table the
    format calls for listed (FMT's rules; none where this build has not got them)."""
    if not fmt.tables or not renders(fmt.version):
        return []
    checks = []
    for entry in view.steps:
        step = str(entry.get("step"))
        if (
            step in view.documents
            and has_table(entry.get("probe"))
            and layout.table_name(step) not in view.tables(step)
        ):
            checks.append(
                Check(
                    "files",
                    layout.table_name(step),
                    False,
                    f"step {step[:60]}'s probe has a table, "
                    f"which a format-{fmt.version} bundle carries, but commands.json does not list it",
                )
            )
        for member in view.tables(step):
            stored = view.files.get(member)
            if stored is None:
                checks.append(Check("files", member, False, "commands.json lists it but the bundle lacks it"))
            elif member != layout.table_name(step) or step not in view.documents or not has_table(entry.get("probe")):
                checks.append(Check("report", member, False, f"no table of step {step[:60]} renders to {member}"))
            elif stored == _rendered_table(entry.get("probe"), view.documents[step], view.documents):
                checks.append(Check("report", member, True, "identical to the table rendered from the raw JSON"))
            else:
                checks.append(Check("report", member, False, "differs from the table rendered from the raw JSON"))
    return checks
