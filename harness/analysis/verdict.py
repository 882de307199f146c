"""The one verdict vocabulary: what a criterion, a contract or a check concluded.

Standard library only, so the probes (health contracts are judged inside the probe), the
verifier, the report and `dossier accept` all say it the same way. A Verdict is a `str`: it is
written to JSON as its value and compares equal to it, so documents keep their serialized
values ("pass", "fail", "not-applicable") and old bundles read back unchanged.

The vocabulary (the lead's shared decision 1, issue 24): PASS; WARN (passed, but within a
profile-set band above the fail line, or passed only on a retest); FAIL; INCOMPLETE (required
but not measured or not judgeable: it fails closed); SKIP (not required here, or not applicable,
with why). Values are lowercase in JSON and shown uppercase to people (`shown`).

NOT_MEASURED and NOT_APPLICABLE are the legacy values documents already signed carry (and the
probes' own checks still write); `from_legacy` reads them into the vocabulary, a signed
document is never rewritten. `overall` is the verdict of a set and `exit_code` the one exit
code every command gives for it: PASS 0, WARN 0, FAIL 1, INCOMPLETE 5.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Verdict(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    INCOMPLETE = "incomplete"
    SKIP = "skip"
    # Legacy spellings: read from documents already signed (and still written by the probes' checks).
    NOT_MEASURED = "not-measured"
    NOT_APPLICABLE = "not-applicable"

    def __repr__(self) -> str:
        """As the value it stands for in a document (messages quote documents' values)."""
        return repr(self.value)

    @property
    def shown(self) -> str:
        """How a person reads it: PASS, WARN, FAIL, INCOMPLETE, SKIP."""
        return from_legacy(self).value.upper()


EXIT_CODES = {Verdict.PASS: 0, Verdict.WARN: 0, Verdict.FAIL: 1, Verdict.INCOMPLETE: 5}
EXIT_INCOMPLETE = EXIT_CODES[Verdict.INCOMPLETE]


def from_legacy(value: str, required: bool = False) -> Verdict:
    """A document's value in the vocabulary: "not-measured" is INCOMPLETE when the criterion was
    required and SKIP when not; "not-applicable" is SKIP. Raises ValueError for an unknown value."""
    verdict = Verdict(value)
    if verdict == Verdict.NOT_MEASURED:
        return Verdict.INCOMPLETE if required else Verdict.SKIP
    if verdict == Verdict.NOT_APPLICABLE:
        return Verdict.SKIP
    return verdict


def overall(verdicts: Iterable[str]) -> Verdict:
    """The verdict of a set: any FAIL -> FAIL, else any INCOMPLETE -> INCOMPLETE, else any WARN ->
    WARN, else PASS. SKIP is ignored; a set with nothing judged is INCOMPLETE (it fails closed)."""
    found = {from_legacy(v) for v in verdicts} - {Verdict.SKIP}
    for verdict in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS):
        if verdict in found:
            return verdict
    return Verdict.INCOMPLETE


def exit_code(verdict: str) -> int:
    """The exit code of an overall verdict, the same in every command."""
    return EXIT_CODES.get(from_legacy(verdict), EXIT_INCOMPLETE)  # SKIP alone: nothing was judged
