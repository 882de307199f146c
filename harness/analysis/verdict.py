"""The one verdict vocabulary: what a criterion, a contract or a check concluded.

Standard library only, so the probes (health contracts are judged inside the probe), the
verifier, the report and `dossier accept` all say it the same way. A Verdict is a `str`: it is
written to JSON as its value and compares equal to it, so documents keep their serialized
values ("pass", "fail", "not-applicable") and old bundles read back unchanged.

A criterion (the report's lab criteria, acceptance criteria) is PASS, FAIL or NOT_MEASURED: its
evidence could not be judged because the step it needs did not complete or the bundle lacks
the figure. A per-device check (a health contract, a health-diff check) may also be
NOT_APPLICABLE: the hardware has nothing to check (no NVLink, no GPU under load).
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    PASS = "pass"
    WARN = "warn"  # passed, but within a profile-set band above the fail line, or only on a retest
    FAIL = "fail"
    INCOMPLETE = "incomplete"  # required but not measured or not judgeable: fails closed
    SKIP = "skip"  # not required, or not applicable here (with why)
    NOT_MEASURED = "not-measured"
    NOT_APPLICABLE = "not-applicable"

    def __repr__(self) -> str:
        """As the value it stands for in a document (messages quote documents' values)."""
        return repr(self.value)
