"""One acceptance: the bundle judged, criterion by criterion, and the verdict.

The verdict is the set's (harness.analysis.verdict.overall): FAIL when a criterion failed,
INCOMPLETE when none failed but one the profile requires was not measured (it fails closed),
WARN when something passed only within a WARN band or on a retest, PASS otherwise; criteria
that were not required and not measured are SKIP, each with why. Exit code 0 (PASS, WARN),
1 (FAIL), 5 (INCOMPLETE). `result` is the in-toto test-result word: PASSED, WARNED, or FAILED
for FAIL and INCOMPLETE alike (a verdict that is not a pass must not read as one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.verdict import Verdict, exit_code, overall
from harness.bundle.view import BundleView
from harness.judge.acceptance.criteria import evaluate
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Result
from harness.judge.facts import BundleFacts

PASSED, WARNED, FAILED = "PASSED", "WARNED", "FAILED"


@dataclass(frozen=True)
class BundleRef:
    """The bundle file as judged: its name, sha256 of its bytes, and whose key verified it."""

    name: str
    sha256: str
    signer_keyid: str
    checks_passed: int


@dataclass(frozen=True)
class Acceptance:
    bundle: BundleRef
    profile: Profile
    results: tuple[Result, ...]

    def named(self, status: str) -> list[str]:
        return [r.name for r in self.results if r.status == status]

    @property
    def verdict(self) -> Verdict:
        return overall(r.status for r in self.results)

    @property
    def result(self) -> str:
        return {Verdict.PASS: PASSED, Verdict.WARN: WARNED}.get(self.verdict, FAILED)

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "rig-dossier/acceptance", "format_version": 1,
            "bundle": {"name": self.bundle.name, "sha256": self.bundle.sha256,
                       "signer_keyid": self.bundle.signer_keyid, "verify_checks_passed": self.bundle.checks_passed},
            "profile": self.profile.to_json(),
            "result": self.result, "verdict": self.verdict,
            "passed": self.named(Verdict.PASS), "warned": self.named(Verdict.WARN),
            "failed": self.named(Verdict.FAIL), "incomplete": self.named(Verdict.INCOMPLETE),
            "skipped": self.named(Verdict.SKIP),
            "criteria": [r.to_json() for r in self.results],
        }


def judge(view: BundleView, profile: Profile, bundle: BundleRef) -> Acceptance:
    return Acceptance(bundle, profile, tuple(evaluate(BundleFacts(view), profile)))
