"""The two vocabularies: what a criterion, a contract, a check or a whole judgement concluded
(Verdict), and what became of a step of a run (StepStatus).

Standard library only, so the probes (health contracts are judged inside the probe), the verifier,
the report, `dossier accept` and the fleet all say it the same way. A Verdict is a `str`: it is
written to JSON as its value (lowercase) and compares equal to it; people see it uppercase (`shown`).

    PASS        passed
    WARN        passed, but within a band a profile sets above the fail line, or only on a retest
    FAIL        failed
    INCOMPLETE  required, but not measured or not judgeable: it fails closed (exit 5)
    SKIP        not required, or not applicable here (no NVLink, no GPU under load), with why

The overall verdict of a set (`overall`): any FAIL is FAIL, else any INCOMPLETE is INCOMPLETE, else
any WARN is WARN, else PASS; SKIPs are ignored, and a set with nothing judged is INCOMPLETE. Every
command turns an overall verdict into the same exit code (`exit_code`): PASS and WARN 0, FAIL 1,
INCOMPLETE 5.

Documents already signed are never rewritten: their words are read with `parse` ("not-measured"
is INCOMPLETE, or SKIP where the criterion was not required; "not-applicable" is SKIP). The
documents whose schemas still name the earlier words (health.json's contracts, health-diff.json's
checks, stress.json's verdict) keep writing them (`recorded`).
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

    def __repr__(self) -> str:
        """As the value it stands for in a document (messages quote documents' values)."""
        return repr(self.value)

    @property
    def shown(self) -> str:
        """As people read it: PASS, WARN, FAIL, INCOMPLETE, SKIP."""
        return self.value.upper()

    @property
    def exit_code(self) -> int:
        """The exit code of a command whose overall verdict this is (the same in every command)."""
        return EXIT_CODES[self]


class StepStatus(StrEnum):
    """What became of a step of `dossier run`, as commands.json records it."""

    COMPLETED = "completed"  # its document is in the bundle
    FAILED = "failed"  # it ran and failed (why, raw output kept)
    NOT_RUN = "not_run"  # skipped, or what it needs did not complete (why)


EXIT_INCOMPLETE = 5
EXIT_CODES = {Verdict.PASS: 0, Verdict.WARN: 0, Verdict.FAIL: 1, Verdict.INCOMPLETE: EXIT_INCOMPLETE, Verdict.SKIP: 0}

# The words documents of earlier formats recorded, and those whose schemas still name them.
NOT_MEASURED, NOT_APPLICABLE = "not-measured", "not-applicable"
_RECORDED = {Verdict.INCOMPLETE: NOT_MEASURED, Verdict.SKIP: NOT_APPLICABLE}
_PAST = {"passed": "pass", "warned": "warn", "failed": "fail"}  # in-toto test-result words


def parse(value: object, required: bool = True) -> Verdict:
    """A verdict as a document records it, in this vocabulary; ValueError for a word it is not.

    "not-measured" is INCOMPLETE when the criterion was required and SKIP when not; "not-applicable"
    is SKIP; "PASSED"/"passed" and the like are read case-blind."""
    if isinstance(value, Verdict):
        return value
    word = str(value).strip().lower()
    if word == NOT_MEASURED:
        return Verdict.INCOMPLETE if required else Verdict.SKIP
    if word == NOT_APPLICABLE:
        return Verdict.SKIP
    return Verdict(_PAST.get(word, word))


def recorded(verdict: Verdict) -> str:
    """The word a document whose schema predates INCOMPLETE and SKIP records for VERDICT."""
    return _RECORDED.get(verdict, verdict.value)


def overall(verdicts: Iterable[Verdict | str]) -> Verdict:
    """The verdict of a set: FAIL over INCOMPLETE over WARN over PASS; SKIP ignored; nothing judged: INCOMPLETE."""
    found = {parse(v) for v in verdicts} - {Verdict.SKIP}
    for verdict in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS):
        if verdict in found:
            return verdict
    return Verdict.INCOMPLETE


COUNT_WORDS = {  # how a count of each verdict is said, in the order it is said
    Verdict.FAIL: "failed",
    Verdict.INCOMPLETE: "incomplete",
    Verdict.WARN: "warned",
    Verdict.PASS: "passed",
    Verdict.SKIP: "skipped",
}


def counted(verdicts: Iterable[Verdict | str]) -> str:
    """'2 failed, 20 passed, 12 skipped': each verdict's count that is not zero, worst first."""
    found = [parse(v) for v in verdicts]
    said = [f"{found.count(v)} {word}" for v, word in COUNT_WORDS.items() if v in found]
    return ", ".join(said) or "nothing judged"


def answer_line(verdict: Verdict, what: str = "", exit_code: int | None = None, action: str | None = None) -> str:
    """A command's answer in one line, the same in every command: its first line on a terminal and its
    last, `verdict: FAIL: h200.tar.gz: 8 failed, 20 passed (exit 1)`. WHAT says of what, with the
    counts; ACTION, where a finding recommends one, goes before the exit code; EXIT_CODE defaults to
    the verdict's own."""
    code = verdict.exit_code if exit_code is None else exit_code
    return (
        f"verdict: {verdict.shown}"
        + (f": {what}" if what else "")
        + (f"; action: {action}" if action else "")
        + f" (exit {code})"
    )
