"""What a device rule gives (harness.analysis.device_rules): an Outcome of Problems (with their
Recommendation), Unread fields and Caveats, in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.actions import Action, Recommendation
from harness.analysis.units import show, unavailable_reason


@dataclass(frozen=True)
class Problem:
    text: str
    recommendation: Recommendation


@dataclass(frozen=True)
class Unread:
    field: str
    value: Any  # the field as recorded: {"unavailable": reason}
    text: str  # how health.json's contracts word it

    @property
    def reason(self) -> str:
        return unavailable_reason(self.value) or show(self.value)


@dataclass(frozen=True)
class Caveat:
    text: str


Item = Problem | Unread | Caveat


@dataclass(frozen=True)
class Outcome:
    rule: str
    items: tuple[Item, ...] = ()
    seen: str = ""  # what was read, in words (the pass text)
    unsupported: Any = None  # the device has no such feature: the unavailable value that says so

    @property
    def problems(self) -> list[Problem]:
        return [i for i in self.items if isinstance(i, Problem)]

    @property
    def unread(self) -> list[Unread]:
        return [i for i in self.items if isinstance(i, Unread)]

    @property
    def caveats(self) -> list[Caveat]:
        return [i for i in self.items if isinstance(i, Caveat)]

    @property
    def ok(self) -> bool:
        """Nothing broken, nothing unread, nothing the reading cannot tell, and the feature present."""
        return not self.items and self.unsupported is None


def problem(text: str, action: Action, rule: str, why: str) -> Problem:
    return Problem(text, Recommendation(action, rule, why))


def unread(field: str, value: Any, text: str | None = None) -> Unread:
    return Unread(field, value, text if text is not None else f"{field} unreadable: {unavailable_reason(value)}")
