"""One acceptance: the bundle judged, criterion by criterion, and the verdict.

PASSED: every criterion measured passed and none is missing. WARNED: none failed, but some
criterion the profile does not require was not measured (each named, with why). FAILED: a
criterion failed, or one the profile requires was not measured. Exit code 0 unless FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.verdict import Verdict
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
    checks_not_done: tuple[str, ...] = ()  # what verify could not check (an older format, --allow-format)


@dataclass(frozen=True)
class Acceptance:
    bundle: BundleRef
    profile: Profile
    results: tuple[Result, ...]

    def named(self, status: str) -> list[str]:
        return [r.name for r in self.results if r.status == status]

    @property
    def result(self) -> str:
        if self.named(Verdict.FAIL):
            return FAILED
        return WARNED if self.named(Verdict.NOT_MEASURED) else PASSED

    @property
    def exit_code(self) -> int:
        return 1 if self.result == FAILED else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "rig-dossier/acceptance", "format_version": 1,
            "bundle": {"name": self.bundle.name, "sha256": self.bundle.sha256,
                       "signer_keyid": self.bundle.signer_keyid, "verify_checks_passed": self.bundle.checks_passed,
                       **({"verify_checks_not_done": list(self.bundle.checks_not_done)}
                          if self.bundle.checks_not_done else {})},
            "profile": self.profile.to_json(),
            "result": self.result,
            "passed": self.named(Verdict.PASS), "failed": self.named(Verdict.FAIL),
            "not_measured": self.named(Verdict.NOT_MEASURED),
            "criteria": [r.to_json() for r in self.results],
        }


def judge(view: BundleView, profile: Profile, bundle: BundleRef) -> Acceptance:
    return Acceptance(bundle, profile, tuple(evaluate(BundleFacts(view), profile)))
