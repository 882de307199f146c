"""report.md against the report this build renders from the bundle's raw JSON (its own format), or
an older format's report kept as signed."""

from __future__ import annotations

from harness.bundle import layout
from harness.bundle.verify.check import Check
from harness.bundle.view import BundleView
from harness.present.report import render_report


def _first_difference(expected: str, stored: bytes) -> str:
    """The stored report's first line that differs from the re-rendered one (a linear scan: no
    diff algorithm whose time could grow with the square of a hostile report's length)."""
    stored_lines = stored.decode("utf-8", "replace").splitlines()
    for mine, theirs in zip(expected.splitlines(), stored_lines):
        if mine != theirs:
            return theirs.strip()
    return "(lines removed)" if len(stored_lines) < len(expected.splitlines()) else "(lines added at the end)"


def check_report(view: BundleView) -> Check:
    stored = view.files.get(layout.REPORT)
    if stored is None:
        return Check("report", layout.REPORT, False, "report.md is missing")
    made, tool = view.commands.get("format_version"), view.commands["tool"].get("version")
    if made != layout.FORMAT_VERSION:
        if isinstance(made, int) and 1 <= made < layout.FORMAT_VERSION:
            # An older report format cannot be re-rendered by this build's rules; its bytes are
            # still covered by the signature, and its figures are checked from the raw JSON above.
            return Check("report", layout.REPORT, True, f"format {made} (rig-dossier {tool}): signed, not "
                         f"re-rendered (this build renders format {layout.FORMAT_VERSION}; `dossier report` shows it so)")
        return Check("report", layout.REPORT, False, f"commands.json format_version {made!r} is not one this "
                     f"build knows (1 to {layout.FORMAT_VERSION}): update rig-dossier")
    try:
        expected = render_report(view)
        rendered = expected.encode()  # a lone surrogate in a document cannot be UTF-8: a failure, not a raise
    except Exception as exc:  # noqa: BLE001 - a document this build cannot render is a failed check
        return Check("report", layout.REPORT, False, f"could not be re-rendered from the raw JSON: "
                     f"{type(exc).__name__}: {str(exc)[:300]}")
    if stored == rendered:
        return Check("report", layout.REPORT, True, "identical to the report re-rendered from the raw JSON")
    return Check("report", layout.REPORT, False, f"differs from the report re-rendered from the raw JSON "
                 f"(bundle made by rig-dossier {tool}); first differing line: {_first_difference(expected, stored)[:200]}")
