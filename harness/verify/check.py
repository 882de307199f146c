"""One verification check: what was checked, of which member, whether it passed and why."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    check: str  # structure, signature, statement, files, sha256, schema, schema-file, predicate, figures,
    # report (report.md and tables/), internal
    subject: str  # the member it concerns, or "bundle"
    ok: bool
    detail: str = ""

    def line(self) -> str:
        """One printable line (a lone surrogate from a document's string shown escaped, never raised on)."""
        text = f"{'ok  ' if self.ok else 'FAIL'} {self.check} {self.subject}" + (
            f": {self.detail}" if self.detail else ""
        )
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
