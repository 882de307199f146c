"""The host's other work while each step ran (host-contention.json, harness.judge.contention), set side
by side by `dossier diff` and `dossier reproduce`: "host contention" is the same for every idle run and
names each busy step with its numbers, so it is a likely why of a rate only when one side was busy; "host
contention by step" is every window's numbers, a fact beside it."""

from __future__ import annotations

from harness.judge.contention import host_figures, host_state
from harness.judge.reproduction.declare import RATES, DiffField

DIFF_FIELDS = (
    DiffField("activity", "host contention", host_state, source="facts", explains=RATES),
    DiffField("activity", "host contention by step", host_figures, source="facts"),
)
