"""One acceptance: the bundle judged, criterion by criterion, and the verdict.

The verdict is the overall of the criteria's (harness.analysis.verdict): FAIL when a criterion
failed; INCOMPLETE when none failed but one the profile requires was not measured (it fails
closed); WARN when one passed only within a warning band; PASS otherwise. Every failed criterion
names its recommended action; the acceptance's is the most severe of them. Criteria the profile
does not require that were not measured are SKIP, each named with why. Exit code as every command
gives it: PASS and WARN 0, FAIL 1, INCOMPLETE 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.actions import Recommendation
from harness.analysis.verdict import Verdict, overall
from harness.bundle.view import BundleView
from harness.judge import recommend
from harness.judge.acceptance.criteria import evaluate
from harness.judge.acceptance.profile import Profile
from harness.judge.engine import Criterion, Result
from harness.judge.facts import BundleFacts

FORMAT_VERSION = 3  # the acceptance document (`dossier accept --json`): 2 the verdicts of issue 26, 3 the actions


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

    def named(self, status: Verdict) -> list[str]:
        return [r.name for r in self.results if r.status == status]

    @property
    def result(self) -> Verdict:
        return overall(r.status for r in self.results)

    @property
    def recommendation(self) -> Recommendation:
        """What to do: the most severe action of the failed criteria (the first of equals), NONE if none failed."""
        return recommend.overall(self.results)

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "rig-dossier/acceptance",
            "format_version": FORMAT_VERSION,
            "bundle": {
                "name": self.bundle.name,
                "sha256": self.bundle.sha256,
                "signer_keyid": self.bundle.signer_keyid,
                "verify_checks_passed": self.bundle.checks_passed,
                **(
                    {"verify_checks_not_done": list(self.bundle.checks_not_done)} if self.bundle.checks_not_done else {}
                ),
            },
            "profile": self.profile.to_json(),
            "result": self.result,
            "passed": self.named(Verdict.PASS),
            "warned": self.named(Verdict.WARN),
            "failed": self.named(Verdict.FAIL),
            "incomplete": self.named(Verdict.INCOMPLETE),
            "skipped": self.named(Verdict.SKIP),
            "criteria": [r.to_json() for r in self.results],
            "recommendation": self.recommendation.to_json(),
        }


def judge(view: BundleView, profile: Profile, bundle: BundleRef, criteria: Sequence[Criterion]) -> Acceptance:
    """The bundle judged on CRITERIA (the registry's acceptance criteria) against PROFILE."""
    return Acceptance(bundle, profile, tuple(evaluate(BundleFacts(view), profile, criteria)))
